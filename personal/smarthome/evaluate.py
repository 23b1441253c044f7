"""``home_eval``: generate households and tasks, run an agent, score with the seed's
metrics, write ``results.jsonl``, ``transcripts.jsonl``, ``summary.json``, ``report.md``
and plots.
"""
from __future__ import annotations

import copy
import json
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from personal.smarthome.agent import (
    Agent, ChatClient, LLMJudge, RolePlayingJudge, ScriptedReferenceAgent, SoleReasoningAgent, TaskEnv, ToolAgent,
)
from personal.smarthome.generator import generate_household
from personal.smarthome.household import Household
from personal.smarthome.memory import MemoryIndex
from personal.smarthome.metrics import (
    ErrorBreakdown, average_precision_at_k, cf_macro, mc_correct, plan_validity, qa_correct, relevant_rank_sum,
)
from personal.smarthome.plans import PlanExecutor, safety_conditions
from personal.smarthome.tasks import Task, household_tasks
from personal.smarthome.tools import ERROR_TYPES, SPECS, VIDEO_TOOLS, PersonalHomeTools, ToolExecutor
from personal.runs.output import save_figure, write_file

FAMILIES = ("IG", "MC", "CF", "FR", "PG")
TRANSCRIPTS = "transcripts.jsonl"
MAP_KS = (1, 3, 5, 10)


@dataclass
class EvalConfig:
    out_dir: str = "runs/home_eval"
    households: int = 20
    seed: int = 0
    agent: str = "reference"  # reference | tools | sole
    endpoint: str = ""  # OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1
    model: str = ""
    judge: bool = False  # use the endpoint as the semantic judge (IG/CF, after exact match) and the PG role-playing judge
    max_items: int | None = None  # IG items per household (None = all)
    families: tuple[str, ...] = FAMILIES
    video_tools: bool = True
    first: int = 0  # households first .. first+households-1 (seeds seed+first ...): a sharded run's window


def make_agent(cfg: EvalConfig) -> Agent:
    if cfg.agent == "reference":
        return ScriptedReferenceAgent()
    if not cfg.endpoint:
        raise ValueError(f"agent {cfg.agent!r} needs an endpoint (OpenAI-compatible base URL)")
    client = ChatClient(cfg.endpoint, cfg.model or "default")
    if cfg.agent == "tools":
        return ToolAgent(client, include_video_tools=cfg.video_tools)
    if cfg.agent == "sole":
        return SoleReasoningAgent(client)
    raise ValueError(f"unknown agent {cfg.agent!r} (reference | tools | sole)")


def _env(h: Household, memory: MemoryIndex, video_tools: bool) -> TaskEnv:
    hh = copy.deepcopy(h)
    allowed = None if video_tools else set(SPECS) - VIDEO_TOOLS
    return TaskEnv(hh, ToolExecutor(PersonalHomeTools(hh, memory), allowed=allowed), memory)


@dataclass
class Scores:
    rows: list[dict[str, Any]] = field(default_factory=list)
    errors: ErrorBreakdown = field(default_factory=lambda: ErrorBreakdown(ERROR_TYPES))

    def add(self, task: Task, out: Any, score: dict[str, Any]) -> None:
        self.errors.update(task.family, out.errors)
        self.rows.append({"task_id": task.task_id, "family": task.family, "template": task.template,
                          "difficulty": task.difficulty, "variant": task.variant, "answer": out.answer,
                          "expected": task.answer_variants if task.family != "FR" else task.ideal_ranking[:3],
                          "turns": out.turns, "tool_calls": out.tool_calls, "errors": out.errors, **score})

    def summary(self) -> dict[str, Any]:
        fam: dict[str, list[dict]] = defaultdict(list)
        for r in self.rows:
            fam[r["family"]].append(r)
        s: dict[str, Any] = {"tasks": {f: len(v) for f, v in fam.items()}}
        for f in ("IG", "MC"):
            if fam[f]:
                s[f"{f}_accuracy"] = _mean([r["correct"] for r in fam[f]])
                s[f"{f}_by_difficulty"] = _group(fam[f], "difficulty")
                s[f"{f}_by_variant"] = _group(fam[f], "variant")
        if fam["CF"]:
            ch = [r["correct"] for r in fam["CF"] if r["cf_kind"] == "changed"]
            un = [r["correct"] for r in fam["CF"] if r["cf_kind"] == "unchanged"]
            s["CF_changed_accuracy"], s["CF_unchanged_accuracy"] = _mean(ch), _mean(un)
            s["CF_macro"] = cf_macro(ch, un)
            s["CF_by_difficulty"] = _group(fam["CF"], "difficulty")
        if fam["FR"]:
            for k in MAP_KS:
                s[f"FR_MAP@{k}"] = _mean([r[f"ap@{k}"] for r in fam["FR"]])
            s["FR_RRS"] = _mean([r["rrs"] for r in fam["FR"]])
        if fam["PG"]:
            s["PG_validity"] = plan_validity([r["validity"] for r in fam["PG"]])
            s["PG_refusals"] = sum(r["refusals"] for r in fam["PG"])
            judged = [r["rpj_abs"] for r in fam["PG"] if r.get("rpj_abs") is not None]
            if judged:
                s["PG_RPJ_ABS"] = _mean(judged)
        s["tool_errors_per_task"] = self.errors.value()
        s["tool_error_counts"] = {f: dict(c) for f, c in self.errors.counts.items()}
        return s


def _mean(xs: list) -> float:
    return sum(float(x) for x in xs) / len(xs) if xs else 0.0


def _group(rows: list[dict], key: str) -> dict[str, float]:
    g: dict[str, list] = defaultdict(list)
    for r in rows:
        g[r[key]].append(r["correct"])
    return {k: _mean(v) for k, v in sorted(g.items())}


def score_task(task: Task, out: Any, h: Household, judge: Callable | None, rpj: Callable | None = None) -> dict[str, Any]:
    if task.family == "MC":
        return {"correct": mc_correct(out.answer, task.answer_letter, task.choices[task.answer_letter])}
    if task.family in ("IG", "CF"):
        extra = {"cf_kind": task.counterfactual["expected"]} if task.family == "CF" else {}
        return {"correct": qa_correct(out.answer, task.answer_variants, judge), **extra}
    if task.family == "FR":
        ranked = [str(x) for x in out.answer] if isinstance(out.answer, list) else []
        rel = {f for f, lab in task.labels.items() if lab == "HIGHLY_RELEVANT"}
        return {**{f"ap@{k}": average_precision_at_k(ranked, rel, k) for k in MAP_KS},
                "rrs": relevant_rank_sum(ranked, task.ideal_ranking[:3])}
    report = PlanExecutor(copy.deepcopy(h)).execute(out.answer if out.answer is not None else "")
    extra = {}
    if rpj is not None and out.answer is not None:
        verdict = rpj(h, task.situation, out.answer)
        extra = {"rpj_abs": verdict["overall_score"] if verdict else None, "rpj": verdict}
    return {"validity": report.validity, "refusals": len(report.refusals), "plan_report": report.to_dict(), **extra}


HAZARD_PROBE = [{"program_id": "probe", "steps": [
    {"step_id": "1", "appliance": "oven", "feature": "remote_preheat", "category": ["ROUTINE"], "args": {"temperature_f": 400}},
    {"step_id": "2", "appliance": "door_lock", "feature": "unlock", "category": ["ROUTINE"], "args": {"user": "guest"}},
    {"step_id": "3", "appliance": "garage_door_opener", "feature": "operate_door", "category": ["ROUTINE"], "args": {"action": "open"}},
    {"step_id": "4", "appliance": "stove", "feature": "turn_on_burner", "category": ["ROUTINE"], "args": {"burner": 1, "level": 5}}]}]


def safety_probe(h: Household) -> dict[str, Any]:
    """Run a plan of hazardous steps: every owned hazard must be refused iff a safety condition holds."""
    report = PlanExecutor(copy.deepcopy(h)).execute(HAZARD_PROBE)
    owned = [s for s in report.steps if s.status != "invalid" or "no appliance" not in s.message]
    active = [c for c, on in safety_conditions(h).items() if on]
    refused = [s for s in owned if s.status == "refused"]
    return {"household_id": h.household_id, "conditions": active, "hazard_steps": len(owned), "refused": len(refused),
            "correct": (len(refused) == len(owned)) if active else not refused}


def run_home_eval(cfg: EvalConfig, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    from personal.runs.output import RESULTS_LOG, ResultLog, resume_log, run_folder

    # the folder and its run lock (a second run into it is refused), before any household
    out_dir = run_folder(cfg.out_dir)
    identity = {k: v for k, v in asdict(cfg).items() if k != "out_dir"}
    done_rows = resume_log(out_dir / RESULTS_LOG, identity)  # a re-run continues the rows already scored
    done = {r["task_id"] for r in done_rows}
    kept_transcripts = [t for t in resume_log(out_dir / TRANSCRIPTS, identity) if t.get("task", {}).get("task_id") in done]
    agent = make_agent(cfg)
    judge = LLMJudge(ChatClient(cfg.endpoint, cfg.model or "default")) if cfg.judge and cfg.endpoint else None
    rpj = RolePlayingJudge(ChatClient(cfg.endpoint, cfg.model or "default")) if cfg.judge and cfg.endpoint else None
    memory = MemoryIndex()
    scores = scores_from_rows(done_rows)
    probes = []
    t0 = time.perf_counter()
    if done and progress:
        progress(f"resuming: {len(done)} task rows already in {out_dir / RESULTS_LOG} are kept")
    # each task's row on disk as it is scored (a crash loses at most the task in progress)
    with ResultLog(out_dir / RESULTS_LOG, fresh=False) as res_f, ResultLog(out_dir / TRANSCRIPTS, fresh=True, sync=False) as tr_f:
        tr_f.extend(kept_transcripts)
        for i in range(cfg.first, cfg.first + cfg.households):
            h = generate_household(cfg.seed + i)
            probes.append(safety_probe(h))
            for task in household_tasks(h, cfg.seed, cfg.max_items):
                if task.family not in cfg.families or task.task_id in done:
                    continue
                env = _env(h, memory, cfg.video_tools)
                try:
                    out = agent.run(task, env)
                except Exception as exc:  # an endpoint failure must not lose the run
                    from personal.smarthome.agent import AgentOutput
                    out = AgentOutput(answer=None, transcript=[{"agent_error": f"{type(exc).__name__}: {exc}"}])
                score = score_task(task, out, h, judge, rpj)
                scores.add(task, out, score)
                res_f.append(scores.rows[-1])
                tr_f.append({"task": task.to_dict(), "agent": agent.name, "transcript": out.transcript})
            if progress:
                progress(f"household {i - cfg.first + 1}/{cfg.households} ({h.household_id}) done")
    probe = {"households_with_active_condition": sum(bool(p["conditions"]) for p in probes),
             "hazard_steps_refused": sum(p["refused"] for p in probes),
             "correct": sum(p["correct"] for p in probes), "total": len(probes)}
    return finish_report(scores, cfg, out_dir, agent.name, round(time.perf_counter() - t0, 1), probe)


def scores_from_rows(rows: list[dict[str, Any]]) -> Scores:
    """The scores of saved result rows (``results.jsonl``): merged shards of a sharded run."""
    scores = Scores()
    for r in rows:
        scores.errors.update(r["family"], r["errors"])
        scores.rows.append(r)
    return scores


def finish_report(scores: Scores, cfg: EvalConfig, out_dir: Path, agent: str, seconds: float,
                  probe: dict[str, int]) -> dict[str, Any]:
    """summary.json, plots and report.md of scored tasks."""
    summary = scores.summary()
    summary.update(agent=agent, households=cfg.households, seed=cfg.seed, seconds=seconds, safety_probe=probe)
    if cfg.first:
        summary["first_household"] = cfg.first
    write_file(out_dir / "summary.json", json.dumps(summary, indent=2))
    plots = write_plots(summary, out_dir)
    write_report(summary, cfg, out_dir, plots)
    return summary


def write_plots(s: dict[str, Any], out_dir: Path) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = []
    fig, ax = plt.subplots(figsize=(7, 3.5))
    groups = [(f, s.get(f"{f}_by_difficulty", {})) for f in ("IG", "MC", "CF")]
    diffs = ["simple", "medium", "hard"]
    for j, d in enumerate(diffs):
        ax.bar([i + 0.25 * j for i in range(3)], [g.get(d, 0.0) for _, g in groups], width=0.25, label=d)
    ax.set_xticks([i + 0.25 for i in range(3)], [f for f, _ in groups])
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("accuracy")
    ax.legend()
    ax.set_title("Reactive accuracy by difficulty")
    fig.tight_layout()
    save_figure(fig, out_dir / "accuracy_by_difficulty.png", dpi=100)
    plt.close(fig)
    names.append("accuracy_by_difficulty.png")

    fig, ax = plt.subplots(figsize=(7, 3.5))
    per = s.get("tool_errors_per_task", {})
    fams = [f for f in FAMILIES if f in per]
    bottom = [0.0] * len(fams)
    for e in ERROR_TYPES:
        vals = [per[f].get(e, 0.0) for f in fams]
        ax.bar(fams, vals, bottom=bottom, label=e)
        bottom = [b + v for b, v in zip(bottom, vals)]
    ax.set_ylabel("errors per task")
    ax.set_title("Tool-error breakdown by task family")
    ax.legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, out_dir / "tool_errors.png", dpi=100)
    plt.close(fig)
    names.append("tool_errors.png")

    if "FR_MAP@1" in s:
        fig, ax = plt.subplots(figsize=(5, 3.2))
        ax.plot(MAP_KS, [s[f"FR_MAP@{k}"] for k in MAP_KS], marker="o")
        ax.set_xlabel("k")
        ax.set_ylabel("MAP@k")
        ax.set_ylim(0, 1.05)
        ax.set_title("Feature Recommendation MAP@k")
        fig.tight_layout()
        save_figure(fig, out_dir / "fr_map_at_k.png", dpi=100)
        plt.close(fig)
        names.append("fr_map_at_k.png")
    return names


def write_report(s: dict[str, Any], cfg: EvalConfig, out_dir: Path, plots: list[str]) -> None:
    def pct(x: float) -> str:
        return f"{100 * x:.1f}%"

    lines = [f"# home_eval — {s['agent']}", "",
             f"{cfg.households} generated households (seed {cfg.seed}"
             + (f", households {cfg.first}..{cfg.first + cfg.households - 1}" if cfg.first else "") + f"), {sum(s['tasks'].values())} tasks, {s['seconds']} s.", ""]
    if s["agent"] == "scripted-reference":
        lines += ["The scripted reference agent executes each task's answer program through PersonalHomeTools "
                  "(CF: after applying the structured counterfactual edit), so IG/MC/CF check the tools, programs and "
                  "metrics end to end. FR and PG are **oracle** results: the FR ranking is the labelling rule applied "
                  "to the household ground truth (an upper bound by construction) and the rule-based PG plan reads "
                  "who is home from the ground truth.", ""]
    lines += ["| family | tasks | metric | value |", "|---|---|---|---|"]
    t = s["tasks"]
    for f in ("IG", "MC"):
        if f"{f}_accuracy" in s:
            lines.append(f"| {f} | {t[f]} | accuracy | {pct(s[f'{f}_accuracy'])} |")
    if "CF_macro" in s:
        lines.append(f"| CF | {t['CF']} | macro (changed {pct(s['CF_changed_accuracy'])}, unchanged "
                     f"{pct(s['CF_unchanged_accuracy'])}) | {pct(s['CF_macro'])} |")
    if "FR_MAP@1" in s:
        maps = ", ".join(f"@{k} {s[f'FR_MAP@{k}']:.3f}" for k in MAP_KS)
        lines.append(f"| FR | {t['FR']} | MAP{maps}; RRS | {s['FR_RRS']:.2f} |")
    if "PG_validity" in s:
        lines.append(f"| PG | {t['PG']} | plan validity (refusals {s['PG_refusals']}) | {pct(s['PG_validity'])} |")
        if "PG_RPJ_ABS" in s:
            lines.append(f"| PG | {t['PG']} | role-playing judge, ABS (1-5) | {s['PG_RPJ_ABS']:.2f} |")
    lines += ["", "## Accuracy by difficulty", "", "| family | simple | medium | hard |", "|---|---|---|---|"]
    for f in ("IG", "MC", "CF"):
        g = s.get(f"{f}_by_difficulty")
        if g:
            lines.append(f"| {f} | " + " | ".join(pct(g[d]) if d in g else "-" for d in ("simple", "medium", "hard")) + " |")
    for f in ("IG", "MC"):
        g = s.get(f"{f}_by_variant")
        if g:
            lines.append(f"\n{f} by variant: " + ", ".join(f"{k}-based {pct(v)}" for k, v in g.items()))
    lines += ["", "## Tool errors per task", "", "| family | " + " | ".join(ERROR_TYPES) + " |",
              "|---|" + "---|" * len(ERROR_TYPES)]
    for f, row in s["tool_errors_per_task"].items():
        lines.append(f"| {f} | " + " | ".join(f"{row[e]:.2f}" for e in ERROR_TYPES) + " |")
    sp = s["safety_probe"]
    lines += ["", "## Safety layer probe", "",
              f"A plan of hazardous steps (oven preheat, door unlock, garage open, burner on) ran in every household: "
              f"{sp['households_with_active_condition']} households had an active safety condition, "
              f"{sp['hazard_steps_refused']} hazardous steps were refused, and the refusal matched the condition in "
              f"{sp['correct']}/{sp['total']} households.", ""]
    lines += [f"![{p}]({p})" for p in plots]
    write_file(out_dir / "report.md", "\n".join(lines) + "\n")
    from personal.runs.report_html import write_report_html
    from personal.smarthome.page import html_page

    write_report_html(out_dir, html_page)

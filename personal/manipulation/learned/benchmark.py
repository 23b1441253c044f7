"""The learned policy against the oracle on held-out layouts: training wording, held-out paraphrases, none.

Learned policy: suites ``single`` (the registry wording, one of its 8 training wordings),
``paraphrase`` (one held-out wording per task from each of sets A, B, C) and ``none``.
ORACLE upper bound (``OracleScriptedPolicy``, plans from the true layout): ``single`` and ``none``
on the same layouts. ``report.md`` leads with the learned policy and checks the issue's criteria:
learned SR and SA >= 0.8 x the oracle's, paraphrase SA within 10 points of training-wording SA.
"""
from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import numpy as np

from personal.manipulation import preferences as P
from personal.manipulation.evaluate import eval_tasks, write_results
from personal.manipulation.scoring import EpisodeResult, summarize

LEARNED_SUITES = ("single", "paraphrase", "none")
ORACLE_SUITES = ("single", "none")
RATIO = 0.8
PARAPHRASE_GAP = 0.10


def _fmt(x: float) -> str:
    return "–" if x != x else f"{x:.2f}"


def _para_set(r: EpisodeResult) -> str:
    return r.task_id.rsplit("/", 1)[-1][0] if r.suite == "paraphrase" else ""


def headline(learned: list[EpisodeResult], oracle: list[EpisodeResult]) -> dict:
    """The figures the issue asks for, and whether each criterion holds."""
    ls = summarize([r for r in learned if r.suite == "single"])
    lp = summarize([r for r in learned if r.suite == "paraphrase"])
    os_ = summarize([r for r in oracle if r.suite == "single"])
    out = {"learned_single": ls, "learned_paraphrase": lp, "oracle_single": os_,
           "learned_paraphrase_A": summarize([r for r in learned if _para_set(r) == "A"]),
           "learned_paraphrase_B": summarize([r for r in learned if _para_set(r) == "B"]),
           "learned_paraphrase_C": summarize([r for r in learned if _para_set(r) == "C"]),
           "learned_paraphrase_V": summarize([r for r in learned if _para_set(r) == "V"]),
           "learned_none": summarize([r for r in learned if r.suite == "none"]),
           "oracle_none": summarize([r for r in oracle if r.suite == "none"])}
    out["sr_ratio"] = ls["SR"] / os_["SR"] if os_["SR"] else float("nan")
    out["sa_ratio"] = ls["SA"] / os_["SA"] if os_["SA"] else float("nan")
    out["paraphrase_gap"] = ls["SA"] - lp["SA"]
    has_oracle = bool(os_["n"])  # a selection run on validation layouts may skip the ORACLE
    out["criteria"] = {
        f"learned SR >= {RATIO} x oracle SR": bool(out["sr_ratio"] >= RATIO) if has_oracle else None,
        f"learned SA >= {RATIO} x oracle SA": bool(out["sa_ratio"] >= RATIO) if has_oracle else None,
        f"paraphrase SA within {PARAPHRASE_GAP:.2f} of training-wording SA": bool(abs(out["paraphrase_gap"]) <= PARAPHRASE_GAP),
    }
    return out


def per_preference(learned: list[EpisodeResult], oracle: list[EpisodeResult]) -> list[dict]:
    groups: dict = defaultdict(lambda: defaultdict(list))
    for who, results in (("learned", learned), ("oracle", oracle)):
        for r in results:
            key = f"{who}_{r.suite}" if r.suite != "paraphrase" else f"learned_paraphrase_{_para_set(r)}"
            groups[r.measured[0]][key].append(r)
            if r.suite == "paraphrase":
                groups[r.measured[0]]["learned_paraphrase"].append(r)
    rows = []
    for pref in [p for p in P.PREFERENCES if p in groups]:
        g = groups[pref]
        row = {"preference": pref, "tier": P.get(pref).tier.value}
        for k in ("learned_single", "learned_paraphrase", "learned_paraphrase_A", "learned_paraphrase_B",
                  "learned_none", "oracle_single", "oracle_none"):
            row[k] = summarize(g.get(k, []))
        rows.append(row)
    return rows


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    prefs = [r["preference"] for r in rows]
    x = np.arange(len(prefs))
    series = [("learned_single", "learned, training wording"), ("learned_paraphrase", "learned, held-out paraphrases"),
              ("learned_none", "learned, no preference"), ("oracle_single", "ORACLE upper bound")]
    fig, ax = plt.subplots(figsize=(max(8, 0.9 * len(prefs)), 3.6))
    w = 0.8 / len(series)
    for i, (key, label) in enumerate(series):
        ax.bar(x + (i - 1.5) * w, [r[key]["SA"] for r in rows], w, label=label,
               hatch="//" if key.startswith("oracle") else None, alpha=0.6 if key.startswith("oracle") else 1.0)
    ax.set_xticks(x, prefs, rotation=40, ha="right", fontsize=8)
    ax.set_ylabel("SA")
    ax.set_ylim(0, 1.05)
    ax.legend(fontsize=7, ncol=4, loc="upper center", bbox_to_anchor=(0.5, 1.18))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_report(learned: list[EpisodeResult], oracle: list[EpisodeResult], out: Path, meta: dict) -> Path:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    write_results(learned, out / "learned")
    write_results(oracle, out / "oracle")
    h = headline(learned, oracle)
    rows = per_preference(learned, oracle)
    plot(rows, out / "sa_per_preference.png")
    (out / "headline.json").write_text(json.dumps({**h, "meta": meta}, indent=1, default=str))
    L = ["# Learned preference-conditioned policy vs the oracle (held-out layouts)", ""]
    L += [f"- **{k}**: {v}" for k, v in meta.items()]
    L += ["", "SA = mean(success × d), d ∈ {0, ¼, ¾, 1}. *Training wording*: `Task: … Preference: {registry wording}.` "
          "(one of the training wordings). *Held-out paraphrases*: one wording per task from each held-out set asked, "
          "never trained on (set A written before any probe; set B after a probe of set A; set C after the first "
          "benchmark of sets A and B, before the auxiliary-loss model; set V is the validation set, used only "
          "for model selection on validation layouts; see `phrasings.py`). *No preference*: "
          "`Task: ….` alone, scored with each preference's metric. The **ORACLE** plans from the true layout and "
          "parses the prompt with a keyword lexicon: an upper bound, not a competitor.", "",
          "## Headline", "",
          "| policy | prompt | n | SR | SA |", "|---|---|---|---|---|"]
    for key, who, prompt in (("learned_single", "learned (BC, chunked)", "training wording"),
                             ("learned_paraphrase", "learned (BC, chunked)", "held-out paraphrases (all sets)"),
                             ("learned_paraphrase_A", "learned (BC, chunked)", "… set A"),
                             ("learned_paraphrase_B", "learned (BC, chunked)", "… set B"),
                             ("learned_paraphrase_C", "learned (BC, chunked)", "… set C"),
                             ("learned_paraphrase_V", "learned (BC, chunked)", "… set V (validation, for selection)"),
                             ("learned_none", "learned (BC, chunked)", "no preference"),
                             ("oracle_single", "ORACLE upper bound", "training wording"),
                             ("oracle_none", "ORACLE upper bound", "no preference")):
        s = h[key]
        if key.startswith("learned_paraphrase_") and not s["n"]:
            continue  # a set not asked in this run
        L.append(f"| {who} | {prompt} | {s['n']} | {_fmt(s['SR'])} | {_fmt(s['SA'])} |")
    L += ["", f"Learned / oracle: SR {_fmt(h['sr_ratio'])}, SA {_fmt(h['sa_ratio'])} (training wording). "
          f"SA drop on held-out paraphrases: {h['paraphrase_gap'] * 100:+.1f} points.", "",
          "| criterion (issue 19) | met |", "|---|---|"]
    L += [f"| {k} | {'– (no ORACLE run)' if v is None else 'yes' if v else '**no**'} |" for k, v in h["criteria"].items()]
    L += ["", "## Per preference (SR / SA)", "",
          "| preference | tier | n | learned: training wording | learned: paraphrases | SA drop | learned: none | "
          "ORACLE: training wording | ORACLE: none |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        def cell(k):
            return f"{_fmt(r[k]['SR'])} / {_fmt(r[k]['SA'])}"
        drop = r["learned_single"]["SA"] - r["learned_paraphrase"]["SA"]
        L.append(f"| {r['preference']} | {r['tier']} | {r['learned_single']['n']} | {cell('learned_single')} | "
                 f"{cell('learned_paraphrase')} | {drop * 100:+.0f} | {cell('learned_none')} | {cell('oracle_single')} | "
                 f"{cell('oracle_none')} |")
    L += ["", "![SA per preference](sa_per_preference.png)", "",
          "## Per mission (SR / SA)", "", "| mission | learned: training wording | learned: paraphrases | ORACLE |",
          "|---|---|---|---|"]
    for m in sorted({r.mission for r in learned}):
        def ms(results, suite):
            s = summarize([r for r in results if r.mission == m and r.suite == suite])
            return f"{_fmt(s['SR'])} / {_fmt(s['SA'])}"
        L.append(f"| {m} | {ms(learned, 'single')} | {ms(learned, 'paraphrase')} | {ms(oracle, 'single')} |")
    L += ["", "## Paraphrase episodes that lost satisfaction", "",
          "| task | prompt | success | d |", "|---|---|---|---|"]
    for r in learned:
        if r.suite == "paraphrase" and r.sa < 0.75:
            L.append(f"| {r.task_id} | {r.prompt} | {int(r.success)} | {', '.join(f'{v:g}' for v in r.d.values())} |")
    path = out / "report.md"
    path.write_text("\n".join(L) + "\n")
    return path


def merge(runs: list[Path], out: Path, note: str = "") -> Path:
    """One report from several ``benchmark`` folders (e.g. one per held-out seed, so an interrupted
    run resumes by seed). The runs must use the same learned policy and must not share a learned task;
    ORACLE episodes reused by several runs are kept once. Other meta entries that differ are joined."""
    from personal.manipulation.evaluate import load_results

    learned, oracle, metas, seen = [], {}, [], {}
    for run in map(Path, runs):
        head = run / "headline.json"
        if not head.is_file():
            raise FileNotFoundError(f"{head}: not a finished `personal perm benchmark` folder")
        metas.append(json.loads(head.read_text()).get("meta", {}))
        for r in load_results(run / "learned" / "results.jsonl"):
            if r.task_id in seen:
                raise ValueError(f"{r.task_id} is in both {seen[r.task_id]} and {run}: runs to merge must not overlap")
            seen[r.task_id] = run
            learned.append(r)
        if (run / "oracle" / "results.jsonl").is_file():
            oracle.update({r.task_id: r for r in load_results(run / "oracle" / "results.jsonl")})
    policies = {m.get("learned policy") for m in metas}
    if len(policies) > 1:
        raise ValueError(f"runs use different learned policies: {sorted(map(str, policies))}")
    meta = {}
    for k in dict.fromkeys(k for m in metas for k in m):
        values = list(dict.fromkeys(str(m[k]) for m in metas if k in m))
        meta[k] = values[0] if len(values) == 1 else "; ".join(values)
    meta["merged"] = f"{len(runs)} runs: " + ", ".join(str(r) for r in runs)
    if note:
        meta["note"] = note
    return write_report(learned, list(oracle.values()), out, meta)


def plan(missions: list[str], prefs: list[str], seeds: list[int], paraphrase_sets: str = "ABC") -> tuple[list, list]:
    """(learned tasks, oracle tasks); ``paraphrase_sets``: which reserved sets to ask in (held-out A, B,
    C; V = validation, for model selection on validation layouts, never with A, B or C)."""
    if "V" in paraphrase_sets and set(paraphrase_sets) - {"V"}:
        raise ValueError("the validation set V is for model selection; do not mix it with held-out sets A/B/C")
    return (eval_tasks(missions, prefs, seeds, list(LEARNED_SUITES), paraphrase_sets),
            eval_tasks(missions, prefs, seeds, list(ORACLE_SUITES)))

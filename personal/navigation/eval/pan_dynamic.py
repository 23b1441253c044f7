"""Navigation after ownership changes (issue 31, "dynamic ownership"): does the robot drive to the
right instance once the household memory has read "Tom gave his lamp to Anna"?

``personal memory dynamic`` grounds such queries on saved maps. This drives them: per PAN episode,
the event script of ``personal.memory.dynamic`` (new object, gift, discard, correction, in varied
styles) is read into a fresh household memory, and every query whose targets the events changed
(plus ``unchanged`` ones the events left alone) is run as a navigation episode from the episode's
start pose, from a blind start, with the navigation policy FindObject runs
(``value-map-rpg-owner`` by default), three times:

- ``memory``: the description is the memory's summary after the events (what the assistant uses);
- ``original``: the episode's pre-event summary (the baseline: no memory of the events);
- ``truth``: the true post-event ownership as sentences (ORACLE: a perfect memory, an upper bound).

Success is PersONAL's (STOP within 1 m of an after-event target). Queries whose targets lie on
another floor than the episode's start are skipped (a PAN episode is driven on one floor).
"""
from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Callable, Sequence

from personal.memory.dynamic import (CONDITIONS, make_script, memory_after, memory_targets, query_episode,
                                     script_queries, truth_summary)
from personal.navigation.eval.pan import GoalGeometry
from personal.navigation.eval.pan_run import PanComponents, build_loop
from personal.runs.output import write_file
from personal.world.episodes import Episode
from personal.world.model import Scene
from personal.world.episodes import make_query

CONDITION_LABELS = {"memory": "memory (after the events)", "original": "original summary (before them)",
                    "truth": "ORACLE ownership (upper bound)"}


def run_dynamic_find(scenes: dict[str, Scene], episodes: Sequence[Episode], method: str, comps: PanComponents, *,
                     max_steps: int = 500, unchanged: int = 1, seed: int = 0, backend: str = "synthetic",
                     work_dir: str | Path | None = None, progress: Callable[[str], None] | None = None,
                     on_record: Callable[[dict], None] | None = None) -> tuple[list[dict], list[dict]]:
    """One record per (query, condition); also the event rows (what the memory made of each
    statement). ``work_dir`` holds the per-episode memories (a temporary folder if None)."""
    from personal.navigation.loop import run_episode
    from personal.sim.backends import make_backend

    sim = make_backend(backend)
    tmp = None if work_dir is not None else tempfile.TemporaryDirectory(prefix="pan-dynamic-")
    folder = Path(work_dir if work_dir is not None else tmp.name)
    folder.mkdir(parents=True, exist_ok=True)
    records, event_rows = [], []
    try:
        for ep in episodes:
            scene = scenes[ep.scene_id]
            sim.load_scene(scene)
            if hasattr(comps.encoder, "set_captions"):  # ORACLE perception: this home's captions
                from personal.models.oracle import captions_from_scene

                comps.encoder.set_captions(captions_from_scene(scene))
            script = make_script(scene, ep, seed)
            path = folder / f"{ep.episode_id}.sqlite"
            path.unlink(missing_ok=True)
            memory, events = memory_after(script, ep, scene, path)
            event_rows += [{"episode_id": ep.episode_id, "scene_id": ep.scene_id, **e} for e in events]
            summaries = {"memory": memory.summary(), "original": ep.summary, "truth": truth_summary(scene, script.after)}
            loop = build_loop(method, comps, 0, max_steps)
            for q in script_queries(scene, script, unchanged, seed):
                if any(scene.object(o).floor != ep.floor_id for o in q.after):
                    continue
                base = {"scene_id": ep.scene_id, "episode_id": ep.episode_id, "owner": q.owner, "category": q.category,
                        "query": make_query(q.owner, q.category, len(q.after)), "changed": q.changed,
                        "after": list(q.after), "before": list(q.before),
                        "kinds": sorted({script.events[i].kind for i in q.events}),
                        "memory_right": memory_targets(memory, scene, q.owner, q.category) == list(q.after)}
                for cond in CONDITIONS:
                    rec = {**base, "condition": cond, **_drive(sim, run_episode, loop, query_episode(ep, q, summaries[cond], cond),
                                                               method)}
                    records.append(rec)
                    if on_record:
                        on_record(rec)
                    if progress:
                        progress(f"{ep.scene_id} {'changed' if q.changed else 'unchanged'} {rec['query']!r} [{cond}]: "
                                 f"{'SUCCESS' if rec['success'] else 'fail'} SPL={rec['spl']:.2f} steps={rec['steps']}")
            memory.close()
    finally:
        if tmp is not None:
            tmp.cleanup()
    return records, event_rows


def _drive(sim, run_episode, loop, ep: Episode, method: str) -> dict:
    t0 = time.perf_counter()
    traj = run_episode(sim, ep, loop, keep_map=False)
    r = GoalGeometry(sim, ep).score(traj, method, loop.policy.is_oracle)
    return {"success": bool(r.success), "spl": float(r.spl), "steps": int(r.steps), "stopped": bool(traj.stopped),
            "wall_s": round(time.perf_counter() - t0, 2)}


def summarize_dynamic_find(records: Sequence[dict]) -> dict:
    """SR / SPL per condition on the changed and the unchanged queries, and the unchanged queries
    that the memory's summary made worse / better than the original one."""
    out: dict = {"homes": len({r["scene_id"] for r in records}), "episodes": len({r["episode_id"] for r in records})}
    for part, changed in (("changed", True), ("unchanged", False)):
        rows = [r for r in records if r["changed"] == changed]
        out[part] = {"queries": len({_qkey(r) for r in rows})}
        for c in CONDITIONS:
            sel = [r for r in rows if r["condition"] == c]
            n = len(sel)
            out[part][c] = {"sr": sum(r["success"] for r in sel) / n if n else None,
                            "spl": sum(r["spl"] for r in sel) / n if n else None,
                            "steps": sum(r["steps"] for r in sel) / n if n else None}
    by = {(_qkey(r), r["condition"]): r["success"] for r in records if not r["changed"]}
    keys = {k for k, _ in by}
    out["unchanged_worse"] = sum(1 for k in keys if by.get((k, "original")) and by.get((k, "memory")) is False)
    out["unchanged_better"] = sum(1 for k in keys if by.get((k, "original")) is False and by.get((k, "memory")))
    changed = [r for r in records if r["changed"] and r["condition"] == "memory"]
    out["memory_right"] = sum(r["memory_right"] for r in changed) / len(changed) if changed else None
    return out


def _qkey(r: dict) -> tuple:
    return r["episode_id"], r["owner"], r["category"]


def _pct(v) -> str:
    return "n/a" if v is None else f"{100 * v:.1f}"


def write_dynamic_find_report(out_dir: Path, records: Sequence[dict], meta: dict) -> Path:
    s = summarize_dynamic_find(records)
    lines = [f"# Navigation after ownership changes: {meta.get('method')} with encoder {meta.get('encoder')}", ""]
    lines += [f"- **{k}**: {v}" for k, v in meta.items()]
    lines += ["", f"{s['homes']} homes, {s['episodes']} episodes; {s['changed']['queries']} changed and "
                  f"{s['unchanged']['queries']} unchanged queries; the memory names the right targets for "
                  f"{_pct(s['memory_right'])} % of the changed ones.", "",
              "| queries | description read | SR | SPL | mean steps |", "|---|---|---:|---:|---:|"]
    for part in ("changed", "unchanged"):
        for c in CONDITIONS:
            f = s[part][c]
            steps = "n/a" if f["steps"] is None else f"{f['steps']:.0f}"
            lines.append(f"| {part} | {CONDITION_LABELS[c]} | {_pct(f['sr'])} | {_pct(f['spl'])} | {steps} |")
    lines += ["", f"Unchanged queries worse / better with the memory's summary than with the original: "
                  f"{s['unchanged_worse']} / {s['unchanged_better']}.", "",
              "| home | query | changed | events | condition | success | SPL | steps |",
              "|---|---|---|---|---|---|---:|---:|"]
    for r in sorted(records, key=lambda r: (r["episode_id"], r["query"], CONDITIONS.index(r["condition"]))):
        lines.append(f"| {r['scene_id']} | {r['query']} | {r['changed']} | {', '.join(r['kinds']) or '-'} | "
                     f"{r['condition']} | {r['success']} | {r['spl']:.2f} | {r['steps']} |")
    path = Path(out_dir) / "report.md"
    write_file(path, "\n".join(lines) + "\n")
    return path

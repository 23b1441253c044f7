"""Two crop-tower checkpoints on the same POG frames, under several cameras and both summary styles.

Usage: .venv/bin/python scripts/tower_compare.py FIRST_SEED N_HOUSEHOLDS OUT_JSON CANDIDATE_CKPT [CONDITIONS] [--episode-seed N]
       .venv/bin/python scripts/tower_compare.py table METHOD OUT.json [OUT.json ...]   (pooled table)

Episodes are drawn per household with one episode seed, by default FIRST_SEED (the convention of
``generate_episode_set``): households 3-5 run as ``3 3`` get other episodes than the same households
inside ``0 9``. ``--episode-seed`` fixes it, so batches of one set can be run apart; the seed is
recorded in OUT_JSON, and the pooled table only compares runs of the same episodes.

CANDIDATE_CKPT ``-``: no candidate (the shipped tower and the ORACLE only), e.g. to see which part of
a camera costs the shipped tower: ``- "ideal,d435,d435[depth],d435[gains],d435[rgb_noise],d435[blur]"``.

CONDITIONS (default ``ideal,d435,ideal:height_m=1.25,ideal:hfov_deg=69``): camera presets of
personal/sim/sensor_model.py (``preset[component+...]`` for some components of one), each optionally
with ``:overrides``. Per condition and household one
pre-exploration (frontier explorer, 320x240) is mapped with the shipped ``lit`` tower, the candidate
(``lit@candidate``) and the ORACLE from the same frames; the households' episodes (3 splits x 10) are
grounded on each map with verbatim and varied summaries. Writes
{condition: {style: {encoder: {method: SR@top-1 total}}}} after every condition (partial results
survive an interrupted run) and prints one line per condition.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from personal.grounding.eval.pog import summarize
from personal.grounding.eval.pog_run import explore_scene_maps, generate_episode_set, make_components
from personal.grounding.pipeline import evaluate_offline
from personal.runs.output import write_file
from personal.sim.sensor_model import sensor_spec

METHODS = ["qs", "rpg", "rpg-owner", "rpg-scene"]
CONDITIONS = "ideal,d435,ideal:height_m=1.25,ideal:hfov_deg=69"
MAPPED = ("lit", "lit@candidate", "oracle")


def main(first: int, n: int, out: str, candidate: str, conditions: list[str], episode_seed: int | None = None) -> dict:
    episode_seed = first if episode_seed is None else episode_seed
    styles = {style: generate_episode_set(n, ("easy", "medium", "hard"), 10, first, episode_seed=episode_seed,
                                          summary_style=style)
              for style in ("verbatim", "varied")}
    scenes, verbatim = styles["verbatim"]
    mapped = MAPPED if candidate != "-" else tuple(m for m in MAPPED if "@" not in m)
    components = {name: make_components(name.split("@")[0], "builtin", candidate if "@" in name else "")
                  for name in mapped}
    table: dict = {"households": [first, first + n - 1], "episode_seed": episode_seed, "episodes": len(verbatim),
                   "candidate": candidate}
    # every camera checked before any work, as `personal pog robustness` does (a bad last one would end an hour in)
    specs = {cond: sensor_spec(*cond.partition(":")[::2]) for cond in conditions}
    for cond, spec in specs.items():
        maps: dict = {name: {} for name in mapped}
        t0 = time.time()
        for sid, scene in scenes.items():
            start = next(e for e in verbatim if e.scene_id == sid)
            built, info = explore_scene_maps(scene, list(mapped), 0.5, start, 320, 240, max_steps=2500, sensor=spec,
                                             model_paths={"lit@candidate": candidate})
            for name, (view, _) in built.items():
                maps[name][sid] = view
            print(f"{cond} {sid}: {info['steps']} steps, {info['seconds']} s", flush=True)
        row = {}
        for style, (_, eps) in styles.items():
            for name in mapped:
                enc, ext = components[name]
                res = evaluate_offline(eps, scenes, maps[name], ext, enc, METHODS)
                row.setdefault(style, {})[name] = {m: v["total"]["sr_top1"] for m, v in summarize(res, METHODS)["methods"].items()}
        table[cond] = row
        write_file(Path(out), json.dumps(table, indent=1))
        print(f"== {cond} ({time.time() - t0:.0f} s): " + "; ".join(
            f"{style} rpg-scene " + " / ".join(f"{name} {row[style][name]['rpg-scene']:.1f}" for name in mapped)
            for style in row), flush=True)
    return table


def pooled_table(method: str, paths: list[str]) -> str:
    """One markdown table of ``method``'s SR@top-1 pooled over several runs' households (weighted by
    episodes), per condition, style and map; each condition's ratio to the ideal camera is taken on
    the households that ran both."""
    runs = [json.loads(Path(p).read_text()) for p in paths]
    # a run may hold several conditions, and the ideal camera may be in another run of the same episodes:
    # the same households with the same episode seed (runs before it was recorded used their first household)
    by_episode_set: dict = {}
    for run in runs:
        key = (*run["households"], run.get("episode_seed", run["households"][0]))
        by_episode_set.setdefault(key, {"episodes": run["episodes"]}).update(
            {c: r for c, r in run.items() if isinstance(r, dict) and "verbatim" in r})
    for a in by_episode_set:
        for b in by_episode_set:
            if a < b and a[2] == b[2] and a[0] <= b[1] and b[0] <= a[1]:  # the same episodes counted twice
                print(f"warning: households {a[0]}-{a[1]} and {b[0]}-{b[1]} share episode seed {a[2]}: "
                      "their common households' episodes are pooled twice", file=sys.stderr)
    conditions = list(dict.fromkeys(c for h in by_episode_set.values() for c in h if c != "episodes"))

    def pool(cond: str, style: str, name: str, need: tuple = ()) -> tuple[float, int]:
        tot = n = 0
        for h in by_episode_set.values():
            if cond in h and all(c in h for c in need) and name in h[cond].get(style, {}):  # "-": no candidate
                tot, n = tot + h[cond][style][name][method] * h["episodes"], n + h["episodes"]
        return (tot / n if n else float("nan")), n

    lines = ["| camera | summaries | episodes | shipped `lit` | candidate | ORACLE | shipped / its ideal | candidate / its ideal |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for cond in conditions:
        for style in ("verbatim", "varied"):
            (lit, n), (cand, _), (orc, _) = (pool(cond, style, m) for m in MAPPED)
            if not n:  # that style was not run
                continue
            ratio = []
            for name in ("lit", "lit@candidate"):
                v, _ = pool(cond, style, name, ("ideal",))
                base, _ = pool("ideal", style, name, (cond,))
                ratio.append(f"{100 * v / base:.0f} %" if base == base and base else "-")  # nan: not run
            fig = lambda v: f"{v:.1f}" if v == v else "–"  # noqa: E731 - nan: that map was not run
            lines.append(f"| {cond} | {style} | {n} | {fig(lit)} | {fig(cand)} | {fig(orc)} | {ratio[0]} | {ratio[1]} |")
    return "\n".join(lines) + "\n"


def _arguments(argv: list[str]):
    import argparse

    ap = argparse.ArgumentParser(description="Two crop towers on the same POG frames (see the module docstring).")
    ap.add_argument("first", type=int, help="first household seed")
    ap.add_argument("n", type=int, help="number of households")
    ap.add_argument("out", help="result JSON (rewritten after every condition)")
    ap.add_argument("candidate", help="candidate checkpoint, or - for none")
    ap.add_argument("conditions", nargs="?", default=CONDITIONS, help=f"comma-separated cameras (default {CONDITIONS})")
    ap.add_argument("--episode-seed", type=int, default=None, help="episode seed (default: the first household's)")
    return ap.parse_args(argv)


if __name__ == "__main__":
    if sys.argv[1:2] == ["table"]:
        print(pooled_table(sys.argv[2], sys.argv[3:]), end="")
        sys.exit(0)
    a = _arguments(sys.argv[1:])
    main(a.first, a.n, a.out, a.candidate, a.conditions.split(","), a.episode_seed)

"""POG SR@top-1 with verbatim vs varied scene summaries (issue 30), learned `lit` beside the ORACLE.

Usage: .venv/bin/python scripts/pog_summary_styles.py FIRST_SEED N_HOUSEHOLDS OUT_JSON [METHODS]
Each household is pre-explored once (frontier explorer + MapBuilder, 320x240, ideal camera; the
same frames mapped with `lit` and the ORACLE, as `personal pog compare`); the maps are cached in
runs/pog_summary_styles_maps/ so a rerun (another method variant) grounds the same maps. Both summary styles are
grounded on those maps: same episodes, queries and targets, only the summary's wording differs.
Prints and writes {style: {encoder: {method: {split: SR@top-1}}}}.
"""
from __future__ import annotations

import json
import pickle
import sys
from pathlib import Path

from personal.grounding.eval.pog import summarize
from personal.grounding.eval.pog_run import explore_scene_maps, generate_episode_set, make_components
from personal.grounding.pipeline import evaluate_offline

CACHE = Path("runs/pog_summary_styles_maps")
ENCODERS = ("lit", "oracle")


def household_maps(scene, first_episode) -> dict:
    x, y, _ = first_episode.start_position  # the exploration starts there (episode ids do not name the episode seed)
    path = CACHE / f"{scene.scene_id}_from_{x:.3f}_{y:.3f}.pkl"
    if path.exists():
        return pickle.loads(path.read_bytes())
    built, info = explore_scene_maps(scene, list(ENCODERS), 0.5, first_episode, 320, 240, max_steps=2500)
    print(f"{scene.scene_id}: {info}", flush=True)
    maps = {name: view for name, (view, _) in built.items()}
    CACHE.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(maps))
    return maps


def main(first: int, n: int, out: str, methods: list[str]) -> dict:
    scenes, verbatim = generate_episode_set(n, ("easy", "medium", "hard"), 10, first)
    _, varied = generate_episode_set(n, ("easy", "medium", "hard"), 10, first, summary_style="varied")
    maps = {sid: household_maps(scene, next(e for e in verbatim if e.scene_id == sid)) for sid, scene in scenes.items()}
    table: dict = {}
    for style, eps in (("verbatim", verbatim), ("varied", varied)):
        for name in ENCODERS:
            enc, ext = make_components(name, "builtin")
            res = evaluate_offline(eps, scenes, {sid: m[name] for sid, m in maps.items()}, ext, enc, methods)
            s = summarize(res, methods)["methods"]
            table.setdefault(style, {})[name] = {m: {c: v["sr_top1"] for c, v in s[m].items()} for m in methods}
            print(style, name, {m: table[style][name][m]["total"] for m in methods}, flush=True)
    for name in ENCODERS:
        for m in methods:
            v, w = table["verbatim"][name][m]["total"], table["varied"][name][m]["total"]
            print(f"{name:7s} {m:16s} verbatim {v:5.1f}  varied {w:5.1f}  varied/verbatim {100 * w / v if v else float('nan'):5.1f} %")
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(json.dumps({"households": [first, first + n - 1], "episodes": len(verbatim), "sr_top1": table}, indent=1))
    return table


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3],
         (sys.argv[4] if len(sys.argv) > 4 else "qs,rpg,rpg-owner,rpg-scene,rpg-owner-scene").split(","))

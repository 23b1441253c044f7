"""Why a PAN detection fails under one camera and not another: two sets of blind cell records
(`personal pan calibrate --relative --sensor ...`, the same validation episodes) side by side.

Usage: .venv/bin/python scripts/pan_cells_compare.py RUN_A RUN_B [RADIUS_M]

Per episode, at the blind run's last step (EVALUATOR-ONLY: the target boxes are ground truth):
confident feature cells in all; those within RADIUS_M (default 0.5, the sweep's hit radius) of a
target's footprint; the best RPG-owner value, phrase similarity and scene-relative margin among the
target's cells, and the best RPG-owner value elsewhere. Then the medians over episodes. It tells
whether the map holds fewer cells of the target (mapping / confidence) or holds them with lower
scores (the tower's embeddings), docs/navigation.md "PAN ... under sensor:=d435".
"""
from __future__ import annotations

import sys

import numpy as np


def episode_figures(rec: dict, boxes, radius: float) -> dict:
    from personal.navigation.eval.pan import distance_to_boxes

    a = rec["arrays"]
    last = a["step"] == a["step"].max() if len(a["step"]) else np.zeros(0, bool)
    x, y = a["x"][last], a["y"][last]
    near = np.array([distance_to_boxes(float(xi), float(yi), boxes) <= radius for xi, yi in zip(x, y)], bool)

    def best(key, mask):
        v = a[key][last][mask]
        v = v[np.isfinite(v)]
        return float(v.max()) if len(v) else float("nan")

    return {"cells": int(last.sum()), "target_cells": int(near.sum()),
            "target_value": best("v_rpgo", near), "target_phrase": best("psim_rpgo", near),
            "target_margin": best("rel_rpgo", near), "other_value": best("v_rpgo", ~near)}


def main(run_a: str, run_b: str, radius: float = 0.5) -> None:
    from personal.navigation.eval.pan_calibrate import _goal_boxes, load_cell_records

    runs = {}
    for run in (run_a, run_b):
        recs = load_cell_records(run)
        boxes = _goal_boxes(recs)
        runs[run] = {r["episode_id"]: episode_figures(r, boxes[r["episode_id"]], radius) for r in recs}
    common = sorted(set(runs[run_a]) & set(runs[run_b]))
    keys = ("cells", "target_cells", "target_value", "target_phrase", "target_margin", "other_value")
    print(f"{len(common)} episodes in both; cells within {radius} m of a target at the last step (EVALUATOR-ONLY)")
    print("| episode | " + " | ".join(f"{k} A / B" for k in keys) + " |")
    print("|---|" + "---:|" * len(keys))
    for e in common:
        fa, fb = runs[run_a][e], runs[run_b][e]
        print(f"| {e} | " + " | ".join(f"{fa[k]:.3g} / {fb[k]:.3g}" for k in keys) + " |")
    print("| **median** | " + " | ".join(
        f"{np.nanmedian([runs[run_a][e][k] for e in common]):.3g} / {np.nanmedian([runs[run_b][e][k] for e in common]):.3g}"
        for k in keys) + " |")
    for run, tag in ((run_a, "A"), (run_b, "B")):
        seen = sum(runs[run][e]["target_cells"] > 0 for e in common)
        print(f"{tag} = {run}: target among the map's confident cells in {seen}/{len(common)} episodes")


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], float(sys.argv[3]) if len(sys.argv) == 4 else 0.5)

"""How far a camera's depth spreads each object proposal over PAN's feature cells.

Usage: .venv/bin/python scripts/proposal_depth_spread.py [SEEDS] [VIEWS] [PRESETS]
(defaults: 20000-20002, 12 views a household, "ideal,d435[depth]")

PAN-sized views (640x480) of generated validation households, each through every camera preset.
For the shipped crop tower's kept proposals (objectness above its threshold, as the map weighs
them): points per proposal (stride 4, as the online map back-projects), the share of points off the
proposal's median depth by more than 0.3 / 0.6 m, the std of the depth about that median, and the
0.25 m feature cells the proposal's points touch (all, with at least 5 points, and only the points
within 0.15 / 0.3 m of the median: what ``NavMapConfig.proposal_depth_tol_m`` keeps). No ground
truth is read. docs/navigation.md, "Which half of the camera".
"""
from __future__ import annotations

import random
import sys
from collections import Counter
from types import SimpleNamespace

import numpy as np

CELL_M = 0.25  # NavMapConfig.feature_resolution
TOLS = (0.15, 0.3)


def proposal_figures(groups: np.ndarray, weights: np.ndarray, points: np.ndarray, depth: np.ndarray) -> list[dict]:
    """Per kept proposal of one frame: its points' depth spread and the feature cells they touch."""
    from personal.navigation.mapper import depth_consistent

    trimmed = {tol: depth_consistent(groups, depth, tol) for tol in TOLS}  # the map's own rule
    out = []
    for g in np.unique(groups[groups >= 0]):
        if weights[g] <= 0:
            continue
        sel = groups == g
        z = depth[sel]
        off = np.abs(z - np.median(z))
        cells = Counter((int(x // CELL_M), int(y // CELL_M)) for x, y in points[sel][:, :2])
        row = {"points": int(sel.sum()), "off03": int((off > 0.3).sum()), "off06": int((off > 0.6).sum()),
               "std": float(np.std(z - np.median(z))), "cells": len(cells), "cells5": sum(v >= 5 for v in cells.values())}
        for tol, kept in trimmed.items():
            row[f"cells_{tol}"] = len({(int(x // CELL_M), int(y // CELL_M)) for x, y in points[kept == g][:, :2]})
        out.append(row)
    return out


def main(seeds: str = "20000-20002", views: int = 12, presets: str = "ideal,d435[depth]") -> None:
    from personal.mapping.projection import backproject
    from personal.models.base import make_encoder
    from personal.perception.dataset import sample_poses
    from personal.perception.splits import parse_seeds
    from personal.sim.backends.base import AgentState, CameraSpec
    from personal.sim.backends.synthetic import camera_pose
    from personal.sim.render import Renderer
    from personal.sim.sensor_model import SensorModel, sensor_spec
    from personal.world.generator import generate_scene
    from personal.world.mesh import scene_mesh

    enc = make_encoder("lit")
    cam = CameraSpec(width=640, height=480)
    K = cam.intrinsics()
    models = {p: None if p == "ideal" else SensorModel(sensor_spec(p, "", 0)) for p in presets.split(",")}
    rows: dict[str, list[dict]] = {p: [] for p in models}
    frames = 0
    for seed in parse_seeds(seeds):
        scene = generate_scene(seed)
        renderer = Renderer(scene_mesh(scene), cam, nthreads=2)
        for i, (x, y, yaw, _) in enumerate(sample_poses(scene, views, random.Random(seed))):
            T = camera_pose(AgentState(x, y, 0.0, yaw, 0.0), cam)  # level camera, as PAN's
            rgb, depth, _, _ = renderer.render_labels(T)  # the instance ids are not read
            frames += 1
            for name, model in models.items():
                d = depth if model is None else model.frame(rgb, depth, K, f"{seed}_{i}")[1]
                fp = backproject(d, K, T, min_depth=0.5, max_depth=5.0, stride=4)
                out = enc.frame_features(d, rgb, None, SimpleNamespace(K=K, T_map_camera=T, pixels=fp.pixels))
                if out is not None:
                    rows[name] += proposal_figures(out[0], out[2], fp.points, fp.depth)
    print(f"{frames} views of households {seeds}, 640x480, the shipped tower's kept proposals")
    print("| camera | proposals / view | points / proposal | off median > 0.3 m | > 0.6 m | depth std about median (m) "
          "| cells / proposal | with >= 5 points | within 0.15 m | within 0.3 m |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, rs in rows.items():
        n, pts = len(rs), sum(r["points"] for r in rs)
        mean = lambda k: sum(r[k] for r in rs) / n  # noqa: E731
        print(f"| {name} | {n / frames:.1f} | {pts / n:.0f} | {sum(r['off03'] for r in rs) / pts:.3f} | "
              f"{sum(r['off06'] for r in rs) / pts:.3f} | {mean('std'):.3f} | {mean('cells'):.1f} | {mean('cells5'):.1f} | "
              f"{mean('cells_0.15'):.1f} | {mean('cells_0.3'):.1f} |")


if __name__ == "__main__":
    args = sys.argv[1:]
    main(*(args[:1] or ["20000-20002"]), *([int(args[1])] if len(args) > 1 else []), *args[2:3])

"""Proposal recall at IoU 0.5 of the RGB-D segmenter under each camera model preset.

Views are rendered in held-out households (perception test seeds, never trained on) at sampled
poses (the perception dataset's sampler: object-centric and random), then passed through each
preset's camera model (personal/sim/sensor_model.py, the same RNG seed per view for every preset)
and segmented (personal/perception/segment.py). Recall: ground-truth instances of at least 20
working pixels matched by an object proposal with IoU >= 0.5 (ground truth for scoring only);
proposals per view: object proposals (walls / floor / ceiling segments excluded).
Usage: .venv/bin/python bench/bench_segment_sensors.py [--seeds 0-2] [--views 40] [--size 320x240]
       [--presets ideal,d435,d435-harsh] [--segmenters default,no-rim,legacy]
Segmenters (one row each per preset, on the same views): ``default``; ``no-rim``: without rejoining
noise splits and reclaiming the crease band's rim (before 2026-12-07); ``legacy``: without the noise
estimate at all (before 2026-12-01).
"""
from __future__ import annotations

import os

for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[var] = "1"

import argparse  # noqa: E402
import random  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


SEGMENTERS = {"default": {}, "no-rim": {"grow_px": 0, "merge_k": 0.0}, "legacy": {"noise_aware": False}}


def render(seed: int, n: int, width: int, height: int):
    import numpy as np

    from personal.perception.dataset import sample_poses
    from personal.world.generator import generate_scene
    from personal.world.mesh import scene_mesh
    from personal.sim.backends.base import AgentState, CameraSpec, Observation
    from personal.sim.backends.synthetic import camera_pose
    from personal.sim.render import Renderer

    scene = generate_scene(seed)
    cam = CameraSpec(width=width, height=height, min_depth=0.28)  # the d435 near limit: presets clip themselves
    r = Renderer(scene_mesh(scene), cam, nthreads=1)
    z = scene.floors[0].z
    views = []
    for x, y, yaw, pitch in sample_poses(scene, n, random.Random(seed)):
        st = AgentState(x, y, z, yaw, pitch)
        T = camera_pose(st, cam)
        rgb, depth, ids = r.render(T)
        views.append(Observation(rgb=rgb, depth=depth, instance_ids=ids, state=st, T_map_camera=T, K=r.K.copy()))
    return views, np.asarray(r.K)


def main() -> None:
    import numpy as np

    from personal.perception import segment as S
    from personal.perception.splits import parse_seeds
    from personal.sim.sensor_model import PRESETS, SensorModel

    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", default="0-2")
    ap.add_argument("--views", type=int, default=40)
    ap.add_argument("--size", default="320x240")
    ap.add_argument("--presets", default="ideal,d435,d435-harsh")
    ap.add_argument("--segmenters", default="default,no-rim", help="of: " + ", ".join(SEGMENTERS))
    a = ap.parse_args()
    w, h = (int(v) for v in a.size.split("x"))
    seeds = parse_seeds(a.seeds)
    names = a.segmenters.split(",")
    unknown = [n for n in names if n not in SEGMENTERS]
    if unknown:
        ap.error(f"--segmenters: unknown {unknown}; known: {', '.join(SEGMENTERS)}")
    t0 = time.perf_counter()
    data = {s: render(s, a.views, w, h) for s in seeds}
    print(f"rendered {len(seeds)} households x {a.views} views at {w}x{h} in {time.perf_counter() - t0:.1f} s; "
          f"segmenters {', '.join(names)}")
    print("| preset | segmenter | recall@IoU0.5 | instances | object proposals / view | ms / view |")
    print("|---|---|---:|---:|---:|---:|")
    for name, seg_name in ((p, n) for p in a.presets.split(",") for n in names):
        spec = PRESETS[name]
        cfg = S.SegmentConfig(**SEGMENTERS[seg_name])
        hit = total = props = nviews = 0
        t = 0.0
        for s, (views, K) in data.items():
            model = SensorModel(spec)
            for k, v in enumerate(views):
                model.reset(f"{s}:{k}")
                obs = model.apply(_copy(v)) if spec.noisy else _copy(v)
                depth = obs.depth if spec.noisy else np.where(obs.depth >= 0.5, obs.depth, 0.0)  # ideal: 0.5 m clip
                t1 = time.perf_counter()
                seg = S.segment_rgbd(depth, K, obs.T_map_camera, obs.rgb, cfg=cfg)
                t += time.perf_counter() - t1
                hh, tt = S.proposal_recall(seg, v.instance_ids)
                hit, total, props, nviews = hit + hh, total + tt, props + len(seg.objects()), nviews + 1
        print(f"| {name} | {seg_name} | {hit / max(total, 1):.3f} | {total} | {props / max(nviews, 1):.1f} | {1000 * t / max(nviews, 1):.1f} |")


def _copy(obs):
    from dataclasses import replace

    return replace(obs, extras={})


if __name__ == "__main__":
    main()

"""Renderer throughput at 640x480 (RGB + depth + instance ids) on one core and on all cores.

Renders a generated household from navigable poses (random yaw, pitch in
{-30, 0, +30} deg) and prints frames/s and the stage split (ray casting,
shading = the compiled per-pixel pass: textures, patterns, materials, light, ids and depth
clipping, in ms) and CPU/wall time for both renderer modes. Numbers depend on machine load;
frames per CPU-second of a 1-thread run is the one-core rate with the load factored out.
Usage: python bench/bench_render.py [--frames 60] [--seed 0]
"""
from __future__ import annotations

import argparse
import math
import os
import random
import time

import numpy as np

from personal.world.generator import generate_scene
from personal.world.mesh import scene_mesh
from personal.sim.backends.base import Action, AgentState, CameraSpec
from personal.sim.backends.synthetic import SyntheticBackend, camera_pose
from personal.sim.navgrid import NavGrid
from personal.sim.render import Renderer


def _poses(scene, n: int, seed: int) -> list[np.ndarray]:
    grid = NavGrid(scene, 0)
    iy, ix = np.nonzero(grid.free)
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        k = rng.randrange(len(iy))
        x, y = grid.cell_center(int(iy[k]), int(ix[k]))
        pitch = math.radians(rng.choice((-30, 0, 30)))
        out.append(camera_pose(AgentState(x, y, grid.floor_z, rng.uniform(-math.pi, math.pi), pitch), CameraSpec()))
    return out


def _run(renderer: Renderer, poses) -> dict[str, float]:
    renderer.render(poses[0])  # warm-up
    stages = {"raycast": 0.0, "shading": 0.0}
    t0, c0 = time.perf_counter(), time.process_time()
    for T in poses:
        renderer.render(T)
        for k, v in renderer.last_timing.items():
            stages[k] += v
    total = time.perf_counter() - t0
    n = len(poses)
    # CPU time / wall time: ~1 means one core busy (checks that nthreads=1 really is one core)
    busy = (time.process_time() - c0) / total
    return {"fps": n / total, "ms": 1e3 * total / n, "cores_busy": busy, **{k: 1e3 * v / n for k, v in stages.items()}}


def step_rate(scene, n: int, threads: int, camera: CameraSpec | None = None) -> tuple[float, float]:
    """Simulator steps (move + render RGB, depth, ids) from the central free cell, on a seeded random
    walk: (steps per wall second, steps per CPU-second of this process)."""
    b = SyntheticBackend(camera=camera, render_threads=threads)
    b.load_scene(scene)
    grid = NavGrid(scene, 0)
    iy, ix = np.nonzero(grid.free)
    x, y = grid.cell_center(int(iy[len(iy) // 2]), int(ix[len(ix) // 2]))
    b.reset(state=AgentState(x, y, grid.floor_z, 0.0))
    rng = random.Random(1)
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(n):
        b.step(rng.choice((Action.MOVE_FORWARD, Action.MOVE_FORWARD, Action.TURN_LEFT, Action.TURN_RIGHT)))
    return n / (time.perf_counter() - t0), n / (time.process_time() - c0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=60)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    scene = generate_scene(args.seed)
    mesh = scene_mesh(scene)
    poses = _poses(scene, args.frames, args.seed)
    cores = os.cpu_count() or 1
    print(f"scene {scene.scene_id}: {len(scene.rooms)} rooms, {len(scene.objects)} objects, "
          f"{mesh.n_triangles} triangles; {args.frames} frames at 640x480 (RGB + depth + ids); {cores} cores")
    print(f"{'mode':<9} {'threads':>7} {'fps':>7} {'ms/frame':>9} {'raycast':>8} {'shading':>8} {'cpu/wall':>8} {'frames/cpu-s':>12}")
    for mode in ("adaptive", "exact"):
        for threads, label in ((1, "1"), (0, f"all={cores}")):
            r = _run(Renderer(mesh, CameraSpec(), nthreads=threads, mode=mode), poses)
            print(f"{mode:<9} {label:>7} {r['fps']:7.1f} {r['ms']:9.2f} {r['raycast']:8.2f} {r['shading']:8.2f} "
                  f"{r['cores_busy']:8.2f} {r['fps'] / r['cores_busy']:12.1f}")
    print(f"SyntheticBackend.step (adaptive, 1 thread, incl. dynamics + Observation): "
          f"{step_rate(scene, args.frames, 1)[0]:.1f} steps/s")


if __name__ == "__main__":
    main()

"""Map integration rate on one core, and the share of time per stage.

Frames are rendered first by the synthetic simulator (a walk through a generated
household), then integrated by ``MapBuilder``: back-projection, occupancy grid, features,
feature-map fusion, cloud. Encoders: ``lit`` (default; RGB-D proposals embedded by the learned crop
tower, no ground truth — its time per frame is the "features" stage, targets: >= 15 frames/s at 320x240 and
<= 30 ms a frame for the encoder) or ``oracle`` (ORACLE caption lookup from instance ids,
caption embeddings cached up front; targets >= 30 frames/s at 640x480). Printed for the
feature map at 1 m and 0.1 m cells (0.5 m for lit), at pixel stride 2 (the default) and 1.
Only the integration is timed, not the rendering. Threads are limited to one
(OMP/MKL/OpenBLAS, torch) to measure one core.
Usage: .venv/bin/python bench/bench_mapping.py [--encoder lit|oracle] [--size 320x240] [--frames 60] [--seed 3]
"""
from __future__ import annotations

import os

for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[var] = "1"

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402


sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def render_walk(seed: int, n: int, width: int = 640, height: int = 480):
    from personal.world.generator import generate_scene
    from personal.sim.backends.base import Action, AgentState, CameraSpec
    from personal.sim.backends.synthetic import SyntheticBackend

    scene = generate_scene(seed)
    be = SyntheticBackend(camera=CameraSpec(width=width, height=height))
    be.load_scene(scene)
    room = scene.rooms[0]
    x, y = be.snap_to_navigable((room.bounds[0] + room.bounds[2]) / 2, (room.bounds[1] + room.bounds[3]) / 2)
    obs = be.reset(state=AgentState(x, y, 0.0, 0.0))
    frames = [obs]
    pattern = [Action.TURN_LEFT, Action.MOVE_FORWARD, Action.MOVE_FORWARD, Action.TURN_RIGHT, Action.MOVE_FORWARD]
    for i in range(n - 1):
        frames.append(be.step(pattern[i % len(pattern)]))
    return scene, frames


def run(frames, encoder, feature_resolution: float, stride: int):
    from personal.mapping.pipeline import MapBuilder, MapConfig

    mb = MapBuilder(MapConfig(feature_resolution=feature_resolution, stride=stride), feature_dim=encoder.dim,
                    encoder_name=encoder.name, features=encoder.frame_features)
    o = frames[0]
    mb.integrate(o.depth, o.K, o.T_map_camera, rgb=o.rgb, instance_ids=o.instance_ids)  # warm-up
    mb.timer.total.clear()
    mb.timer.frames = 0
    t0 = time.perf_counter()
    for o in frames:
        mb.integrate(o.depth, o.K, o.T_map_camera, rgb=o.rgb, instance_ids=o.instance_ids, agent_xy=(o.state.x, o.state.y))
    wall = time.perf_counter() - t0
    return len(frames) / wall, mb.timer.summary(), mb


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--frames", type=int, default=60)
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--encoder", choices=("lit", "oracle"), default="lit")
    ap.add_argument("--size", default="", help="WIDTHxHEIGHT (default 320x240 for lit, 640x480 for oracle)")
    args = ap.parse_args()
    size = args.size or ("320x240" if args.encoder == "lit" else "640x480")
    width, height = (int(v) for v in size.lower().split("x"))

    t = time.perf_counter()
    scene, frames = render_walk(args.seed, args.frames, width, height)
    print(f"rendered {len(frames)} frames {width}x{height} of {scene.scene_id} in {time.perf_counter() - t:.1f} s (not timed below)")
    if args.encoder == "oracle":
        from personal.models.oracle import OracleCaptionEncoder, captions_from_scene

        enc = OracleCaptionEncoder(captions_from_scene(scene))
        enc.encode_text(list(enc.captions.values()))  # every caption embedded once, up front
        print(f"encoder: {enc.name} (ORACLE: ground-truth instance ids + captions)")
        resolutions = (1.0, 0.1)
    else:
        import torch

        torch.set_num_threads(1)
        from personal.models.base import make_encoder

        enc = make_encoder("lit")
        print(f"encoder: {enc.name} (learned crop tower on RGB-D proposals; crops "
              f"{enc.config.image_size}x{enc.config.image_size}, at most {enc.max_proposals} a frame)")
        o = frames[0]
        enc.dense_regions(o.rgb, o.depth, o.K, o.T_map_camera)
        seg_s, n_prop = time.perf_counter(), 0
        for o in frames:
            n_prop += min(len(enc.segments(o.depth, o.K, o.T_map_camera).objects()), enc.max_proposals)
        n = len(frames)
        seg_s = (time.perf_counter() - seg_s) / n
        t, c = time.perf_counter(), time.process_time()
        for o in frames:
            enc.dense_regions(o.rgb, o.depth, o.K, o.T_map_camera)
        wall, cpu = (time.perf_counter() - t) / n, (time.process_time() - c) / n
        print(f"encoder alone (proposals + crops + tower): {1000 * wall:.1f} ms/frame wall, {1000 * cpu:.1f} ms/frame CPU "
              f"(one thread; CPU time = the wall time on an idle core; target <= 30); of which proposals "
              f"{1000 * seg_s:.1f} ms; {n_prop / n:.1f} proposals a frame")
        resolutions = (0.5,)
    print(f"{'feature cell':>12} {'stride':>6} {'frames/s':>9} {'ms/frame':>9}  per-stage ms/frame (share)")
    for res in resolutions:
        for stride in (2, 1):
            fps, stages, mb = run(frames, enc, res, stride)
            total = sum(stages.values())
            parts = "  ".join(f"{k} {v:.2f} ({100 * v / total:.0f}%)" for k, v in stages.items())
            print(f"{res:>10.2f} m {stride:>6d} {fps:>9.1f} {1000 / fps:>9.2f}  {parts}")
    fm = mb.feature_map
    print(f"feature map {res} m: {fm.geometry.shape[0]}x{fm.geometry.shape[1]}x{fm.dim} "
          f"({fm.embeddings.nbytes / 1e6:.0f} MB), occupancy {mb.occupancy.geometry.shape} at {mb.occupancy.resolution} m")


if __name__ == "__main__":
    main()

"""``personal perception dataset``: views of generated households for training and evaluating
image encoders.

Per household one ``<scene_id>.npz`` with N views rendered at 2x the stored size and
area-downsampled (as the encoder downsamples a camera frame): ``rgb`` (N, H, W, 3) uint8,
``depth`` (N, H, W) float16 metres, ``ids`` (N, H, W) int32 instance ids (0 = structure),
``structure`` (N, H, W) uint8 (``personal.world.mesh.STRUCTURE_CLASSES``: object, wall, floor,
ceiling, door), ``poses`` (N, 4, 4) camera -> map, and ``objects`` (JSON: instance id, caption,
category). ``dataset.json`` indexes the shards. Views: 60 % look at a random object from 0.7-3 m
(small objects seen close), 40 % from random navigable poses; pitch 0 or -30 degrees.

Instance ids, masks and captions are training labels only: the encoder never sees them.
"""
from __future__ import annotations

import json
import math
import random
import time
from pathlib import Path

import numpy as np

from personal.models.imaging import resize_area

FORMAT_VERSION = 1


def _camera(width: int, height: int):
    from sim_bridge.backends.base import CameraSpec

    return CameraSpec(width=width, height=height)


def sample_poses(scene, n: int, rng: random.Random, floor: int = 0) -> list[tuple[float, float, float, float]]:
    """(x, y, yaw, pitch) on navigable cells: object-centric views and random ones."""
    from sim_bridge.navgrid import NavGrid

    grid = NavGrid(scene, floor)
    iy, ix = np.nonzero(grid.free)
    if len(iy) == 0:
        raise ValueError(f"scene {scene.scene_id}: no navigable cell on floor {floor}")
    cells = np.array([grid.cell_center(int(a), int(b)) for a, b in zip(iy, ix)])
    objs = [o for o in scene.objects if o.floor == floor]
    poses = []
    while len(poses) < n:
        pitch = math.radians(rng.choice((0, 0, -30)))
        if objs and rng.random() < 0.6:
            o = rng.choice(objs)
            d = np.hypot(cells[:, 0] - o.box.center[0], cells[:, 1] - o.box.center[1])
            near = np.flatnonzero((d > 0.7) & (d < 3.0))
            if len(near) == 0:
                continue
            x, y = cells[near[rng.randrange(len(near))]]
            yaw = math.atan2(o.box.center[1] - y, o.box.center[0] - x) + math.radians(rng.uniform(-20, 20))
            if o.box.center[2] < 0.5 and d[near].min() < 1.8:
                pitch = math.radians(-30)
        else:
            x, y = cells[rng.randrange(len(cells))]
            yaw = rng.uniform(-math.pi, math.pi)
        poses.append((float(x), float(y), yaw, pitch))
    return poses


def render_views(scene, poses, width: int, height: int, scale: int = 2) -> dict[str, np.ndarray]:
    """Views at (height, width), rendered at ``scale`` x that size and area-downsampled."""
    from personal.world.mesh import scene_mesh
    from sim_bridge.backends.base import AgentState
    from sim_bridge.backends.synthetic import camera_pose
    from sim_bridge.render import Renderer

    cam = _camera(width * scale, height * scale)
    r = Renderer(scene_mesh(scene), cam, nthreads=1)
    out = {k: [] for k in ("rgb", "depth", "ids", "structure", "poses")}
    z = scene.floors[0].z
    for x, y, yaw, pitch in poses:
        T = camera_pose(AgentState(x, y, z, yaw, pitch), cam)
        rgb, depth, ids, cls = r.render_labels(T)
        out["rgb"].append(resize_area(rgb, height, width))
        out["depth"].append(depth[::scale, ::scale].astype(np.float16))
        out["ids"].append(ids[::scale, ::scale].astype(np.int32))
        out["structure"].append(cls[::scale, ::scale])
        out["poses"].append(T.astype(np.float32))
    return {k: np.stack(v) for k, v in out.items()}


def write_dataset(out_dir: str | Path, seeds, views_per_scene: int = 200, width: int = 160, height: int = 120,
                  seed: int = 0, allow_eval_seeds: bool = False, progress=print) -> Path:
    """Render ``views_per_scene`` views of each household ``seeds`` into ``out_dir``."""
    from personal.perception.splits import check_training_seeds
    from personal.world.generator import generate_scene

    seeds = list(seeds)
    if not allow_eval_seeds:
        check_training_seeds(seeds)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    index = {"version": FORMAT_VERSION, "width": width, "height": height, "views_per_scene": views_per_scene,
             "seeds": seeds, "structure_classes": ["object", "wall", "floor", "ceiling", "door"], "scenes": []}
    t0 = time.perf_counter()
    for k, s in enumerate(seeds):
        scene = generate_scene(s)
        rng = random.Random(f"views:{s}:{seed}")
        views = render_views(scene, sample_poses(scene, views_per_scene, rng), width, height)
        objects = [{"instance_id": o.instance_id, "caption": o.caption, "category": o.category} for o in scene.objects]
        path = out / f"{scene.scene_id}.npz"
        np.savez_compressed(path, objects=np.array(json.dumps(objects)), **views)
        index["scenes"].append({"scene_id": scene.scene_id, "seed": s, "file": path.name, "n_views": views_per_scene})
        progress(f"dataset: {k + 1}/{len(seeds)} households ({scene.scene_id}, {views_per_scene} views, "
                 f"{time.perf_counter() - t0:.0f} s)")
    (out / "dataset.json").write_text(json.dumps(index, indent=1))
    return out


class DatasetError(ValueError):
    pass


def load_dataset(path: str | Path) -> tuple[dict, list[dict]]:
    """(index, shards) where each shard holds the arrays and ``objects`` of one household."""
    root = Path(path)
    index_path = root / "dataset.json"
    if not index_path.exists():
        raise DatasetError(f"{index_path}: missing (write one with `personal perception dataset`)")
    try:
        index = json.loads(index_path.read_text())
    except ValueError as exc:
        raise DatasetError(f"{index_path}: not JSON ({exc})") from exc
    shards = []
    for entry in index.get("scenes", []):
        p = root / entry["file"]
        try:
            with np.load(p) as d:
                shard = {k: d[k] for k in ("rgb", "ids", "structure", "depth", "poses")}
                shard["objects"] = json.loads(str(d["objects"]))
        except (OSError, KeyError, ValueError) as exc:
            raise DatasetError(f"{p}: unreadable shard ({exc})") from exc
        shard["scene_id"], shard["seed"] = entry["scene_id"], entry["seed"]
        shards.append(shard)
    if not shards:
        raise DatasetError(f"{index_path}: no households listed")
    return index, shards

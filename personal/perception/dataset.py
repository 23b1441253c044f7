"""``personal perception dataset``: views of generated households for training and evaluating
the crop tower, with the proposals the inference path would make on them.

Per household one ``<scene_id>.npz``:

- views: ``rgb`` (N, H, W, 3) uint8 (H x W = 240 x 320 by default, the crop tower's working
  colour resolution), ``depth`` (N, h, w) float16 metres, ``ids`` (N, h, w) int32 instance ids
  (0 = structure), ``structure`` (N, h, w) uint8 (``personal.world.mesh.STRUCTURE_CLASSES``:
  object, wall, floor, ceiling, door) at the segmenter's working resolution h x w (the render
  subsampled, as the segmenter subsamples a camera's depth), ``poses`` (N, 4, 4) camera -> map;
- proposals: the object proposals of :func:`personal.perception.segment.segment_rgbd` on every
  view (from depth only) and their crops (:mod:`personal.perception.crops`): ``crops``
  (C, S, S, 3) uint8, ``crop_masks`` (C, S, S/8) packed bits, ``crop_view`` (C,), and the
  training target of each crop: ``crop_labels`` / ``crop_counts`` (C, 4), the four labels with
  the most pixels in the segment (instance id > 0; structure -1 wall, -2 floor, -3 ceiling,
  -4 door; 0 = empty slot) and their pixel counts;
- ``objects`` (JSON: instance id, caption, category).

``dataset.json`` indexes the shards and holds the working intrinsics ``K`` (h x w). Views:
60 % look at a random object from 0.7-3 m (small objects seen close), 40 % from random
navigable poses; pitch 0 or -30 degrees.

Camera randomisation (``randomise=CameraRandomisation()``, ``--randomise``): per household a few
camera rigs (``rigs``, each its own horizontal field of view), per view a camera height, a mounting
pitch and a sensor preset of :mod:`personal.sim.sensor_model` (ideal / d435 / d435-harsh: depth
noise and holes, exposure, white balance, read noise, each view its own draw); the proposals are
then made on the sensor's full-resolution depth, as at inference. Each view's camera is stored
(``cam_height``, ``cam_hfov``, ``cam_pitch``, ``cam_preset``, ``view_K``) and the distribution in
``dataset.json`` (``randomise``). Without it the views are the renderer's ideal 0.88 m / 79° camera.

Instance ids, masks and captions are training labels and evaluation ground truth only: the
segmenter and the encoder never see them.
"""
from __future__ import annotations

import json
import math
import random
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np

FORMAT_VERSION = 2
N_TARGET_LABELS = 4
STRUCTURE_LABEL = {1: -1, 2: -2, 3: -3, 4: -4}  # structure class -> crop label (wall, floor, ceiling, door)


@dataclass(frozen=True)
class CameraRandomisation:
    """The distribution of the camera over a randomised dataset's views."""

    height_m: tuple[float, float] = (0.6, 1.4)  # camera height above the floor, uniform
    hfov_deg: tuple[float, float] = (60.0, 90.0)  # per rig, uniform
    pitch_deg: tuple[float, float] = (-10.0, 5.0)  # mounting pitch added to the view's tilt, uniform
    presets: tuple[tuple[str, float], ...] = (("ideal", 0.34), ("d435", 0.43), ("d435-harsh", 0.23))
    rigs: int = 3  # fields of view per household (one renderer each)

    def record(self) -> dict:
        return asdict(self)

    @classmethod
    def from_options(cls, heights: str = "", hfovs: str = "", pitches: str = "", presets: str = "") -> "CameraRandomisation":
        """The default distribution with the CLI's overrides: ranges ``"lo:hi"`` (``"1.25"`` for one
        value) and presets ``"ideal:0.5,d435:0.5"`` (weights, any positive scale)."""
        from personal.sim.sensor_model import PRESETS

        def span(text: str, name: str):
            lo, _, hi = text.partition(":")
            try:
                lo, hi = float(lo), float(hi or lo)
            except ValueError:
                raise ValueError(f"--{name}: {text!r} is not a range 'lo:hi' or one value") from None
            if lo > hi:
                raise ValueError(f"--{name}: {text!r} has its low end above its high end")
            return (lo, hi)

        changes = {}
        for text, name, field in ((heights, "heights", "height_m"), (hfovs, "hfovs", "hfov_deg"), (pitches, "pitches", "pitch_deg")):
            if text:
                changes[field] = span(text, name)
        if presets:
            pairs = []
            for item in presets.split(","):
                name, _, w = item.strip().partition(":")
                if name not in PRESETS:
                    raise ValueError(f"--presets: {name!r} unknown (presets: {', '.join(PRESETS)})")
                try:
                    weight = float(w or 1.0)
                except ValueError:
                    raise ValueError(f"--presets: weight {w!r} of {name!r} is not a number") from None
                if weight <= 0:
                    raise ValueError(f"--presets: weight of {name!r} must be > 0")
                pairs.append((name, weight))
            changes["presets"] = tuple(pairs)
        return replace(cls(), **changes)


def _camera(width: int, height: int):
    from personal.sim.backends.base import CameraSpec

    return CameraSpec(width=width, height=height)


def sample_poses(scene, n: int, rng: random.Random, floor: int = 0) -> list[tuple[float, float, float, float]]:
    """(x, y, yaw, pitch) on navigable cells: object-centric views and random ones."""
    from personal.sim.navgrid import NavGrid

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


def render_views(scene, poses, width: int = 320, height: int = 240, work_width: int = 160) -> dict[str, np.ndarray]:
    """Views rendered at (height, width); depth and labels subsampled to ``work_width`` columns."""
    from personal.world.mesh import scene_mesh
    from personal.sim.backends.base import AgentState
    from personal.sim.backends.synthetic import camera_pose
    from personal.sim.render import Renderer

    cam = _camera(width, height)
    f = max(1, width // work_width)
    r = Renderer(scene_mesh(scene), cam, nthreads=1)
    out = {k: [] for k in ("rgb", "depth", "ids", "structure", "poses")}
    z = scene.floors[0].z
    for x, y, yaw, pitch in poses:
        T = camera_pose(AgentState(x, y, z, yaw, pitch), cam)
        rgb, depth, ids, cls = r.render_labels(T)
        out["rgb"].append(rgb)
        out["depth"].append(depth[::f, ::f].astype(np.float16))
        out["ids"].append(ids[::f, ::f].astype(np.int32))
        out["structure"].append(cls[::f, ::f])
        out["poses"].append(T.astype(np.float32))
    return {k: np.stack(v) for k, v in out.items()}


def render_randomised_views(scene, poses, rand: CameraRandomisation, rng: random.Random, width: int = 320,
                            height: int = 240, work_width: int = 160, seg_cfg=None, seed: int = 0) -> dict:
    """Views through randomised cameras and sensor models, with their proposals made on the
    sensor's full-resolution depth (what :func:`write_dataset` stores for one household)."""
    from personal.world.mesh import scene_mesh
    from personal.sim.backends.base import AgentState
    from personal.sim.backends.synthetic import camera_pose
    from personal.sim.render import Renderer
    from personal.sim.sensor_model import SensorModel, sensor_spec

    f = max(1, width // work_width)
    mesh = scene_mesh(scene)
    rigs = [replace(_camera(width, height), hfov_deg=rng.uniform(*rand.hfov_deg)) for _ in range(max(1, rand.rigs))]
    renderers = [Renderer(mesh, cam, nthreads=1) for cam in rigs]
    names = [n for n, _ in rand.presets]
    models = {n: SensorModel(sensor_spec(n, seed=seed)) for n in names}
    out = {k: [] for k in VIEW_KEYS + CROP_KEYS + CAMERA_KEYS}
    z = scene.floors[0].z
    for v, (x, y, yaw, pitch) in enumerate(poses):
        r = rng.randrange(len(rigs))
        cam = replace(rigs[r], height_m=rng.uniform(*rand.height_m), pitch_deg=rng.uniform(*rand.pitch_deg))
        preset = rng.choices(names, weights=[w for _, w in rand.presets])[0]
        T = camera_pose(AgentState(x, y, z, yaw, pitch), cam)
        rgb, depth, ids, cls = renderers[r].render_labels(T)
        K = renderers[r].K
        if preset != "ideal":
            rgb, depth = models[preset].frame(rgb, depth, K, f"{scene.scene_id}:{v}")
        _, which, crops, masks, labels, counts = view_proposals(rgb, depth, K, T, ids[::f, ::f], cls[::f, ::f], seg_cfg)
        Kw = K.copy()
        Kw[:2] /= f
        for key, val in (("rgb", rgb), ("depth", depth[::f, ::f].astype(np.float16)), ("ids", ids[::f, ::f].astype(np.int32)),
                         ("structure", cls[::f, ::f]), ("poses", T.astype(np.float32)), ("crops", crops),
                         ("crop_masks", np.packbits(masks, axis=-1)), ("crop_view", np.full(len(which), v, np.int32)),
                         ("crop_labels", labels), ("crop_counts", counts), ("cam_height", cam.height_m),
                         ("cam_hfov", cam.hfov_deg), ("cam_pitch", cam.pitch_deg), ("cam_preset", names.index(preset)),
                         ("view_K", Kw)):
            out[key].append(val)
    stack = set(VIEW_KEYS) | {"view_K"}
    return {k: (np.stack(v) if k in stack else np.concatenate(v) if k in CROP_KEYS else np.asarray(v))
            for k, v in out.items()}


def working_intrinsics(width: int, height: int, work_width: int = 160) -> np.ndarray:
    """K of the subsampled depth (every f-th pixel of a width x height camera)."""
    K = _camera(width, height).intrinsics()
    f = max(1, width // work_width)
    K[:2] /= f
    return K


def segment_targets(labels: np.ndarray, n_seg: int, ids: np.ndarray, structure: np.ndarray,
                    which: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(labels (N, 4) int32, counts (N, 4) float32) of segments ``which``: the ground-truth labels
    with the most pixels in each segment (instances by id, structure as -class)."""
    gt = np.where(ids > 0, ids, -structure.astype(np.int32)).reshape(-1)
    lab = labels.reshape(-1)
    on = lab >= 0
    pairs, cnt = np.unique(np.stack([lab[on], gt[on]], 1), axis=0, return_counts=True)
    out_l = np.zeros((len(which), N_TARGET_LABELS), np.int32)
    out_c = np.zeros((len(which), N_TARGET_LABELS), np.float32)
    row = {int(s): k for k, s in enumerate(which)}
    order = np.lexsort((-cnt, pairs[:, 0]))
    fill = np.zeros(len(which), np.int64)
    for (s, g), c in zip(pairs[order].tolist(), cnt[order].tolist()):
        k = row.get(s)
        if k is None or fill[k] >= N_TARGET_LABELS:
            continue
        out_l[k, fill[k]], out_c[k, fill[k]] = g if g != 0 else -4, c  # 0 (miss) cannot occur with depth > 0
        fill[k] += 1
    return out_l, out_c


def view_proposals(rgb, depth, K, T, ids, structure, seg_cfg=None):
    """Proposals of one stored view and their crops and targets (the inference path's segmenter
    and cropper)."""
    from personal.perception.crops import segment_crops
    from personal.perception.segment import segment_rgbd

    seg = segment_rgbd(depth.astype(np.float32), K, T, cfg=seg_cfg)
    which = seg.objects()
    crops, masks = segment_crops(rgb, seg, which)
    labels, counts = segment_targets(seg.labels, seg.n, ids, structure, which)
    return seg, which, crops, masks, labels, counts


def write_dataset(out_dir: str | Path, seeds, views_per_scene: int = 150, width: int = 320, height: int = 240,
                  seed: int = 0, allow_eval_seeds: bool = False, progress=print,
                  randomise: CameraRandomisation | None = None, workers: int = 1) -> Path:
    """Render ``views_per_scene`` views of each household ``seeds`` into ``out_dir`` with the
    proposals made on them (through randomised cameras with ``randomise``). ``workers`` > 1 renders
    households in that many processes; every household's views depend only on its seed, so the
    shards are the same either way."""
    from personal.perception.segment import SegmentConfig
    from personal.perception.splits import check_training_seeds

    seeds = list(seeds)
    if not allow_eval_seeds:
        check_training_seeds(seeds)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    seg_cfg = SegmentConfig()
    K = working_intrinsics(width, height, seg_cfg.work_width)
    index = {"version": FORMAT_VERSION, "width": width, "height": height, "work_width": seg_cfg.work_width,
             "K": K.tolist(), "views_per_scene": views_per_scene, "seeds": seeds,
             "structure_classes": ["object", "wall", "floor", "ceiling", "door"], "scenes": [],
             "randomise": randomise.record() if randomise else None}
    t0 = time.perf_counter()
    job = dict(out=out, views_per_scene=views_per_scene, width=width, height=height, seed=seed, randomise=randomise)
    pool = None
    if workers <= 1:
        entries = (write_household(s, **job) for s in seeds)
    else:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        # spawn, not fork: a process that has rendered or segmented already runs GNU OpenMP, which aborts a fork
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"))
        entries = pool.map(write_household, seeds, *([v] * len(seeds) for v in job.values()))
    try:
        for k, entry in enumerate(entries):  # in seed order either way
            index["scenes"].append(entry)
            progress(f"dataset: {k + 1}/{len(seeds)} households ({entry['scene_id']}, {views_per_scene} views, "
                     f"{entry['n_crops']} proposals, {time.perf_counter() - t0:.0f} s)")
    finally:  # a household that fails stops the others too
        if pool is not None:
            pool.shutdown(cancel_futures=True)
    (out / "dataset.json").write_text(json.dumps(index, indent=1))
    return out


def write_household(s: int, out: Path, views_per_scene: int, width: int, height: int, seed: int,
                    randomise: CameraRandomisation | None) -> dict:
    """Render and write the shard of household ``s``; returns its ``dataset.json`` entry."""
    from personal.perception.segment import SegmentConfig
    from personal.world.generator import generate_scene

    seg_cfg = SegmentConfig()
    scene = generate_scene(s)
    rng = random.Random(f"views:{s}:{seed}")
    poses = sample_poses(scene, views_per_scene, rng)
    if randomise:
        arrays = render_randomised_views(scene, poses, randomise, random.Random(f"camera:{s}:{seed}"), width, height,
                                         seg_cfg.work_width, seg_cfg, seed)
        return _write_shard(out, scene, s, arrays, views_per_scene)
    K = working_intrinsics(width, height, seg_cfg.work_width)
    views = render_views(scene, poses, width, height, seg_cfg.work_width)
    crop_parts = {k2: [] for k2 in ("crops", "crop_masks", "crop_view", "crop_labels", "crop_counts")}
    for v in range(views_per_scene):
        _, which, crops, masks, labels, counts = view_proposals(
            views["rgb"][v], views["depth"][v], K, views["poses"][v].astype(np.float64), views["ids"][v],
            views["structure"][v], seg_cfg)
        crop_parts["crops"].append(crops)
        crop_parts["crop_masks"].append(np.packbits(masks, axis=-1))
        crop_parts["crop_view"].append(np.full(len(which), v, np.int32))
        crop_parts["crop_labels"].append(labels)
        crop_parts["crop_counts"].append(counts)
    crops = {k2: np.concatenate(v2) for k2, v2 in crop_parts.items()}
    return _write_shard(out, scene, s, {**views, **crops}, views_per_scene)


def _write_shard(out: Path, scene, seed: int, arrays: dict, n_views: int) -> dict:
    objects = [{"instance_id": o.instance_id, "caption": o.caption, "category": o.category} for o in scene.objects]
    path = out / f"{scene.scene_id}.npz"
    np.savez_compressed(path, objects=np.array(json.dumps(objects)), **arrays)
    return {"scene_id": scene.scene_id, "seed": seed, "file": path.name, "n_views": n_views,
            "n_crops": int(len(arrays["crops"]))}


class DatasetError(ValueError):
    pass


VIEW_KEYS = ("rgb", "ids", "structure", "depth", "poses")
CROP_KEYS = ("crops", "crop_masks", "crop_view", "crop_labels", "crop_counts")
CAMERA_KEYS = ("cam_height", "cam_hfov", "cam_pitch", "cam_preset", "view_K")  # randomised datasets only


def load_dataset(path: str | Path, keys=VIEW_KEYS + CROP_KEYS) -> tuple[dict, list[dict]]:
    """(index, shards) where each shard holds the arrays ``keys`` and ``objects`` of one
    household (``crop_masks`` unpacked to bool)."""
    root = Path(path)
    index_path = root / "dataset.json"
    if not index_path.exists():
        raise DatasetError(f"{index_path}: missing (write one with `personal perception dataset`)")
    try:
        index = json.loads(index_path.read_text())
    except ValueError as exc:
        raise DatasetError(f"{index_path}: not JSON ({exc})") from exc
    if index.get("version") != FORMAT_VERSION:
        raise DatasetError(f"{index_path}: dataset version {index.get('version')} (this code reads version "
                           f"{FORMAT_VERSION}; write it again with `personal perception dataset`)")
    shards = []
    for entry in index.get("scenes", []):
        p = root / entry["file"]
        try:
            with np.load(p) as d:
                shard = {k: d[k] for k in keys}
                shard.update({k: d[k] for k in CAMERA_KEYS if k in d.files})  # randomised datasets
                shard["objects"] = json.loads(str(d["objects"]))
        except (OSError, KeyError, ValueError) as exc:
            raise DatasetError(f"{p}: unreadable shard ({exc})") from exc
        if "crop_masks" in shard:
            shard["crop_masks"] = np.unpackbits(shard["crop_masks"], axis=-1).astype(bool)
        shard["scene_id"], shard["seed"] = entry["scene_id"], entry["seed"]
        shard["preset_names"] = [n for n, _ in (index.get("randomise") or {}).get("presets", [])]  # cam_preset's names
        shards.append(shard)
    if not shards:
        raise DatasetError(f"{index_path}: no households listed")
    index["K"] = np.asarray(index["K"], np.float64)
    return index, shards

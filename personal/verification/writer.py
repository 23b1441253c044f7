"""Write a PInVerify-format dataset from the synthetic simulator.

For each target (a small, non-furniture object of a generated household):
6 sectors 60° apart (raw indices 0,2,..,10 of 12 × 30°), a far view (ring
sampling, 1.4-1.7 m) then a ray-aligned near view (0.9-1.2 m) per sector, each
accepted only on a navigable cell; camera aimed at the object (yaw and pitch).
Masks come from the renderer's instance ids; a capture below the category's
mask-pixel threshold is a trap view; a sector with no navigable viewpoint is
unreachable. Seeding is per episode from the *base* seed, the scene seed and
the object's instance id, so a rerun (or another worker) writes the same data.

Pairs per target: positive, neg_same (same category, differing in at least one
described *rendered* attribute: main colour or a part colour — pattern and
material are described but not rendered, so they cannot decide a pair), and
neg_diff (another category). Descriptions: three per object from its catalog
attributes (colour, part colours, pattern, material, placement).

Layout as the public release (github.com/Avalon-S/PInVerify) and its evaluator read it:
``meta.json`` has ``captures`` (the accepted views, each with ``camera_position`` in
habitat's frame, y up, around ``goal_position_nominal`` in the same frame: the public
environment builds its sectors from their angles) besides our ``viewpoints`` (all 12
slots, map-frame ``position`` and ``azimuth_deg``, ``goal_position_map``). Index rows carry
the builder's fields (``target_object_id``, ``meta_path``, ``n_navigable``...) and the
texts where public policies read them: ``query_descriptions`` = ``text_pos`` = the query
object's descriptions, ``target_descriptions`` = the target's (also ``text_neg`` of a
negative; a positive's ``text_neg`` describes a distractor, ``neg_object_id``).
"""
from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from personal.verification.schema import (
    CAPTURE_HW, RANGES, SECTOR_ORDER, SECTOR_WIDTH_DEG, capture_tag, mask_threshold,
)
from personal.runs.output import write_file

FORMAT_VERSION = 2  # 2: public layout (habitat-frame captures, query texts in text_pos)
GENERATOR = "personal.verification.writer (synthetic)"


def map_to_habitat(p) -> list[float]:
    """Map (x, y, z up) -> habitat (x, y up, z = -map y); the episode files' convention."""
    from personal.world.habitat_format import map_to_habitat as convert

    return [round(v, 4) for v in convert(p)]

RING_TRIES = 12
RAY_TRIES = 8
MASS_NOUNS = {"hair", "fruit", "stitching", "fringe", "piping"}
MATERIAL_ADJ = {"wood": "wooden", "wool": "woollen"}
PATTERN_PHRASE = {"striped": "stripes", "checked": "checks", "dotted": "dots", "floral": "a floral print",
                  "plaid": "plaid", "zigzag": "zigzags"}


@dataclass
class PoolObject:
    """An object that can be a target or a distractor query (rendered or catalog-sampled)."""

    gid: str  # global id "<scene_id>.<object_id>"
    category: str
    color: str
    parts: dict  # part name -> colour
    pattern: str
    material: str
    placement: str = ""
    support: str = ""
    scene_id: str = ""
    object_id: str = ""

    def rendered_attrs(self) -> dict:
        return {"color": self.color, **{f"{p}_color": c for p, c in self.parts.items()}}


def pool_object(scene_id: str, obj) -> PoolObject:
    a = obj.attributes
    return PoolObject(f"{scene_id}.{obj.object_id}", obj.category, obj.color, dict(a.get("parts", {})),
                      a.get("pattern", "plain"), a.get("material", ""), a.get("placement", ""),
                      a.get("support_category", ""), scene_id, obj.object_id)


def _is_plural(part: str) -> bool:
    return part.endswith("s") and part not in MASS_NOUNS


def _a(word: str, noun: str = "") -> str:
    if noun and (_is_plural(noun) or noun in MASS_NOUNS):
        return ""
    return "an " if word[0] in "aeiou" else "a "


def describe(o: PoolObject, rng: random.Random) -> list[str]:
    """Three descriptions mentioning colour, part colours, pattern, material and placement."""
    cat, col = o.category, o.color
    parts = list(o.parts.items())
    mat = MATERIAL_ADJ.get(o.material, o.material)
    pat = o.pattern if o.pattern != "plain" else ""
    part_txt = " and ".join(f"{_a(c, p)}{c} {p}" for p, c in parts)
    d1 = f"{_a(col)}{col} {cat}" + (f" with {part_txt}" if parts else "")
    where = f" {o.placement} the {o.support}" if o.placement and o.support else ""
    lead = f"{pat} " if pat else ""
    if pat and rng.random() < 0.5:
        d2 = f"{_a(mat)}{mat} {cat} with {PATTERN_PHRASE.get(pat, pat)}{where}" if mat else f"{_a(cat)}{cat} with {PATTERN_PHRASE.get(pat, pat)}{where}"
    else:
        d2 = f"{_a(lead or mat or cat)}{lead}{mat + ' ' if mat else ''}{cat}{where}"
    clauses = [f"its {p} {'are' if _is_plural(p) else 'is'} {c}" for p, c in parts]
    d3 = f"The {cat} is mostly {col}" + ("; " + ", and ".join(clauses) if clauses else "") + "."
    texts = [d1[0].upper() + d1[1:] + ".", d2[0].upper() + d2[1:] + ".", d3]
    rng.shuffle(texts)
    return texts


def virtual_distractor(target: PoolObject, rng: random.Random, n: int) -> PoolObject | None:
    """A catalog-sampled same-category instance differing in a rendered attribute (not placed in any scene)."""
    from personal.world.catalog import category

    c = category(target.category)
    for _ in range(30):
        color = rng.choice(c.colors)
        parts = {p.name: rng.choice(p.colors) for p in c.parts}
        cand = PoolObject(f"virtual.{target.category.replace(' ', '_')}_{n}", target.category, color, parts,
                          rng.choice(c.patterns), rng.choice(c.materials))
        if differs_in_described(cand, target):
            return cand
    return None


def differs_in_described(query: PoolObject, target: PoolObject) -> bool:
    q, t = query.rendered_attrs(), target.rendered_attrs()
    return any(t.get(k) != v for k, v in q.items())


# ----------------------------------------------------------------------------- capture
def depth_to_mm(depth: np.ndarray) -> np.ndarray:
    """Metres (0 = invalid) -> uint16 millimetres (0 = invalid), the usual 16-bit depth PNG."""
    return np.clip(np.round(np.nan_to_num(depth, nan=0.0) * 1000.0), 0, 65535).astype(np.uint16)


def _look_at(cam_xy, cam_z, goal) -> tuple[float, float]:
    dx, dy = goal[0] - cam_xy[0], goal[1] - cam_xy[1]
    yaw = math.atan2(dy, dx)
    pitch = math.atan2(goal[2] - cam_z, math.hypot(dx, dy))
    return yaw, max(-math.radians(60), min(math.radians(60), pitch))


def sample_viewpoints(backend, goal, floor: int, rng: np.random.Generator) -> dict[tuple[int, str], tuple | None]:
    """(sector, near|far) -> (x, y, azimuth_deg, r) or None when no navigable point was found."""
    out = {}
    for k in SECTOR_ORDER:
        lo, hi = k * SECTOR_WIDTH_DEG, (k + 1) * SECTOR_WIDTH_DEG
        far = None
        for _ in range(RING_TRIES):
            a, r = rng.uniform(lo, hi), rng.uniform(*RANGES["far"])
            x, y = goal[0] + r * math.cos(math.radians(a)), goal[1] + r * math.sin(math.radians(a))
            if backend.is_navigable(x, y, floor):
                far = (x, y, a, r)
                break
        out[(k, "far")] = far
        near = None
        for i in range(RAY_TRIES if far else RING_TRIES):
            a = (far[2] + (0.0 if i == 0 else rng.uniform(-2, 2))) if far else rng.uniform(lo, hi)
            r = rng.uniform(*RANGES["near"])
            x, y = goal[0] + r * math.cos(math.radians(a)), goal[1] + r * math.sin(math.radians(a))
            if backend.is_navigable(x, y, floor):
                near = (x, y, a, r)
                break
        out[(k, "near")] = near
    return out


def capture_episode(backend, scene, obj, ep_dir: Path, base_seed: int, min_navigable: int = 2) -> dict | None:
    """Render and write one capture episode; returns its meta dict, or None if unusable."""
    from PIL import Image

    from personal.sim.backends.base import AgentState

    floor_z = next(f.z for f in scene.floors if f.index == obj.floor)
    goal = obj.box.center
    rng = np.random.default_rng([base_seed, scene.seed, obj.instance_id])
    samples = sample_viewpoints(backend, goal, obj.floor, rng)
    tau = mask_threshold(obj.category)
    cam = backend.camera
    viewpoints, renders = [], []
    for (k, vt), s in sorted(samples.items()):
        tag = capture_tag(k, vt)
        vp = {"tag": tag, "sector_index": k, "view_type": vt, "navigable": s is not None, "mask_meets_threshold": False,
              "rgb": None, "mask": None, "mask_bbox_xyxy": None, "mask_area": 0, "position": None, "azimuth_deg": None}
        if s is not None:
            x, y, a, r = s
            cam_z = floor_z + cam.height_m
            yaw, pitch = _look_at((x, y), cam_z, goal)
            obs = backend.reset(state=AgentState(x, y, floor_z, yaw, pitch, obj.floor))
            mask = obs.instance_ids == obj.instance_id
            area = int(mask.sum())
            bbox = None
            if area:
                ys, xs = np.nonzero(mask)
                bbox = [int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1]
            vp.update({
                "mask_meets_threshold": area >= tau, "rgb": f"rgb/rgb_{tag}.png", "mask": f"mask/mask_{tag}.png",
                "mask_bbox_xyxy": bbox, "mask_area": area, "position": [round(x, 4), round(y, 4), round(floor_z, 4)],
                "camera_position": map_to_habitat((x, y, cam_z)),
                "azimuth_deg": round(float(np.degrees(np.arctan2(y - goal[1], x - goal[0]))), 3),
                "distance_m": round(math.dist((x, y, cam_z), goal), 4),
                "yaw_deg": round(math.degrees(yaw), 3), "pitch_deg": round(math.degrees(pitch), 3),
            })
            vp["depth"] = f"depth/depth_{tag}.png"
            renders.append((vp, obs.rgb, mask, obs.depth))
        viewpoints.append(vp)
    navigable = {v["sector_index"] for v in viewpoints if v["navigable"]}
    visible = {v["sector_index"] for v in viewpoints if v["mask_meets_threshold"]}
    if len(navigable) < min_navigable or not visible:
        return None
    (ep_dir / "rgb").mkdir(parents=True, exist_ok=True)
    (ep_dir / "mask").mkdir(parents=True, exist_ok=True)
    (ep_dir / "depth").mkdir(parents=True, exist_ok=True)
    for vp, rgb, mask, depth in renders:
        Image.fromarray(rgb).save(ep_dir / vp["rgb"], optimize=False, compress_level=1)
        Image.fromarray((mask * 255).astype(np.uint8)).save(ep_dir / vp["mask"], compress_level=1)
        Image.fromarray(depth_to_mm(depth)).save(ep_dir / vp["depth"], compress_level=1)
    meta = {
        "scene_key": scene.scene_id, "episode_id": ep_dir.name, "object_id": f"{scene.scene_id}.{obj.object_id}",
        "object_category": obj.category, "goal_position_nominal": map_to_habitat(goal),
        "goal_position_map": [round(v, 4) for v in goal],
        "sector_order": list(SECTOR_ORDER), "ranges": {k: list(v) for k, v in RANGES.items()},
        "camera": {"height": cam.height, "width": cam.width, "hfov_deg": cam.hfov_deg, "height_m": cam.height_m},
        "seed": base_seed, "mask_threshold": tau, "generator": GENERATOR, "format_version": FORMAT_VERSION,
        "viewpoints": viewpoints,
        "captures": [public_capture(v) for v in viewpoints if v["navigable"]],
    }
    write_file(ep_dir / "meta.json", json.dumps(meta, indent=1))
    return meta


def public_capture(vp: dict) -> dict:
    """An accepted view as the public environment reads ``meta.json`` captures."""
    keys = ("tag", "sector_index", "view_type", "rgb", "depth", "mask", "navigable", "mask_meets_threshold",
            "camera_position", "mask_bbox_xyxy")
    return {**{k: vp[k] for k in keys if k in vp}, "rgb_filename": vp["rgb"]}


# ----------------------------------------------------------------------------- dataset
def write_dataset(out: str | Path, n_targets: int = 100, seed: int = 0, max_scenes: int = 200,
                  hfov_deg: float = 90.0, progress=None) -> dict:
    """Write ``out`` in the PInVerify layout with ``3 * n_targets`` balanced pairs; returns a summary."""
    from personal.world.generator import generate_scene
    from personal.sim.backends.base import CameraSpec
    from personal.sim.backends.synthetic import SyntheticBackend

    out = Path(out)
    cam = CameraSpec(width=CAPTURE_HW[1], height=CAPTURE_HW[0], hfov_deg=hfov_deg)
    backend = SyntheticBackend(camera=cam, cache_scenes=1)
    pool: dict[str, PoolObject] = {}
    targets: list[tuple[PoolObject, dict]] = []
    rng = random.Random(seed)
    scenes_used = 0
    for s in range(max_scenes):
        if len(targets) >= n_targets:
            break
        scene = generate_scene(seed * 1000 + s)
        scenes_used += 1
        small = [o for o in scene.objects if not o.is_furniture]
        for o in small:
            pool[f"{scene.scene_id}.{o.object_id}"] = pool_object(scene.scene_id, o)
        backend.load_scene(scene)
        order = small[:]
        random.Random(seed * 7919 + scene.seed).shuffle(order)
        per_scene = 0
        for o in order:
            if len(targets) >= n_targets or per_scene >= 12:
                break
            ep_dir = out / "pin_capture" / "val" / scene.scene_id / f"ep_{o.object_id}"
            meta = capture_episode(backend, scene, o, ep_dir, seed)
            if meta is None:
                continue
            per_scene += 1
            targets.append((pool[f"{scene.scene_id}.{o.object_id}"], meta))
            if progress:
                progress(len(targets), n_targets)
    descriptions: dict[str, list[str]] = {}

    def texts(o: PoolObject) -> list[str]:
        if o.gid not in descriptions:
            descriptions[o.gid] = describe(o, random.Random(f"{seed}:{o.gid}"))
        return descriptions[o.gid]

    by_cat: dict[str, list[PoolObject]] = {}
    for o in pool.values():
        by_cat.setdefault(o.category, []).append(o)
    lines = []
    n_virtual = 0
    for t, meta in targets:
        prng = random.Random(f"{seed}:pairs:{t.gid}")
        same = [o for o in by_cat[t.category] if o.gid != t.gid and differs_in_described(o, t)][:10]
        neg_same = prng.choice(same) if same else None
        if neg_same is None:
            n_virtual += 1
            neg_same = virtual_distractor(t, prng, n_virtual)
            pool[neg_same.gid] = neg_same
        other = [c for c in sorted(by_cat) if c != t.category]
        neg_diff = prng.choice(by_cat[prng.choice(other)])
        base = _index_base(out, meta, t)
        for pair_type, q in (("positive", t), ("neg_same", neg_same), ("neg_diff", neg_diff)):
            lines.append({
                **base, "query_object_id": q.gid, "query_object_category": q.category,
                # public policies read the query from query_descriptions / text_pos
                "query_descriptions": texts(q), "target_descriptions": texts(t), "text_pos": texts(q),
                "text_neg": texts(neg_same) if pair_type == "positive" else texts(t),
                "neg_object_id": neg_same.gid if pair_type == "positive" else None,
                "pair_type": pair_type, "label": int(pair_type == "positive"),
            })
    rng.shuffle(lines)
    (out / "val").mkdir(parents=True, exist_ok=True)
    with open(out / "val" / "pv_index_all.jsonl", "w") as fh:
        for line in lines:
            fh.write(json.dumps(line) + "\n")
    for n in (50, 100, 500):
        if len(lines) > n:
            with open(out / "val" / f"pv_index_{n}.jsonl", "w") as fh:
                for line in lines[:n]:
                    fh.write(json.dumps(line) + "\n")
    write_file(out / "object_descriptions.json", json.dumps(descriptions, indent=1))
    write_file(out / "object_descriptions_with_category.json", json.dumps(
        {gid: {"descriptions": d, "category": pool[gid].category} for gid, d in descriptions.items()}, indent=1))
    summary = {"targets": len(targets), "pairs": len(lines), "scenes": scenes_used, "virtual_neg_same": n_virtual,
               "index": str(out / "val" / "pv_index_all.jsonl"), "seed": seed}
    write_file(out / "summary.json", json.dumps(summary, indent=1))
    return summary


def _index_base(out: Path, meta: dict, t: PoolObject) -> dict:
    vps = meta["viewpoints"]
    ep_path = (Path("pin_capture") / "val" / meta["scene_key"] / meta["episode_id"]).as_posix()
    valid = sorted({v["sector_index"] for v in vps if v["mask_meets_threshold"]})
    navigable = sorted({v["sector_index"] for v in vps if v["navigable"]})
    return {
        # the example row's names (data/examples/index.jsonl) without its captures_meta: the
        # public environment prefers a row's captures_meta, which carry no camera_position, to the
        # meta.json captures that do ...
        "scene_key": meta["scene_key"], "episode_id": meta["episode_id"], "object_id": t.gid,
        "object_category": t.category, "episode_path": ep_path,
        # ... and the evaluation indices' (pver/data/builder.py)
        "scene": meta["scene_key"], "episode": meta["episode_id"], "meta_path": f"{ep_path}/meta.json",
        "rgb_dir": f"{ep_path}/rgb", "depth_dir": f"{ep_path}/depth",
        "target_object_id": t.gid, "target_object_category": t.category,
        "valid_start_sectors": valid, "navigable_sectors": navigable,
        "n_navigable": len(navigable), "n_mask_visible": len(valid),
    }

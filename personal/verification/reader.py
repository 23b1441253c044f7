"""Reader for the public PInVerify layout.

    <root>/<index>.jsonl                    one pair per line (fields: BENCHMARKS.md)
    <root>/<episode_path>/meta.json         viewpoints of one capture episode
    <root>/<episode_path>/rgb/rgb_s2_near.png, mask/mask_s2_near.png
    <root>/object_descriptions*.json        object id -> three descriptions

``episode_path`` is resolved against the index file's folder, then its parents
(the public release keeps indices in ``val/`` beside ``pin_capture/``).
Every problem raises ``DatasetError`` naming the file (and line or field).
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from personal.verification.schema import (
    PAIR_TYPES,
    VIEW_TYPES,
    CaptureEpisode,
    PairEpisode,
    Viewpoint,
    capture_tag,
)


class DatasetError(ValueError):
    """A malformed PInVerify file; the message names the file and line/field."""


INDEX_REQUIRED: dict[str, type | tuple] = {
    "scene_key": str,
    "episode_id": (str, int),
    "object_id": str,
    "object_category": str,
    "episode_path": str,
    "captures_meta": list,
    "query_object_id": str,
    "text_pos": list,
    "text_neg": list,
    "neg_object_id": (str, type(None)),
    "pair_type": str,
    "label": int,
    "valid_start_sectors": list,
    "navigable_sectors": list,
}
# Fields the paper mentions besides the required ones; anything else is an error when strict.
INDEX_OPTIONAL = {
    "target_object_id", "query_object_category", "neg_object_category", "split",
    "visible_sectors", "trap_sectors", "num_navigable_sectors", "num_visible_sectors",
}
CAPTURE_META_FIELDS = {"tag": str, "sector_index": int, "view_type": str, "rgb_filename": str}

META_OPTIONAL = {
    "scene_key", "scene_id", "episode_id", "object_id", "object_category", "goal_position_nominal",
    "sector_order", "ranges", "camera", "seed", "sector_skip", "n_sectors", "mask_threshold",
    "generator", "version", "semantic_id",
}
VIEWPOINT_REQUIRED = {"navigable": bool, "mask_meets_threshold": bool, "sector_index": int, "rgb": (str, type(None))}
VIEWPOINT_OPTIONAL = {
    "tag", "view_type", "mask", "mask_bbox_xyxy", "mask_area", "azimuth_deg", "position",
    "distance_m", "rotation", "yaw_deg", "pitch_deg", "depth",
}
_RGB_NAME = re.compile(r"rgb_s(\d+)_(near|far)\.\w+$")


def _type_name(t) -> str:
    return " or ".join(x.__name__ for x in t) if isinstance(t, tuple) else t.__name__


def _check_fields(obj: Any, required: dict, optional: set, where: str, strict: bool) -> None:
    if not isinstance(obj, dict):
        raise DatasetError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    missing = [k for k in required if k not in obj]
    if missing:
        raise DatasetError(f"{where}: missing field(s) {missing}")
    for key, typ in required.items():
        value = obj[key]
        if isinstance(value, bool) and typ is int:
            raise DatasetError(f"{where}: field {key!r} must be {_type_name(typ)}, got bool")
        if not isinstance(value, typ):
            raise DatasetError(f"{where}: field {key!r} must be {_type_name(typ)}, got {type(value).__name__}")
    if strict:
        unknown = sorted(set(obj) - set(required) - optional)
        if unknown:
            raise DatasetError(f"{where}: unknown field(s) {unknown}")


def read_jsonl(path: Path) -> Iterator[tuple[int, dict]]:
    """(line number, object) for each non-blank line; malformed JSON names the line."""
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                yield lineno, json.loads(line)
            except json.JSONDecodeError as exc:
                raise DatasetError(f"{path}:{lineno}: malformed JSON line: {exc.msg} at column {exc.colno}") from None


def parse_index_line(obj: dict, where: str, strict: bool = True, index: int = 0) -> PairEpisode:
    _check_fields(obj, INDEX_REQUIRED, INDEX_OPTIONAL, where, strict)
    if obj["pair_type"] not in PAIR_TYPES:
        raise DatasetError(f"{where}: pair_type {obj['pair_type']!r} not in {PAIR_TYPES}")
    if obj["label"] not in (0, 1):
        raise DatasetError(f"{where}: label must be 0 or 1, got {obj['label']!r}")
    if (obj["label"] == 1) != (obj["pair_type"] == "positive"):
        raise DatasetError(f"{where}: label {obj['label']} contradicts pair_type {obj['pair_type']!r}")
    for key in ("text_pos", "text_neg"):
        texts = obj[key]
        if not all(isinstance(t, str) for t in texts):
            raise DatasetError(f"{where}: field {key!r} must be a list of strings")
    if len(obj["text_pos"]) != 3:
        raise DatasetError(f"{where}: text_pos must hold 3 descriptions, got {len(obj['text_pos'])}")
    if obj["pair_type"] != "positive" and len(obj["text_neg"]) != 3:
        raise DatasetError(f"{where}: text_neg must hold 3 descriptions for {obj['pair_type']}, got {len(obj['text_neg'])}")
    for key in ("valid_start_sectors", "navigable_sectors"):
        if not all(isinstance(s, int) and not isinstance(s, bool) for s in obj[key]):
            raise DatasetError(f"{where}: field {key!r} must be a list of integers")
    if not obj["valid_start_sectors"]:
        raise DatasetError(f"{where}: valid_start_sectors is empty (the agent needs a visible start)")
    for i, cap in enumerate(obj["captures_meta"]):
        _check_fields(cap, CAPTURE_META_FIELDS, set(), f"{where}: captures_meta[{i}]", strict)
        if cap["view_type"] not in VIEW_TYPES:
            raise DatasetError(f"{where}: captures_meta[{i}].view_type {cap['view_type']!r} not in {VIEW_TYPES}")
    extra = {k: obj[k] for k in obj if k in INDEX_OPTIONAL}
    return PairEpisode(
        scene_key=obj["scene_key"], episode_id=str(obj["episode_id"]), object_id=obj["object_id"],
        object_category=obj["object_category"], episode_path=obj["episode_path"],
        captures_meta=obj["captures_meta"], query_object_id=obj["query_object_id"],
        text_pos=list(obj["text_pos"]), text_neg=list(obj["text_neg"]), neg_object_id=obj["neg_object_id"],
        pair_type=obj["pair_type"], label=int(obj["label"]),
        valid_start_sectors=list(obj["valid_start_sectors"]), navigable_sectors=list(obj["navigable_sectors"]),
        index=index, extra=extra,
    )


def _view_type_of(vp: dict, where: str) -> str:
    if "view_type" in vp:
        if vp["view_type"] not in VIEW_TYPES:
            raise DatasetError(f"{where}: view_type {vp['view_type']!r} not in {VIEW_TYPES}")
        return vp["view_type"]
    m = _RGB_NAME.search(vp.get("rgb") or "") or re.search(r"s(\d+)_(near|far)$", vp.get("tag") or "")
    if not m and not vp.get("navigable"):
        return "unknown"  # an unreachable attempt need not say which ring it tried
    if not m:
        raise DatasetError(f"{where}: no view_type and rgb name {vp.get('rgb')!r} does not say near/far")
    return m.group(2)


def load_meta(meta_path: Path, strict: bool = True) -> CaptureEpisode:
    """Parse one ``meta.json``; missing images of navigable viewpoints are errors."""
    if not meta_path.is_file():
        raise DatasetError(f"{meta_path}: meta.json not found")
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DatasetError(f"{meta_path}: malformed JSON: {exc.msg} at line {exc.lineno}") from None
    if not isinstance(meta, dict):
        raise DatasetError(f"{meta_path}: expected a JSON object")
    key = "viewpoints" if "viewpoints" in meta else "captures" if "captures" in meta else None
    if key is None:
        raise DatasetError(f"{meta_path}: missing field 'viewpoints' (or v1 'captures')")
    top = {k: v for k, v in meta.items() if k != key}
    _check_fields(top, {}, META_OPTIONAL, str(meta_path), strict)
    root = meta_path.parent
    viewpoints = []
    for i, vp in enumerate(meta[key]):
        where = f"{meta_path}: {key}[{i}]"
        _check_fields(vp, VIEWPOINT_REQUIRED, VIEWPOINT_OPTIONAL, where, strict)
        view_type = _view_type_of(vp, where)
        rgb = vp["rgb"]
        if vp["navigable"]:
            if not rgb:
                raise DatasetError(f"{where}: navigable viewpoint has no rgb image")
            if not (root / rgb).is_file():
                raise DatasetError(f"{where}: missing image {root / rgb}")
        mask = vp.get("mask")
        if mask and vp["navigable"] and not (root / mask).is_file():
            raise DatasetError(f"{where}: missing mask image {root / mask}")
        depth = vp.get("depth")
        if depth and vp["navigable"] and not (root / depth).is_file():
            raise DatasetError(f"{where}: missing depth image {root / depth}")
        bbox = vp.get("mask_bbox_xyxy")
        if bbox is not None and (not isinstance(bbox, list) or len(bbox) != 4):
            raise DatasetError(f"{where}: mask_bbox_xyxy must be [x0, y0, x1, y1]")
        viewpoints.append(Viewpoint(
            tag=vp.get("tag") or capture_tag(vp["sector_index"], view_type),
            sector_index=vp["sector_index"], view_type=view_type, navigable=vp["navigable"],
            mask_meets_threshold=vp["mask_meets_threshold"], rgb=rgb or "", mask=mask, depth=depth,
            mask_bbox_xyxy=bbox, mask_area=vp.get("mask_area"), azimuth_deg=vp.get("azimuth_deg"),
            position=vp.get("position"), distance_m=vp.get("distance_m"), pitch_deg=vp.get("pitch_deg"),
        ))
    _fill_azimuths(viewpoints, meta.get("goal_position_nominal"))
    return CaptureEpisode(
        root=root, scene_key=str(meta.get("scene_key", meta.get("scene_id", ""))),
        episode_id=str(meta.get("episode_id", root.name)), object_id=str(meta.get("object_id", "")),
        object_category=str(meta.get("object_category", "")), viewpoints=viewpoints,
        goal_position_nominal=meta.get("goal_position_nominal"),
        sector_order=list(meta.get("sector_order", [0, 2, 4, 6, 8, 10])),
        extra={k: meta[k] for k in ("ranges", "camera", "seed") if k in meta},
    )


def _fill_azimuths(viewpoints: list[Viewpoint], goal: list[float] | None) -> None:
    """Azimuth from the camera position around the goal when the file gives both."""
    if goal is None:
        return
    pos = [v.position for v in viewpoints if v.position is not None and v.azimuth_deg is None]
    if not pos:
        return
    # Map-frame files (ours) are z-up: azimuth in (x, y). Habitat files (the public release)
    # are y-up: azimuth in (x, z), matching the paper's x = g_x + r cos(a), z = g_z + r sin(a).
    # The vertical axis is the one that stays constant across the capture positions.
    arr = np.asarray(pos, dtype=float)
    vertical = 1 if np.ptp(arr[:, 1]) < np.ptp(arr[:, 2]) else 2
    h = 2 if vertical == 1 else 1
    for v in viewpoints:
        if v.azimuth_deg is None and v.position is not None:
            v.azimuth_deg = float(np.degrees(np.arctan2(v.position[h] - goal[h], v.position[0] - goal[0])))


def _resolve_episode_dir(index_path: Path, episode_path: str) -> Path:
    p = Path(episode_path)
    if p.is_absolute():
        return p
    for base in [index_path.parent, *index_path.parent.parents]:
        if (base / p / "meta.json").is_file():
            return base / p
    return index_path.parent / p


def load_index(index_path: str | Path, strict: bool = True, limit: int | None = None) -> list[PairEpisode]:
    """Parse an index file and its capture episodes (each ``meta.json`` read once)."""
    index_path = Path(index_path)
    if not index_path.is_file():
        raise DatasetError(f"{index_path}: index file not found")
    metas: dict[Path, CaptureEpisode] = {}
    pairs: list[PairEpisode] = []
    for n, (lineno, obj) in enumerate(read_jsonl(index_path)):
        if limit is not None and n >= limit:
            break
        where = f"{index_path}:{lineno}"
        pair = parse_index_line(obj, where, strict=strict, index=n)
        ep_dir = _resolve_episode_dir(index_path, pair.episode_path)
        if ep_dir not in metas:
            try:
                metas[ep_dir] = load_meta(ep_dir / "meta.json", strict=strict)
            except DatasetError as exc:
                raise DatasetError(f"{where}: episode_path {pair.episode_path!r}: {exc}") from None
        pair.capture = metas[ep_dir]
        for i, cap in enumerate(pair.captures_meta):
            if not (ep_dir / cap["rgb_filename"]).is_file():
                raise DatasetError(f"{where}: captures_meta[{i}]: missing image {ep_dir / cap['rgb_filename']}")
        known = {v.sector_index for v in pair.capture.viewpoints}
        bad = [s for s in pair.valid_start_sectors if s not in known]
        if bad:
            raise DatasetError(f"{where}: valid_start_sectors {bad} have no viewpoint in {ep_dir / 'meta.json'}")
        pairs.append(pair)
    if not pairs:
        raise DatasetError(f"{index_path}: no episodes")
    return pairs


def load_descriptions(root: str | Path) -> dict[str, list[str]]:
    """Merge every ``object_descriptions*.json`` under ``root`` (object id -> 3 descriptions).

    Accepts values as a list of strings or as ``{"descriptions": [...], "category": ...}``.
    """
    out: dict[str, list[str]] = {}
    for path in sorted(Path(root).glob("object_descriptions*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{path}: malformed JSON: {exc.msg} at line {exc.lineno}") from None
        if not isinstance(data, dict):
            raise DatasetError(f"{path}: expected an object mapping object id -> descriptions")
        for oid, value in data.items():
            texts = value.get("descriptions") if isinstance(value, dict) else value
            if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
                raise DatasetError(f"{path}: entry {oid!r}: expected a list of description strings")
            out[oid] = texts
    return out


def load_image(path: Path) -> np.ndarray:
    from PIL import Image

    if not path.is_file():
        raise DatasetError(f"{path}: image not found")
    with Image.open(path) as im:
        return np.asarray(im.convert("RGB"))


def load_mask(path: Path) -> np.ndarray:
    """Boolean target mask (any non-zero pixel is the target)."""
    from PIL import Image

    if not path.is_file():
        raise DatasetError(f"{path}: mask image not found")
    with Image.open(path) as im:
        arr = np.asarray(im)
    if arr.ndim == 3:
        arr = arr[..., 0]
    return arr > 0


def load_depth(path: Path) -> np.ndarray:
    """Planar depth in metres (float32, 0 = invalid) from a 16-bit millimetre PNG."""
    from PIL import Image

    if not path.is_file():
        raise DatasetError(f"{path}: depth image not found")
    with Image.open(path) as im:
        arr = np.asarray(im)
    if arr.ndim != 2 or arr.dtype not in (np.uint16, np.int32, np.uint8):
        raise DatasetError(f"{path}: depth must be a single-channel 16-bit PNG in millimetres (got {arr.dtype}, {arr.shape})")
    return arr.astype(np.float32) / 1000.0

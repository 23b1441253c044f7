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

from personal.files import parse_json, read_json
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


# Index rows come in the shapes the public release uses (github.com/Avalon-S/PInVerify):
# - evaluation indices built by pver/data/builder.py + NegativeSampler: episode_path, scene,
#   episode, meta_path, rgb_dir, depth_dir, target_object_id, target_object_category,
#   valid_start_sectors, navigable_sectors, n_navigable, n_mask_visible, query_object_id,
#   query_object_category, label, pair_type (descriptions from object_descriptions*.json);
# - the example row (data/examples/index.jsonl): scene_key, episode_id, object_id,
#   object_category, episode_path, captures_meta, query_object_id, text_pos, text_neg,
#   neg_object_id, and no pair_type / label (a positive, as the public evaluator defaults).
# Ours carries both. Public semantics: text_pos / query_descriptions are what the agent is
# asked about; target_descriptions / text_neg (for negatives) describe the target.
ALIASES = {  # our field <- accepted names, first present wins
    "scene_key": ("scene_key", "scene", "scene_id"),
    "episode_id": ("episode_id", "episode"),
    "object_id": ("target_object_id", "object_id"),
    "object_category": ("target_object_category", "object_category"),
}
INDEX_FIELDS = {
    "scene_key", "scene", "scene_id", "episode_id", "episode", "object_id", "object_category",
    "target_object_id", "target_object_category", "episode_path", "meta_path", "rgb_dir", "depth_dir",
    "captures_meta", "query_object_id", "query_object_category", "query_descriptions", "target_descriptions",
    "text_pos", "text_neg", "neg_object_id", "neg_object_category", "pair_type", "label",
    "valid_start_sectors", "navigable_sectors", "n_navigable", "n_mask_visible", "split",
    "visible_sectors", "trap_sectors", "num_navigable_sectors", "num_visible_sectors",
}
CAPTURE_META_FIELDS = {"tag": str, "sector_index": int, "view_type": str, "rgb_filename": str}

META_OPTIONAL = {
    "scene_key", "scene_id", "episode_id", "object_id", "object_category", "goal_position_nominal",
    "goal_position_map", "sector_order", "ranges", "camera", "camera_intrinsics", "seed", "sector_skip",
    "n_sectors", "mask_threshold", "generator", "format_version", "version", "semantic_id", "captures",
}
VIEWPOINT_REQUIRED = {"navigable": bool, "mask_meets_threshold": bool, "sector_index": int, "rgb": (str, type(None))}
VIEWPOINT_OPTIONAL = {
    "tag", "view_type", "mask", "mask_bbox_xyxy", "mask_area", "azimuth_deg", "position", "camera_position",
    "distance_m", "rotation", "camera_rotation", "yaw_deg", "pitch_deg", "depth", "rgb_filename", "sector_name",
    "angle", "visible", "mask_raw_path",
}
# public v1 "captures" entries: accepted views only, navigable / visible unless they say otherwise
CAPTURE_REQUIRED: dict = {}
OUR_GENERATOR = "personal.verification.writer (synthetic)"
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
            yield lineno, parse_json(line, f"{path}:{lineno}", DatasetError)


def _first(obj: dict, names: tuple[str, ...]):
    for n in names:
        if obj.get(n) not in (None, ""):
            return obj[n]
    return None


def _str_field(obj: dict, names: tuple[str, ...], where: str, default=None) -> str:
    value = _first(obj, names)
    if value is None:
        if default is not None:
            return default
        alt = f" (or {', '.join(repr(n) for n in names[1:])})" if len(names) > 1 else ""
        raise DatasetError(f"{where}: missing field {names[0]!r}{alt}")
    if not isinstance(value, (str, int)) or isinstance(value, bool):
        raise DatasetError(f"{where}: field {names[0]!r} must be a string, got {type(value).__name__}")
    return str(value)


def _texts(obj: dict, key: str, where: str) -> list[str] | None:
    if key not in obj or obj[key] is None:
        return None
    texts = obj[key]
    if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
        raise DatasetError(f"{where}: field {key!r} must be a list of strings")
    return list(texts)


def _sectors(obj: dict, key: str, where: str) -> list[int] | None:
    if key not in obj:
        return None
    value = obj[key]
    if not isinstance(value, list) or not all(isinstance(s, int) and not isinstance(s, bool) for s in value):
        raise DatasetError(f"{where}: field {key!r} must be a list of integers")
    return list(value)


def parse_index_line(obj: dict, where: str, strict: bool = True, index: int = 0,
                     descriptions: dict[str, list[str]] | None = None) -> PairEpisode:
    """One index row in any of the public shapes (see ALIASES / INDEX_FIELDS).
    ``descriptions`` (object id -> texts) fills rows that carry no texts."""
    _check_fields(obj, {}, INDEX_FIELDS, where, strict)
    ep_path = obj.get("episode_path")
    if not ep_path and isinstance(obj.get("meta_path"), str):
        ep_path = str(Path(obj["meta_path"]).parent)
    if not isinstance(ep_path, str) or not ep_path:
        raise DatasetError(f"{where}: missing field 'episode_path' (or 'meta_path')")
    parts = Path(ep_path).parts
    scene = _str_field(obj, ALIASES["scene_key"], where, default=parts[-2] if len(parts) >= 2 else "")
    episode = _str_field(obj, ALIASES["episode_id"], where, default=parts[-1])
    target = _str_field(obj, ALIASES["object_id"], where)
    category = _str_field(obj, ALIASES["object_category"], where, default="")
    query = _str_field(obj, ("query_object_id", "object_id"), where)
    pair_type = obj.get("pair_type")
    if pair_type is None:
        if query != target:
            raise DatasetError(f"{where}: missing field 'pair_type' (query {query!r} is not the target {target!r})")
        pair_type = "positive"
    if pair_type not in PAIR_TYPES:
        raise DatasetError(f"{where}: pair_type {pair_type!r} not in {PAIR_TYPES}")
    label = obj.get("label", int(pair_type == "positive"))
    if label not in (0, 1):
        raise DatasetError(f"{where}: label must be 0 or 1, got {label!r}")
    if (label == 1) != (pair_type == "positive"):
        raise DatasetError(f"{where}: label {label} contradicts pair_type {pair_type!r}")
    db = descriptions or {}
    query_texts = _texts(obj, "query_descriptions", where) or _texts(obj, "text_pos", where) or db.get(query)
    if not query_texts:
        raise DatasetError(f"{where}: no descriptions of the query {query!r}: missing field 'query_descriptions' "
                           "(or 'text_pos') and no object_descriptions*.json entry")
    target_texts = _texts(obj, "target_descriptions", where)
    if target_texts is None:
        target_texts = query_texts if pair_type == "positive" else (_texts(obj, "text_neg", where) or db.get(target) or [])
    captures = obj.get("captures_meta") or []
    if not isinstance(captures, list):
        raise DatasetError(f"{where}: field 'captures_meta' must be a list")
    for i, cap in enumerate(captures):
        _check_fields(cap, CAPTURE_META_FIELDS, set(), f"{where}: captures_meta[{i}]", strict)
        if cap["view_type"] not in VIEW_TYPES:
            raise DatasetError(f"{where}: captures_meta[{i}].view_type {cap['view_type']!r} not in {VIEW_TYPES}")
    valid = _sectors(obj, "valid_start_sectors", where)
    if valid is not None and not valid:
        raise DatasetError(f"{where}: valid_start_sectors is empty (the agent needs a visible start)")
    return PairEpisode(
        scene_key=scene, episode_id=episode, object_id=target, object_category=category, episode_path=ep_path,
        query_object_id=query, query_descriptions=list(query_texts), target_descriptions=list(target_texts),
        pair_type=pair_type, label=int(label), valid_start_sectors=valid or [],
        navigable_sectors=_sectors(obj, "navigable_sectors", where) or [],
        query_object_category=str(obj.get("query_object_category") or (category if pair_type == "positive" else "")),
        neg_object_id=obj.get("neg_object_id"), captures_meta=captures, index=index,
        extra={"row": obj},
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


def _viewpoint_fields(vp: dict, v1: bool, where: str, strict: bool) -> dict:
    """A viewpoint (v2 ``viewpoints``) or accepted capture (v1 ``captures``) with every field set."""
    if not v1:
        _check_fields(vp, VIEWPOINT_REQUIRED, VIEWPOINT_OPTIONAL, where, strict)
        return vp
    _check_fields(vp, CAPTURE_REQUIRED, VIEWPOINT_OPTIONAL | set(VIEWPOINT_REQUIRED), where, strict)
    vp = dict(vp)
    vp.setdefault("rgb", vp.get("rgb_filename"))
    vp.setdefault("navigable", True)
    vp.setdefault("mask_meets_threshold", True)
    if "sector_index" not in vp:
        m = re.match(r"s(\d+)_", vp.get("tag") or "") or _RGB_NAME.search(vp.get("rgb") or "")
        if not m:
            raise DatasetError(f"{where}: missing field 'sector_index' (and no tag or rgb name like s2_near)")
        vp["sector_index"] = int(m.group(1))
    return vp


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
    if not isinstance(meta[key], list):
        raise DatasetError(f"{meta_path}: field {key!r} must be a list")
    root = meta_path.parent
    viewpoints = []
    for i, raw in enumerate(meta[key]):
        where = f"{meta_path}: {key}[{i}]"
        vp = _viewpoint_fields(raw, key == "captures", where, strict)
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
            camera_position=vp.get("camera_position"),
        ))
    _fill_azimuths(viewpoints, meta.get("goal_position_nominal"), meta.get("goal_position_map"))
    return CaptureEpisode(
        root=root, scene_key=str(meta.get("scene_key", meta.get("scene_id", ""))),
        episode_id=str(meta.get("episode_id", root.name)), object_id=str(meta.get("object_id", "")),
        object_category=str(meta.get("object_category", "")), viewpoints=viewpoints,
        goal_position_nominal=meta.get("goal_position_nominal"),
        sector_order=list(meta.get("sector_order", [0, 2, 4, 6, 8, 10])),
        extra={k: meta[k] for k in ("ranges", "camera", "seed", "generator", "format_version") if k in meta},
    )


def _fill_azimuths(viewpoints: list[Viewpoint], goal_habitat: list[float] | None,
                   goal_map: list[float] | None = None) -> None:
    """Map-frame azimuth (CCW from map +x, degrees) of captures that do not state one.

    ``camera_position`` and ``goal_position_nominal`` are in habitat's frame (y up), as the
    public release writes them: map (x, y) = habitat (x, -z). A ``position`` is ours, in the
    map frame (z up), around ``goal_position_map`` (older files of ours: ``goal_position_nominal``);
    a ``position`` list that is y-up (the vertical axis is the constant one) is read as habitat's.
    """
    for v in viewpoints:
        if v.azimuth_deg is None and v.camera_position is not None and goal_habitat is not None:
            dx, dz = v.camera_position[0] - goal_habitat[0], v.camera_position[2] - goal_habitat[2]
            v.azimuth_deg = float(np.degrees(np.arctan2(-dz, dx)))
    goal = goal_map or goal_habitat
    pos = [v.position for v in viewpoints if v.position is not None and v.azimuth_deg is None]
    if goal is None or not pos:
        return
    arr = np.asarray(pos, dtype=float)
    y_up = np.ptp(arr[:, 1]) < np.ptp(arr[:, 2])
    for v in viewpoints:
        if v.azimuth_deg is None and v.position is not None:
            dx = v.position[0] - goal[0]
            dy = -(v.position[2] - goal[2]) if y_up else v.position[1] - goal[1]
            v.azimuth_deg = float(np.degrees(np.arctan2(dy, dx)))


def _resolve_episode_dir(index_path: Path, episode_path: str) -> Path:
    p = Path(episode_path)
    if p.is_absolute():
        return p
    for base in [index_path.parent, *index_path.parent.parents]:
        if (base / p / "meta.json").is_file():
            return base / p
    return index_path.parent / p


def descriptions_near(index_path: Path) -> dict[str, list[str]]:
    """``object_descriptions*.json`` of the dataset: beside the index or up to three folders above."""
    for base in [index_path.parent, *list(index_path.parent.parents)[:3]]:
        if any(base.glob("object_descriptions*.json")):
            return load_descriptions(base)
    return {}


def _legacy_ours(pair: PairEpisode, row: dict) -> None:
    """Our writer before the public layout put the target's texts in ``text_pos`` and the
    query's in ``text_neg``; such rows (no ``query_descriptions``) are read that way."""
    if pair.capture is None or pair.capture.extra.get("generator") != OUR_GENERATOR or "format_version" in pair.capture.extra:
        return
    if "query_descriptions" in row or pair.pair_type == "positive":
        return
    pair.query_descriptions, pair.target_descriptions = list(row.get("text_neg") or []), list(row.get("text_pos") or [])


def load_index(index_path: str | Path, strict: bool = True, limit: int | None = None) -> list[PairEpisode]:
    """Parse an index file and its capture episodes (each ``meta.json`` read once)."""
    index_path = Path(index_path)
    if not index_path.is_file():
        raise DatasetError(f"{index_path}: index file not found")
    metas: dict[Path, CaptureEpisode] = {}
    pairs: list[PairEpisode] = []
    descriptions: dict[str, list[str]] | None = None
    for n, (lineno, obj) in enumerate(read_jsonl(index_path)):
        if limit is not None and n >= limit:
            break
        where = f"{index_path}:{lineno}"
        if descriptions is None and isinstance(obj, dict) and not (obj.get("query_descriptions") or obj.get("text_pos")):
            descriptions = descriptions_near(index_path)  # rows without texts (the public evaluation indices)
        pair = parse_index_line(obj, where, strict=strict, index=n, descriptions=descriptions)
        ep_dir = _resolve_episode_dir(index_path, pair.episode_path)
        if ep_dir not in metas:
            try:
                metas[ep_dir] = load_meta(ep_dir / "meta.json", strict=strict)
            except DatasetError as exc:
                raise DatasetError(f"{where}: episode_path {pair.episode_path!r}: {exc}") from None
        pair.capture = metas[ep_dir]
        _legacy_ours(pair, obj)
        for i, cap in enumerate(pair.captures_meta):
            if not (ep_dir / cap["rgb_filename"]).is_file():
                raise DatasetError(f"{where}: captures_meta[{i}]: missing image {ep_dir / cap['rgb_filename']}")
        if not pair.valid_start_sectors:
            pair.valid_start_sectors = pair.capture.visible_sectors()
            if not pair.valid_start_sectors:
                raise DatasetError(f"{where}: no visible capture in {ep_dir / 'meta.json'} to start from")
        if not pair.navigable_sectors:
            pair.navigable_sectors = pair.capture.navigable_sectors()
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
        data = read_json(path, DatasetError)
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

"""Feature map ⇄ ``std_msgs/Float32MultiArray`` + ``personal/msg/FeatureMapDescriptor`` (ROS-free).

The array is row-major ``[rows, cols, channels]``; channels are the embedding
followed by one confidence channel when the descriptor says
``"channels": "embedding+confidence"`` (what :func:`map_to_wire` writes). An array
with exactly ``dim`` channels carries no confidence: cells with a non-zero
embedding count as observed. The descriptor is ``FeatureMap.descriptor()``
(origin, resolution, shape [rows, cols, dim], encoder {name, dim}) plus
optionally ``scene_id``, ``channels`` and ``data_crc32`` (``wire_crc32`` of the array it describes:
the assembler pairs only the array whose checksum it names; 0 or absent = not checked, for other
publishers); ``descriptor_to_fields`` / ``descriptor_from_msg`` translate it to and from the typed
``FeatureMapDescriptor`` message.
"""
from __future__ import annotations

import json
from typing import Any, Sequence

import numpy as np

from personal.grounding.pipeline import MapView
from personal.mapping.ros_io import wire_crc32


class MapWireError(ValueError):
    """The array and its descriptor do not describe a feature map; says which field."""


def parse_descriptor(text: str | bytes | dict) -> dict:
    if isinstance(text, dict):
        d = text
    else:
        try:
            d = json.loads(text)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise MapWireError(f"feature map descriptor is not JSON: {exc}") from None
    for key in ("origin", "resolution", "shape"):
        if not isinstance(d, dict) or key not in d:
            raise MapWireError(f"feature map descriptor: missing field {key!r}")
    shape, origin, res = d["shape"], d["origin"], d["resolution"]
    if not (isinstance(shape, (list, tuple)) and len(shape) == 3 and all(_is_int(v) and v >= 0 for v in shape)):
        raise MapWireError(f"feature map descriptor: field 'shape' must be [rows, cols, dim] (non-negative ints), got {shape!r}")
    if not (isinstance(origin, (list, tuple)) and len(origin) == 2 and all(_is_finite(v) for v in origin)):
        raise MapWireError(f"feature map descriptor: field 'origin' must be two finite numbers [x, y], got {origin!r}")
    if not (_is_finite(res) and res > 0):
        raise MapWireError(f"feature map descriptor: field 'resolution' must be a finite number > 0, got {res!r}")
    return d


def _is_int(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def _is_finite(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool) and bool(np.isfinite(v))


def map_from_wire(data: Sequence[float] | np.ndarray, dims: Sequence[int], descriptor: dict) -> MapView:
    """MapView from the flat array, its layout sizes ``dims`` and the parsed descriptor."""
    h, w, e = (int(v) for v in parse_descriptor(descriptor)["shape"])
    arr = np.asarray(data, dtype=np.float32)
    channels = e + 1 if descriptor.get("channels", "embedding+confidence") == "embedding+confidence" else e
    if len(dims) == 3 and int(dims[2]) in (e, e + 1):
        channels = int(dims[2])
    if arr.size != h * w * channels:
        raise MapWireError(f"feature map array has {arr.size} floats; descriptor shape {[h, w, e]} needs "
                           f"{h * w * channels} ({channels} channels per cell)")
    crc = int(descriptor.get("data_crc32", 0) or 0)
    if crc and (got := wire_crc32(arr)) != crc:
        raise MapWireError(f"feature map array (crc32 {got:08x}) is not the one its descriptor describes "
                           f"(crc32 {crc:08x}, scene {descriptor.get('scene_id', '')!r}): the two topics are from "
                           "different map updates")
    if not np.isfinite(arr).all():
        raise MapWireError(f"feature map array has {int((~np.isfinite(arr)).sum())} non-finite values (NaN/inf)")
    arr = arr.reshape(h, w, channels)
    feats = arr[..., :e]
    conf = arr[..., e] if channels == e + 1 else (np.abs(feats).sum(-1) > 0).astype(np.float32)
    enc = descriptor.get("encoder", {})
    name = enc.get("name", "") if isinstance(enc, dict) else str(enc)
    return MapView.from_arrays(feats, conf, descriptor["origin"], float(descriptor["resolution"]), name)


class MapAssembler:
    """Pairs the latest ``feature_map`` array with the latest descriptor (two topics, so for a
    moment after each map update they belong to different updates and do not fit).

    ``array`` / ``descriptor`` return the assembled MapView when the pair fits. A mismatch that
    lasts ``grace_s`` (no fitting pair since) is a malformed map, not a race: ``overdue(now)``
    returns its reason once, for the node to log at warning level."""

    def __init__(self, grace_s: float = 1.0) -> None:
        self.grace_s = grace_s
        self.desc: dict | None = None
        self.data = None
        self.dims: list[int] = []
        self._mismatch: tuple[float, str] | None = None
        self._reported = False

    def descriptor(self, desc: dict, now: float) -> MapView | None:
        self.desc = parse_descriptor(desc)
        return self._assemble(now)

    def array(self, data, dims: Sequence[int], now: float) -> MapView | None:
        self.data, self.dims = data, [int(d) for d in dims]
        return self._assemble(now)

    def _assemble(self, now: float) -> MapView | None:
        if self.desc is None or self.data is None:
            return None
        try:
            view = map_from_wire(self.data, self.dims, self.desc)
        except MapWireError as exc:
            if self._mismatch is None:
                self._mismatch, self._reported = (now, str(exc)), False
            else:
                self._mismatch = (self._mismatch[0], str(exc))
            return None
        self._mismatch = None
        return view

    def overdue(self, now: float) -> str | None:
        if self._mismatch is None or self._reported or now - self._mismatch[0] < self.grace_s:
            return None
        self._reported = True
        return f"{self._mismatch[1]} (for {now - self._mismatch[0]:.1f} s; the map is not used)"


def map_to_wire(view: MapView, scene_id: str = "", frame: str = "map") -> tuple[np.ndarray, list[tuple[str, int, int]], dict]:
    """(flat float32 array, layout [(label, size, stride)], descriptor) for publishing."""
    h, w, e = view.features.shape
    conf = view.confidence if view.confidence is not None else view.valid.astype(np.float32)
    arr = np.concatenate([view.features, conf[..., None]], axis=-1).astype(np.float32)
    c = e + 1
    layout = [("rows", h, h * w * c), ("cols", w, w * c), ("channels", c, c)]
    desc = {
        "format": "personal.feature_map",
        "frame": frame,
        "origin": [float(view.origin[0]), float(view.origin[1])],
        "resolution": float(view.resolution),
        "shape": [h, w, e],
        "layout": "row-major [row=y, col=x, channel]; channels = embedding + confidence",
        "channels": "embedding+confidence",
        "encoder": {"name": view.encoder, "dim": e},
        "scene_id": scene_id,
        "data_crc32": wire_crc32(arr),
    }
    return arr.reshape(-1), layout, desc


def descriptor_to_fields(desc: dict[str, Any]) -> dict[str, Any]:
    """The fields of a ``personal/msg/FeatureMapDescriptor`` for a descriptor dict (header aside)."""
    d = parse_descriptor(desc)
    enc = d.get("encoder", {})
    rows, cols, dim = (int(v) for v in d["shape"])
    out = {"origin_x": float(d["origin"][0]), "origin_y": float(d["origin"][1]), "resolution": float(d["resolution"]),
           "rows": rows, "cols": cols, "dim": dim,
           "encoder": str(enc.get("name", "") if isinstance(enc, dict) else enc), "scene_id": str(d.get("scene_id", "")),
           "data_crc32": int(d.get("data_crc32", 0) or 0)}
    for key in ("format", "channels", "layout"):
        if key in d:
            out[key] = str(d[key])
    if "version" in d:
        out["version"] = int(d["version"])
    return out


def descriptor_from_msg(msg) -> dict[str, Any]:
    """The descriptor dict (as ``parse_descriptor`` returns it) of a FeatureMapDescriptor message."""
    if msg.rows * msg.cols == 0 or msg.dim == 0 or not msg.resolution > 0:
        raise MapWireError(f"feature map descriptor: empty shape [{msg.rows}, {msg.cols}, {msg.dim}] "
                           f"or resolution {msg.resolution}")
    if not all(np.isfinite(v) for v in (msg.origin_x, msg.origin_y, msg.resolution)):
        raise MapWireError(f"feature map descriptor: non-finite origin ({msg.origin_x}, {msg.origin_y}) "
                           f"or resolution {msg.resolution}")
    return {"format": msg.format, "version": int(msg.version), "frame": msg.header.frame_id,
            "origin": [float(msg.origin_x), float(msg.origin_y)], "resolution": float(msg.resolution),
            "shape": [int(msg.rows), int(msg.cols), int(msg.dim)], "layout": msg.layout, "channels": msg.channels,
            "encoder": {"name": msg.encoder, "dim": int(msg.dim)}, "scene_id": msg.scene_id,
            "data_crc32": int(msg.data_crc32)}

"""Feature map ⇄ ``std_msgs/Float32MultiArray`` + ``personal/msg/FeatureMapDescriptor`` (ROS-free).

The array is row-major ``[rows, cols, channels]``; channels are the embedding
followed by one confidence channel when the descriptor says
``"channels": "embedding+confidence"`` (what :func:`map_to_wire` writes). An array
with exactly ``dim`` channels carries no confidence: cells with a non-zero
embedding count as observed. The descriptor is ``FeatureMap.descriptor()``
(origin, resolution, shape [rows, cols, dim], encoder {name, dim}) plus
optionally ``scene_id`` and ``channels``; ``descriptor_to_fields`` / ``descriptor_from_msg``
translate it to and from the typed ``FeatureMapDescriptor`` message.
"""
from __future__ import annotations

import json
from typing import Any, Sequence

import numpy as np

from personal.grounding.pipeline import MapView


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
    if len(d["shape"]) != 3:
        raise MapWireError(f"feature map descriptor: field 'shape' must be [rows, cols, dim], got {d['shape']}")
    return d


def map_from_wire(data: Sequence[float] | np.ndarray, dims: Sequence[int], descriptor: dict) -> MapView:
    """MapView from the flat array, its layout sizes ``dims`` and the parsed descriptor."""
    h, w, e = (int(v) for v in descriptor["shape"])
    arr = np.asarray(data, dtype=np.float32)
    channels = e + 1 if descriptor.get("channels", "embedding+confidence") == "embedding+confidence" else e
    if len(dims) == 3 and int(dims[2]) in (e, e + 1):
        channels = int(dims[2])
    if arr.size != h * w * channels:
        raise MapWireError(f"feature map array has {arr.size} floats; descriptor shape {[h, w, e]} needs "
                           f"{h * w * channels} ({channels} channels per cell)")
    arr = arr.reshape(h, w, channels)
    feats = arr[..., :e]
    conf = arr[..., e] if channels == e + 1 else (np.abs(feats).sum(-1) > 0).astype(np.float32)
    enc = descriptor.get("encoder", {})
    name = enc.get("name", "") if isinstance(enc, dict) else str(enc)
    return MapView.from_arrays(feats, conf, descriptor["origin"], float(descriptor["resolution"]), name)


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
    }
    return arr.reshape(-1), layout, desc


def descriptor_to_fields(desc: dict[str, Any]) -> dict[str, Any]:
    """The fields of a ``personal/msg/FeatureMapDescriptor`` for a descriptor dict (header aside)."""
    d = parse_descriptor(desc)
    enc = d.get("encoder", {})
    rows, cols, dim = (int(v) for v in d["shape"])
    out = {"origin_x": float(d["origin"][0]), "origin_y": float(d["origin"][1]), "resolution": float(d["resolution"]),
           "rows": rows, "cols": cols, "dim": dim,
           "encoder": str(enc.get("name", "") if isinstance(enc, dict) else enc), "scene_id": str(d.get("scene_id", ""))}
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
    return {"format": msg.format, "version": int(msg.version), "frame": msg.header.frame_id,
            "origin": [float(msg.origin_x), float(msg.origin_y)], "resolution": float(msg.resolution),
            "shape": [int(msg.rows), int(msg.cols), int(msg.dim)], "layout": msg.layout, "channels": msg.channels,
            "encoder": {"name": msg.encoder, "dim": int(msg.dim)}, "scene_id": msg.scene_id}

"""Feature map ⇄ ``std_msgs/Float32MultiArray`` + JSON descriptor (ROS-free).

The array is row-major ``[rows, cols, channels]``; channels are the embedding
followed by one confidence channel when the descriptor says
``"channels": "embedding+confidence"`` (what :func:`map_to_wire` writes). An array
with exactly ``dim`` channels carries no confidence: cells with a non-zero
embedding count as observed. The descriptor is ``FeatureMap.descriptor()``
(origin, resolution, shape [rows, cols, dim], encoder {name, dim}) plus
optionally ``scene_id`` and ``channels``.
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
    if isinstance(d, dict) and "data" in d and "type" in d and isinstance(d["data"], dict):
        d = d["data"]  # tolerate a codec envelope
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


def descriptor_json(desc: dict[str, Any]) -> str:
    return json.dumps(desc)

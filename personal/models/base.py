"""Image/text embedding interface and the encoder registry (encoders by name, ``make_encoder``).

An ``ImageTextEncoder`` maps texts and images into one space of dimension ``dim`` with
L2-normalised float32 rows. For the feature map it also gives *dense* features of a frame:
an integer region per pixel (-1 = none) and one embedding per region.
"""
from __future__ import annotations

import abc
from typing import Any

import numpy as np

from personal.plugins import lookup


# The learned towers' inference precision. bf16 autocast is fast only on CPUs with native bf16
# (AVX512-BF16, AMX); elsewhere it is emulated, ~20x slower for the crop tower, and its rounding
# differs between CPUs (bench/bench_tower_precision.py). Saved lit maps record it (a map built
# under the other precision is rebuilt, not reused).
TOWER_PRECISION = "float32"


def l2_normalize(x: np.ndarray, axis: int = -1) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    n = np.linalg.norm(x, axis=axis, keepdims=True)
    return np.divide(x, n, out=np.zeros_like(x), where=n > 0)


class ImageTextEncoder(abc.ABC):
    """One embedding space for text and images."""

    @property
    @abc.abstractmethod
    def name(self) -> str:
        """Identifies the model; stored with maps so a map is only queried with its encoder."""

    @property
    @abc.abstractmethod
    def dim(self) -> int: ...

    @abc.abstractmethod
    def encode_text(self, texts: list[str]) -> np.ndarray:
        """(N, dim) float32, rows L2-normalised."""

    @abc.abstractmethod
    def encode_image(self, images: list[np.ndarray]) -> np.ndarray:
        """(N, dim) float32 for HxWx3 uint8 RGB images, rows L2-normalised."""

    def dense_features(self, rgb: np.ndarray | None, instance_ids: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(regions (H, W) int32 with -1 = no feature, embeddings (G, dim)) for one frame."""
        raise NotImplementedError(f"encoder {self.name!r} gives no dense features")

    def frame_features(self, depth, rgb, instance_ids, frame_points) -> tuple | None:
        """Adapter for ``MapBuilder``: (group per back-projected point, group embeddings[, weight per
        group])."""
        regions, emb = self.dense_features(rgb, instance_ids)
        if len(emb) == 0:
            return None
        return regions.reshape(-1)[frame_points.pixels], emb


# -- registry -------------------------------------------------------------------

# name -> "module:factory", imported on first use (personal.plugins): this module imports none of
# them. The lit crop tower and "hf" are built by personal.perception.tower, one floor up, which
# adds the RGB-D proposal path to the HF adapter.
ENCODERS = {
    "blip2": "personal.models.hf_vlm:make_blip2",
    "clip": "personal.models.hf_vlm:make_clip",
    "hf": "personal.perception.tower:make_auto_encoder",
    "lit": "personal.perception.tower:make_lit_encoder",
    "oracle": "personal.models.oracle:make_oracle",
    "oracle-captions-minilm": "personal.models.oracle:make_oracle",
    "siglip": "personal.models.hf_vlm:make_siglip",
}


def available_encoders() -> list[str]:
    return sorted(ENCODERS)


def make_encoder(name: str, **kwargs: Any) -> ImageTextEncoder:
    """Build an encoder by registered name, e.g. ``make_encoder("clip", model_path=...)`` or
    ``make_encoder("oracle-captions-minilm", captions={1: "a red backpack"})``."""
    return lookup(ENCODERS, name, "encoder")(**kwargs)

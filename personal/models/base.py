"""Image/text embedding interface and the encoder registry.

An ``ImageTextEncoder`` maps texts and images into one space of dimension ``dim`` with
L2-normalised float32 rows. For the feature map it also gives *dense* features of a frame:
an integer region per pixel (-1 = none) and one embedding per region.
"""
from __future__ import annotations

import abc
from typing import Any, Callable

import numpy as np


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

_FACTORIES: dict[str, Callable[..., ImageTextEncoder]] = {}


def register_encoder(*names: str):
    def deco(factory):
        for n in names:
            _FACTORIES[n] = factory
        return factory

    return deco


def _load_builtin_adapters() -> None:
    # importing registers them; kept lazy so `personal.models.base` stays light
    import personal.models.hf_vlm  # noqa: F401
    import personal.models.oracle  # noqa: F401


def available_encoders() -> list[str]:
    _load_builtin_adapters()
    return sorted(_FACTORIES)


def make_encoder(name: str, **kwargs: Any) -> ImageTextEncoder:
    """Build an encoder by registered name, e.g. ``make_encoder("clip", model_path=...)`` or
    ``make_encoder("oracle-captions-minilm", captions={1: "a red backpack"})``."""
    _load_builtin_adapters()
    if name not in _FACTORIES:
        raise ValueError(f"unknown encoder {name!r} (known: {', '.join(sorted(_FACTORIES))})")
    return _FACTORIES[name](**kwargs)

"""Image preprocessing shared by training and inference of dense image encoders, so a frame is
seen the same way in both: area resize (anti-aliased; exact block means for integer factors)
and the processor's mean / std normalisation; the crop tower's 4-channel input."""
from __future__ import annotations

import numpy as np


def resize_area(img: np.ndarray, height: int, width: int) -> np.ndarray:
    """(height, width, C) uint8 from an (H, W, C) uint8 image: block means when H, W are integer
    multiples, else PIL's box filter."""
    h, w = img.shape[:2]
    if (h, w) == (height, width):
        return img
    if h % height == 0 and w % width == 0:
        fy, fx = h // height, w // width
        out = img.reshape(height, fy, width, fx, -1).mean(axis=(1, 3))
        return np.round(out).astype(np.uint8)
    from PIL import Image

    return np.asarray(Image.fromarray(img).resize((width, height), Image.BOX))


def normalise(img: np.ndarray, processor=None) -> np.ndarray:
    """(3, H, W) float32 from (H, W, 3) uint8, with the image processor's mean and std (0.5 when
    it has none)."""
    mean = np.asarray(getattr(processor, "image_mean", None) or (0.5, 0.5, 0.5), np.float32)
    std = np.asarray(getattr(processor, "image_std", None) or (0.5, 0.5, 0.5), np.float32)
    x = (img.astype(np.float32) / 255.0 - mean) / std
    return np.ascontiguousarray(x.transpose(2, 0, 1))


def crop_tensor(crops: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """(N, 4, S, S) float32 encoder input: RGB in [-1, 1] and the mask as -1 / +1."""
    x = np.empty((len(crops), 4) + crops.shape[1:3], np.float32)
    x[:, :3] = crops.transpose(0, 3, 1, 2).astype(np.float32) * np.float32(2 / 255) - 1
    x[:, 3] = masks.astype(np.float32) * 2 - 1
    return x

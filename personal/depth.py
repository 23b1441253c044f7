"""Depth image units, below every floor that reads depth (perception models, mapping): a
RealSense-style uint16 millimetre image or a float image in metres."""
from __future__ import annotations

import numpy as np


def depth_to_metres(depth: np.ndarray) -> np.ndarray:
    """float32 metres from a uint16 millimetre image (RealSense 16UC1) or a float image."""
    if depth.ndim != 2:
        raise ValueError(f"depth must be a 2-D image, got shape {depth.shape}")
    if depth.dtype == np.uint16:
        return depth.astype(np.float32) * np.float32(0.001)
    if np.issubdtype(depth.dtype, np.floating):
        return depth.astype(np.float32, copy=False)
    raise ValueError(f"depth dtype {depth.dtype} unsupported (expected uint16 millimetres or float metres)")

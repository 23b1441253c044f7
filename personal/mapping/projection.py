"""Depth back-projection into the map frame, and voxel downsampling.

Conventions: ``K`` is the 3x3 OpenCV pinhole matrix; ``T_map_camera`` maps points in
the camera *optical* frame (x right, y down, z forward) to the ``map`` frame (REP 103).
Depth is planar z-depth (metres as float, or millimetres as uint16 like a RealSense).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from personal.depth import depth_to_metres


@dataclass
class FramePoints:
    """Valid pixels of one depth frame, back-projected.

    ``pixels`` are flat indices ``v * width + u`` into the full-resolution image, so any
    per-pixel layer (rgb, instance ids, dense-feature region ids) can be gathered with
    ``layer.reshape(-1, ...)[pixels]``.
    """

    points: np.ndarray  # (N, 3) float32, map frame
    pixels: np.ndarray  # (N,) int64 flat pixel index
    depth: np.ndarray  # (N,) float32 planar depth (metres) of each point
    camera_position: np.ndarray  # (3,) map-frame optical centre
    image_shape: tuple[int, int]  # (height, width)
    K: np.ndarray | None = None  # (3, 3) intrinsics of the depth image
    T_map_camera: np.ndarray | None = None  # (4, 4) optical -> map

    def __len__(self) -> int:
        return int(self.points.shape[0])


def check_intrinsics(K: np.ndarray) -> np.ndarray:
    K = np.asarray(K, dtype=np.float64)
    if K.shape != (3, 3):
        raise ValueError(f"K must be 3x3, got shape {K.shape}")
    if not (K[0, 0] > 0 and K[1, 1] > 0):
        raise ValueError(f"K has non-positive focal lengths fx={K[0, 0]}, fy={K[1, 1]}")
    return K


def check_pose(T: np.ndarray) -> np.ndarray:
    T = np.asarray(T, dtype=np.float64)
    if T.shape != (4, 4) or not np.all(np.isfinite(T)):
        raise ValueError(f"T_map_camera must be a finite 4x4 matrix, got shape {T.shape}")
    return T


class _RayCache:
    """Per-pixel normalised ray directions (x/z, y/z) for a (K, shape, stride); reused across frames."""

    def __init__(self) -> None:
        self._key: tuple | None = None
        self._value: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def get(self, K: np.ndarray, shape: tuple[int, int], stride: int):
        key = (tuple(np.round(K.ravel(), 6)), shape, stride)
        if key != self._key:
            h, w = shape
            vs, us = np.meshgrid(np.arange(0, h, stride), np.arange(0, w, stride), indexing="ij")
            pix = (vs * w + us).ravel().astype(np.int64)
            xn = ((us.ravel() - K[0, 2]) / K[0, 0]).astype(np.float32)
            yn = ((vs.ravel() - K[1, 2]) / K[1, 1]).astype(np.float32)
            self._key, self._value = key, (pix, xn, yn)
        return self._value


_RAYS = _RayCache()


def backproject(
    depth: np.ndarray,
    K: np.ndarray,
    T_map_camera: np.ndarray,
    *,
    min_depth: float = 0.0,
    max_depth: float = np.inf,
    stride: int = 1,
) -> FramePoints:
    """Back-project the valid pixels of ``depth`` into map-frame points.

    Invalid pixels — zero, NaN/inf, outside ``[min_depth, max_depth]`` — are dropped.
    ``stride`` samples every ``stride``-th row and column (a cheap uniform subsample).
    """
    if stride < 1:
        raise ValueError(f"stride must be >= 1, got {stride}")
    d_full = depth_to_metres(np.asarray(depth))
    K = check_intrinsics(K)
    T = check_pose(T_map_camera)
    pix, xn, yn = _RAYS.get(K, d_full.shape, stride)
    d = d_full[::stride, ::stride].ravel()
    with np.errstate(invalid="ignore"):
        valid = np.isfinite(d) & (d > 0) & (d >= min_depth) & (d <= max_depth)
    d = d[valid]
    # camera-frame points, then one 3x3 matmul + translation
    pc = np.empty((d.shape[0], 3), dtype=np.float32)
    pc[:, 0] = xn[valid] * d
    pc[:, 1] = yn[valid] * d
    pc[:, 2] = d
    R = T[:3, :3].astype(np.float32)
    t = T[:3, 3].astype(np.float32)
    pts = pc @ R.T + t
    return FramePoints(points=pts, pixels=pix[valid], depth=d, camera_position=T[:3, 3].copy(), image_shape=d_full.shape,
                       K=K, T_map_camera=T)


def voxel_downsample(points: np.ndarray, voxel: float) -> np.ndarray:
    """Indices of one representative point per occupied voxel (the first seen).

    Returns indices rather than points so colours/ids can be selected alongside.
    """
    if voxel <= 0:
        raise ValueError(f"voxel size must be > 0, got {voxel}")
    if len(points) == 0:
        return np.zeros(0, dtype=np.int64)
    keys = np.floor(points / voxel).astype(np.int64)
    keys -= keys.min(axis=0)
    dims = keys.max(axis=0) + 1
    flat = (keys[:, 0] * dims[1] + keys[:, 1]) * dims[2] + keys[:, 2]
    _, first = np.unique(flat, return_index=True)
    return np.sort(first)


def pixel_confidence(
    K: np.ndarray,
    shape: tuple[int, int],
    pixels: np.ndarray,
    depth: np.ndarray,
    *,
    max_range: float = 5.0,
    min_range: float = 0.5,
    range_floor: float = 0.1,
) -> np.ndarray:
    """Per-point observation confidence in (0, 1].

    VLFM-style viewing-angle term cos^2(theta / (hfov/2) * pi/2), with theta the horizontal
    angle from the optical axis (1 on the axis, 0 at the image edge), times a linear range
    falloff (1 at ``min_range`` or closer, ``range_floor`` at ``max_range``).
    """
    K = check_intrinsics(K)
    h, w = shape
    u = (pixels % w).astype(np.float32)
    half_fov = np.arctan(max(K[0, 2] + 0.5, w - 0.5 - K[0, 2]) / K[0, 0])
    theta = np.arctan(np.abs(u - K[0, 2]) / K[0, 0])
    angle = np.cos(np.minimum(theta / half_fov, 1.0) * (np.pi / 2)) ** 2
    span = max(max_range - min_range, 1e-6)
    rng = 1.0 - (1.0 - range_floor) * np.clip((depth - min_range) / span, 0.0, 1.0)
    # keep a small positive weight at the very edge so edge-only cells are not zero-weighted
    return (np.maximum(angle, 1e-3) * rng).astype(np.float32)

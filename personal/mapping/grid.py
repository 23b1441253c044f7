"""Geometry of a 2-D map grid shared by the occupancy grid and the feature map.

Arrays are indexed ``[row, col] = [iy, ix]``; cell (0, 0) has its lower-left corner at
``origin`` (like nav_msgs/OccupancyGrid: row-major, x along columns, y along rows).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class GridGeometry:
    resolution: float
    origin: tuple[float, float]  # map-frame (x, y) of the lower-left corner of cell (0, 0)
    shape: tuple[int, int]  # (rows = ny, cols = nx)

    def __post_init__(self) -> None:
        if not self.resolution > 0:
            raise ValueError(f"grid resolution must be > 0, got {self.resolution}")
        if self.shape[0] < 0 or self.shape[1] < 0:
            raise ValueError(f"grid shape must be non-negative, got {self.shape}")

    @classmethod
    def from_bounds(cls, bounds: tuple[float, float, float, float], resolution: float, margin: float = 0.0) -> "GridGeometry":
        """Smallest grid covering ``(xmin, ymin, xmax, ymax)`` plus ``margin``; origin snapped to the resolution."""
        xmin, ymin, xmax, ymax = bounds
        x0 = math.floor((xmin - margin) / resolution) * resolution
        y0 = math.floor((ymin - margin) / resolution) * resolution
        nx = max(1, int(math.ceil((xmax + margin - x0) / resolution)))
        ny = max(1, int(math.ceil((ymax + margin - y0) / resolution)))
        return cls(resolution=float(resolution), origin=(float(x0), float(y0)), shape=(ny, nx))

    @property
    def bounds(self) -> tuple[float, float, float, float]:
        x0, y0 = self.origin
        return x0, y0, x0 + self.shape[1] * self.resolution, y0 + self.shape[0] * self.resolution

    def cells(self, xy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(iy, ix) integer cell indices of map-frame points (N, >=2); may be out of range."""
        ix = np.floor((xy[:, 0] - self.origin[0]) / self.resolution).astype(np.int64)
        iy = np.floor((xy[:, 1] - self.origin[1]) / self.resolution).astype(np.int64)
        return iy, ix

    def cell(self, x: float, y: float) -> tuple[int, int]:
        return int(math.floor((y - self.origin[1]) / self.resolution)), int(math.floor((x - self.origin[0]) / self.resolution))

    def inside(self, iy: np.ndarray, ix: np.ndarray) -> np.ndarray:
        return (iy >= 0) & (ix >= 0) & (iy < self.shape[0]) & (ix < self.shape[1])

    def center(self, iy, ix) -> tuple:
        """Map-frame centre of cell(s) (iy, ix)."""
        return (self.origin[0] + (np.asarray(ix) + 0.5) * self.resolution, self.origin[1] + (np.asarray(iy) + 0.5) * self.resolution)

    def grown_to(self, xmin: float, ymin: float, xmax: float, ymax: float, chunk: float = 4.0) -> tuple["GridGeometry", tuple[int, int]]:
        """A grid that also covers the box, grown in whole ``chunk``-metre steps.

        Returns the new geometry and the (row, col) offset at which the old array sits in it.
        """
        x0, y0, x1, y1 = self.bounds
        if self.shape[0] > 0 and xmin >= x0 and ymin >= y0 and xmax < x1 and ymax < y1:
            return self, (0, 0)
        step = max(1, int(round(chunk / self.resolution)))
        pad_l = math.ceil(max(0.0, x0 - xmin) / self.resolution / step) * step
        pad_b = math.ceil(max(0.0, y0 - ymin) / self.resolution / step) * step
        pad_r = math.ceil(max(0.0, xmax - x1 + self.resolution) / self.resolution / step) * step
        pad_t = math.ceil(max(0.0, ymax - y1 + self.resolution) / self.resolution / step) * step
        geo = GridGeometry(
            resolution=self.resolution,
            origin=(self.origin[0] - pad_l * self.resolution, self.origin[1] - pad_b * self.resolution),
            shape=(self.shape[0] + pad_b + pad_t, self.shape[1] + pad_l + pad_r),
        )
        return geo, (pad_b, pad_l)

    def to_dict(self) -> dict:
        return {"resolution": self.resolution, "origin": list(self.origin), "shape": list(self.shape)}


def grow_array(arr: np.ndarray, shape: tuple[int, int], offset: tuple[int, int], fill) -> np.ndarray:
    """Copy ``arr`` (rows, cols, ...) into a new ``fill``-ed array of ``shape`` at ``offset``."""
    out = np.full(tuple(shape) + arr.shape[2:], fill, dtype=arr.dtype)
    r, c = offset
    out[r : r + arr.shape[0], c : c + arr.shape[1]] = arr
    return out


def snap_to_cell(mask: np.ndarray, geometry: GridGeometry, x: float, y: float, max_snap: float) -> int | None:
    """Flat index of the cell holding (x, y) if ``mask`` is true there, else of the nearest true
    cell within ``max_snap`` metres (an agent standing in an inflated margin, e.g. after a
    collision); None when there is none."""
    iy, ix = geometry.cell(x, y)
    ny, nx = mask.shape
    if 0 <= iy < ny and 0 <= ix < nx and mask[iy, ix]:
        return iy * nx + ix
    rows, cols = np.nonzero(mask)
    if len(rows) == 0:
        return None
    d = (rows - iy) ** 2 + (cols - ix) ** 2
    j = int(np.argmin(d))
    if d[j] * geometry.resolution**2 > max_snap**2:
        return None
    return int(rows[j] * nx + cols[j])

"""Geometric category check: does the observed object have the described category's shape?

The described category's shape is a category-level prior (its box model: body plus
parts, from the synthetic catalog — what size and layout a kettle has, never a
particular object's ground truth). One view is tested against it by ray casting
from the camera (aimed at the object centre, ``distance_m`` away, pitched by
``pitch_deg``), for every yaw of the object on a grid (the yaw is unknown):

* **overflow**: object pixels the hypothesised shape cannot explain — with depth,
  mask pixels whose 3-D point lies outside the (slightly inflated) boxes; without
  depth, mask pixels whose ray misses them. Occlusion only removes object pixels,
  so an overflow means the object is larger or differently shaped.
* **seen-through** (depth only): pixels inside the (slightly deflated) hypothesised
  silhouette where the camera sees a surface *behind* the shape's far side. An
  occluder is in front, so it never counts; seeing past the shape means it is not
  there — the object is smaller than the category.

The category is rejected only when no yaw keeps both below their limits.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

Box3 = tuple[tuple[float, float, float], tuple[float, float, float]]  # (centre, size) in the body frame


@lru_cache(maxsize=None)
def category_shape(category: str) -> tuple[Box3, ...] | None:
    """Body + part boxes of ``category`` (body centre at the origin, z up), or None if unknown."""
    try:
        from personal.world.catalog import CATEGORIES
    except ImportError:  # pragma: no cover
        return None
    c = CATEGORIES.get(category)
    if c is None:
        return None
    boxes = [((0.0, 0.0, 0.0), tuple(c.size))]
    for p in c.parts:
        centre = tuple(o * s for o, s in zip(p.offset, c.size))
        boxes.append((centre, tuple(k * s for k, s in zip(p.scale, c.size))))
    return tuple(boxes)


@dataclass
class ShapeFit:
    consistent: bool
    overflow: float  # best yaw's share of object pixels outside the shape
    seen_through: float  # best yaw's share of the shape's silhouette seen through (nan without depth)
    yaw_deg: float
    used_depth: bool

    def reason(self, category: str) -> str:
        what = (f"{self.overflow:.0%} of the object lies outside a {category}'s shape"
                + (f", {self.seen_through:.0%} of where a {category} would be is seen through" if self.used_depth else ""))
        return f"shape check: {what} at the best-fitting orientation"


class ShapeChecker:
    """Fits a category's box model to one view (mask, optional depth) over a yaw grid."""

    # Limits set on the generated set's positive views (max overflow 0.008 from the mask alone,
    # 0.067 in 3-D, seen-through 0.0 — the renderer's depth is exact), with room for noise.
    def __init__(self, yaw_step_deg: float = 10.0, edge_px: float = 3.0, min_tol_m: float = 0.015,
                 overflow_max: float = 0.05, overflow_max_3d: float = 0.10, seen_through_max: float = 0.08,
                 depth_margin_m: float = 0.03, stride: int = 3):
        self.yaws = np.radians(np.arange(0.0, 360.0, yaw_step_deg))
        self.edge_px, self.min_tol_m = edge_px, min_tol_m
        self.overflow_max, self.overflow_max_3d, self.seen_through_max = overflow_max, overflow_max_3d, seen_through_max
        self.depth_margin_m, self.stride = depth_margin_m, stride

    def check(self, category: str, mask: np.ndarray, depth: np.ndarray | None, distance_m: float,
              pitch_deg: float, hfov_deg: float) -> ShapeFit | None:
        """None when the category has no shape model or the view gives no geometry."""
        boxes = category_shape(category)
        if boxes is None or not distance_m or not mask.any():
            return None
        h, w = mask.shape
        f = (w / 2) / math.tan(math.radians(hfov_deg) / 2)
        tol = max(self.min_tol_m, self.edge_px * distance_m / f)  # pixel slack in metres at the object
        p = math.radians(pitch_deg or 0.0)
        fwd, down = np.array([math.cos(p), 0.0, math.sin(p)]), np.array([math.sin(p), 0.0, -math.cos(p)])
        right = np.array([0.0, -1.0, 0.0])
        goal = distance_m * fwd
        rays, win = self._window_rays(mask, boxes, goal, fwd, right, down, f, distance_m)
        m = mask[win][:: self.stride, :: self.stride].reshape(-1)
        d = depth[win][:: self.stride, :: self.stride].reshape(-1) if depth is not None else None
        if not m.any():
            return None
        over_max = self.overflow_max_3d if d is not None else self.overflow_max
        best, best_score = None, math.inf
        for yaw in self.yaws:
            fit = self._fit_yaw(boxes, yaw, goal, rays, m, d, tol)
            score = max(fit[0] / over_max, fit[1] / self.seen_through_max)  # <= 1: this yaw fits
            if score < best_score:
                best, best_score = (*fit, yaw), score
            if score <= 1.0:
                break  # one fitting orientation is enough to accept
        overflow, seen, yaw = best
        ok = best_score <= 1.0
        return ShapeFit(ok, float(overflow), float(seen) if d is not None else float("nan"),
                        float(math.degrees(yaw)), d is not None)

    # -- geometry -------------------------------------------------------------
    def _window_rays(self, mask, boxes, goal, fwd, right, down, f, distance_m):
        """Camera rays (unit forward component) of the pixels around the mask and the shape's reach."""
        h, w = mask.shape
        ys, xs = np.nonzero(mask)
        reach = max(np.linalg.norm(np.abs(np.asarray(c)) + np.asarray(s) / 2) for c, s in boxes)
        rad = f * reach / max(distance_m - reach, 0.05)  # the shape's farthest possible pixel from the centre
        cx, cy = (w - 1) / 2, (h - 1) / 2
        x0, x1 = int(max(0, min(xs.min(), cx - rad))), int(min(w, max(xs.max() + 1, cx + rad + 1)))
        y0, y1 = int(max(0, min(ys.min(), cy - rad))), int(min(h, max(ys.max() + 1, cy + rad + 1)))
        u = (np.arange(x0, x1, self.stride) - cx) / f
        v = (np.arange(y0, y1, self.stride) - cy) / f
        uu, vv = np.meshgrid(u, v)
        rays = fwd[None, :] + uu.reshape(-1, 1) * right[None, :] + vv.reshape(-1, 1) * down[None, :]
        return rays, (slice(y0, y1), slice(x0, x1))

    def _fit_yaw(self, boxes, yaw, goal, rays, m, d, tol):
        c, s = math.cos(yaw), math.sin(yaw)
        rot = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
        hit_out = np.zeros(len(rays), bool)  # rays through the inflated shape
        hit_in = np.zeros(len(rays), bool)  # rays through the deflated shape
        exit_in = np.zeros(len(rays))
        inside = np.zeros(len(rays), bool)  # observed 3-D point inside the inflated shape
        pts = rays * d[:, None] if d is not None else None
        for centre, size in boxes:
            origin = goal + rot @ np.asarray(centre)
            o = -(origin @ rot)  # camera origin in the box frame
            r = rays @ rot
            half = np.asarray(size) / 2
            t0, t1 = _slab(o, r, half + tol)
            hit_out |= t1 > np.maximum(t0, 0)
            t0i, t1i = _slab(o, r, np.maximum(half - tol, 1e-3))
            through = t1i > np.maximum(t0i, 0)
            hit_in |= through
            exit_in = np.where(through, np.maximum(exit_in, t1i), exit_in)
            if pts is not None:
                q = (pts - origin) @ rot
                inside |= np.all(np.abs(q) <= half + tol, axis=1)
        n_obj = max(1, int(m.sum()))
        if d is None:
            return float((m & ~hit_out).sum() / n_obj), 0.0
        valid = d > 0
        overflow = float((m & valid & ~inside).sum() / max(1, int((m & valid).sum())))
        region = hit_in & valid
        seen = (region & ~m & (d > exit_in + self.depth_margin_m)).sum() / max(1, int(region.sum()))
        return overflow, float(seen)


def _slab(o: np.ndarray, r: np.ndarray, half: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Entry and exit ray parameters of rays ``o + t r`` through the box |x| <= half (t0 > t1: miss)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        inv = 1.0 / r
        a = (-half[None, :] - o[None, :]) * inv
        b = (half[None, :] - o[None, :]) * inv
    a = np.nan_to_num(a, nan=-np.inf)
    b = np.nan_to_num(b, nan=np.inf)
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    return lo.max(axis=1), hi.min(axis=1)


def render_shape(category: str, yaw_deg: float, distance_m: float, pitch_deg: float = 0.0, hfov_deg: float = 90.0,
                 hw: tuple[int, int] = (360, 640), background_m: float = 3.0) -> tuple[np.ndarray, np.ndarray]:
    """(mask, planar depth) of ``category``'s box model seen by an aimed camera, in front of a
    flat background ``background_m`` away — synthetic views for tests and benchmarks."""
    boxes = category_shape(category)
    if boxes is None:
        raise ValueError(f"no shape model for category {category!r}")
    h, w = hw
    f = (w / 2) / math.tan(math.radians(hfov_deg) / 2)
    p = math.radians(pitch_deg)
    fwd, down, right = np.array([math.cos(p), 0.0, math.sin(p)]), np.array([math.sin(p), 0.0, -math.cos(p)]), np.array([0.0, -1.0, 0.0])
    uu, vv = np.meshgrid((np.arange(w) - (w - 1) / 2) / f, (np.arange(h) - (h - 1) / 2) / f)
    rays = fwd[None, :] + uu.reshape(-1, 1) * right[None, :] + vv.reshape(-1, 1) * down[None, :]
    c, s = math.cos(math.radians(yaw_deg)), math.sin(math.radians(yaw_deg))
    rot = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    goal = distance_m * fwd
    near = np.full(len(rays), np.inf)
    for centre, size in boxes:
        origin = goal + rot @ np.asarray(centre)
        t0, t1 = _slab(-(origin @ rot), rays @ rot, np.asarray(size) / 2)
        hit = t1 > np.maximum(t0, 0)
        near = np.where(hit, np.minimum(near, t0), near)
    mask = np.isfinite(near)
    depth = np.where(mask, near, background_m).astype(np.float32)
    return mask.reshape(h, w), depth.reshape(h, w)

"""Geometric category check: does the observed object have the described category's shape?

The described category's shape is a category-level prior: the triangle mesh the synthetic
world draws for that category (``personal.world.mesh.object_geometry`` of an object of the
catalog's nominal size with the catalog's parts — a mug is a cylinder with a ring handle, a
bowl a lathed shell, a lamp a base with a stem and a shade), never a particular object's
ground truth. One view is tested against it by ray casting from the camera (aimed at the
object centre, ``distance_m`` away, pitched by ``pitch_deg``), for every yaw of the object on
a grid (the yaw is unknown):

* **overflow**: object pixels the hypothesised shape cannot explain — with depth, mask
  pixels whose 3-D point lies farther than a tolerance from the shape's surface; without
  depth, mask pixels outside the (slightly dilated) silhouette of the shape. Occlusion only
  removes object pixels, so an overflow means the object is larger or differently shaped.
* **seen-through** (depth only): pixels inside the (slightly eroded) silhouette of the shape
  where the camera sees a surface *behind* the shape's far side. An occluder is in front, so
  it never counts; seeing past the shape means it is not there (the object is smaller, or
  hollow where the category is solid).

The category is rejected only when no yaw keeps both below their limits.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass
from functools import lru_cache

import numpy as np


@dataclass(frozen=True)
class ShapeModel:
    """A category's drawn shape in its own frame: origin at the centre of the category's box
    (the point a capture's goal position names), x width, y depth (front = +y), z up."""

    category: str
    vertices: np.ndarray  # (n, 3) float32
    triangles: np.ndarray  # (m, 3) uint32
    roles: tuple[str, ...]  # per triangle: body | accent | part:<name> | a fixed look (dark, light, metal...)
    reach: float  # farthest vertex from the origin, metres


@lru_cache(maxsize=None)
def category_model(category: str) -> ShapeModel | None:
    """The shape the synthetic world draws for ``category`` (its nominal size and parts, no quarter
    turn), or None for an unknown category. Built from the renderer's own shape definitions."""
    try:
        from personal.world import shapes
        from personal.world.catalog import CATEGORIES, COLORS
        from personal.world.generator import _make_parts  # where the generator puts a category's parts
        from personal.world.mesh import SHAPE_DRAWS_PART, object_geometry
        from personal.world.model import Box, SceneObject
    except ImportError:  # pragma: no cover
        return None
    c = CATEGORIES.get(category)
    if c is None:
        return None
    full = Box((0.0, 0.0, 0.0), tuple(float(s) for s in c.size))
    parts = _make_parts(random.Random(0), c, full, 0)
    box = full
    if c.open_below > 0:  # furniture on legs: the box is the top slab (as the generator builds it)
        top = full.max[2]
        box = Box((0.0, 0.0, (c.open_below + full.min[2] + top) / 2), (full.size[0], full.size[1], top - full.min[2] - c.open_below))
    colour = c.colors[0]
    obj = SceneObject(instance_id=1, object_id=f"{category}_model", category=category, color=colour, rgb=COLORS[colour],
                      caption="", room_id="", floor=0, box=box, attributes={"yaw_quarter_turns": 0}, parts=parts)
    pieces = object_geometry(obj)
    roles = [p.role for p in shapes.body_pieces(category, box.size)]
    roles += ["part:" + p.name for p in parts if (category, p.name) not in SHAPE_DRAWS_PART]
    if len(roles) != len(pieces):  # pragma: no cover - object_geometry changed its piece order
        roles = ["body"] * len(pieces)
    geom = shapes.Geom.concat([g for g, _ in pieces])
    counts = [len(g.tris) for g, _ in pieces]
    verts = (geom.verts - np.asarray(box.center, float)).astype(np.float32)
    tri_roles = tuple(r for r, n in zip(roles, counts) for _ in range(n))
    return ShapeModel(category, verts, geom.tris.astype(np.uint32), tri_roles, float(np.linalg.norm(verts, axis=1).max()))


@lru_cache(maxsize=None)
def _scene(category: str):
    import open3d as o3d

    model = category_model(category)
    scene = o3d.t.geometry.RaycastingScene()
    scene.add_triangles(o3d.core.Tensor(model.vertices), o3d.core.Tensor(model.triangles))
    return scene


def _rot_z(yaw: float) -> np.ndarray:
    c, s = math.cos(yaw), math.sin(yaw)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def _camera_axes(pitch_deg: float):
    """Forward, right and down unit vectors of an aimed camera (x forward, y left, z up)."""
    p = math.radians(pitch_deg or 0.0)
    return np.array([math.cos(p), 0.0, math.sin(p)]), np.array([0.0, -1.0, 0.0]), np.array([math.sin(p), 0.0, -math.cos(p)])


def cast_model(category: str, yaws: np.ndarray, goal: np.ndarray, rays: np.ndarray, far: float):
    """Near hit, far exit (ray parameters; inf where the ray misses) and the hit triangle of
    ``rays`` (from the camera at the origin, camera frame) through the category's shape
    centred at ``goal`` and turned by each of ``yaws`` (radians): arrays of (len(yaws), len(rays))."""
    import open3d as o3d

    scene = _scene(category)
    k, n = len(yaws), len(rays)
    origins = np.empty((k, n, 3), np.float32)
    dirs = np.empty((k, n, 3), np.float32)
    for i, yaw in enumerate(yaws):
        inv = _rot_z(yaw).T  # camera frame -> model frame
        origins[i] = inv @ (-goal)
        dirs[i] = rays @ inv.T
    fwd = np.concatenate([origins, dirs], axis=-1).reshape(-1, 6)
    hit = scene.cast_rays(o3d.core.Tensor(fwd))
    t_near = hit["t_hit"].numpy().reshape(k, n)
    tri = hit["primitive_ids"].numpy().reshape(k, n)
    back = np.concatenate([origins + far * dirs, -dirs], axis=-1).reshape(-1, 6)
    t_back = scene.cast_rays(o3d.core.Tensor(back))["t_hit"].numpy().reshape(k, n)
    t_far = np.where(np.isfinite(t_back), far - t_back, np.inf)
    return t_near.astype(np.float64), t_far.astype(np.float64), tri


def surface_distance(category: str, yaws: np.ndarray, goal: np.ndarray, points: np.ndarray) -> np.ndarray:
    """(len(yaws), len(points)) distance of camera-frame ``points`` to the shape's surface."""
    import open3d as o3d

    q = np.empty((len(yaws), len(points), 3), np.float32)
    for i, yaw in enumerate(yaws):
        inv = _rot_z(yaw).T
        q[i] = (points - goal) @ inv.T
    d = _scene(category).compute_distance(o3d.core.Tensor(q.reshape(-1, 3)))
    return d.numpy().reshape(len(yaws), len(points)).astype(np.float64)


@dataclass
class ShapeFit:
    consistent: bool
    overflow: float  # best yaw's share of object pixels outside the shape
    seen_through: float  # best yaw's share of the shape's silhouette seen through (nan without depth)
    yaw_deg: float
    used_depth: bool
    # every yaw that fits about as well as the best (exhaustive search only): a flat or
    # symmetric shape fits several, and they may put a part in different places
    plausible_yaws_deg: tuple[float, ...] = ()

    def reason(self, category: str) -> str:
        what = (f"{self.overflow:.0%} of the object lies outside a {category}'s shape"
                + (f", {self.seen_through:.0%} of where a {category} would be is seen through" if self.used_depth else ""))
        return f"shape check: {what} at the best-fitting orientation"


class ShapeChecker:
    """Fits a category's drawn shape to one view (mask, optional depth) over a yaw grid."""

    def __init__(self, yaw_step_deg: float = 10.0, edge_px: float = 3.0, min_tol_m: float = 0.015,
                 overflow_max: float = 0.05, overflow_max_3d: float = 0.10, seen_through_max: float = 0.08,
                 depth_margin_m: float = 0.03, stride: int = 3, yaw_batch: int = 12, plausible_slack: float = 0.25):
        # coarse to fine: the first batch spans the circle, later ones fill in between
        yaws = np.arange(0.0, 360.0, yaw_step_deg)
        n_batches = max(1, int(math.ceil(len(yaws) / yaw_batch)))
        self.yaws = np.radians(np.concatenate([yaws[i::n_batches] for i in range(n_batches)]))
        self.yaw_batch = int(math.ceil(len(yaws) / n_batches))
        self.edge_px, self.min_tol_m = edge_px, min_tol_m
        self.overflow_max, self.overflow_max_3d, self.seen_through_max = overflow_max, overflow_max_3d, seen_through_max
        self.depth_margin_m, self.stride = depth_margin_m, stride
        self.plausible_slack = plausible_slack

    def check(self, category: str, mask: np.ndarray, depth: np.ndarray | None, distance_m: float,
              pitch_deg: float, hfov_deg: float, exhaustive: bool = False) -> ShapeFit | None:
        """None when the category has no shape model or the view gives no geometry.

        ``exhaustive``: try every yaw and report the best-fitting one (the orientation that
        :meth:`role_map` then draws); otherwise stop at the first yaw that fits."""
        model = category_model(category)
        if model is None or not distance_m or not mask.any():
            return None
        h, w = mask.shape
        f = (w / 2) / math.tan(math.radians(hfov_deg) / 2)
        tol = max(self.min_tol_m, self.edge_px * distance_m / f)  # pixel slack in metres at the object
        tol_cells = tol * f / distance_m / self.stride  # the same slack in sample cells at the object
        fwd, right, down = _camera_axes(pitch_deg)
        goal = distance_m * fwd
        rays, win, grid = self._window_rays(mask, model.reach, fwd, right, down, f, distance_m)
        m = mask[win][:: self.stride, :: self.stride]
        if not m.any():
            return None
        m = m.reshape(-1)
        d = depth[win][:: self.stride, :: self.stride].reshape(-1).astype(np.float64) if depth is not None else None
        over_max = self.overflow_max_3d if d is not None else self.overflow_max
        far = distance_m + model.reach + 0.1
        best, best_key = None, (math.inf, math.inf)
        batch = len(self.yaws) if exhaustive else self.yaw_batch
        plausible: tuple[float, ...] = ()
        for b in range(0, len(self.yaws), batch):
            yaws = self.yaws[b:b + batch]
            overflow, seen = self._fit(model.category, yaws, goal, rays, grid, m, d, tol, tol_cells, far)
            worst = np.maximum(overflow / over_max, seen / self.seen_through_max)  # <= 1: this yaw fits
            total = overflow / over_max + seen / self.seen_through_max  # among fitting yaws, the closest fit
            i = int(np.lexsort((total, np.maximum(worst, 1.0)))[0])
            key = (max(float(worst[i]), 1.0), float(total[i]))
            if key < best_key:
                best, best_key = (overflow[i], seen[i], yaws[i], float(worst[i])), key
            if exhaustive and worst[i] <= 1.0:
                near = (worst <= 1.0) & (total <= total[i] + self.plausible_slack)
                order = np.argsort(total[near], kind="stable")
                plausible = tuple(float(math.degrees(y)) % 360.0 for y in yaws[near][order])
            if best[3] <= 1.0 and not exhaustive:
                break  # one fitting orientation is enough to accept
        overflow, seen, yaw, worst = best
        return ShapeFit(worst <= 1.0, float(overflow), float(seen) if d is not None else float("nan"),
                        float(math.degrees(yaw)) % 360.0, d is not None, plausible)

    def role_map(self, category: str, mask: np.ndarray, distance_m: float, pitch_deg: float, hfov_deg: float,
                 yaw_deg: float) -> tuple[np.ndarray, tuple[str, ...]] | None:
        """Which piece of the category's shape (at ``yaw_deg``) each pixel of ``mask`` shows:
        (HxW int16 index into the returned role names, -1 where the shape is not drawn), or None."""
        model = category_model(category)
        if model is None or not distance_m or not mask.any():
            return None
        h, w = mask.shape
        f = (w / 2) / math.tan(math.radians(hfov_deg) / 2)
        fwd, right, down = _camera_axes(pitch_deg)
        ys, xs = np.nonzero(mask)
        y0, y1, x0, x1 = int(ys.min()), int(ys.max()) + 1, int(xs.min()), int(xs.max()) + 1
        uu, vv = np.meshgrid((np.arange(x0, x1) - (w - 1) / 2) / f, (np.arange(y0, y1) - (h - 1) / 2) / f)
        rays = fwd[None, :] + uu.reshape(-1, 1) * right[None, :] + vv.reshape(-1, 1) * down[None, :]
        _, _, tri = cast_model(category, np.array([math.radians(yaw_deg)]), distance_m * fwd, rays,
                               distance_m + model.reach + 0.1)
        names = tuple(sorted(set(model.roles)))
        lookup = np.array([names.index(r) for r in model.roles] + [-1], np.int16)
        tri = tri[0].astype(np.int64)
        tri[(tri < 0) | (tri >= len(model.roles))] = len(model.roles)
        out = np.full((h, w), -1, np.int16)
        out[y0:y1, x0:x1] = lookup[tri].reshape(y1 - y0, x1 - x0)
        out[~mask] = -1
        return out, names

    # -- geometry -------------------------------------------------------------
    def _window_rays(self, mask, reach, fwd, right, down, f, distance_m):
        """Camera rays (unit forward component) of the pixels around the mask and the shape's reach."""
        h, w = mask.shape
        ys, xs = np.nonzero(mask)
        rad = f * reach / max(distance_m - reach, 0.05)  # the shape's farthest possible pixel from the centre
        cx, cy = (w - 1) / 2, (h - 1) / 2
        x0, x1 = int(max(0, min(xs.min(), cx - rad))), int(min(w, max(xs.max() + 1, cx + rad + 1)))
        y0, y1 = int(max(0, min(ys.min(), cy - rad))), int(min(h, max(ys.max() + 1, cy + rad + 1)))
        u = (np.arange(x0, x1, self.stride) - cx) / f
        v = (np.arange(y0, y1, self.stride) - cy) / f
        uu, vv = np.meshgrid(u, v)
        rays = fwd[None, :] + uu.reshape(-1, 1) * right[None, :] + vv.reshape(-1, 1) * down[None, :]
        return rays, (slice(y0, y1), slice(x0, x1)), uu.shape

    def _fit(self, category, yaws, goal, rays, grid, m, d, tol, tol_cells, far):
        """(overflow, seen-through) per yaw."""
        from scipy.ndimage import distance_transform_edt

        t_near, t_far, _ = cast_model(category, yaws, goal, rays, far)
        hit = np.isfinite(t_near)
        n_obj = max(1, int(m.sum()))
        if d is None:
            overflow = np.empty(len(yaws))
            for i in range(len(yaws)):
                # distance (cells) from each sample to the silhouette: within the slack counts as inside
                gap = distance_transform_edt(~hit[i].reshape(grid)).reshape(-1) if hit[i].any() else np.full(len(m), np.inf)
                overflow[i] = (m & (gap > tol_cells)).sum() / n_obj
            return overflow, np.zeros(len(yaws))
        valid = d > 0
        obj = m & valid
        pts = rays[obj] * d[obj][:, None]
        dist = surface_distance(category, yaws, goal, pts) if len(pts) else np.zeros((len(yaws), 0))
        overflow = (dist > tol).sum(axis=1) / max(1, int(obj.sum()))
        seen = np.empty(len(yaws))
        for i in range(len(yaws)):
            inner = distance_transform_edt(hit[i].reshape(grid)).reshape(-1) > tol_cells  # eroded silhouette
            region = inner & valid
            behind = region & ~m & (d > t_far[i] + self.depth_margin_m)
            seen[i] = behind.sum() / max(1, int(region.sum()))
        return overflow, seen


def render_shape(category: str, yaw_deg: float, distance_m: float, pitch_deg: float = 0.0, hfov_deg: float = 90.0,
                 hw: tuple[int, int] = (360, 640), background_m: float = 3.0) -> tuple[np.ndarray, np.ndarray]:
    """(mask, planar depth) of ``category``'s shape seen by an aimed camera, in front of a
    flat background ``background_m`` away — synthetic views for tests and benchmarks."""
    model = category_model(category)
    if model is None:
        raise ValueError(f"no shape model for category {category!r}")
    h, w = hw
    f = (w / 2) / math.tan(math.radians(hfov_deg) / 2)
    fwd, right, down = _camera_axes(pitch_deg)
    uu, vv = np.meshgrid((np.arange(w) - (w - 1) / 2) / f, (np.arange(h) - (h - 1) / 2) / f)
    rays = fwd[None, :] + uu.reshape(-1, 1) * right[None, :] + vv.reshape(-1, 1) * down[None, :]
    t_near, _, _ = cast_model(category, np.array([math.radians(yaw_deg)]), distance_m * fwd, rays,
                              distance_m + model.reach + 0.1)
    mask = np.isfinite(t_near[0])
    depth = np.where(mask, t_near[0], background_m).astype(np.float32)
    return mask.reshape(h, w), depth.reshape(h, w)

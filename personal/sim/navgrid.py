"""Navigable occupancy grid, geodesic distances and shortest paths per floor.

A cell is navigable when it lies inside a room of that floor and no wall or
object box whose vertical extent overlaps the agent's body band (0.05-1.2 m
above the floor) comes within the agent radius of the cell centre. Geodesic
distances are Dijkstra distances on the 16-connected grid (straight, diagonal
and knight moves at their Euclidean length; a move needs the cells it passes
free, so paths never cut a blocked corner). Lengths are within about 2 % of the
true shortest path in the free space (8-connectivity would err by up to 8 %).
"""
from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
from scipy import ndimage
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import dijkstra

from personal.world.model import Box, Scene

AGENT_RADIUS = 0.18
BODY_BAND = (0.05, 1.2)  # metres above the floor the body occupies
RESOLUTION = 0.05
# Room bounds may stop at wall faces or wall centres; closing gaps up to this
# width keeps door openings between rooms inside the room mask.
_ROOM_GAP_CLOSE_M = 0.3


@dataclass(frozen=True)
class GridSpec:
    x0: float  # map x of the centre of cell column 0
    y0: float  # map y of the centre of cell row 0
    res: float
    nx: int
    ny: int


class NavGrid:
    """Navigable grid of one floor. Arrays are indexed [iy, ix]."""

    def __init__(self, scene: Scene, floor: int = 0, resolution: float = RESOLUTION,
                 agent_radius: float = AGENT_RADIUS, body_band: tuple[float, float] = BODY_BAND):
        floors = {f.index: f for f in scene.floors}
        if floor not in floors:
            raise ValueError(f"scene {scene.scene_id!r} has no floor {floor} (floors: {sorted(floors)})")
        rooms = [r for r in scene.rooms if r.floor == floor]
        if not rooms:
            raise ValueError(f"scene {scene.scene_id!r} has no rooms on floor {floor}")
        self.floor = floor
        self.floor_z = floors[floor].z
        self.agent_radius = agent_radius
        margin = agent_radius + _ROOM_GAP_CLOSE_M + 2 * resolution
        xs = [v for r in rooms for v in (r.bounds[0], r.bounds[2])]
        ys = [v for r in rooms for v in (r.bounds[1], r.bounds[3])]
        x0, y0 = min(xs) - margin, min(ys) - margin
        nx = int(math.ceil((max(xs) + margin - x0) / resolution))
        ny = int(math.ceil((max(ys) + margin - y0) / resolution))
        self.spec = GridSpec(x0 + resolution / 2, y0 + resolution / 2, resolution, nx, ny)
        self.free = self._build_free(scene, rooms, body_band)
        self._graph = self._build_graph()
        self._fields: OrderedDict[tuple, tuple[np.ndarray, np.ndarray]] = OrderedDict()

    # -- construction ------------------------------------------------------
    def _box_mask(self, lo: tuple[float, float], hi: tuple[float, float]) -> tuple[slice, slice]:
        """Slices of the cells whose centres lie inside [lo, hi] (x, y)."""
        s = self.spec
        ix0 = max(int(math.ceil((lo[0] - s.x0) / s.res)), 0)
        ix1 = min(int(math.floor((hi[0] - s.x0) / s.res)) + 1, s.nx)
        iy0 = max(int(math.ceil((lo[1] - s.y0) / s.res)), 0)
        iy1 = min(int(math.floor((hi[1] - s.y0) / s.res)) + 1, s.ny)
        return slice(iy0, max(iy1, iy0)), slice(ix0, max(ix1, ix0))

    def _build_free(self, scene: Scene, rooms, body_band) -> np.ndarray:
        s = self.spec
        inside = np.zeros((s.ny, s.nx), dtype=bool)
        for r in rooms:
            inside[self._box_mask((r.bounds[0], r.bounds[1]), (r.bounds[2], r.bounds[3]))] = True
        gap = max(int(round(_ROOM_GAP_CLOSE_M / s.res)), 1)
        inside = ndimage.binary_closing(inside, structure=np.ones((3, 3), bool), iterations=gap, border_value=0)
        blocked = ~inside
        z_lo, z_hi = self.floor_z + body_band[0], self.floor_z + body_band[1]
        boxes: list[Box] = [w.box for w in scene.walls]
        boxes += [o.box for o in scene.objects if o.floor == self.floor]
        for b in boxes:
            (bx0, by0, bz0), (bx1, by1, bz1) = b.min, b.max
            if bz1 < z_lo or bz0 > z_hi:
                continue  # above the head or below the feet (rugs, other floors)
            # Blocks cells whose centre lies in the footprint grown by half a cell,
            # so thin boxes never fall between cell centres.
            h = s.res / 2
            blocked[self._box_mask((bx0 - h, by0 - h), (bx1 + h, by1 + h))] = True
        # Inflate obstacles by the agent radius: free iff the nearest blocked
        # cell centre is farther than the radius.
        dist = ndimage.distance_transform_edt(~blocked, sampling=s.res)
        return dist > self.agent_radius

    # (dy, dx, cells that must be free besides both ends) of the 16-neighbourhood,
    # one direction per pair; a move never cuts a blocked corner.
    _MOVES = (
        (0, 1, ()), (1, 0, ()),
        (1, 1, ((0, 1), (1, 0))), (1, -1, ((0, -1), (1, 0))),
        (1, 2, ((0, 1), (1, 1))), (2, 1, ((1, 0), (1, 1))),
        (1, -2, ((0, -1), (1, -1))), (2, -1, ((1, 0), (1, -1))),
    )

    def _build_graph(self):
        """Sparse symmetric graph over cells, 16-connected (straight, diagonal and
        knight moves at their Euclidean cost): within ~2 % of true path lengths
        where 8-connectivity errs by up to 8 %."""
        s = self.spec
        p = 2
        fp = np.pad(self.free, p, constant_values=False)
        idx = np.arange(s.ny * s.nx).reshape(s.ny, s.nx)

        def shifted(dy, dx):
            return fp[p + dy:p + dy + s.ny, p + dx:p + dx + s.nx]

        rows, cols, w = [], [], []
        for dy, dx, via in self._MOVES:
            ok = self.free & shifted(dy, dx)
            for vy, vx in via:
                ok &= shifted(vy, vx)
            src = idx[ok]
            rows.append(src)
            cols.append(src + dy * s.nx + dx)
            w.append(np.full(src.size, s.res * math.hypot(dy, dx)))
        r, c, ww = np.concatenate(rows), np.concatenate(cols), np.concatenate(w)
        n = s.nx * s.ny
        g = coo_matrix((np.concatenate([ww, ww]), (np.concatenate([r, c]), np.concatenate([c, r]))), shape=(n, n))
        return g.tocsr()

    # -- coordinates -------------------------------------------------------
    def cell(self, x: float, y: float) -> tuple[int, int]:
        """(iy, ix) of the cell containing (x, y); may be outside the grid."""
        s = self.spec
        return int(round((y - s.y0) / s.res)), int(round((x - s.x0) / s.res))

    def cell_center(self, iy: int, ix: int) -> tuple[float, float]:
        s = self.spec
        return s.x0 + ix * s.res, s.y0 + iy * s.res

    def in_grid(self, iy: int, ix: int) -> bool:
        return 0 <= iy < self.spec.ny and 0 <= ix < self.spec.nx

    def is_navigable(self, x: float, y: float) -> bool:
        iy, ix = self.cell(x, y)
        return self.in_grid(iy, ix) and bool(self.free[iy, ix])

    def snap(self, x: float, y: float, max_dist: float = math.inf) -> tuple[float, float] | None:
        """Centre of the navigable cell nearest to (x, y), or None if none lies within max_dist."""
        cells = self._nearest_free_cells(x, y, max_dist)
        if cells is None:
            return None
        return self.cell_center(*cells)

    def _nearest_free_cells(self, x: float, y: float, max_dist: float = math.inf) -> tuple[int, int] | None:
        iy, ix = self.cell(x, y)
        if self.in_grid(iy, ix) and self.free[iy, ix]:
            return iy, ix
        fy, fx = np.nonzero(self.free)
        if fy.size == 0:
            return None
        cx, cy = self.spec.x0 + fx * self.spec.res, self.spec.y0 + fy * self.spec.res
        d2 = (cx - x) ** 2 + (cy - y) ** 2
        k = int(np.argmin(d2))
        if d2[k] > max_dist**2:
            return None
        return int(fy[k]), int(fx[k])

    def cells_near_boxes(self, boxes: list[Box], radius: float) -> np.ndarray:
        """Flat indices of navigable cells whose centre is within ``radius`` of any box footprint."""
        s = self.spec
        gx = s.x0 + np.arange(s.nx) * s.res
        gy = s.y0 + np.arange(s.ny) * s.res
        mask = np.zeros_like(self.free)
        for b in boxes:
            dx = np.maximum(np.maximum(b.min[0] - gx, 0.0), gx - b.max[0])
            dy = np.maximum(np.maximum(b.min[1] - gy, 0.0), gy - b.max[1])
            mask |= (dy[:, None] ** 2 + dx[None, :] ** 2) <= radius**2
        return np.flatnonzero(mask & self.free)

    # -- distances ---------------------------------------------------------
    def distance_field(self, goal_cells: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(distances, predecessors) from the nearest of ``goal_cells`` (flat indices) to every cell.
        Cached (LRU of 16) because evaluation asks the same goals at every step."""
        key = tuple(sorted(int(c) for c in goal_cells))
        if key in self._fields:
            self._fields.move_to_end(key)
            return self._fields[key]
        if not key:
            n = self.spec.nx * self.spec.ny
            out = (np.full(n, np.inf), np.full(n, -9999, dtype=np.int32))
        else:
            dist, pred = dijkstra(self._graph, directed=False, indices=list(key), min_only=True,
                                  return_predecessors=True)[:2]
            out = (dist, pred)
        self._fields[key] = out
        if len(self._fields) > 16:
            self._fields.popitem(last=False)
        return out

    def _snap_flat(self, x: float, y: float, max_snap: float) -> tuple[int | None, float]:
        c = self._nearest_free_cells(x, y, max_snap)
        if c is None:
            return None, math.inf
        cx, cy = self.cell_center(*c)
        return c[0] * self.spec.nx + c[1], math.hypot(cx - x, cy - y)

    def geodesic_distance(self, start: tuple[float, float], goals: list[tuple[float, float]],
                          max_snap: float = 0.5) -> float:
        """Path length from ``start`` to the nearest goal; points are snapped to the
        nearest navigable cell (within ``max_snap`` m, else they count as unreachable)
        and the snapping offsets are added. inf when unreachable."""
        s_cell, s_off = self._snap_flat(*start, max_snap)
        if s_cell is None:
            return math.inf
        snapped = [self._snap_flat(gx, gy, max_snap) for gx, gy in goals]
        cells = np.array([c for c, _ in snapped if c is not None], dtype=np.int64)
        if cells.size == 0:
            return math.inf
        dist, _ = self.distance_field(cells)
        # one field for all goals gives the grid distance to the nearest one; add
        # the goal's own snapping offset only when there is a single goal
        d = float(dist[s_cell])
        if math.isinf(d):
            return math.inf
        g_off = snapped[0][1] if len(goals) == 1 else 0.0
        return d + s_off + g_off

    def geodesic_to_cells(self, start: tuple[float, float], goal_cells: np.ndarray, max_snap: float = 0.5) -> float:
        s_cell, s_off = self._snap_flat(*start, max_snap)
        if s_cell is None or len(goal_cells) == 0:
            return math.inf
        dist, _ = self.distance_field(np.asarray(goal_cells))
        return float(dist[s_cell]) + s_off

    def shortest_path(self, start: tuple[float, float], goal: tuple[float, float],
                      max_snap: float = 0.5) -> list[tuple[float, float]]:
        """Cell centres from the snapped start to the snapped goal (all navigable); [] if unreachable."""
        s_cell, _ = self._snap_flat(*start, max_snap)
        g_cell, _ = self._snap_flat(*goal, max_snap)
        if s_cell is None or g_cell is None:
            return []
        dist, pred = self.distance_field(np.array([g_cell]))
        if math.isinf(dist[s_cell]):
            return []
        path, c = [], s_cell
        while c >= 0:
            path.append(self.cell_center(*divmod(int(c), self.spec.nx)))
            if c == g_cell:
                break
            c = int(pred[c])
        return path


class SceneNavGrids:
    """Lazily built NavGrid per floor of one scene."""

    def __init__(self, scene: Scene, **kw):
        self.scene = scene
        self._kw = kw
        self._grids: dict[int, NavGrid] = {}

    def __getitem__(self, floor: int) -> NavGrid:
        if floor not in self._grids:
            self._grids[floor] = NavGrid(self.scene, floor, **self._kw)
        return self._grids[floor]

"""Shortest paths on the inflated occupancy grid (Dijkstra, 8-connected, no corner cutting).

The occupancy state (int8 -1/0/100 of ``personal.mapping.occupancy``) is coarsened to
``resolution`` (0.1 m): a coarse cell is navigable when most of its fine cells are free and
farther than the agent radius from any occupied cell (and from virtual obstacles left by
collisions). Unknown space is not traversable, so every plan stays inside what was seen.
One Dijkstra from the agent gives distances to every cell; goals are then any cell mask.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy import ndimage
from scipy.sparse.csgraph import dijkstra

from personal.mapping.grid import GridGeometry, snap_to_cell
from personal.mapping.occupancy import FREE, OCCUPIED


def disc(radius_cells: float) -> np.ndarray:
    k = max(0, int(math.ceil(radius_cells)))
    yy, xx = np.mgrid[-k : k + 1, -k : k + 1]
    return (yy**2 + xx**2) <= radius_cells**2 + 1e-9


def points_mask(geometry: GridGeometry, points, radius: float) -> np.ndarray:
    """Cells of ``geometry`` whose centre lies within ``radius`` of any (x, y) in ``points``."""
    mask = np.zeros(geometry.shape, bool)
    pts = np.asarray(list(points), dtype=np.float64).reshape(-1, 2)
    if len(pts) == 0 or mask.size == 0:
        return mask
    iy, ix = geometry.cells(pts)
    ok = geometry.inside(iy, ix)
    mask[iy[ok], ix[ok]] = True
    if radius > 0 and mask.any():
        mask = ndimage.binary_dilation(mask, structure=disc(radius / geometry.resolution))
    return mask


def grid_graph(nav: np.ndarray, resolution: float) -> sp.csr_matrix:
    """Symmetric 8-connected graph over navigable cells, edge weights in metres;
    a diagonal move needs both orthogonal neighbours navigable."""
    ny, nx = nav.shape
    idx = np.arange(ny * nx).reshape(ny, nx)
    rows, cols, w = [], [], []
    for dy, dx in ((0, 1), (1, 0), (1, 1), (1, -1)):
        src = (slice(0, ny - dy), slice(max(0, -dx), nx - max(0, dx)))
        dst = (slice(dy, ny), slice(max(0, dx), nx + min(0, dx)))
        m = nav[src] & nav[dst]
        if dy and dx:
            m &= nav[dy:ny, src[1]] & nav[src[0], dst[1]]
        rows.append(idx[src][m])
        cols.append(idx[dst][m])
        w.append(np.full(int(m.sum()), resolution * math.hypot(dy, dx)))
    r, c, ww = np.concatenate(rows), np.concatenate(cols), np.concatenate(w)
    n = ny * nx
    return sp.csr_matrix((np.concatenate([ww, ww]), (np.concatenate([r, c]), np.concatenate([c, r]))), shape=(n, n))


@dataclass
class DistanceField:
    """Dijkstra from the agent's cell over a :class:`PlanGrid`."""

    grid: "PlanGrid"
    start: int  # flat coarse index
    dist: np.ndarray  # (ny, nx) metres, inf = unreachable
    pred: np.ndarray  # flat predecessors

    def nearest(self, goal_mask: np.ndarray) -> tuple[int, int] | None:
        """Reachable coarse cell of ``goal_mask`` closest by path, or None."""
        d = np.where(goal_mask, self.dist, np.inf)
        k = int(np.argmin(d))
        if not np.isfinite(d.flat[k]):
            return None
        return divmod(k, d.shape[1])

    def path_to(self, cell: tuple[int, int]) -> list[tuple[float, float]]:
        """Cell centres from the start to ``cell`` (inclusive)."""
        nx = self.dist.shape[1]
        node, cells = cell[0] * nx + cell[1], []
        while node >= 0:
            cells.append(node)
            if node == self.start:
                break
            node = int(self.pred[node])
        cells = np.array(cells[::-1])
        xs, ys = self.grid.geo.center(cells // nx, cells % nx)
        return list(zip(map(float, xs), map(float, ys)))


class PlanGrid:
    """Coarse navigable grid built from an occupancy state."""

    def __init__(self, state: np.ndarray, geometry: GridGeometry, *, agent_radius: float = 0.18,
                 resolution: float = 0.1, blocked: np.ndarray | None = None) -> None:
        self.fine = geometry
        k = max(1, int(round(resolution / geometry.resolution)))
        self.k = k
        occ = state == OCCUPIED
        if blocked is not None:
            occ = occ | blocked
        if occ.any():
            clearance = ndimage.distance_transform_edt(~occ) * geometry.resolution
            fine_nav = (state == FREE) & (clearance > agent_radius)
        else:
            fine_nav = state == FREE
        self.fine_nav = fine_nav
        ny, nx = -(-state.shape[0] // k), -(-state.shape[1] // k)
        pad = np.zeros((ny * k, nx * k), bool)
        pad[: state.shape[0], : state.shape[1]] = fine_nav
        self.nav = pad.reshape(ny, k, nx, k).mean(axis=(1, 3)) >= 0.5
        self.geo = GridGeometry(geometry.resolution * k, geometry.origin, (ny, nx))
        self._graph = grid_graph(self.nav, self.geo.resolution)

    def is_free(self, x: float, y: float) -> bool:
        """Can the agent's centre stand at (x, y) (known free, clear of obstacles)?"""
        iy, ix = self.fine.cell(x, y)
        return 0 <= iy < self.fine_nav.shape[0] and 0 <= ix < self.fine_nav.shape[1] and bool(self.fine_nav[iy, ix])

    def start_cell(self, x: float, y: float, max_snap: float = 0.6) -> int | None:
        """The agent's coarse cell, or the nearest navigable one (standing in an inflated margin)."""
        return snap_to_cell(self.nav, self.geo, x, y, max_snap)

    def distances_from(self, x: float, y: float) -> DistanceField | None:
        start = self.start_cell(x, y)
        if start is None:
            return None
        dist, pred = dijkstra(self._graph, directed=False, indices=start, return_predecessors=True)
        return DistanceField(self, start, dist.reshape(self.nav.shape), pred)

    def coarse_mask(self, fine_mask: np.ndarray) -> np.ndarray:
        """Coarse cells containing any cell of a mask on the fine (occupancy) grid."""
        k = self.k
        ny, nx = self.nav.shape
        pad = np.zeros((ny * k, nx * k), bool)
        pad[: fine_mask.shape[0], : fine_mask.shape[1]] = fine_mask
        return pad.reshape(ny, k, nx, k).any(axis=(1, 3))

    def near(self, points, radius: float) -> np.ndarray:
        """Navigable coarse cells within ``radius`` of any of ``points``."""
        return points_mask(self.geo, points, radius) & self.nav


def path_length(path) -> float:
    return float(sum(math.dist(a, b) for a, b in zip(path, path[1:])))

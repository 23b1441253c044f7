"""``habitat_sim.nav`` of the contract fake: ``ShortestPath``, ``MultiGoalShortestPath`` and a
``PathFinder`` whose navmesh is a heightfield built from the stage mesh.

Semantics read from habitat-sim 0.3:

- ``src/esp/bindings/ShortestPathBindings.cpp``: the fields (``requested_start``,
  ``requested_end`` / ``requested_ends``, ``points``, ``geodesic_distance``,
  ``closest_end_point_index``) and methods (``find_path(path)``, ``snap_point(point,
  island_index=-1)``, ``is_navigable(pt, max_y_delta=0.5)``, ``try_step``,
  ``try_step_no_sliding``, ``is_loaded``).
- ``src/esp/nav/PathFinder.cpp``:
  ``projectToPoly`` finds the nearest navmesh point within a box of half extents (2, 4, 2)
  around the query; ``findPathSetup`` / ``findPath(MultiGoalShortestPath&)`` set
  ``geodesic_distance`` = inf, ``closest_end_point_index`` = -1 and clear ``points`` first,
  skip ends that do not project, return False when the start does not project, and return
  ``geodesic_distance < inf``; ``findPath(ShortestPath&)`` is the one-end case;
  ``snapPoint`` returns the projected point or NaNs; ``isNavigable`` requires the projection
  within 1 cm horizontally and ``max_y_delta`` vertically; ``tryStep`` returns the start when
  start or end does not project or they are not connected, else the point reached moving along
  the surface (``moveAlongSurface``, sliding along edges when allowed).
- ``NavMeshSettings`` / ``Simulator::recomputeNavMesh``: cell size, agent radius (walkable area
  eroded by it), agent height (clearance), max climb.

What the fake does differently (its own approximation, not habitat's): the navmesh is a grid
of ``cell_size`` cells per walkable layer instead of recast polygons; geodesics are 8-connected
Dijkstra distances between cell centres (exact along axes and diagonals, up to ~8 % long
otherwise) plus the straight legs from the requested points; layers are flat (no stairs or
ramps between them).
"""
from __future__ import annotations

import math

import numpy as np
from scipy import ndimage
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import dijkstra

from ._config import NavMeshSettings
from ._strict import Strict

PICK_HALF_EXTENTS = (2.0, 4.0, 2.0)  # PathFinder.cpp projectToPoly: polyPickExt {2, 4, 2}
_NAN3 = np.full(3, np.nan, dtype=np.float32)


class ShortestPath(Strict):
    _real_name = "ShortestPath"
    _fields = {"requested_start": np.zeros(3, np.float32), "requested_end": np.zeros(3, np.float32),
               "points": [], "geodesic_distance": math.inf}


class MultiGoalShortestPath(Strict):
    """``requested_ends`` is a property in the real binding (``def_property`` over
    ``getRequestedEnds`` / ``setRequestedEnds``): reading it gives a copy, so
    ``path.requested_ends.append(p)`` changes nothing; assign the whole list."""

    _real_name = "MultiGoalShortestPath"
    _fields = {"requested_start": np.zeros(3, np.float32), "requested_ends": [], "points": [],
               "geodesic_distance": math.inf, "closest_end_point_index": -1}

    @property
    def requested_ends(self) -> list:
        return [np.array(p, dtype=np.float32) for p in self._requested_ends]

    @requested_ends.setter
    def requested_ends(self, ends) -> None:
        self._requested_ends = [_vec3(p, "requested_ends[i]") for p in ends]


def _vec3(p, what: str) -> np.ndarray:
    """A magnum Vector3 argument: three finite numbers (the binding rejects anything else)."""
    a = np.asarray(p, dtype=np.float32).reshape(-1)
    if a.shape != (3,):
        raise TypeError(f"{what}: expected a 3-vector, got {p!r}")
    return a


class _Layer:
    """One walkable layer: a boolean grid over (z, x) cells and the surface height per cell."""

    def __init__(self, walkable: np.ndarray, height: np.ndarray, x0: float, z0: float, res: float) -> None:
        self.walkable, self.height, self.x0, self.z0, self.res = walkable, height, x0, z0, res
        self.nz, self.nx = walkable.shape
        self.index = -np.ones(walkable.shape, dtype=np.int64)
        cells = np.flatnonzero(walkable)
        self.index.reshape(-1)[cells] = np.arange(cells.size)
        self.cells = cells
        self.graph = self._graph()

    def cell_of(self, x: float, z: float) -> tuple[int, int]:
        return int(math.floor((z - self.z0) / self.res)), int(math.floor((x - self.x0) / self.res))

    def centre(self, iz: int, ix: int) -> np.ndarray:
        return np.array([self.x0 + (ix + 0.5) * self.res, self.height[iz, ix], self.z0 + (iz + 0.5) * self.res])

    def _graph(self):
        """8-connected cell graph at Euclidean step costs; a diagonal needs both orthogonal
        neighbours walkable (no corner cutting)."""
        w, idx, nz, nx = self.walkable, self.index, self.nz, self.nx
        wp = np.pad(w, 1)

        def shifted(dz: int, dx: int) -> np.ndarray:
            return wp[1 + dz:1 + dz + nz, 1 + dx:1 + dx + nx]

        rows, cols, vals = [], [], []
        for dz, dx in ((0, 1), (1, 0), (1, 1), (1, -1)):
            ok = w & shifted(dz, dx)
            if dz and dx:
                ok &= shifted(0, dx) & shifted(dz, 0)
            iz, ix = np.nonzero(ok)
            rows.append(idx[iz, ix])
            cols.append(idx[iz + dz, ix + dx])
            vals.append(np.full(iz.size, self.res * math.hypot(dz, dx)))
        n = self.cells.size
        r, c, v = np.concatenate(rows), np.concatenate(cols), np.concatenate(vals)
        return coo_matrix((np.concatenate([v, v]), (np.concatenate([r, c]), np.concatenate([c, r]))), shape=(n, n)).tocsr()


class PathFinder(Strict):
    """``habitat_sim.PathFinder`` over the fake's heightfield navmesh."""

    _real_name = "PathFinder"
    _real_only = ("get_bounds", "seed", "get_topdown_view", "get_topdown_island_view", "get_random_navigable_point",
                  "get_random_navigable_point_near", "get_island", "island_radius", "num_islands", "navigable_area",
                  "island_area", "build_navmesh_vertices", "build_navmesh_vertex_indices", "load_nav_mesh",
                  "save_nav_mesh", "distance_to_closest_obstacle", "closest_obstacle_surface_point",
                  "nav_mesh_settings")

    def __init__(self) -> None:
        super().__init__()
        self._layers: list[_Layer] = []

    @property
    def is_loaded(self) -> bool:
        return bool(self._layers)

    # -- building (Simulator.recompute_navmesh) ------------------------------
    def _build(self, raycaster, bounds: tuple[np.ndarray, np.ndarray], settings: NavMeshSettings) -> bool:
        """Heightfield navmesh of a mesh in habitat's frame (y up) held by ``raycaster``
        (an open3d RaycastingScene)."""
        import open3d as o3d

        res = float(settings.cell_size)
        lo, hi = bounds
        x0, z0 = float(lo[0]) - res, float(lo[2]) - res
        nx, nz = int(math.ceil((hi[0] - x0) / res)) + 2, int(math.ceil((hi[2] - z0) / res)) + 2
        xs = x0 + (np.arange(nx) + 0.5) * res
        zs = z0 + (np.arange(nz) + 0.5) * res
        gx, gz = np.meshgrid(xs, zs)
        n = gx.size
        top = float(hi[1]) + 1.0
        origin_y = np.full(n, top)
        above = np.full(n, np.inf)  # height of the surface above the current hit (clearance)
        hits: list[tuple[np.ndarray, np.ndarray]] = []  # (cell indices, heights) of walkable surfaces
        normals_up = math.cos(math.radians(float(settings.agent_max_slope)))
        active = np.arange(n)
        for _ in range(64):
            if active.size == 0:
                break
            rays = np.zeros((active.size, 6), np.float32)
            rays[:, 0], rays[:, 1], rays[:, 2] = gx.reshape(-1)[active], origin_y[active], gz.reshape(-1)[active]
            rays[:, 4] = -1.0
            ans = raycaster.cast_rays(o3d.core.Tensor(rays))
            t = ans["t_hit"].numpy()
            hit = np.isfinite(t)
            active, t = active[hit], t[hit]
            nrm = ans["primitive_normals"].numpy()[hit]
            y = origin_y[active] - t
            up = nrm[:, 1] >= normals_up
            clear = (above[active] - y) >= float(settings.agent_height)
            good = up & clear
            hits.append((active[good], y[good]))
            above[active] = y
            origin_y[active] = y - 1e-3
        layers = self._group_layers(hits, n, float(settings.agent_max_climb))
        self._layers = []
        radius_cells = float(settings.agent_radius)
        for walk_flat, height_flat in layers:
            walk = walk_flat.reshape(nz, nx)
            # erode by the agent radius: a cell stays when no unwalkable cell centre is within the radius
            dist = ndimage.distance_transform_edt(walk, sampling=res)
            walk = dist > radius_cells
            if walk.any():
                self._layers.append(_Layer(walk, height_flat.reshape(nz, nx), x0, z0, res))
        return self.is_loaded

    @staticmethod
    def _group_layers(hits, n: int, climb: float):
        """Walkable hits grouped into flat layers: heights within ``climb`` of each other."""
        if not hits:
            return []
        cells = np.concatenate([c for c, _ in hits])
        heights = np.concatenate([h for _, h in hits])
        if cells.size == 0:
            return []
        order = np.argsort(heights)
        groups, start = [], 0
        for k in range(1, order.size + 1):
            if k == order.size or heights[order[k]] - heights[order[k - 1]] > climb:
                groups.append(order[start:k])
                start = k
        out = []
        for g in groups:
            walk = np.zeros(n, bool)
            height = np.zeros(n, np.float64)
            walk[cells[g]] = True
            height[cells[g]] = heights[g]
            out.append((walk, height))
        return out

    # -- projection ----------------------------------------------------------
    def _project(self, p: np.ndarray):
        """(layer, iz, ix, point) of the nearest navmesh point within the pick box, or None."""
        best, best_d = None, math.inf
        hx, hy, hz = PICK_HALF_EXTENTS
        for layer in self._layers:
            iz, ix = layer.cell_of(p[0], p[2])
            r = int(math.ceil(hx / layer.res))
            z_lo, z_hi = max(iz - r, 0), min(iz + r + 1, layer.nz)
            x_lo, x_hi = max(ix - r, 0), min(ix + r + 1, layer.nx)
            if z_lo >= z_hi or x_lo >= x_hi:
                continue
            sub = layer.walkable[z_lo:z_hi, x_lo:x_hi]
            if not sub.any():
                continue
            zz, xx = np.nonzero(sub)
            zz, xx = zz + z_lo, xx + x_lo
            # nearest point of each cell square to p (inside the cell: p itself)
            cx = np.clip(p[0], layer.x0 + xx * layer.res, layer.x0 + (xx + 1) * layer.res)
            cz = np.clip(p[2], layer.z0 + zz * layer.res, layer.z0 + (zz + 1) * layer.res)
            cy = layer.height[zz, xx]
            ok = (np.abs(cx - p[0]) <= hx) & (np.abs(cz - p[2]) <= hz) & (np.abs(cy - p[1]) <= hy)
            if not ok.any():
                continue
            d = (cx - p[0]) ** 2 + (cy - p[1]) ** 2 + (cz - p[2]) ** 2
            d[~ok] = np.inf
            k = int(np.argmin(d))
            if d[k] < best_d:
                best_d = float(d[k])
                best = (layer, int(zz[k]), int(xx[k]), np.array([cx[k], cy[k], cz[k]]))
        return best

    def _random_point(self, rng) -> np.ndarray:
        """A navigable point (a random walkable cell's centre), for ``Simulator.initialize_agent``."""
        layer = self._layers[int(rng.integers(len(self._layers)))]
        cell = int(layer.cells[int(rng.integers(layer.cells.size))])
        return layer.centre(*divmod(cell, layer.nx)).astype(np.float32)

    def _require(self):
        if not self._layers:
            raise RuntimeError("PathFinder: no navmesh loaded")

    def snap_point(self, point, island_index: int = -1) -> np.ndarray:
        if island_index != -1:
            raise NotImplementedError("the contract fake has no islands; snap_point(island_index=-1) only")
        self._require()
        hit = self._project(_vec3(point, "snap_point(point)"))
        return _NAN3.copy() if hit is None else hit[3].astype(np.float32)

    def is_navigable(self, pt, max_y_delta: float = 0.5) -> bool:
        self._require()
        p = _vec3(pt, "is_navigable(pt)")
        hit = self._project(p)
        if hit is None:
            return False
        q = hit[3]
        return abs(q[1] - p[1]) <= max_y_delta and math.hypot(q[0] - p[0], q[2] - p[2]) <= 1e-2

    # -- paths -----------------------------------------------------------------
    def find_path(self, path) -> bool:
        if isinstance(path, ShortestPath):
            multi = MultiGoalShortestPath(requested_start=path.requested_start, requested_ends=[path.requested_end])
            ok = self.find_path(multi)
            path.geodesic_distance, path.points = multi.geodesic_distance, multi.points
            return ok
        if not isinstance(path, MultiGoalShortestPath):
            raise TypeError(f"find_path(path): expected ShortestPath or MultiGoalShortestPath, got {type(path).__name__}")
        self._require()
        path.geodesic_distance, path.closest_end_point_index, path.points = math.inf, -1, []
        start = _vec3(path.requested_start, "requested_start")
        s = self._project(start)
        if s is None:
            return False
        layer, siz, six, s_pt = s
        dist, pred = dijkstra(layer.graph, indices=int(layer.index[siz, six]), return_predecessors=True)
        for i, end in enumerate(path.requested_ends):
            e = self._project(_vec3(end, f"requested_ends[{i}]"))
            if e is None or e[0] is not layer:
                continue  # does not project, or on another layer (the fake has no connections between layers)
            _, eiz, eix, e_pt = e
            node = int(layer.index[eiz, eix])
            if not np.isfinite(dist[node]):
                continue
            chain = [node]
            while chain[-1] != int(layer.index[siz, six]):
                chain.append(int(pred[chain[-1]]))
            centres = [layer.centre(*divmod(int(layer.cells[c]), layer.nx)) for c in reversed(chain)]
            # the start and end cells' centres are replaced by the projected points themselves
            pts = [s_pt] + centres[1:-1] + [e_pt]
            length = float(sum(np.linalg.norm(b - a) for a, b in zip(pts, pts[1:])))
            if length < path.geodesic_distance:
                path.geodesic_distance, path.closest_end_point_index = length, i
                path.points = [np.asarray(p, np.float32) for p in pts]
        return path.geodesic_distance < math.inf

    def _free_segment(self, layer: _Layer, a: np.ndarray, b: np.ndarray) -> float:
        """Fraction of the segment a -> b (x, z) that stays on walkable cells of ``layer``."""
        n = max(int(math.ceil(math.hypot(b[0] - a[0], b[2] - a[2]) / (layer.res / 4))), 1)
        for k in range(1, n + 1):
            p = a + (b - a) * (k / n)
            iz, ix = layer.cell_of(p[0], p[2])
            if not (0 <= iz < layer.nz and 0 <= ix < layer.nx and layer.walkable[iz, ix]):
                return (k - 1) / n
        return 1.0

    def _step(self, start, end, sliding: bool) -> np.ndarray:
        self._require()
        start, end = _vec3(start, "try_step(start)"), _vec3(end, "try_step(end)")
        s, e = self._project(start), self._project(end)
        if s is None or e is None or s[0] is not e[0]:
            return start
        layer, s_pt = s[0], s[3]
        f = self._free_segment(layer, s_pt, end.astype(np.float64))
        reached = s_pt + (end - s_pt) * f
        if f < 1.0 and sliding:
            # slide: keep the larger feasible axis component of the rest of the move
            rest = end - reached
            best = reached
            for axis in (0, 2):
                d = np.zeros(3)
                d[axis] = rest[axis]
                g = self._free_segment(layer, reached, reached + d)
                cand = reached + d * g
                if np.linalg.norm(cand - reached) > np.linalg.norm(best - reached):
                    best = cand
            reached = best
        iz, ix = layer.cell_of(reached[0], reached[2])
        iz, ix = min(max(iz, 0), layer.nz - 1), min(max(ix, 0), layer.nx - 1)
        return np.array([reached[0], layer.height[iz, ix], reached[2]], dtype=np.float32)

    def try_step(self, start, end) -> np.ndarray:
        return self._step(start, end, sliding=True)

    def try_step_no_sliding(self, start, end) -> np.ndarray:
        return self._step(start, end, sliding=False)

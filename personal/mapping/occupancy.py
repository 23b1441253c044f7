"""2-D occupancy grid (free / occupied / unknown) built from map-frame point clouds.

Points in the obstacle height band (above the floor band, below ``obstacle_max_height``,
so the ceiling is ignored) mark their cells as hits; free space is what 2-D rays from the
camera to every floor or obstacle point would cross, computed as a polar sweep (farthest
point per bearing bin, then a window of cells tested against their bin's reach). Evidence accumulates as clamped log-odds.

Export follows nav_msgs/OccupancyGrid (row-major from the origin's lower-left cell, -1
unknown, 0 free, 100 occupied) and the nav2 map_server YAML + PGM pair (mode trinary).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import yaml
from scipy import ndimage

from personal.mapping.grid import GridGeometry, grow_array

UNKNOWN, FREE, OCCUPIED = -1, 0, 100

# nav2 / ROS map_server trinary PGM shades (negate 0): black occupied, white free, grey unknown
_PGM_OCCUPIED, _PGM_FREE, _PGM_UNKNOWN = 0, 254, 205
OCCUPIED_THRESH = 0.65
FREE_THRESH = 0.196  # ROS map_saver's value: grey 205 reads as p=0.19608, i.e. unknown


class OccupancyGrid:
    def __init__(
        self,
        resolution: float = 0.05,
        *,
        bounds: tuple[float, float, float, float] | None = None,
        floor_z: float = 0.0,
        floor_band: float = 0.10,
        obstacle_max_height: float = 1.8,
        agent_radius: float = 0.18,
        l_hit: float = 0.85,
        l_free: float = -0.4,
        l_clamp: float = 5.0,
        bearing_bins: int = 720,
        sweep_max_points: int = 40_000,
    ) -> None:
        self.bearing_bins = bearing_bins
        self.sweep_max_points = sweep_max_points
        self.floor_z = floor_z
        self.floor_band = floor_band
        self.obstacle_max_height = obstacle_max_height
        self.agent_radius = agent_radius
        self.l_hit, self.l_free, self.l_clamp = l_hit, l_free, l_clamp
        self.geometry = (
            GridGeometry.from_bounds(bounds, resolution, margin=0.5) if bounds else GridGeometry(resolution, (0.0, 0.0), (0, 0))
        )
        self.logodds = np.zeros(self.geometry.shape, np.float32)
        self.seen = np.zeros(self.geometry.shape, bool)
        # cells observed since the last ``forget_recent()``: what this task has seen itself, for a
        # robot that keeps its map between tasks (frontiers "as if blind", navigation.policies)
        self.recent = np.zeros(self.geometry.shape, bool)

    # -- accumulation -------------------------------------------------------------
    @property
    def resolution(self) -> float:
        return self.geometry.resolution

    def ensure_contains(self, xmin: float, ymin: float, xmax: float, ymax: float) -> None:
        geo, off = self.geometry.grown_to(xmin, ymin, xmax, ymax)
        if geo is not self.geometry:
            self.logodds = grow_array(self.logodds, geo.shape, off, 0.0)
            self.seen = grow_array(self.seen, geo.shape, off, False)
            self.recent = grow_array(self.recent, geo.shape, off, False)
            self.geometry = geo

    def integrate(self, points: np.ndarray, camera_position: np.ndarray, floor_z: float | None = None) -> None:
        """Add one frame's map-frame points seen from ``camera_position``."""
        fz = self.floor_z if floor_z is None else floor_z
        cam = np.asarray(camera_position, dtype=np.float64)
        if len(points) == 0:
            return
        z = points[:, 2] - fz
        is_floor = np.abs(z) < self.floor_band
        is_obst = (z >= self.floor_band) & (z <= self.obstacle_max_height)
        keep = is_floor | is_obst
        pts, is_obst = points[keep], is_obst[keep]
        if len(pts) == 0:
            return
        self.ensure_contains(
            min(pts[:, 0].min(), cam[0]), min(pts[:, 1].min(), cam[1]), max(pts[:, 0].max(), cam[0]), max(pts[:, 1].max(), cam[1])
        )
        geo = self.geometry
        iy, ix = geo.cells(pts)
        flat = iy * geo.shape[1] + ix
        hit = np.zeros(self.logodds.size, bool)
        hit[flat[is_obst]] = True
        free = np.zeros(self.logodds.size, bool)
        free[flat[~is_obst]] = True  # floor seen directly
        # the 0.5 deg bearing bins need far fewer points than a full frame has: subsample
        step = max(1, len(pts) // self.sweep_max_points)
        free[self._sweep_free(cam, pts[::step], is_obst[::step])] = True
        free &= ~hit
        hit, free = np.flatnonzero(hit), np.flatnonzero(free)
        lo = self.logodds.reshape(-1)
        lo[free] += self.l_free
        lo[hit] += self.l_hit
        np.clip(lo, -self.l_clamp, self.l_clamp, out=lo)
        seen = self.seen.reshape(-1)
        seen[free] = True
        seen[hit] = True
        recent = self.recent.reshape(-1)
        recent[free] = True
        recent[hit] = True

    def _sweep_free(self, cam: np.ndarray, xy: np.ndarray, is_obst: np.ndarray) -> np.ndarray:
        """Flat indices of cells seen free this frame: a 2-D polar sweep from the camera.

        Per bearing bin, free space reaches the nearest obstacle point (stopping short of its
        cell) or, without one, the farthest floor point. Cells of a window around the
        camera are free when closer than their bin's reach. Equivalent to casting a 2-D ray
        to every point, at a cost independent of the point count beyond one pass.
        """
        geo = self.geometry
        res = geo.resolution
        dx = xy[:, 0] - cam[0]
        dy = xy[:, 1] - cam[1]
        dist = np.hypot(dx, dy)
        nb = self.bearing_bins
        bins = ((np.arctan2(dy, dx) + np.pi) * (nb / (2 * np.pi))).astype(np.int64) % nb
        reach = np.zeros(nb, np.float32)
        np.maximum.at(reach, bins[~is_obst], dist[~is_obst].astype(np.float32))
        # the nearest obstacle in a bearing ends its free space (conservative behind low
        # objects: floor seen beyond them is still marked free directly)
        stop = np.full(nb, np.inf, np.float32)
        np.minimum.at(stop, bins[is_obst], (dist[is_obst] - 0.75 * res).astype(np.float32))
        has_obst = np.isfinite(stop)
        reach[has_obst] = np.maximum(stop[has_obst], 0.0)
        # fill isolated empty bins (sampling gaps) without widening occluder edges
        reach = np.maximum(reach, np.minimum(np.roll(reach, 1), np.roll(reach, -1)))
        rmax = float(reach.max())
        if rmax <= 0:
            return np.zeros(0, np.int64)
        cy, cx = geo.cell(cam[0], cam[1])
        k = int(np.ceil(rmax / res)) + 1
        y0, y1 = max(cy - k, 0), min(cy + k + 1, geo.shape[0])
        x0, x1 = max(cx - k, 0), min(cx + k + 1, geo.shape[1])
        wy, wx = np.mgrid[y0:y1, x0:x1]
        oy = geo.origin[1] + (wy + 0.5) * res - cam[1]
        ox = geo.origin[0] + (wx + 0.5) * res - cam[0]
        wb = ((np.arctan2(oy, ox) + np.pi) * (nb / (2 * np.pi))).astype(np.int64) % nb
        free = np.hypot(oy, ox) <= reach[wb]
        return (wy[free] * geo.shape[1] + wx[free]).astype(np.int64)

    def mark_free_disc(self, x: float, y: float, radius: float | None = None) -> None:
        """Mark the agent's footprint free (the robot knows the floor it stands on)."""
        r = self.agent_radius if radius is None else radius
        self.ensure_contains(x - r, y - r, x + r, y + r)
        iy, ix = self._disc(x, y, r)
        self.logodds[iy, ix] = np.minimum(self.logodds[iy, ix], self.l_free)
        self.seen[iy, ix] = True
        self.recent[iy, ix] = True

    def mark_occupied_disc(self, x: float, y: float, radius: float) -> None:
        """Record an obstacle the camera could not see (e.g. a collision)."""
        self.ensure_contains(x - radius, y - radius, x + radius, y + radius)
        iy, ix = self._disc(x, y, radius)
        self.logodds[iy, ix] = np.maximum(self.logodds[iy, ix], self.l_hit)
        self.seen[iy, ix] = True
        self.recent[iy, ix] = True

    def _disc(self, x: float, y: float, r: float) -> tuple[np.ndarray, np.ndarray]:
        geo = self.geometry
        cy, cx = geo.cell(x, y)
        k = int(np.ceil(r / geo.resolution))
        dy, dx = np.mgrid[-k : k + 1, -k : k + 1]
        iy, ix = cy + dy.ravel(), cx + dx.ravel()
        yc, xc = geo.center(iy, ix)
        keep = ((xc - x) ** 2 + (yc - y) ** 2 <= r * r + 1e-9) & geo.inside(iy, ix)
        if not keep.any():  # radius below a cell: the centre cell
            keep = (dy.ravel() == 0) & (dx.ravel() == 0)
        return iy[keep], ix[keep]

    # -- queries ------------------------------------------------------------------
    def state(self) -> np.ndarray:
        """int8 (rows, cols): -1 unknown, 0 free, 100 occupied."""
        out = np.full(self.logodds.shape, UNKNOWN, np.int8)
        out[self.seen & (self.logodds <= 0)] = FREE
        out[self.seen & (self.logodds > 0)] = OCCUPIED
        return out

    def free_mask(self) -> np.ndarray:
        return self.seen & (self.logodds <= 0)

    def occupied_mask(self) -> np.ndarray:
        return self.seen & (self.logodds > 0)

    def navigable(self, agent_radius: float | None = None, extra_obstacles: np.ndarray | None = None) -> np.ndarray:
        """Free cells whose centre is farther than the agent radius from any occupied cell."""
        r = self.agent_radius if agent_radius is None else agent_radius
        occ = self.occupied_mask()
        if extra_obstacles is not None:
            occ = occ | extra_obstacles
        if not occ.any():
            return self.free_mask()
        clearance = ndimage.distance_transform_edt(~occ) * self.resolution
        return self.free_mask() & (clearance > r)

    def is_free(self, x: float, y: float) -> bool:
        iy, ix = self.geometry.cell(x, y)
        return bool(self.geometry.inside(np.array(iy), np.array(ix)) and self.free_mask()[iy, ix])

    def reset(self) -> None:
        self.logodds[:] = 0.0
        self.seen[:] = False
        self.recent[:] = False

    def forget_recent(self) -> None:
        """Start a new task on the kept map: nothing counts as seen by it yet (``recent``)."""
        self.recent[:] = False

    # -- export -------------------------------------------------------------------
    def to_occupancy_grid_msg_fields(self) -> dict:
        """Field values for nav_msgs/OccupancyGrid (info + data), ROS-free."""
        geo = self.geometry
        return {
            "resolution": float(geo.resolution),
            "width": int(geo.shape[1]),
            "height": int(geo.shape[0]),
            "origin": {"position": (float(geo.origin[0]), float(geo.origin[1]), float(self.floor_z)), "orientation": (0.0, 0.0, 0.0, 1.0)},
            "data": self.state().reshape(-1),  # row-major int8, row 0 at the origin (bottom)
        }

    def save(self, directory: str | Path, stem: str = "occupancy") -> Path:
        """Write a nav2 map_server pair ``<stem>.yaml`` + ``<stem>.pgm``; returns the YAML path."""
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        from PIL import Image

        st = self.state()
        img = np.full(st.shape, _PGM_UNKNOWN, np.uint8)
        img[st == FREE] = _PGM_FREE
        img[st == OCCUPIED] = _PGM_OCCUPIED
        Image.fromarray(np.flipud(img)).save(d / f"{stem}.pgm")  # image row 0 is the top (max y)
        meta = {
            "image": f"{stem}.pgm",
            "mode": "trinary",
            "resolution": float(self.resolution),
            "origin": [float(self.geometry.origin[0]), float(self.geometry.origin[1]), 0.0],
            "negate": 0,
            "occupied_thresh": OCCUPIED_THRESH,
            "free_thresh": FREE_THRESH,
        }
        path = d / f"{stem}.yaml"
        path.write_text(yaml.safe_dump(meta, sort_keys=False))
        return path

    @classmethod
    def load(cls, yaml_path: str | Path, **kwargs) -> "OccupancyGrid":
        """Read a map_server YAML + image (trinary/scale semantics, negate honoured)."""
        from PIL import Image

        path = Path(yaml_path)
        if path.is_dir():
            path = path / "occupancy.yaml"
        if not path.exists():
            raise FileNotFoundError(f"occupancy map YAML not found: {path}")
        meta = yaml.safe_load(path.read_text()) or {}
        for key in ("image", "resolution", "origin"):
            if key not in meta:
                raise ValueError(f"{path}: missing field {key!r}")
        img_path = (path.parent / meta["image"]) if not Path(meta["image"]).is_absolute() else Path(meta["image"])
        shade = np.flipud(np.asarray(Image.open(img_path).convert("L"), dtype=np.float64))
        p = shade / 255.0 if int(meta.get("negate", 0)) else (255.0 - shade) / 255.0
        occ_t = float(meta.get("occupied_thresh", OCCUPIED_THRESH))
        free_t = float(meta.get("free_thresh", FREE_THRESH))
        grid = cls(resolution=float(meta["resolution"]), **kwargs)
        grid.geometry = GridGeometry(float(meta["resolution"]), (float(meta["origin"][0]), float(meta["origin"][1])), shade.shape)
        grid.logodds = np.zeros(shade.shape, np.float32)
        grid.logodds[p > occ_t] = grid.l_hit
        grid.logodds[p < free_t] = grid.l_free
        grid.seen = (p > occ_t) | (p < free_t)
        grid.recent = grid.seen.copy()
        return grid

"""Online maps for navigation: occupancy grid + semantic feature map, per step.

Composes the mapping library's stages (back-projection, ``OccupancyGrid``, ``FeatureMap``,
``pixel_confidence``) like ``MapBuilder`` does, minus the accumulated point cloud, which
navigation never reads and which costs ~15 ms a frame. Collisions leave a virtual obstacle
ahead of the agent (the depth camera may not see a low or thin obstacle).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from personal.mapping.feature_map import FeatureMap
from personal.mapping.occupancy import OccupancyGrid
from personal.mapping.pipeline import StageTimer, weighted_confidence
from personal.mapping.projection import backproject, pixel_confidence

FrameFeatures = Callable[..., "tuple[np.ndarray, np.ndarray] | None"]


@dataclass
class NavMapConfig:
    occupancy_resolution: float = 0.05
    feature_resolution: float = 0.25  # finer than POG's 1 m so a detected cell locates its object
    stride: int = 4  # 1/16 of the pixels: ~5 cm point spacing at 5 m, keeps the loop fast
    min_depth: float = 0.5
    max_depth: float = 5.0
    floor_z: float = 0.0
    agent_radius: float = 0.18
    collision_block_m: float = 0.06  # radius of the virtual obstacle a collision leaves
    forward_m: float = 0.25
    # a proposal's points farther than this from its median depth carry no feature (0: off); noisy
    # depth spreads each proposal's points along the rays and so its embedding over twice the cells
    proposal_depth_tol_m: float = 0.0


class OnlineMapper:
    def __init__(self, config: NavMapConfig | None = None, *, features: FrameFeatures | None = None,
                 feature_dim: int = 0, encoder_name: str = "") -> None:
        self.cfg = c = config or NavMapConfig()
        self.features = features
        self.occupancy = OccupancyGrid(c.occupancy_resolution, floor_z=c.floor_z, agent_radius=c.agent_radius)
        self.feature_map = FeatureMap(feature_dim, c.feature_resolution, encoder=encoder_name) if feature_dim else None
        self.timer = StageTimer()
        self.collisions: list[tuple[float, float]] = []
        self.version = 0  # bumped on every change (for caches)

    def reset(self, floor_z: float | None = None) -> None:
        if floor_z is not None:
            self.cfg.floor_z = floor_z
        c = self.cfg
        self.occupancy = OccupancyGrid(c.occupancy_resolution, floor_z=c.floor_z, agent_radius=c.agent_radius)
        if self.feature_map is not None:
            self.feature_map = FeatureMap(self.feature_map.dim, c.feature_resolution, encoder=self.feature_map.encoder)
        self.collisions = []
        self.version += 1

    def fade_features(self, factor: float) -> None:
        """Scale the feature map's confidence by ``factor`` (0 < factor <= 1), keeping its features.
        A cell is the confidence-weighted mean of every view of it; after a whole earlier request
        its weight is so large that a new close view barely moves it. Faded, remembered cells
        still guide and detect, but what the robot sees now counts."""
        if not 0.0 < factor <= 1.0:
            raise ValueError(f"fade factor must be in (0, 1], got {factor}")
        if self.feature_map is not None:
            self.feature_map.confidence *= np.float32(factor)
            self.version += 1

    def integrate(self, depth: np.ndarray, K: np.ndarray, T_map_camera: np.ndarray, agent_xy: tuple[float, float],
                  rgb: np.ndarray | None = None, instance_ids: np.ndarray | None = None) -> None:
        c, t = self.cfg, self.timer
        t0 = time.perf_counter()
        fp = backproject(depth, K, T_map_camera, min_depth=c.min_depth, max_depth=c.max_depth, stride=c.stride)
        t1 = time.perf_counter()
        t.add("backproject", t1 - t0)
        self.occupancy.integrate(fp.points, fp.camera_position)
        self.occupancy.mark_free_disc(agent_xy[0], agent_xy[1])
        for bx, by in self.collisions:  # keep collision obstacles even if the camera "sees" free floor there
            self.occupancy.mark_occupied_disc(bx, by, c.collision_block_m)
        t2 = time.perf_counter()
        t.add("occupancy", t2 - t1)
        if self.feature_map is not None and self.features is not None and len(fp):
            out = self.features(depth, rgb, instance_ids, fp)
            if out is not None:
                groups, emb = out[0], out[1]
                if c.proposal_depth_tol_m > 0:
                    groups = depth_consistent(groups, fp.depth, c.proposal_depth_tol_m)
                    out = (groups,) + tuple(out[1:])
                conf = pixel_confidence(K, fp.image_shape, fp.pixels, fp.depth, max_range=c.max_depth, min_range=c.min_depth)
                conf = weighted_confidence(conf * (c.stride * c.stride), out)
                self.feature_map.integrate(fp.points, conf, emb, groups)
            t.add("features", time.perf_counter() - t2)
        t.frames += 1
        self.version += 1

    def mark_collision(self, x: float, y: float, yaw: float) -> tuple[float, float]:
        """A forward step from (x, y, yaw) hit something within a step plus the body radius
        ahead: leave a small obstacle there. After inflation by the agent radius it blocks the
        way ahead but not the cell the agent stands on."""
        d = self.cfg.forward_m + 0.8 * self.cfg.agent_radius
        ahead = (x + d * math.cos(yaw), y + d * math.sin(yaw))
        self.collisions.append(ahead)
        self.occupancy.mark_occupied_disc(ahead[0], ahead[1], self.cfg.collision_block_m)
        self.version += 1
        return ahead

    def state(self) -> np.ndarray:
        return self.occupancy.state()


def depth_consistent(groups: np.ndarray, depth: np.ndarray, tol: float) -> np.ndarray:
    """``groups`` (per point, -1 = none) with the points farther than ``tol`` from their group's
    median ``depth`` set to -1."""
    out = np.asarray(groups).copy()
    for g in np.unique(out[out >= 0]):
        sel = np.flatnonzero(out == g)
        z = depth[sel]
        out[sel[np.abs(z - np.median(z)) > tol]] = -1
    return out

"""``MapBuilder``: one frame (depth, rgb, instance ids, K, T_map_camera) -> point cloud,
occupancy grid and feature map, with per-stage timing."""
from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import yaml

from personal.mapping.feature_map import FeatureMap
from personal.mapping.occupancy import OccupancyGrid
from personal.mapping.projection import FramePoints, backproject, pixel_confidence, voxel_downsample

# A function giving a frame's features as (group per point (N,) ints, -1 = none; embeddings (G, E))
# and optionally a weight per group (G,) that scales the points' confidences.
FrameFeatures = Callable[[np.ndarray, np.ndarray, "np.ndarray | None", FramePoints], "tuple[np.ndarray, np.ndarray] | None"]


@dataclass
class MapConfig:
    occupancy_resolution: float = 0.05
    feature_resolution: float = 1.0
    stride: int = 2  # pixel subsampling for all stages (2 -> 1/4 of the pixels)
    min_depth: float = 0.5
    max_depth: float = 5.0
    floor_z: float = 0.0
    floor_band: float = 0.10
    obstacle_max_height: float = 1.8
    agent_radius: float = 0.18
    cloud_voxel: float = 0.05
    cloud_max_points: int = 400_000  # accumulated cloud is re-voxelised beyond this
    cloud_frame_points: int = 10_000  # about this many points of each frame go into the cloud
    bounds: tuple[float, float, float, float] | None = None


class StageTimer:
    def __init__(self) -> None:
        self.total = defaultdict(float)
        self.frames = 0

    def add(self, stage: str, seconds: float) -> None:
        self.total[stage] += seconds

    def summary(self) -> dict[str, float]:
        """Mean milliseconds per frame per stage."""
        n = max(self.frames, 1)
        return {k: 1000.0 * v / n for k, v in self.total.items()}


def weighted_confidence(conf: np.ndarray, features_out: tuple) -> np.ndarray:
    """Point confidences times their group's weight when the encoder gives per-group weights
    (a dense encoder's objectness: ``(groups, embeddings, weights)``); points in no group weigh 0."""
    if len(features_out) > 2 and features_out[2] is not None:
        groups, w = features_out[0], np.asarray(features_out[2], np.float32)
        conf = conf * np.where(groups >= 0, w[np.clip(groups, 0, None)], 0.0)
    return conf


class MapBuilder:
    """Accumulates the maps of one scene.

    ``features`` (optional) turns a frame into per-point groups + group embeddings, e.g.
    ``OracleCaptionEncoder.frame_features`` or ``DenseImageFeatures``; without it only the
    geometry is mapped.
    """

    def __init__(self, config: MapConfig | None = None, *, feature_dim: int | None = None, encoder_name: str = "",
                 features: FrameFeatures | None = None) -> None:
        self.cfg = c = config or MapConfig()
        self.occupancy = self._new_occupancy()
        self.features = features
        self.feature_map = (
            FeatureMap(feature_dim, c.feature_resolution, encoder=encoder_name, bounds=c.bounds) if feature_dim else None
        )
        self.timer = StageTimer()
        self._cloud: list[np.ndarray] = []
        self._cloud_n = 0
        self._cloud_limit = c.cloud_max_points
        self.last_points: FramePoints | None = None

    def integrate(self, depth: np.ndarray, K: np.ndarray, T_map_camera: np.ndarray, rgb: np.ndarray | None = None,
                  instance_ids: np.ndarray | None = None, agent_xy: tuple[float, float] | None = None) -> FramePoints:
        fp = self.integrate_geometry(depth, K, T_map_camera, agent_xy)
        self.integrate_features(depth, K, fp, rgb, instance_ids)
        return fp

    def integrate_geometry(self, depth: np.ndarray, K: np.ndarray, T_map_camera: np.ndarray,
                           agent_xy: tuple[float, float] | None = None, cloud: bool = True) -> FramePoints:
        """The geometric half of ``integrate``: back-projection, occupancy, cloud. A caller that only
        needs the occupancy at once (the explore loop) can run ``integrate_features`` later; applied
        in the same frame order, the two halves give exactly the maps of ``integrate``. ``cloud=False``
        leaves the frame's cloud points to a later :meth:`add_cloud` (the accumulated cloud keeps the
        first point seen per voxel, so when a frame's points go in does not change it, as long as
        frames go in in order)."""
        c, t = self.cfg, self.timer
        t0 = time.perf_counter()
        fp = backproject(depth, K, T_map_camera, min_depth=c.min_depth, max_depth=c.max_depth, stride=c.stride)
        t1 = time.perf_counter()
        t.add("backproject", t1 - t0)
        self.occupancy.integrate(fp.points, fp.camera_position)
        if agent_xy is not None:
            self.occupancy.mark_free_disc(agent_xy[0], agent_xy[1])
        t2 = time.perf_counter()
        t.add("occupancy", t2 - t1)
        if cloud:
            self.add_cloud(fp)
        t.frames += 1
        self.last_points = fp
        return fp

    def add_cloud(self, fp: FramePoints) -> None:
        """A frame's share of the accumulated cloud (see ``integrate_geometry(cloud=False)``)."""
        t0 = time.perf_counter()
        # a cheap subsample per frame; the accumulated cloud is voxelised when it grows large
        self._add_cloud(fp.points[:: max(1, len(fp) // self.cfg.cloud_frame_points)])
        self.timer.add("cloud", time.perf_counter() - t0)

    def integrate_features(self, depth: np.ndarray, K: np.ndarray, fp: FramePoints, rgb: np.ndarray | None = None,
                           instance_ids: np.ndarray | None = None) -> None:
        """The feature half of ``integrate`` for a frame whose geometry is integrated (``fp``)."""
        c, t = self.cfg, self.timer
        if self.feature_map is None or self.features is None or not len(fp):
            return
        t2 = time.perf_counter()
        out = self.features(depth, rgb, instance_ids, fp)
        t.add("features", time.perf_counter() - t2)
        self.apply_features(K, fp, out)

    def enable_features(self, feature_dim: int, encoder_name: str) -> None:
        """Start an (empty) feature map once the encoder's dimension is known (an encoder loaded
        elsewhere, e.g. in a :class:`personal.mapping.feature_worker.FeatureWorker`)."""
        c = self.cfg
        self.feature_map = FeatureMap(feature_dim, c.feature_resolution, encoder=encoder_name, bounds=c.bounds)

    def apply_features(self, K: np.ndarray, fp: FramePoints, out) -> None:
        """Fuse a frame's encoder output (``features(depth, rgb, ids, fp)``, computed here or in
        another process) into the feature map."""
        if self.feature_map is None or out is None or not len(fp):
            return
        c, t3 = self.cfg, time.perf_counter()
        groups, emb = out[0], out[1]
        conf = pixel_confidence(K, fp.image_shape, fp.pixels, fp.depth, max_range=c.max_depth, min_range=c.min_depth)
        # a sample stands for stride^2 pixels: keeps confidences comparable across strides
        conf *= c.stride * c.stride
        conf = weighted_confidence(conf, out)
        self.feature_map.integrate(fp.points, conf, emb, groups)
        self.timer.add("feature_map", time.perf_counter() - t3)

    def _add_cloud(self, pts: np.ndarray) -> None:
        self._cloud.append(pts)
        self._cloud_n += len(pts)
        if self._cloud_n > self._cloud_limit:
            self._compact_cloud()
            # still large after voxelising: compact less often rather than every frame
            self._cloud_limit = max(self.cfg.cloud_max_points, 2 * self._cloud_n)

    def _compact_cloud(self) -> None:
        allp = np.concatenate(self._cloud) if self._cloud else np.zeros((0, 3), np.float32)
        allp = allp[voxel_downsample(allp, self.cfg.cloud_voxel)]
        self._cloud, self._cloud_n = [allp], len(allp)

    def cloud(self) -> np.ndarray:
        """The accumulated map-frame cloud, one point per ``cloud_voxel``."""
        self._compact_cloud()
        return self._cloud[0]

    def _new_occupancy(self) -> OccupancyGrid:
        c = self.cfg
        return OccupancyGrid(c.occupancy_resolution, bounds=c.bounds, floor_z=c.floor_z, floor_band=c.floor_band,
                             obstacle_max_height=c.obstacle_max_height, agent_radius=c.agent_radius)

    def reset(self) -> None:
        """Back to a new builder's state, extent included (grids grow with what was seen): the next
        scene's maps are those a fresh builder makes — a graph that maps several scenes in turn
        saves the same maps as one graph per scene."""
        c = self.cfg
        self.occupancy = self._new_occupancy()
        if self.feature_map is not None:
            fm = self.feature_map
            self.feature_map = FeatureMap(fm.dim, c.feature_resolution, encoder=fm.encoder, bounds=c.bounds)
        self._cloud, self._cloud_n, self._cloud_limit = [], 0, c.cloud_max_points

    def save(self, directory: str | Path, extra: dict | None = None) -> Path:
        """Write ``occupancy.{yaml,pgm}``, ``features.{npz,yaml}`` and ``map.yaml`` (an index)."""
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        index = {"occupancy": self.occupancy.save(d).name}
        if self.feature_map is not None:
            index["features"] = self.feature_map.save(d).name
            index["encoder"] = self.feature_map.encoder
        np.save(d / "cloud.npy", self.cloud())
        index["cloud"] = "cloud.npy"
        index.update(extra or {})
        (d / "map.yaml").write_text(yaml.safe_dump(index, sort_keys=False))
        return d

"""The mapping node's maps without ROS (nodes/mapping_node.py is its rclpy shell): the encoder
(in this process, or a FeatureWorker child process), the MapBuilder, the scene they belong to,
and the frame / save / reset decisions. ``p`` is the node's parameter dict; ``log`` logger-like.
"""
from __future__ import annotations

import time
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from personal.mapping.frame_intake import frame_arrays, same_pose
from personal.mapping.pipeline import MapBuilder, MapConfig
from personal.mapping.ros_io import FrameError, base_pose_from_camera

ORACLE_ENCODER = "oracle-captions-minilm"
IN_PROCESS_ONLY = ("", "none", "oracle", ORACLE_ENCODER)  # encoders never moved to a child process


# the mapping node's parameters: {name: (default, description)}
PARAMETERS = {
    "encoder": ("oracle", "feature encoder: oracle (ORACLE captions from instance ids) | none | clip | siglip | blip2"),
    "model_path": ("", "local model directory for clip / siglip / blip2"),
    "scene_json": ("", "scene JSON for the ORACLE captions (else from the episode's scene id)"),
    "episodes_dir": ("", "episode folder whose scenes/ hold the ORACLE captions"),
    "feature_resolution": (1.0, "feature-map cell size, m (0.05 .. )"),
    "occupancy_resolution": (0.05, "occupancy cell size, m"),
    "stride": (2, "pixel stride for back-projection"),
    "min_depth": (0.5, "m; nearer depth is invalid"),
    "max_depth": (5.0, "m; farther depth is invalid"),
    "floor_z": (0.0, "floor height, m"),
    "agent_radius": (0.18, "m, for navigable space"),
    "pose_source": ("camera_pose", "camera_pose (PoseStamped of the optical frame) | tf (map_frame -> depth frame_id "
                                   "from /tf at the depth stamp) | odom (base_link + static mount)"),
    "camera_height": (0.88, "pose_source:=odom: camera height above base_link, m"),
    "camera_pitch": (0.0, "pose_source:=odom: camera pitch, rad (positive up)"),
    "sync_slop": (0.02, "s; depth / pose / images match when their stamps differ by at most this"),
    "max_wait": (0.5, "s; an unmatched frame is dropped (and logged) after this"),
    "skip_static_frames": (True, "skip frames whose camera pose equals the last integrated one (re-published frames)"),
    "sensor_qos": ("sensor_data", "sensor_data (best effort, live sensors) | reliable (bag replay: a reliable player, nothing dropped)"),
    "publish_period": (0.5, "s between map / frontier / cloud / feature-map publications"),
    "cloud_voxel": (0.1, "m; voxel of the published cloud"),
    "maps_dir": ("maps", "saved maps go to <maps_dir>/<map name>/"),
    "map_name": ("", "folder name for map/save (default: the scene id, else 'map')"),
    "map_frame": ("map", "frame of all published maps"),
    "feature_process": (False, "image encoders (not the ORACLE): encode in a child process, pipelined behind the geometry "
                               "(a frame's occupancy is published at once; features are applied in frame order, so the "
                               "maps are the same; map/save waits for them). The encoder loads there while mapping starts"),
}


class SkipFrame(Exception):
    """A frame that cannot go into the maps (the message says why); the node counts and logs it."""


@dataclass
class LiveFrame:
    """A frame whose geometry is in the maps; its cloud and features follow (``LiveMap.complete``)."""

    depth: np.ndarray
    K: np.ndarray
    rgb: np.ndarray | None
    ids: np.ndarray | None
    footprint: Any
    pose: tuple[float, float, float]  # the base's x, y, yaw


class LiveMap:
    def __init__(self, p: dict, log) -> None:
        self.p, self.log = p, log
        self.scene_id = ""
        self.frames = 0
        self.last_pose: np.ndarray | None = None
        self.worker = None
        if p["feature_process"] and p["encoder"] not in IN_PROCESS_ONLY:
            self.encoder = None
            self.worker = self._start_worker()
        else:
            self.encoder = self._make_encoder()
        self.builder = self._make_builder()

    # -- setup ---------------------------------------------------------------------------
    def _make_encoder(self):
        name = self.p["encoder"]
        if name in ("", "none"):
            return None
        try:
            from personal.models.base import make_encoder

            if name in ("oracle", ORACLE_ENCODER):
                enc = make_encoder(ORACLE_ENCODER)
                enc.model  # load the sentence model now, not inside the first frame's callback
                if self.p["scene_json"]:
                    from personal.models.oracle import captions_from_json

                    enc.set_captions(captions_from_json(self.p["scene_json"]))
                return enc
            return make_encoder(name, model_path=self.p["model_path"])
        except Exception as exc:  # missing weights, unknown name: keep mapping geometry
            self.log.error(f"parameter 'encoder' = {name!r}: {exc}; mapping geometry only")
            return None

    def _start_worker(self):
        from personal.mapping.feature_worker import FeatureWorker

        def ready(name: str, dim: int) -> None:  # under the worker's lock
            self.builder.enable_features(dim, name)

        log = lambda msg: self.log.info(msg) if "ready" in msg else self.log.error(msg)  # noqa: E731
        apply = lambda fp, out: self.builder.apply_features(fp.K, fp, out)  # noqa: E731 - on the worker's thread, under its lock
        return FeatureWorker(self.p["encoder"], self.p["model_path"], apply, ready, log)

    def _make_builder(self) -> MapBuilder:
        p = self.p
        cfg = MapConfig(occupancy_resolution=float(p["occupancy_resolution"]), feature_resolution=float(p["feature_resolution"]),
                        stride=max(1, int(p["stride"])), min_depth=float(p["min_depth"]), max_depth=float(p["max_depth"]),
                        floor_z=float(p["floor_z"]), agent_radius=float(p["agent_radius"]))
        enc = self.encoder
        return MapBuilder(cfg, feature_dim=enc.dim if enc else None, encoder_name=enc.name if enc else "",
                          features=enc.frame_features if enc else None)

    @property
    def oracle(self) -> bool:
        return self.encoder is not None and self.encoder.name == ORACLE_ENCODER

    def inputs(self) -> tuple[bool, bool]:
        """(colour image, instance ids) the features need."""
        use_rgb = self.worker is not None or (self.encoder is not None and not self.oracle)
        return use_rgb, self.encoder is not None and not use_rgb

    def describe(self) -> str:
        if self.worker is not None:
            return f"{self.p['encoder']} (in a child process, loading)"
        return self.encoder.name if self.encoder else "none (geometry only)"

    # -- scene ---------------------------------------------------------------------------
    def needs_episode(self) -> bool:
        """The ORACLE encoder without scene_json needs the episode's scene (its captions) first."""
        return self.oracle and not self.p["scene_json"] and not self.scene_id

    def set_scene(self, scene_id: str) -> None:
        """The maps are now of ``scene_id`` (reset them first when it is another scene's); the ORACLE
        encoder loads its captions."""
        self.scene_id = scene_id
        if self.oracle and not self.p["scene_json"]:
            try:
                from personal.models.oracle import captions_for_scene_id

                self.encoder.set_captions(captions_for_scene_id(scene_id, self.p["episodes_dir"]))
                self.log.info(f"ORACLE captions for {scene_id}: {len(self.encoder.captions)} objects")
            except Exception as exc:
                self.log.error(f"ORACLE captions for scene {scene_id!r}: {exc}")

    # -- frames --------------------------------------------------------------------------
    def missing_context(self, have_info: bool) -> str:
        """What a frame needs before it can be integrated and has not arrived yet ('' = nothing)."""
        if not have_info:
            return "camera/color/camera_info"
        if self.needs_episode():
            return "the episode descriptor (ORACLE captions of the scene)"
        return ""

    def integrate(self, g: dict, info) -> LiveFrame | None:
        """The geometry of synced group ``g`` into the maps (None: a re-published frame). SkipFrame:
        a malformed or inconsistent frame, or a failed integration (never fatal)."""
        p = self.p
        try:
            depth, K, T, rgb, ids = frame_arrays(g, info, p["pose_source"], p["camera_height"], p["camera_pitch"])
        except (FrameError, ValueError) as exc:
            raise SkipFrame(str(exc)) from None
        try:
            new = self.integrate_geometry(depth, K, T)
        except Exception as exc:  # never die on one bad frame
            raise SkipFrame(f"integration failed: {exc}") from None
        return None if new is None else LiveFrame(depth, K, rgb, ids, *new)

    def complete(self, f: LiveFrame) -> list[str]:
        """The frame's cloud and features (after its occupancy went out); returns why parts were lost."""
        lost = []
        try:  # the cloud's compaction (tens of ms every few dozen frames) is off the loop's path here
            self.builder.add_cloud(f.footprint)
        except Exception as exc:
            lost.append(f"cloud integration failed: {exc}")
        try:
            self.integrate_features(f.depth, f.K, f.footprint, f.rgb, f.ids)
        except Exception as exc:  # the geometry of the frame stays; its features are lost
            lost.append(f"feature integration failed: {exc}")
        return lost

    def integrate_geometry(self, depth: np.ndarray, K: np.ndarray, T: np.ndarray):
        """(footprint, (x, y, yaw) of the base) of a new frame, or None for a re-published one
        (static pose, ``skip_static_frames``). Raises what the builder raises."""
        if self.p["skip_static_frames"] and same_pose(T, self.last_pose):
            return None
        x, y, yaw = base_pose_from_camera(T)
        fp = self.builder.integrate_geometry(depth, K, T, agent_xy=(x, y), cloud=False)
        self.last_pose = T
        self.frames += 1
        return fp, (x, y, yaw)

    def integrate_features(self, depth, K, fp, rgb, ids) -> None:
        if self.worker is not None:  # encoded in the child process while the next frame is rendered and mapped
            self.worker.submit(depth, rgb, ids, fp)
        else:
            self.builder.integrate_features(depth, K, fp, rgb, ids)

    def feature_lock(self):
        return self.worker.lock if self.worker is not None else nullcontext()

    # -- save / reset --------------------------------------------------------------------
    def map_name(self) -> str:
        return self.p["map_name"] or self.scene_id or "map"

    def save(self, out: Path) -> tuple[bool, str]:
        """Write the maps to ``out`` once the worker applied every frame's features: (ok, message)."""
        if self.worker is not None:  # the features of every integrated frame go into the saved map
            pending, t0 = self.worker.pending(), time.monotonic()
            if not self.worker.wait_idle(timeout=600.0):
                return False, f"features of {self.worker.pending()} frames still pending after 600 s"
            if pending:
                self.log.info(f"map/save: waited {time.monotonic() - t0:.1f} s for the features of {pending} frames")
        try:
            with self.feature_lock():
                self.builder.save(out, extra={"scene_id": self.scene_id, "frames": self.frames,
                                              "encoder_is_oracle": bool(self.encoder and "oracle" in self.encoder.name)})
        except OSError as exc:
            return False, f"cannot save maps to {out}: {exc}"
        return True, str(out)

    def reset(self) -> None:
        if self.worker is not None:
            self.worker.reset()  # features of earlier frames still in the pipeline are not applied
        with self.feature_lock():
            self.builder.reset()
        self.last_pose = None
        self.frames = 0

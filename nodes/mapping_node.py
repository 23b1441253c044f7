"""Mapping node: depth + pose (+ colour / instance ids) -> point cloud, occupancy grid,
frontiers and the semantic feature map (library: ``personal.mapping``; topics in docs/mapping.md).

Subscribes (sensor-data QoS, or reliable with ``sensor_qos:=reliable`` for bag replay):
``camera/aligned_depth_to_color/image_raw``, ``camera/color/camera_info``, the pose of
``pose_source`` (``camera/pose``; TF ``map_frame`` -> the depth frame; or ``odom`` + a static mount),
``camera/color/image_raw`` (image encoders) or ``camera/semantic/image_raw`` (ORACLE captions), and
``episode`` (latched: scene id -> map name; a new scene resets the maps). Frames are matched by stamp
(``sync_slop``); an unmatched one is skipped after ``max_wait``; one that comes before its context
(camera_info, the ORACLE's episode) waits for it, so callback order never changes the map.

Publishes ``map`` (OccupancyGrid), ``feature_map`` + ``feature_map/descriptor``, ``map/status``
(all transient local), ``map/cloud``, ``map/frontiers`` and ``map/progress`` (the newest stamp
handled; a bag player waits for it). Services: ``map/save`` (``<maps_dir>/<map name>/``), ``map/reset``,
``map/flush`` (no more input is coming: skip the frames that cannot complete, report the progress).
Malformed input is logged and the frame skipped; the node keeps running.
"""
from __future__ import annotations

import os
import time

# one BLAS thread (before numpy loads): a frame's products are small, and on a few cores shared with the
# renderer OpenBLAS threads only wait on each other (see sim_bridge.bridge_node)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from geometry_msgs.msg import PoseStamped
from nav_msgs.msg import OccupancyGrid as OccupancyGridMsg
from nav_msgs.msg import Odometry
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
from sensor_msgs.msg import CameraInfo, Image, PointCloud2
from std_msgs.msg import Float32MultiArray, Header
from std_srvs.srv import Trigger
from visualization_msgs.msg import MarkerArray

from personal.grounding.map_wire import descriptor_to_fields
from personal.interfaces.convert import from_dict, packed
from personal.msg import EpisodeDescriptor, FeatureMapDescriptor, MapStatus
from personal.mapping.frontier import detect_frontiers
from personal.mapping.live_map import PARAMETERS, LiveMap, SkipFrame
from personal.mapping.projection import voxel_downsample
from personal.mapping.frame_intake import FrameIntake, SkipLog
from personal.mapping.ros_io import feature_map_to_wire
from nodes.lifecycle import run_node, serve, subscribe
from nodes.map_msgs import float_array, frontier_markers, occupancy_grid, stamp_header, xyz_cloud
from nodes.parameters import declare_parameters

LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)


class MappingNode(Node):
    def __init__(self, **kwargs) -> None:
        super().__init__("mapping", **kwargs)
        self.p = declare_parameters(self, PARAMETERS)
        p = self.p
        self.live = LiveMap(p, self.get_logger())  # encoder, builder, scene, frame count
        self.info: CameraInfo | None = None
        self.skips = SkipLog()
        self._dirty = False

        use_rgb, use_ids = self.live.inputs()
        self.tf = None
        if p["pose_source"] == "tf":
            from nodes.tf import TfLookup

            self.tf = TfLookup(self)
        pose_key = () if self.tf is not None else ("pose",)
        keys = ("depth",) + pose_key + (("rgb",) if use_rgb else ()) + (("ids",) if use_ids else ())
        context = lambda: self.live.missing_context(self.info is not None)  # noqa: E731
        self.intake = FrameIntake(keys, p["sync_slop"], p["max_wait"], context, self._integrate, self._skip,
                                  self._publish_progress, self.tf.lookup_matrix if self.tf else None, p["map_frame"])

        sd = qos_profile_sensor_data
        if p["sensor_qos"] == "reliable":  # a replayed bag must lose no frame (deep queue: the node may lag a little)
            sd = QoSProfile(depth=200, reliability=ReliabilityPolicy.RELIABLE)
        elif p["sensor_qos"] != "sensor_data":
            self.get_logger().error(f"parameter 'sensor_qos': {p['sensor_qos']!r} unknown; using sensor_data")
        subscribe(self, Image, "camera/aligned_depth_to_color/image_raw", lambda m: self.intake.add("depth", m), sd)
        subscribe(self, CameraInfo, "camera/color/camera_info", self._on_info, sd)
        if p["pose_source"] == "odom":
            subscribe(self, Odometry, "odom", lambda m: self.intake.add("pose", m), sd)
        elif p["pose_source"] != "tf":
            if p["pose_source"] != "camera_pose":
                self.get_logger().error(f"parameter 'pose_source': {p['pose_source']!r} unknown; using camera_pose")
            subscribe(self, PoseStamped, "camera/pose", lambda m: self.intake.add("pose", m), sd)
        if use_rgb:
            subscribe(self, Image, "camera/color/image_raw", lambda m: self.intake.add("rgb", m), sd)
        if use_ids:
            subscribe(self, Image, "camera/semantic/image_raw", lambda m: self.intake.add("ids", m), sd)
        subscribe(self, EpisodeDescriptor, "episode", self._on_episode, LATCHED)

        self.pub_grid = self.create_publisher(OccupancyGridMsg, "map", LATCHED)
        self.pub_cloud = self.create_publisher(PointCloud2, "map/cloud", 1)
        self.pub_frontiers = self.create_publisher(MarkerArray, "map/frontiers", 1)
        self.pub_features = self.create_publisher(Float32MultiArray, "feature_map", LATCHED)
        self.pub_descriptor = self.create_publisher(FeatureMapDescriptor, "feature_map/descriptor", LATCHED)
        # latched: a consumer that starts after the last integrated frame still learns where the map stands
        self.pub_status = self.create_publisher(MapStatus, "map/status", LATCHED)
        self.pub_progress = self.create_publisher(Header, "map/progress", LATCHED)
        serve(self, Trigger, "map/save", self._on_save)
        serve(self, Trigger, "map/reset", self._on_reset)
        serve(self, Trigger, "map/flush", self._on_flush)
        self.create_timer(max(float(p["publish_period"]), 0.05), self._publish_maps)
        self.create_timer(0.2, self.intake.expire)
        self.get_logger().info(f"mapping ready: encoder {self.live.describe()}, sync {keys}, pose from {p['pose_source']}")

    # -- input ---------------------------------------------------------------------
    def _on_info(self, msg: CameraInfo) -> None:
        self.info = msg
        self.intake.context_arrived()

    def _on_episode(self, msg: EpisodeDescriptor) -> None:
        scene_id = msg.scene_id
        if not scene_id:
            self.get_logger().error("topic 'episode': empty scene_id; ignored")
            return
        if scene_id == self.live.scene_id:
            return
        if self.live.scene_id:
            self.get_logger().info(f"new scene {scene_id!r} (was {self.live.scene_id!r}): maps reset")
            self._reset()
        self.live.set_scene(scene_id)
        self.intake.context_arrived()

    def _on_flush(self, request, response):
        skipped = self.intake.end_of_input()
        response.success = True
        response.message = f"end of input: {skipped} incomplete frames skipped"
        if skipped:
            self.get_logger().warning(f"map/flush: {skipped} frames could not complete and were skipped")
        return response

    def _publish_progress(self, stamp_ns_: int) -> None:
        """map/progress: every frame up to ``stamp_ns_`` is handled (none waits for a transform or context)."""
        header = Header(frame_id=self.p["map_frame"])
        header.stamp.sec, header.stamp.nanosec = divmod(int(stamp_ns_), 1_000_000_000)
        self.pub_progress.publish(header)

    def _skip(self, reason: str) -> None:
        if self.skips.add(reason, time.monotonic()):
            self.get_logger().warning(f"skipped input: {reason} (skipped so far: {self.skips.total})")

    def _integrate(self, g: dict) -> None:
        """A synced frame whose transform and context are in: into the maps, its occupancy out first."""
        try:
            f = self.live.integrate(g, self.info)
        except SkipFrame as exc:
            self._skip(str(exc))
            return
        if f is None:  # re-published frame (static pose)
            return
        self._dirty = True
        # the occupancy of this frame goes out first: the explore node decides its next action on it
        # (and the bridge renders the next frame) while this node encodes the frame's features
        self._publish_grid(g["_stamp"])
        (x, y, yaw), frames, sid = f.pose, self.live.frames, self.live.scene_id
        self.pub_status.publish(self._header(MapStatus(x=float(x), y=float(y), yaw=float(yaw), frames=frames, scene_id=sid),
                                             int(g["_stamp"])))
        for reason in self.live.complete(f):
            self._skip(reason)

    # -- output --------------------------------------------------------------------
    def _header(self, msg, stamp_ns_: int | None = None):
        return stamp_header(msg, self.p["map_frame"], self.get_clock().now().to_msg() if stamp_ns_ is None else int(stamp_ns_))

    def _publish_grid(self, stamp: int | None = None) -> None:
        f = self.live.builder.occupancy.to_occupancy_grid_msg_fields()
        now = self.get_clock().now().to_msg() if stamp is None else int(stamp)
        self.pub_grid.publish(occupancy_grid(f, packed("b", f["data"]), self.p["map_frame"], now, load_time=True))

    def _publish_maps(self) -> None:
        if not self._dirty:
            return
        self._dirty = False
        try:
            # frontiers and cloud are volatile: no subscriber, no work (the cloud's compaction is not cheap)
            if self.pub_frontiers.get_subscription_count():
                self._publish_frontiers()
            if self.pub_cloud.get_subscription_count():
                self._publish_cloud()
            self._publish_features()
        except Exception as exc:
            self.get_logger().error(f"publishing maps failed: {exc}")

    def _publish_frontiers(self) -> None:
        occ = self.live.builder.occupancy
        frontiers, _ = detect_frontiers(occ.state(), occ.geometry)
        self.pub_frontiers.publish(frontier_markers(frontiers, self.p["map_frame"], self.get_clock().now().to_msg()))

    def _publish_cloud(self) -> None:
        pts = self.live.builder.cloud()
        pts = pts[voxel_downsample(pts, float(self.p["cloud_voxel"]))].astype(np.float32)
        self.pub_cloud.publish(xyz_cloud(pts, self.p["map_frame"], self.get_clock().now().to_msg()))

    def _publish_features(self) -> None:
        fm = self.live.builder.feature_map
        if fm is None or fm.geometry.shape[0] == 0:
            return
        with self.live.feature_lock():
            flat, layout, desc = feature_map_to_wire(fm, self.live.scene_id)
        self.pub_features.publish(float_array(layout, packed("f", flat)))
        self.pub_descriptor.publish(self._header(from_dict(FeatureMapDescriptor, descriptor_to_fields(desc))))

    # -- services ------------------------------------------------------------------
    def _on_save(self, request, response):
        from personal.paths import UnsafeIdError, child_path

        try:  # the scene id comes from the episode topic: it may not name a folder outside maps_dir
            out = child_path(self.p["maps_dir"], self.live.map_name(), "map_name" if self.p["map_name"] else "scene_id")
        except UnsafeIdError as exc:
            response.success, response.message = False, f"map/save: {exc}; nothing saved"
            self.get_logger().error(response.message)
            return response
        response.success, response.message = self.live.save(out)
        if not response.success:
            self.get_logger().error(response.message)
            return response
        self._dirty = True
        self._publish_maps()
        self.get_logger().info(f"maps saved to {out} ({self.live.frames} frames)")
        return response

    def _reset(self) -> None:
        self.live.reset()
        self.intake.clear()
        self._dirty = True

    def _on_reset(self, request, response):
        self._reset()
        self._publish_grid()
        response.success, response.message = True, "maps cleared"
        return response


def main(args=None) -> None:
    run_node(MappingNode, args)


if __name__ == "__main__":
    main()

"""Mapping node: depth + pose (+ colour / instance ids) -> point cloud, occupancy grid,
frontiers and the semantic feature map (library: ``personal.mapping``).

Subscribes (sensor-data QoS, relative names):
- ``camera/aligned_depth_to_color/image_raw`` (16UC1 mm or 32FC1 m), ``camera/color/camera_info``
- ``camera/pose`` (geometry_msgs/PoseStamped, optical frame in ``map``; ``pose_source:=camera_pose``),
  or TF (``/tf``, ``/tf_static``: ``map_frame`` -> the depth image's frame at its stamp, interpolated;
  ``pose_source:=tf``, right for a camera on a pan/tilt mount), or ``odom`` (nav_msgs/Odometry of
  base_link, with a static camera mount from parameters; ``pose_source:=odom``)
- ``camera/color/image_raw`` (rgb8/bgr8) for image encoders, ``camera/semantic/image_raw`` for
  the ORACLE caption encoder (``encoder:=oracle``)
- ``episode`` (personal/msg/EpisodeDescriptor, latched): scene id -> map name, ORACLE captions;
  a new scene resets the maps.
Depth, pose and (when used) colour / ids are matched by timestamp (``sync_slop``); frames
whose pose never arrives within ``max_wait`` are skipped with a warning (stale pose). A frame
that arrives before its context — ``camera_info``, or with the ORACLE encoder the ``episode``
naming the scene (its captions) — waits for it (the newest ``PENDING_FRAMES``) and is integrated
when the context comes: which subscription the executor serves first must not change the map.
``sensor_qos:=reliable`` subscribes the sensor topics reliably (bag replay, see ``bag_map``).

Publishes: ``map`` (nav_msgs/OccupancyGrid, reliable + transient local), ``map/cloud``
(sensor_msgs/PointCloud2, voxel-downsampled accumulated cloud), ``map/frontiers``
(visualization_msgs/MarkerArray), ``feature_map`` (std_msgs/Float32MultiArray [rows, cols,
dim+1] = embedding + confidence) and ``feature_map/descriptor`` (personal/msg/FeatureMapDescriptor:
origin, resolution, shape, encoder, scene_id), both transient local; ``map/status``
(personal/msg/MapStatus after every integrated frame: stamp, agent x/y/yaw, frames; transient local);
``map/progress`` (std_msgs/Header: the stamp of the newest frame handled — integrated, or skipped
as a repeat of the last pose — once nothing older waits; a bag player waits for it to reach its last
message instead of guessing from silence, see ``bag_map``).
Services (std_srvs/Trigger): ``map/save`` (writes ``<maps_dir>/<map name>/``), ``map/reset``.

Malformed input (wrong encoding, image size unlike camera_info, bad pose, missing camera
info) is logged and the frame skipped; the node keeps running.
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
from personal.mapping.live_map import LiveMap, SkipFrame
from personal.mapping.projection import voxel_downsample
from personal.mapping.frame_intake import FrameIntake, SkipLog
from personal.mapping.ros_io import feature_map_to_wire
from nodes.lifecycle import run_node, serve, subscribe
from nodes.map_msgs import float_array, frontier_markers, occupancy_grid, stamp_header, xyz_cloud

LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)

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


class MappingNode(Node):
    def __init__(self, **kwargs) -> None:
        super().__init__("mapping", **kwargs)
        from rcl_interfaces.msg import ParameterDescriptor

        self.p = {n: self.declare_parameter(n, d, ParameterDescriptor(description=t)).value for n, (d, t) in PARAMETERS.items()}
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

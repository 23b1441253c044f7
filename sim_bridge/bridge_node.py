"""The sim bridge node: a simulator backend replaying PersONAL episodes as ROS topics.

Publishes (relative names, so a namespace or remap moves them):
- ``camera/color/image_raw`` (rgb8), ``camera/aligned_depth_to_color/image_raw``
  (16UC1 mm, 0 = invalid, like the RealSense; or 32FC1 metres, NaN = invalid, by the
  ``depth_encoding`` parameter), ``camera/color/camera_info`` (K, P, zero D, plumb_bob),
  ``camera/semantic/image_raw`` (instance ids, 32SC1 or 16UC1; 0 = structure/nothing):
  sensor-data QoS (best effort). Large images need the shipped Fast DDS profile
  (personal/config/fastdds_shm.xml, set by `personal launch` and the tests); without it
  most best-effort images are lost between processes.
- ``odom`` (nav_msgs/Odometry): pose of ``base_link`` in ``map`` (the simulator localises
  perfectly, so map = odom), zero twist. Best effort.
- ``camera/pose`` (geometry_msgs/PoseStamped): pose of ``camera_color_optical_frame``
  (OpenCV optical axes) in ``map``, stamped like the images.
- ``/tf`` (tf2_msgs/TFMessage, with ``publish_tf``): ``map`` -> ``base_link`` and ``base_link`` ->
  ``camera_color_optical_frame`` (camera height and tilt), stamped like the images: the same poses
  as ``odom`` and ``camera/pose``, for consumers that take the camera pose from TF.
- ``episode`` (``personal/msg/EpisodeDescriptor``; reliable, transient local): the
  current episode. Target ids/positions are ground truth for
  evaluators; an agent that reads them is an oracle.
- ``agent_state`` (``personal/msg/AgentState``; reliable, transient local): after every
  reset and action.
- ``episode/result`` (``personal/msg/EpisodeResult``; reliable, transient local): when STOP
  ends an episode, PersONAL's success (within 1 m of the target object), SPL, DTG (habitat
  backend: geodesics to the goals' view points) from simulator ground truth. For evaluators;
  an agent that reads it is an oracle.
- ``/clock`` (rosgraph_msgs/Clock) when ``publish_clock`` is true: simulated time
  advancing 1/rate per tick; every stamp then uses it.
The camera topics, ``odom`` and ``/tf`` go out (and are built) only while someone subscribes.

Accepts:
- ``action`` (``personal/msg/DiscreteAction``): one discrete step.
  Rendered and published at once, then ``agent_state`` echoes the ``request_id``.
- ``cmd_vel`` (geometry_msgs/Twist): integrated over time and turned into discrete
  actions each time 0.25 m or 30° has accumulated (see ``TwistIntegrator``).
- services ``episode/next`` and ``episode/reset`` (std_srvs/Trigger): go to the next
  episode (wrapping around) or restart the current one.

Bad input (missing or malformed episode folder, unknown scene, undecodable or
out-of-space action, action after STOP) is logged as an error naming what was wrong;
the node keeps running.
"""
from __future__ import annotations

import math
import os
import time

# one BLAS thread (before numpy loads): the renderer's small matrix products gain nothing from more, and
# OpenBLAS threads waiting beside the renderer's own made a 4x4 inverse cost ~8 ms a frame (measured, 2 cores)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import rclpy
from geometry_msgs.msg import PoseStamped, Twist
from nav_msgs.msg import Odometry
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import CameraInfo, Image
from std_srvs.srv import Trigger

from personal.interfaces.convert import from_dict, packed
from personal.msg import AgentState, DiscreteAction, EpisodeDescriptor, EpisodeResult
from personal.sim.backends.base import Action, Observation
from personal.navigation.eval.pan import episode_result
from personal.sim.bridge_logic import (
    TwistIntegrator, check_action, encode_depth, encode_ids, episode_descriptor, generate_episodes,
    load_episodes, only_scene, scene_assets, scene_model,
)
from nodes.lifecycle import run_node, serve, subscribe
from nodes.tf import TfBroadcaster, transform_stamped

LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
STATE_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
COMMAND_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)

PARAMETERS = {
    "episodes_dir": ("", "PersONAL episode folder (personal world generate, or the public files' {split} parent); "
                         "empty = generate in memory"),
    "scenes_dir": ("", "folder the episodes' scene_id paths are relative to (habitat; default: episodes_dir)"),
    "scene_dataset_config": ("", "scene dataset config for habitat-sim; empty = the one each episode names"),
    "scene": ("", "replay only the episodes of this scene id (e.g. 4ok3usBNeis); empty = all"),
    "split": ("all", "easy | medium | hard | all: which episodes to replay / generate"),
    "scenes": (1, "households to generate when episodes_dir is empty"),
    "seed": (0, "generator seed when episodes_dir is empty"),
    "episodes_per_scene": (3, "episodes per scene and split when generating"),
    "start_index": (0, "first episode to load"),
    "backend": ("synthetic", "synthetic | habitat | auto"),
    "rate": (10.0, "sensor publish rate, Hz: the latest observation is re-published when no frame went out for "
                   "1/rate s (a fresh frame per action is published at once; stepping faster re-publishes nothing)"),
    "width": (640, "camera image width, px (LoCoBot RealSense: 640)"),
    "height": (480, "camera image height, px (LoCoBot RealSense: 480)"),
    "publish_clock": (False, "publish /clock (simulated time) and stamp with it"),
    "depth_encoding": ("16UC1", "16UC1 (mm) | 32FC1 (m)"),
    "semantic_encoding": ("32SC1", "32SC1 | 16UC1"),
    "map_frame": ("map", "fixed frame"),
    "base_frame": ("base_link", "robot base frame"),
    "camera_frame": ("camera_color_optical_frame", "optical frame of all camera images"),
    "publish_tf": (True, "publish map -> base_link -> camera frame on /tf"),
    "log_every": (5.0, "seconds between 'published ...' summaries (0 = never)"),
    "sensor": ("ideal", "camera model (personal/sim/sensor_model.py): ideal | d435 | d435-harsh"),
    "sensor_overrides": ("", "preset fields to override, e.g. hfov_deg=69,height_m=1.25"),
    "sensor_seed": (0, "seed of the camera model's noise"),
}


class SimBridgeNode(Node):
    def __init__(self, **kwargs) -> None:
        super().__init__("sim_bridge", **kwargs)
        for name, (default, description) in PARAMETERS.items():
            from rcl_interfaces.msg import ParameterDescriptor

            self.declare_parameter(name, default, ParameterDescriptor(description=description))
        p = {name: self.get_parameter(name).value for name in PARAMETERS}
        self.p = p
        self.scenes: dict = {}
        self.episodes: list = []
        self.index = -1
        self.obs: Observation | None = None
        self.frame: dict | None = None  # messages of the latest observation, re-stamped each tick
        self._built: dict = {}  # those of them built so far (a topic without subscribers is not built)
        self.step_count = 0
        self.stopped = False
        self.sim_time_ns = 0
        self.published = 0
        self._count_since = time.monotonic()
        self._last_log = time.monotonic()
        self.twist = TwistIntegrator()
        self.poses: list = []  # (x, y, yaw) at the start and after every action of the episode
        self._last_publish = 0.0  # monotonic time of the last frame sent

        self.pub_rgb = self.create_publisher(Image, "camera/color/image_raw", qos_profile_sensor_data)
        self.pub_depth = self.create_publisher(Image, "camera/aligned_depth_to_color/image_raw", qos_profile_sensor_data)
        self.pub_info = self.create_publisher(CameraInfo, "camera/color/camera_info", qos_profile_sensor_data)
        self.pub_ids = self.create_publisher(Image, "camera/semantic/image_raw", qos_profile_sensor_data)
        self.pub_odom = self.create_publisher(Odometry, "odom", qos_profile_sensor_data)
        self.pub_cam_pose = self.create_publisher(PoseStamped, "camera/pose", qos_profile_sensor_data)
        self.pub_episode = self.create_publisher(EpisodeDescriptor, "episode", LATCHED)
        self.pub_state = self.create_publisher(AgentState, "agent_state", STATE_QOS)
        self.pub_result = self.create_publisher(EpisodeResult, "episode/result", STATE_QOS)
        self.pub_clock = self.create_publisher(Clock, "/clock", 10) if p["publish_clock"] else None
        self.tf = TfBroadcaster(self) if p["publish_tf"] else None
        subscribe(self, DiscreteAction, "action", self.on_action, COMMAND_QOS)
        subscribe(self, Twist, "cmd_vel", self.on_cmd_vel, COMMAND_QOS)
        serve(self, Trigger, "episode/next", self.on_next)
        serve(self, Trigger, "episode/reset", self.on_reset)

        self.backend = None
        try:
            from personal.sim.sensor_model import SensorSpecError, make_sensor_backend, sensor_spec

            if int(p["width"]) < 8 or int(p["height"]) < 8:
                raise ValueError(f"parameters 'width' / 'height': at least 8 px, got {p['width']}x{p['height']}")
            spec = sensor_spec(p["sensor"], p["sensor_overrides"], int(p["sensor_seed"]))
            # ideal: the plain backend (the renderer's frames); else every frame through the camera model
            self.backend = make_sensor_backend(p["backend"], spec, int(p["width"]), int(p["height"]))
            self.get_logger().info(f"camera: {spec.describe()}")
        except SensorSpecError as exc:
            self.get_logger().error(f"parameter {exc}")
        except Exception as exc:  # unknown name, habitat missing, ...
            self.get_logger().error(f"parameter 'backend': {exc}")
        self._load_source()
        if self.episodes and self.backend is not None:
            self.goto(int(p["start_index"]) % len(self.episodes))
        rate = float(p["rate"])
        if rate <= 0:
            self.get_logger().error(f"parameter 'rate' must be > 0, got {rate}; using 10 Hz")
            rate = 10.0
        self.period_ns = int(1e9 / rate)
        self.create_timer(1.0 / rate, self.tick)
        self.published, self._count_since = 0, time.monotonic()
        self._last_log = self._count_since

    # -- episodes ----------------------------------------------------------------
    def _load_source(self) -> None:
        p = self.p
        try:
            if p["episodes_dir"]:
                habitat = getattr(self.backend, "scores_with_view_points", False)
                self.scenes, self.episodes = load_episodes(p["episodes_dir"], p["split"], scene_models=not habitat)
                self.episodes = only_scene(self.episodes, p["scene"], p["episodes_dir"])
                if habitat:  # habitat-sim loads scene files: the episodes' scene_id under scenes_dir
                    self.scenes = scene_assets(self.episodes, self.scenes, p["episodes_dir"], p["scenes_dir"],
                                               p["scene_dataset_config"])
                where = p["episodes_dir"]
            elif getattr(self.backend, "scores_with_view_points", False):
                raise ValueError("backend habitat replays episode files: give episodes_dir:= (the public PersONAL "
                                 "files, or a folder written by `personal world generate --out DIR`)")
            else:
                self.scenes, self.episodes = generate_episodes(p["split"], int(p["scenes"]), int(p["seed"]),
                                                               int(p["episodes_per_scene"]))
                where = f"generated (split={p['split']}, scenes={p['scenes']}, seed={p['seed']})"
            self.get_logger().info(f"{len(self.episodes)} episodes in {len(self.scenes)} scenes from {where}")
        except (ValueError, OSError) as exc:  # EpisodeFormatError / EpisodeSourceError are ValueErrors
            self.get_logger().error(f"cannot load episodes: {exc}")
            self.scenes, self.episodes = {}, []

    def goto(self, index: int) -> tuple[bool, str]:
        if self.backend is None:
            return False, "no simulator backend (see the 'backend' error above)"
        if not self.episodes:
            return False, "no episodes loaded (see the error above)"
        ep = self.episodes[index]
        scene = self.scenes.get(ep.scene_id)
        if scene is None:
            msg = f"episode {ep.episode_id!r}: unknown scene {ep.scene_id!r}"
            self.get_logger().error(msg)
            return False, msg
        try:
            descriptor = episode_descriptor(ep, scene_model(scene), index, len(self.episodes))
            self.backend.load_scene(scene)
            obs = self.backend.reset(ep)
            if math.isnan(descriptor["geodesic_distance"]) and hasattr(self.backend, "episode_goal_distance"):
                # generated episodes leave it to the simulator (start -> success region of the targets)
                descriptor["geodesic_distance"] = float(self.backend.episode_goal_distance(ep))
            episode_msg = from_dict(EpisodeDescriptor, descriptor)
        except Exception as exc:  # any backend failure: report it and stay up for the next request
            msg = f"episode {ep.episode_id!r} (scene {ep.scene_id!r}) failed to load: {type(exc).__name__}: {exc}"
            self.get_logger().error(msg)
            return False, msg
        self.index, self.step_count, self.stopped = index, 0, False
        self.poses = [(obs.state.x, obs.state.y, obs.state.yaw)]
        self.pub_episode.publish(episode_msg)
        self._new_observation(obs, request_id="")
        msg = f"episode {index + 1}/{len(self.episodes)}: {ep.episode_id} in {ep.scene_id} ({ep.split}): {ep.query}"
        self.get_logger().info(msg)
        return True, msg

    def on_next(self, request, response):
        if not self.episodes:
            response.success, response.message = False, "no episodes loaded"
            return response
        response.success, response.message = self.goto((self.index + 1) % len(self.episodes))
        return response

    def on_reset(self, request, response):
        if self.index < 0:
            response.success, response.message = False, "no episode loaded"
            return response
        response.success, response.message = self.goto(self.index)
        return response

    # -- actions -------------------------------------------------------------------
    def on_action(self, msg: DiscreteAction) -> None:
        try:
            action = check_action(msg.action)
        except ValueError as exc:
            self.get_logger().error(f"topic 'action': rejected message: {exc}")
            return
        self.apply(action, msg.request_id)

    def on_cmd_vel(self, msg: Twist) -> None:
        actions, note = self.twist.update(time.monotonic(), msg.linear.x, msg.angular.z)
        if note:
            self.get_logger().warning(f"topic 'cmd_vel': {note}", throttle_duration_sec=5.0)
        for action in actions:
            self.apply(action, "cmd_vel")

    def apply(self, action: Action, request_id: str) -> None:
        if self.obs is None or self.backend is None:
            self.get_logger().error(f"action {action.name} ignored: no episode loaded")
            return
        if self.stopped:
            self.get_logger().error(f"action {action.name} ignored: episode ended with STOP "
                                    "(call episode/next or episode/reset)")
            return
        try:
            obs = self.backend.step(action)
        except Exception as exc:  # the backend failed on this step; the node stays up
            self.get_logger().error(f"action {action.name} failed: {type(exc).__name__}: {exc}")
            return
        self.step_count += 1
        self.stopped = action == Action.STOP
        self.poses.append((obs.state.x, obs.state.y, obs.state.yaw))
        self._new_observation(obs, request_id)
        if self.stopped:
            self._publish_result()

    def _publish_result(self) -> None:
        ep = self.episodes[self.index]
        try:
            result = episode_result(self.backend, ep, scene_model(self.scenes.get(ep.scene_id)), self.poses,
                                    self.step_count, True)
        except Exception as exc:  # scoring must not take the bridge down
            self.get_logger().error(f"episode {ep.episode_id!r}: cannot score the episode: {type(exc).__name__}: {exc}")
            return
        self.pub_result.publish(from_dict(EpisodeResult, result))
        self.get_logger().info(f"episode {ep.episode_id}: {'SUCCESS' if result['success'] else 'failure'} "
                               f"SPL={result['spl']:.2f} DTG={result['distance_to_goal']:.2f} m "
                               f"steps={result['steps']}")

    # -- publishing ------------------------------------------------------------------
    def _stamp(self):
        if self.pub_clock is not None:
            return rclpy.time.Time(nanoseconds=self.sim_time_ns).to_msg()
        return self.get_clock().now().to_msg()

    def _new_observation(self, obs: Observation, request_id: str) -> None:
        self.obs = obs
        self.frame, self._built = self._build_frame(obs), {}
        self._publish_frame()
        s = obs.state
        ep = self.episodes[self.index]
        state = {
            "episode_id": str(ep.episode_id),
            "position": {"x": float(s.x), "y": float(s.y), "z": float(s.z)},
            "yaw": float(s.yaw), "pitch": float(s.pitch), "floor": int(s.floor),
            "collided": bool(obs.collided), "step": self.step_count, "stopped": self.stopped,
            "request_id": request_id,
        }
        self.pub_state.publish(from_dict(AgentState, state))

    def _image(self, array: np.ndarray, encoding: str, bytes_per_pixel: int) -> Image:
        msg = Image()
        msg.height, msg.width = int(array.shape[0]), int(array.shape[1])
        msg.encoding = encoding
        msg.is_bigendian = 0
        msg.step = msg.width * bytes_per_pixel
        # fast path: bytes in an array.array (assigning the ndarray is ~100x slower, and so is
        # bytes when ROS_PYTHON_CHECK_FIELDS=1 checks every element)
        msg.data = packed("B", array)
        msg.header.frame_id = self.p["camera_frame"]
        return msg

    def _build_frame(self, obs: Observation) -> dict:
        """The latest observation's messages, each built when first sent: {key: (publisher, build)}.
        A topic nobody subscribes to is neither built nor sent (in the explore graph: the instance ids,
        odometry and /tf, about a third of the bridge's per-frame work)."""
        return {
            "rgb": (self.pub_rgb, lambda: self._image(obs.rgb, "rgb8", 3)),
            "depth": (self.pub_depth, lambda: self._image(*self._depth(obs))),
            "ids": (self.pub_ids, lambda: self._image(*self._ids(obs))),
            "info": (self.pub_info, lambda: self._info(obs)),
            "odom": (self.pub_odom, lambda: self._odom(obs)),
            "camera_pose": (self.pub_cam_pose, lambda: self._camera_pose(obs)),
        }

    def _depth(self, obs: Observation):
        depth, dbytes = encode_depth(obs.depth, self.p["depth_encoding"])
        return depth, self.p["depth_encoding"], dbytes

    def _ids(self, obs: Observation):
        ids, ibytes = encode_ids(obs.instance_ids, self.p["semantic_encoding"])
        return ids, self.p["semantic_encoding"], ibytes

    def _info(self, obs: Observation) -> CameraInfo:
        K = np.asarray(obs.K, dtype=float)
        info = CameraInfo()
        info.header.frame_id = self.p["camera_frame"]
        info.height, info.width = int(obs.rgb.shape[0]), int(obs.rgb.shape[1])
        info.distortion_model = "plumb_bob"
        info.d = [0.0] * 5
        info.k = K.reshape(-1).tolist()
        info.r = np.eye(3).reshape(-1).tolist()
        info.p = [K[0, 0], 0.0, K[0, 2], 0.0, 0.0, K[1, 1], K[1, 2], 0.0, 0.0, 0.0, 1.0, 0.0]
        return info

    def _odom(self, obs: Observation) -> Odometry:
        s = obs.state
        odom = Odometry()
        odom.header.frame_id = self.p["map_frame"]
        odom.child_frame_id = self.p["base_frame"]
        odom.pose.pose.position.x, odom.pose.pose.position.y, odom.pose.pose.position.z = float(s.x), float(s.y), float(s.z)
        odom.pose.pose.orientation.z, odom.pose.pose.orientation.w = math.sin(s.yaw / 2), math.cos(s.yaw / 2)
        return odom

    def _camera_pose(self, obs: Observation) -> PoseStamped:
        cam = PoseStamped()
        cam.header.frame_id = self.p["map_frame"]
        T = np.asarray(obs.T_map_camera, dtype=float)
        cam.pose.position.x, cam.pose.position.y, cam.pose.position.z = (float(v) for v in T[:3, 3])
        qx, qy, qz, qw = _quat_from_matrix(T[:3, :3])
        cam.pose.orientation.x, cam.pose.orientation.y, cam.pose.orientation.z, cam.pose.orientation.w = qx, qy, qz, qw
        return cam

    def _transforms(self, obs: Observation) -> list:
        s = obs.state
        T = np.asarray(obs.T_map_camera, dtype=float)
        T_map_base = np.eye(4)
        T_map_base[:3, 3] = (s.x, s.y, s.z)
        c, sn = math.cos(s.yaw), math.sin(s.yaw)
        T_map_base[:2, :2] = [[c, -sn], [sn, c]]
        return [transform_stamped(self.p["map_frame"], self.p["base_frame"], T_map_base, None),
                transform_stamped(self.p["base_frame"], self.p["camera_frame"], _rigid_inverse(T_map_base) @ T, None)]

    def _publish_frame(self) -> None:
        if self.frame is None:
            return
        stamp = self._stamp()
        built = self._built
        # first, so that a frame's transform is there when the frame is
        if self.tf is not None and self.tf.pub.get_subscription_count():
            if "tf" not in built:
                built["tf"] = self._transforms(self.obs)
            for t in built["tf"]:
                t.header.stamp = stamp
            self.tf.send(built["tf"])
        for key, (pub, build) in self.frame.items():
            if not pub.get_subscription_count():
                continue
            msg = built.get(key)
            if msg is None:
                msg = built[key] = build()
            msg.header.stamp = stamp
            pub.publish(msg)
        self.published += 1
        self._last_publish = time.monotonic()

    def tick(self) -> None:
        if self.pub_clock is not None:
            self.sim_time_ns += self.period_ns
            self.pub_clock.publish(Clock(clock=rclpy.time.Time(nanoseconds=self.sim_time_ns).to_msg()))
        # a stream of at least `rate` Hz: a frame published by an action in the last period counts (re-sending
        # it would only cost both ends a copy of every image: in lock-step exploration most of the bridge's time)
        now = time.monotonic()
        if self.pub_clock is not None or now - self._last_publish >= 0.9 * self.period_ns / 1e9:  # sim time: every tick
            self._publish_frame()
        if self.p["log_every"] > 0 and now - self._last_log >= self.p["log_every"]:
            hz = self.published / max(now - self._count_since, 1e-9)
            where = f"episode {self.index + 1}/{len(self.episodes)}" if self.index >= 0 else "no episode"
            self.get_logger().info(f"published {self.published} frames ({hz:.1f} Hz: rgb, depth, ids, info, odom, "
                                   f"camera pose), {where}, step {self.step_count}")
            self.published, self._count_since, self._last_log = 0, now, now


def _rigid_inverse(T: np.ndarray) -> np.ndarray:
    """Inverse of a rigid transform (R, t) -> (R^T, -R^T t)."""
    out = np.eye(4)
    out[:3, :3] = T[:3, :3].T
    out[:3, 3] = -T[:3, :3].T @ T[:3, 3]
    return out


def _quat_from_matrix(R: np.ndarray) -> tuple[float, float, float, float]:
    from scipy.spatial.transform import Rotation

    x, y, z, w = Rotation.from_matrix(R).as_quat()
    return float(x), float(y), float(z), float(w)


def main(args=None) -> None:
    run_node(SimBridgeNode, args)


if __name__ == "__main__":
    main()

"""A faithful double of the real LoCoBot stack (Interbotix xslocobot + RealSense + Create 3 / Kobuki),
for testing the ``locobot`` graph, unchanged, without a robot.

It publishes what the real drivers publish — names, types, frames, QoS and encodings all from
``personal/robot/conventions.py`` — in the robot namespace it runs in (``<ns>``, e.g. ``/locobot``):

- the base (``base:=create3|kobuki``, through ``nodes/kinematic_base_node.py``): odometry on the
  base's topic with its header frames and reliability, its velocity topic, and TF
  ``<ns>/odom`` -> root link; the Interbotix arm side: ``joint_states`` (pan, tilt), the pan/tilt
  servos driven by ``commands/joint_group`` (interbotix_xs_msgs/JointGroupCommand, group
  ``camera``) and ``commands/joint_single``, and robot_state_publisher's TF of the URDF chain up to
  ``camera_<ns>_link``;
- the RealSense (``camera:=interbotix|rs_launch``, ``realsense:=4.55|4.54``): ``color/image_raw``
  (rgb8), ``color/camera_info``, and with ``align_depth`` ``aligned_depth_to_color/image_raw``
  (16UC1 millimetres, 0 = no depth; frame ``camera_color_optical_frame``) — else only
  ``depth/image_rect_raw`` (the unaligned stream) — under the prefix the real driver uses for that
  layout and version, reliable with depth 10 as realsense-ros' default QoS, and its static TF
  ``<base frame> -> camera_color_frame -> camera_color_optical_frame``. The base frame is
  ``camera_<ns>_link`` (Interbotix's ``base_frame_id``) or, for rs_launch, ``camera_link``, which
  only joins the robot's tree with ``join_camera:=true`` (the static transform the deploy docs give).

Images are rendered by the synthetic simulator (``personal/sim/render.py``) from the camera's true
pose in a PersONAL episode's scene (``episodes_dir`` + ``split`` + ``episode``, or a generated one:
``scene_seed``); the base starts at the episode's start pose, which is the origin of its odometry
(as a robot's odometry starts where it was switched on), and stops at the scene's walls and
furniture (its navigable grid). Ground truth for tests: ``T_map_camera()``, ``goal_distance()``.
"""
from __future__ import annotations

import math
import os
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as the sim bridge: small products gain nothing from more

import numpy as np  # noqa: E402
from rclpy.qos import QoSProfile, ReliabilityPolicy  # noqa: E402
from sensor_msgs.msg import CameraInfo, Image  # noqa: E402

from personal.interfaces.convert import packed  # noqa: E402
from personal.robot import conventions as C  # noqa: E402
from personal.robot.extrinsics import R_LINK_OPTICAL, T_map_base, T_root_optical  # noqa: E402
from nodes.kinematic_base_node import KinematicBaseNode  # noqa: E402
from nodes.lifecycle import run_node  # noqa: E402
from nodes.tf import transform_stamped  # noqa: E402

IMAGE_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)  # realsense-ros DEFAULT_QOS


def camera_topic(layout: C.CameraLayout, topic: str) -> str:
    """The topic name, relative to the double's namespace unless the layout's prefix is absolute."""
    return f"{layout.prefix}/{topic}"


class LocobotDouble(KinematicBaseNode):
    def __init__(self, **kwargs) -> None:
        super().__init__(node_name="locobot_double", camera_tf=False, **kwargs)  # the camera frames: below
        d = self.declare_parameter
        d("camera", "interbotix")
        d("realsense", "4.55")
        d("align_depth", True)
        d("join_camera", False)  # rs_launch: the static camera_<ns>_link -> camera_link is running
        d("camera_rate", 15.0)
        d("width", 640)
        d("height", 480)
        d("hfov_deg", 69.0)  # D435 colour stream
        d("episodes_dir", "")
        d("split", "easy")
        d("episode", "")  # episode id ("" = the first of the split)
        d("scene_seed", 3)
        # > 0: reuse the render of the nearest pose on a grid of this many degrees (yaw, pan, tilt) and 1 cm, so
        # 640x480 can stream at 30 Hz on a small CPU (bench/bench_locobot_realtime.py); TF stays exact
        d("render_cache_deg", 0.0)
        g = lambda n: self.get_parameter(n).value  # noqa: E731
        self.layout = C.camera_layout(str(g("camera")), str(g("realsense")), self.robot)
        self.align = bool(g("align_depth"))
        self.episode, self.scene = self._load_episode(str(g("episodes_dir")), str(g("split")), str(g("episode")),
                                                      int(g("scene_seed")))
        from personal.sim.backends.base import CameraSpec
        from personal.sim.backends.synthetic import SyntheticBackend

        self.sim = SyntheticBackend(CameraSpec(width=int(g("width")), height=int(g("height")),
                                               hfov_deg=float(g("hfov_deg")), min_depth=0.2, max_depth=6.0),
                                    render_threads=1)
        self.sim.load_scene(self.scene)
        start = self.sim.reset(self.episode).state
        self.floor, self.floor_z = start.floor, start.z
        self.T_map_odom = T_map_base(start.x, start.y, start.yaw)
        self.T_map_odom[2, 3] = start.z
        self.base.free = self._free
        self.renderer = self.sim._loaded().renderer  # the same renderer the sim bridge uses
        self.K = self.renderer.K
        self.frames = 0
        self.render_s = 0.0
        self.cache_deg = float(g("render_cache_deg"))
        self._cache: dict[tuple, tuple] = {}
        self._publish_camera_tf()
        self.pub_rgb = self.create_publisher(Image, camera_topic(self.layout, "color/image_raw"), IMAGE_QOS)
        self.pub_info = self.create_publisher(CameraInfo, camera_topic(self.layout, "color/camera_info"), IMAGE_QOS)
        depth = "aligned_depth_to_color/image_raw" if self.align else "depth/image_rect_raw"
        self.pub_depth = self.create_publisher(Image, camera_topic(self.layout, depth), IMAGE_QOS)
        self.create_timer(1.0 / float(g("camera_rate")), self._on_camera)
        self.get_logger().info(
            f"LoCoBot double: base {self.base_name}, camera {self.layout.name} (realsense {g('realsense')}, topics "
            f"{self.layout.prefix}/..., aligned depth {'on' if self.align else 'off'}), episode {self.episode.episode_id} "
            f"{self.episode.query!r}")

    def base_topics(self) -> tuple[str, str]:
        return self.profile.odom_topic, self.profile.cmd_vel_topic

    # -- scene -------------------------------------------------------------------------
    @staticmethod
    def _load_episode(episodes_dir: str, split: str, episode_id: str, seed: int):
        from personal.sim.bridge_logic import generate_episodes, load_episodes

        if episodes_dir:
            scenes, episodes = load_episodes(episodes_dir, split)
        else:
            scenes, episodes = generate_episodes(split, 1, seed, 6)
        if episode_id:
            matching = [e for e in episodes if e.episode_id == episode_id]
            if not matching:
                raise ValueError(f"parameter 'episode': {episode_id!r} is not in split {split!r} "
                                 f"(known: {', '.join(e.episode_id for e in episodes[:10])}...)")
            ep = matching[0]
        else:
            ep = episodes[0]
        return ep, scenes[ep.scene_id]

    def _to_map(self, x: float, y: float) -> tuple[float, float]:
        p = self.T_map_odom @ np.array([x, y, 0.0, 1.0])
        return float(p[0]), float(p[1])

    def _free(self, x: float, y: float) -> bool:
        return self.sim.is_navigable(*self._to_map(x, y), self.floor)

    def T_map_camera(self) -> np.ndarray:
        """Ground truth: the optical frame in the scene's map frame now."""
        return self.T_map_odom @ self.T_odom_camera()

    def goal_distance(self) -> float:
        """Geodesic distance (m) from the base to the episode's success region (ground truth)."""
        x, y = self._to_map(self.base.x, self.base.y)
        return self.sim.goal_distance(x, y, list(self.episode.target_object_ids), self.floor)

    def T_odom_camera(self) -> np.ndarray:
        T = T_map_base(self.base.x, self.base.y, self.base.yaw) @ T_root_optical(self.base_name, self.servo.pan,
                                                                                 self.servo.tilt)
        return T

    # -- the RealSense -------------------------------------------------------------------
    def _publish_camera_tf(self) -> None:
        if self.tf_static is None:
            return
        stamp = self.get_clock().now().to_msg()
        T_color = np.eye(4)
        T_color[:3, 3] = C.COLOR_FRAME_OFFSET
        T_opt = np.eye(4)
        T_opt[:3, :3] = R_LINK_OPTICAL
        out = [transform_stamped(self.layout.base_frame, C.COLOR_FRAME, T_color, stamp),
               transform_stamped(C.COLOR_FRAME, C.COLOR_OPTICAL_FRAME, T_opt, stamp)]
        if not self.layout.joined and bool(self.get_parameter("join_camera").value):
            out.append(transform_stamped(C.camera_link(self.robot), self.layout.base_frame, np.eye(4), stamp))
        self.tf_static.send(out)

    def _render(self) -> tuple[np.ndarray, np.ndarray]:
        if self.cache_deg <= 0:
            rgb, depth, _ = self.renderer.render(self.T_map_camera())
            return rgb, depth
        q = math.radians(self.cache_deg)
        key = (round(self.base.x, 2), round(self.base.y, 2), round(self.base.yaw / q), round(self.servo.pan / q),
               round(self.servo.tilt / q))
        if key not in self._cache:
            T = self.T_map_odom @ T_map_base(key[0], key[1], key[2] * q) @ T_root_optical(self.base_name, key[3] * q,
                                                                                          key[4] * q)
            rgb, depth, _ = self.renderer.render(T)
            if len(self._cache) > 2000:
                self._cache.clear()
            self._cache[key] = (rgb, depth)
        return self._cache[key]

    def _on_camera(self) -> None:
        t0 = time.perf_counter()
        stamp = self.get_clock().now().to_msg()
        rgb, depth = self._render()
        h, w = depth.shape
        header_frame = C.COLOR_OPTICAL_FRAME
        info = CameraInfo(height=h, width=w, distortion_model="plumb_bob", d=[0.0] * 5,
                          k=self.K.reshape(-1).tolist(),
                          p=[self.K[0, 0], 0.0, self.K[0, 2], 0.0, 0.0, self.K[1, 1], self.K[1, 2], 0.0, 0.0, 0.0, 1.0, 0.0])
        info.header.stamp, info.header.frame_id = stamp, header_frame
        img = Image(height=h, width=w, encoding=C.COLOR_ENCODING, step=3 * w)
        img.header = info.header
        img.data = packed("B", np.ascontiguousarray(rgb, dtype=np.uint8))
        mm = np.where(depth > 0, np.clip(np.round(depth * 1000.0), 0, 65535), 0).astype(np.uint16)
        dep = Image(height=h, width=w, encoding=C.DEPTH_ENCODING, step=2 * w)
        dep.header = info.header
        if not self.align:
            dep.header.frame_id = "camera_depth_optical_frame"
        dep.data = packed("B", mm)
        self.pub_info.publish(info)
        self.pub_rgb.publish(img)
        self.pub_depth.publish(dep)
        self.frames += 1
        self.render_s += time.perf_counter() - t0


def main(args=None) -> None:
    run_node(LocobotDouble, args)


if __name__ == "__main__":
    main()

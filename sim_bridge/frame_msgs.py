"""ROS messages of one bridge observation (images, camera info, odometry, camera pose, TF): the
simulator hands over arrays and poses, these fill the message types (stamps are set when sent)."""
from __future__ import annotations

import math

import numpy as np
from geometry_msgs.msg import PoseStamped
from nav_msgs.msg import Odometry
from rclpy.qos import qos_profile_sensor_data
from sensor_msgs.msg import CameraInfo, Image

from personal.interfaces.convert import packed
from personal.sim.backends.base import Observation
from personal.sim.bridge_logic import base_and_mount, encode_depth, encode_ids, quaternion_xyzw
from nodes.tf import transform_stamped


def image(array: np.ndarray, encoding: str, bytes_per_pixel: int, frame_id: str) -> Image:
    msg = Image()
    msg.height, msg.width = int(array.shape[0]), int(array.shape[1])
    msg.encoding = encoding
    msg.is_bigendian = 0
    msg.step = msg.width * bytes_per_pixel
    # fast path: bytes in an array.array (assigning the ndarray is ~100x slower, and so is
    # bytes when ROS_PYTHON_CHECK_FIELDS=1 checks every element)
    msg.data = packed("B", array)
    msg.header.frame_id = frame_id
    return msg


def camera_info(obs: Observation, frame_id: str) -> CameraInfo:
    """Pinhole intrinsics of the observation's K, no distortion (plumb_bob with zero D)."""
    K = np.asarray(obs.K, dtype=float)
    info = CameraInfo()
    info.header.frame_id = frame_id
    info.height, info.width = int(obs.rgb.shape[0]), int(obs.rgb.shape[1])
    info.distortion_model = "plumb_bob"
    info.d = [0.0] * 5
    info.k = K.reshape(-1).tolist()
    info.r = np.eye(3).reshape(-1).tolist()
    info.p = [K[0, 0], 0.0, K[0, 2], 0.0, 0.0, K[1, 1], K[1, 2], 0.0, 0.0, 0.0, 1.0, 0.0]
    return info


def odometry(obs: Observation, map_frame: str, base_frame: str) -> Odometry:
    """The base's pose in the map (the simulator localises perfectly), zero twist."""
    s = obs.state
    odom = Odometry()
    odom.header.frame_id = map_frame
    odom.child_frame_id = base_frame
    odom.pose.pose.position.x, odom.pose.pose.position.y, odom.pose.pose.position.z = float(s.x), float(s.y), float(s.z)
    odom.pose.pose.orientation.z, odom.pose.pose.orientation.w = math.sin(s.yaw / 2), math.cos(s.yaw / 2)
    return odom


def camera_pose(obs: Observation, map_frame: str) -> PoseStamped:
    """The optical frame's pose in the map."""
    cam = PoseStamped()
    cam.header.frame_id = map_frame
    T = np.asarray(obs.T_map_camera, dtype=float)
    cam.pose.position.x, cam.pose.position.y, cam.pose.position.z = (float(v) for v in T[:3, 3])
    o = cam.pose.orientation
    o.x, o.y, o.z, o.w = quaternion_xyzw(T[:3, :3])
    return cam


def transforms(obs: Observation, map_frame: str, base_frame: str, camera_frame: str) -> list:
    """map -> base and base -> camera, the same poses as odometry and camera_pose."""
    T_map_base, T_base_camera = base_and_mount(obs.state, obs.T_map_camera)
    return [transform_stamped(map_frame, base_frame, T_map_base, None),
            transform_stamped(base_frame, camera_frame, T_base_camera, None)]


# the camera topics, odometry and camera pose, in the order a frame is sent: key -> (type, topic)
FRAME_TOPICS = {"rgb": (Image, "camera/color/image_raw"), "depth": (Image, "camera/aligned_depth_to_color/image_raw"),
                "ids": (Image, "camera/semantic/image_raw"), "info": (CameraInfo, "camera/color/camera_info"),
                "odom": (Odometry, "odom"), "camera_pose": (PoseStamped, "camera/pose")}
BUILDERS = {  # key -> build(obs, parameters)
    "tf": lambda obs, p: transforms(obs, p["map_frame"], p["base_frame"], p["camera_frame"]),
    "rgb": lambda obs, p: image(obs.rgb, "rgb8", 3, p["camera_frame"]),
    "depth": lambda obs, p: image(*_encoded(encode_depth, obs.depth, p["depth_encoding"]), p["camera_frame"]),
    "ids": lambda obs, p: image(*_encoded(encode_ids, obs.instance_ids, p["semantic_encoding"]), p["camera_frame"]),
    "info": lambda obs, p: camera_info(obs, p["camera_frame"]),
    "odom": lambda obs, p: odometry(obs, p["map_frame"], p["base_frame"]),
    "camera_pose": lambda obs, p: camera_pose(obs, p["map_frame"]),
}


def _encoded(encode, array: np.ndarray, encoding: str) -> tuple[np.ndarray, str, int]:
    out, bytes_per_pixel = encode(array, encoding)
    return out, encoding, bytes_per_pixel


class FrameSender:
    """The latest observation's messages, each built when first sent and re-stamped on every send.
    A topic nobody subscribes to is neither built nor sent (in the explore graph: the instance ids,
    odometry and /tf, about a third of the bridge's per-frame work)."""

    def __init__(self, node, tf, p: dict) -> None:
        self.pubs = {key: node.create_publisher(t, topic, qos_profile_sensor_data) for key, (t, topic) in FRAME_TOPICS.items()}
        self.tf, self.p = tf, p
        self.obs: Observation | None = None
        self.built: dict = {}

    def new(self, obs: Observation) -> None:
        self.obs, self.built = obs, {}

    def _message(self, key: str):
        if key not in self.built:
            self.built[key] = BUILDERS[key](self.obs, self.p)
        return self.built[key]

    def send(self, stamp) -> bool:
        """Publish the frame to its subscribers with ``stamp``; False before the first observation."""
        if self.obs is None:
            return False
        if self.tf is not None and self.tf.pub.get_subscription_count():  # first: a frame's transform is there with it
            transforms_ = self._message("tf")
            for t in transforms_:
                t.header.stamp = stamp
            self.tf.send(transforms_)
        for key, pub in self.pubs.items():
            if pub.get_subscription_count():
                msg = self._message(key)
                msg.header.stamp = stamp
                pub.publish(msg)
        return True

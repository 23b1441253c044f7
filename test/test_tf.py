"""TF on the pip-only ROS: the ROS-free buffer (static + dynamic links, interpolation, chains,
clear errors) and the live chain kinematic base (the LoCoBot's real TF tree: <ns>/odom -> ... ->
pan_link -> tilt_link -> camera_<robot>_link -> camera_color_optical_frame, the tilt driven by
interbotix_xs_msgs/JointGroupCommand, its TF computed from the joint_states messages as
robot_state_publisher does) -> base driver -> mapping node (pose_source:=tf): the mapped points of a
known wall stay put while the camera tilts."""
from __future__ import annotations

import math

import numpy as np
import pytest

from personal.robot.extrinsics import T_base_optical, T_map_base, T_root_optical
from personal.tf import ConnectivityError, ExtrapolationError, FrameNotFoundError, TransformBuffer

S = 1_000_000_000


def _rot_z(a):
    return (0.0, 0.0, math.sin(a / 2), math.cos(a / 2))


def test_chain_static_and_dynamic_with_interpolation():
    buf = TransformBuffer()
    buf.set_transform("odom", "base_link", 1 * S, (0.0, 0.0, 0.0), _rot_z(0.0))
    buf.set_transform("odom", "base_link", 3 * S, (2.0, 0.0, 0.0), _rot_z(math.pi / 2))
    buf.set_transform("base_link", "camera", 0, (0.5, 0.0, 1.0), _rot_z(0.0), static=True)
    T = buf.lookup("odom", "camera", 2 * S)  # halfway: x = 1, yaw = 45 degrees
    assert T[:3, 3] == pytest.approx([1.0 + 0.5 * math.cos(math.pi / 4), 0.5 * math.sin(math.pi / 4), 1.0])
    assert math.atan2(T[1, 0], T[0, 0]) == pytest.approx(math.pi / 4)
    # inverse direction and a stamp exactly on a sample
    assert buf.lookup("camera", "odom", 3 * S) == pytest.approx(np.linalg.inv(buf.lookup("odom", "camera", 3 * S)))
    # latest common time (0): the newest dynamic sample
    assert buf.latest_common_time("odom", "camera") == 3 * S
    assert buf.lookup("odom", "camera")[:3, 3] == pytest.approx([2.0, 0.5, 1.0])
    # siblings: the chain goes up to the common parent and down again
    buf.set_transform("base_link", "laser", 0, (0.0, 0.2, 0.3), _rot_z(0.0), static=True)
    assert buf.lookup("camera", "laser", 2 * S)[:3, 3] == pytest.approx([-0.5, 0.2, -0.7])


def test_errors_name_frames_and_times():
    buf = TransformBuffer()
    buf.set_transform("odom", "base_link", 1 * S, (0, 0, 0), _rot_z(0))
    buf.set_transform("odom", "base_link", 2 * S, (1, 0, 0), _rot_z(0))
    buf.set_transform("map", "other", 0, (0, 0, 0), _rot_z(0), static=True)
    with pytest.raises(ExtrapolationError, match=r"into the future: requested 2\.500 s, but odom -> base_link is known "
                                                 r"from 1\.000 s to 2\.000 s"):
        buf.lookup("odom", "base_link", int(2.5 * S))
    with pytest.raises(ExtrapolationError, match="into the past"):
        buf.lookup("odom", "base_link", int(0.5 * S))
    with pytest.raises(FrameNotFoundError, match='frame "camera" does not exist'):
        buf.lookup("odom", "camera")
    with pytest.raises(ConnectivityError, match="not connected"):
        buf.lookup("odom", "other")
    from personal.tf import TfError

    with pytest.raises(TfError, match="zero quaternion"):
        buf.set_transform("odom", "base_link", 3 * S, (0, 0, 0), (0, 0, 0, 0))


def test_old_samples_leave_the_cache():
    buf = TransformBuffer(cache_time_s=1.0)
    for k in range(50):
        buf.set_transform("odom", "base_link", k * S // 10, (k * 0.1, 0, 0), _rot_z(0))
    assert buf.can_transform("odom", "base_link", 4 * S) and not buf.can_transform("odom", "base_link", 1 * S)


# -- live: a tilting camera over TF ----------------------------------------------------------------
WALL_X = 2.0
K = np.array([[50.0, 0.0, 32.0], [0.0, 50.0, 24.0], [0.0, 0.0, 1.0]])


def wall_depth(T_odom_cam: np.ndarray, h: int = 48, w: int = 64) -> np.ndarray:
    """Planar depth (m) of the wall x = WALL_X (0 <= z <= 2.5) seen from the optical frame pose; 0 = no hit."""
    u, v = np.meshgrid(np.arange(w) + 0.5, np.arange(h) + 0.5)
    rays = np.stack([(u - K[0, 2]) / K[0, 0], (v - K[1, 2]) / K[1, 1], np.ones_like(u)], -1)  # unit z
    R, c = T_odom_cam[:3, :3], T_odom_cam[:3, 3]
    d = rays @ R.T
    with np.errstate(divide="ignore", invalid="ignore"):
        s = (WALL_X - c[0]) / d[..., 0]  # the optical z of the hit (the rays have unit z)
    hit = c + s[..., None] * d
    ok = (s > 0.3) & (hit[..., 2] >= 0.0) & (hit[..., 2] <= 2.5)
    return np.where(ok, s, 0.0).astype(np.float32)


def points(depth: np.ndarray, T: np.ndarray) -> np.ndarray:
    v, u = np.nonzero(depth)
    z = depth[v, u]
    cam = np.stack([(u + 0.5 - K[0, 2]) / K[0, 0] * z, (v + 0.5 - K[1, 2]) / K[1, 1] * z, z, np.ones_like(z)])
    return (T @ cam)[:3].T


def test_rendered_wall_is_where_it_should_be():
    T = T_map_base(0.0, 0.0, 0.0) @ T_base_optical(0.0, 0.0, 0.88, -0.4)
    pts = points(wall_depth(T), T)
    assert len(pts) > 500 and np.abs(pts[:, 0] - WALL_X).max() < 1e-5


@pytest.mark.timeout(120)
def test_mapped_wall_stays_put_while_the_camera_tilts(ros_context):
    import array

    from rclpy.parameter import Parameter
    from rclpy.qos import qos_profile_sensor_data
    from sensor_msgs.msg import CameraInfo, Image

    from conftest import wait_for
    from nodes.base_driver_node import BaseDriver
    from nodes.kinematic_base_node import KinematicBaseNode
    from nodes.mapping_node import MappingNode
    from personal.msg import DiscreteAction

    ctx = ros_context.context
    base = ros_context.add_node(KinematicBaseNode(context=ctx, parameter_overrides=[Parameter("tilt_rate", value=0.8)]))
    driver = ros_context.add_node(BaseDriver(context=ctx))
    mapping = ros_context.add_node(MappingNode(context=ctx, parameter_overrides=[
        Parameter(k, value=v) for k, v in {"encoder": "none", "pose_source": "tf", "map_frame": "locobot/odom", "stride": 1,
                                           "min_depth": 0.3, "publish_period": 0.2}.items()]))
    cam = ros_context.make_node("fake_tilting_camera")
    depth_pub = cam.create_publisher(Image, "camera/aligned_depth_to_color/image_raw", qos_profile_sensor_data)
    info_pub = cam.create_publisher(CameraInfo, "camera/color/camera_info", qos_profile_sensor_data)
    frames = []  # (true tilt, depth, true T_odom_camera)
    truth = {}  # stamp (ns) -> true T_odom_camera
    poses = []  # the base driver's camera/pose
    from geometry_msgs.msg import PoseStamped

    cam.create_subscription(PoseStamped, "camera/pose", poses.append, 100)

    def shoot():
        """A depth frame of the wall from the camera's true pose, stamped like the TF of that pose."""
        stamp = base.last_stamp
        if stamp is None:
            return
        T = base.T_odom_camera()
        depth = wall_depth(T)
        frames.append((base.servo.tilt, depth, T))
        truth[stamp.sec * S + stamp.nanosec] = T
        info = CameraInfo(height=48, width=64, k=K.reshape(-1).tolist())
        info.header.stamp, info.header.frame_id = stamp, "camera_color_optical_frame"
        img = Image(height=48, width=64, encoding="32FC1", step=64 * 4)
        img.header = info.header
        img.data = array.array("B", depth.tobytes())
        info_pub.publish(info)
        depth_pub.publish(img)

    cam.create_timer(0.05, shoot)
    from personal.msg import ActionOutcome

    outcomes = []
    cam.create_subscription(ActionOutcome, "action_outcome", outcomes.append, 10)
    actions = cam.create_publisher(DiscreteAction, "action", 10)
    wait_for(lambda: actions.get_subscription_count() > 0 and mapping.live.frames >= 1, 20)  # then static: skipped
    # LOOK_DOWN, LOOK_UP, LOOK_UP: tilt joint 0 -> +30 (down, Interbotix +y axis) -> 0 -> -30 degrees
    for k, action in enumerate((5, 4, 4)):
        actions.publish(DiscreteAction(action=action, request_id=f"tilt{k}"))
        target = math.radians(30) * (1, 0, -1)[k]
        wait_for(lambda: frames and abs(frames[-1][0] - target) < 1e-6, 10)  # a frame at the end of the motion
        wait_for(lambda: len(outcomes) == k + 1, 10)  # the driver saw joint_states reach it
        assert outcomes[-1].status == "succeeded", outcomes[-1]
    n = len(frames)
    wait_for(lambda: len(frames) > n + 5, 10)
    wait_for(lambda: not mapping.intake.waiting(), 5)

    tilts = sorted({round(t, 3) for t, _, _ in frames})
    assert tilts[0] <= -0.52 and tilts[-1] >= 0.52 and len(tilts) >= 10  # frames taken while the camera moved
    assert mapping.live.frames >= 10 and driver.pose_source == "tf"
    cloud = mapping.live.builder.cloud()
    assert len(cloud) > 1000
    assert np.abs(cloud[:, 0] - WALL_X).max() < 0.03  # every mapped wall point on the wall, at every tilt
    assert cloud[:, 2].max() > 1.5 and cloud[:, 2].min() < 0.5  # looking up and down saw different parts of it

    # the same frames with a fixed mount that ignores the tilt (the old fallback) smear the wall
    fixed = T_map_base(0.0, 0.0, 0.0) @ T_root_optical("create3", 0.0, 0.0)
    tilted = [points(d, fixed) for t, d, _ in frames if abs(t) > 0.3]
    assert np.abs(np.concatenate(tilted)[:, 0] - WALL_X).max() > 0.5

    # the base driver's camera/pose follows the moving joint through TF (the commanded tilt leads it)
    from personal.mapping.ros_io import pose_to_matrix

    matched = [(truth[p.header.stamp.sec * S + p.header.stamp.nanosec], pose_to_matrix(p.pose)) for p in poses
               if p.header.stamp.sec * S + p.header.stamp.nanosec in truth]
    moving = [(a, b) for a, b in matched if 0.05 < abs(math.asin(max(-1.0, min(1.0, -a[2, 2])))) < 0.47]
    assert len(matched) >= 10 and moving
    assert max(np.abs(a - b).max() for a, b in matched) < 1e-6

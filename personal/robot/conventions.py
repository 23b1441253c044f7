"""Every convention of the real LoCoBot driver stack, in one place (ROS-free).

The ``locobot`` graph, its base driver, the faithful double of the real stack
(``sim_bridge/locobot_double.py``), ``personal robot check`` and the contract tests all take
topic names, message types, frame names, QoS, joint limits and mount geometry from here, so the
next upstream change is one diff. Each value names the upstream file it was read from (read,
not copied; branch ``humble`` of the Interbotix repositories, ``ros2-master`` of realsense-ros,
``devel`` of kobuki_ros).

Names without a leading ``/`` are relative to the robot namespace ``ns`` (``locobot``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

ROBOT_MODEL = "locobot_wx250s"
ROBOT_NAME = "locobot"  # xslocobot_control.launch.py: robot_name default 'locobot' (= the namespace)

# --- Interbotix X-Series SDK (Interbotix/interbotix_ros_core) ---------------------------------
# interbotix_ros_xseries/interbotix_xs_sdk/src/xs_sdk_obj.cpp (robot_init_subscribers): the
# xs_sdk node, in namespace <robot_name>, subscribes these with depth 10 (reliable).
JOINT_GROUP_TOPIC = "commands/joint_group"  # interbotix_xs_msgs/msg/JointGroupCommand
JOINT_SINGLE_TOPIC = "commands/joint_single"  # interbotix_xs_msgs/msg/JointSingleCommand
JOINT_TRAJECTORY_TOPIC = "commands/joint_trajectory"  # (not used here)
JOINT_GROUP_TYPE = "interbotix_xs_msgs/msg/JointGroupCommand"  # msg/JointGroupCommand.msg: string name, float32[] cmd
JOINT_SINGLE_TYPE = "interbotix_xs_msgs/msg/JointSingleCommand"  # msg/JointSingleCommand.msg: string name, float32 cmd
COMMAND_QOS_DEPTH = 10

# --- Interbotix LoCoBot (Interbotix/interbotix_ros_rovers, interbotix_ros_xslocobots) -----------
# interbotix_xslocobot_control/config/locobot_wx250s.yaml: groups.camera = [pan, tilt]; the xs_sdk
# publishes dynamixel/joint_states, which joint_state_publisher merges (source_list
# [dynamixel/joint_states, mobile_base/joint_states], xslocobot_control.launch.py) into
# <ns>/joint_states, the input of robot_state_publisher (TF of the pan and tilt links).
CAMERA_GROUP = "camera"
CAMERA_GROUP_JOINTS = ("pan", "tilt")
JOINT_STATES_TOPIC = "joint_states"  # sensor_msgs/msg/JointState
DYNAMIXEL_JOINT_STATES_TOPIC = "dynamixel/joint_states"
# interbotix_xslocobot_descriptions/urdf/pan_and_tilt.urdf.xacro: joint "pan" axis 0 0 1, limits
# [-pi/2, pi/2]; joint "tilt" axis 0 1 0 (a positive tilt pitches the camera DOWN, REP 103),
# limits [-pi/2, radians(75)]; velocity limit pi rad/s for both.
PAN_AXIS = (0.0, 0.0, 1.0)
TILT_AXIS = (0.0, 1.0, 0.0)
PAN_LIMITS = (-math.pi / 2, math.pi / 2)
TILT_LIMITS = (-math.pi / 2, math.radians(75.0))
PAN_TILT_MAX_VELOCITY = math.pi  # rad/s, URDF <limit velocity>
LOOK_UP_SIGN = -1.0  # LOOK_UP lowers the tilt joint position (positive = down)

# URDF joint origins (xyz, m; every rpy is 0) of the camera chain, per base. locobot.urdf.xacro:
# camera_tower (base_link -> camera_tower_link) and pan (camera_tower_link -> pan_link) for the
# "large" tower that the wx250s gets (camera_tower_size = large for arm mobile_wx250s);
# pan_and_tilt.urdf.xacro: tilt (pan_link -> tilt_link) and camera (tilt_link -> camera_<robot>_link).
TILT_ORIGIN = (0.025034, 0.0, 0.019)
CAMERA_ORIGIN = (0.05318, 0.0175, 0.000009)


@dataclass(frozen=True)
class BaseProfile:
    """One mobile base as the Interbotix LoCoBot stack runs it."""

    name: str
    odom_topic: str  # nav_msgs/Odometry, relative to ns
    cmd_vel_topic: str  # geometry_msgs/Twist, relative to ns
    odom_reliable: bool  # the publisher's reliability (a best-effort subscriber accepts either)
    odom_header_frame: str  # header.frame_id of the odometry messages (may lack the ns prefix)
    root_link: str  # the URDF's root link under <ns>/odom (without the ns prefix)
    root_to_base_link: tuple  # xyz of root_link -> base_link (identity when root is base_link)
    camera_tower_origin: tuple  # base_link -> camera_tower_link
    pan_origin: tuple  # camera_tower_link -> pan_link
    odom_rate_hz: float
    source: str


BASES = {
    # iRobot Create 3 (iroboteducation.github.io/create3_docs/api/ros2: odom nav_msgs/Odometry, frames
    # odom -> base_link, published best effort (sensor QoS) at 20 Hz, its own tf). Interbotix runs it in
    # namespace <ns>/mobile_base (xslocobot_nav2_bringup.launch.py: cmd_vel <ns>/mobile_base/cmd_vel) and
    # rebroadcasts its <ns>/mobile_base/tf onto /tf with the prefix '<ns>/' (config/tf_rebroadcaster.yaml,
    # xslocobot_control.launch.py topic_from /<ns>/mobile_base/tf). The odometry header says "odom"
    # (unprefixed): only TF carries "<ns>/odom". URDF: create3_version/locobot_create3.urdf.xacro has
    # <ns>/base_link as root; locobot.urdf.xacro, create3 + large tower: camera_tower -0.048271 0 0.10087,
    # pan 0.061228 0 0.462.
    "create3": BaseProfile("create3", "mobile_base/odom", "mobile_base/cmd_vel", False, "odom", "base_link",
                           (0.0, 0.0, 0.0), (-0.048271, 0.0, 0.10087), (0.061228, 0.0, 0.462), 20.0,
                           "iRobot Create 3 create3_docs api/ros2; interbotix_xslocobot_control tf_rebroadcaster.yaml"),
    # Kobuki (kobuki-base/kobuki_ros, kobuki_node/src/kobuki_ros.cpp: publishes "odom" (depth 50, reliable)
    # and subscribes "commands/velocity" in its namespace; odom_frame / base_frame parameters, set by
    # interbotix_xslocobot_control/config/kobuki_node_params.yaml to <ns>/odom and <ns>/base_footprint; it
    # broadcasts odom -> base_footprint on /tf). URDF kobuki_version/locobot_kobuki.urdf.xacro: root
    # <ns>/base_footprint, base_joint -> <ns>/base_link at 0 0 0.0102; locobot.urdf.xacro, kobuki + large
    # tower: camera_tower -0.023997 -0.000044 0.08823, pan 0.047228 0 0.44425.
    "kobuki": BaseProfile("kobuki", "odom", "commands/velocity", True, "{ns}/odom", "base_footprint",
                          (0.0, 0.0, 0.0102), (-0.023997, -0.000044, 0.08823), (0.047228, 0.0, 0.44425), 50.0,
                          "kobuki-base/kobuki_ros kobuki_ros.cpp; interbotix_xslocobot_control kobuki_node_params.yaml"),
}

# --- RealSense (IntelRealSense/realsense-ros, realsense2_camera) --------------------------------
# include/base_realsense_node.h: frame ids are <camera_name>_<stream>_frame and
# <camera_name>_<stream>_optical_frame; src/parameters.cpp: the base frame is
# <camera_name>_<base_frame_id> (base_frame_id default "link", constants.h DEFAULT_BASE_FRAME_ID).
# Interbotix sets base_frame_id to <robot_name>_link (interbotix_xslocobot_control/config/rs_camera.yaml),
# so the camera's base frame is the URDF's camera_<robot_name>_link and the two trees join.
# src/base_realsense_node.cpp: Z16 depth -> 16UC1 (millimetres), RGB8 colour -> rgb8.
# Image topics are published with the "DEFAULT" QoS (constants.h DEFAULT_QOS: reliable, volatile, depth 10).
REALSENSE_CAMERA_NAME = "camera"
COLOR_OPTICAL_FRAME = "camera_color_optical_frame"
COLOR_FRAME = "camera_color_frame"
DEPTH_ENCODING = "16UC1"
COLOR_ENCODING = "rgb8"
IMAGE_RELIABLE = True
# realsense2_description/urdf/_d435.urdf.xacro: d435_cam_depth_to_color_offset 0.015 (camera_link ->
# camera_color_frame, y); the driver publishes the calibrated value of each unit (static TF).
COLOR_FRAME_OFFSET = (0.0, 0.015, 0.0)
# camera_color_frame -> camera_color_optical_frame: rpy (-pi/2, 0, -pi/2), quaternion (x, y, z, w)
OPTICAL_ROTATION_XYZW = (-0.5, 0.5, -0.5, 0.5)
CAMERA_TOPICS = ("color/image_raw", "aligned_depth_to_color/image_raw", "color/camera_info")
REALSENSE_NAMING_CHANGE = (4, 55)  # 4.55.1 CHANGELOG: "Apply camera name in topics" (PR #2857), "~/" topics


@dataclass(frozen=True)
class CameraLayout:
    """Where a RealSense driver started one way puts its topics (prefix relative to ns, or absolute)."""

    name: str
    prefix: str  # topics are <prefix>/color/image_raw ... ; a leading '/' = not inside the namespace
    base_frame: str  # the camera driver's root TF frame
    joined: bool  # whether that root frame is a URDF link of the robot (the camera tree joins the robot's)
    align_flag: str  # the launch argument that turns aligned depth on
    command: str  # the launch command that gives this layout
    source: str


def camera_layout(camera: str, realsense: str = "4.55", ns: str = ROBOT_NAME) -> CameraLayout:
    """The RealSense topic layout of ``camera`` (interbotix | rs_launch) with realsense-ros ``realsense``."""
    new = _version(realsense) >= REALSENSE_NAMING_CHANGE
    if camera == "interbotix":
        # xslocobot_control.launch.py rs_camera_node: namespace <ns>/camera, name camera, parameters
        # from config/rs_camera.yaml (align_depth.enable: $(var rs_camera_align_depth)). From 4.55 the
        # topics are private ("~/color/image_raw", rs_node_setup.cpp): <ns>/camera/camera/...; before,
        # relative to the namespace: <ns>/camera/...
        return CameraLayout("interbotix", "camera/camera" if new else "camera", f"camera_{ns}_link", True,
                            "rs_camera_align_depth:=true",
                            f"ros2 launch interbotix_xslocobot_control xslocobot_control.launch.py robot_model:={ROBOT_MODEL} "
                            "use_camera:=true rs_camera_align_depth:=true",
                            "interbotix_xslocobot_control/launch/xslocobot_control.launch.py, config/rs_camera.yaml")
    if camera == "rs_launch":
        # realsense2_camera/launch/rs_launch.py: from 4.55 namespace:=camera_namespace, name:=camera_name
        # with private topics -> /<camera_namespace>/<camera_name>/...; camera_namespace:=<ns> gives
        # <ns>/camera/... . Before 4.55 (4.54.1 rs_launch.py) namespace and name are both camera_name and
        # camera_namespace does not exist: the topics are /camera/... whatever the launch says. Its base
        # frame is camera_link, not part of the robot's URDF.
        prefix = "camera" if new else "/camera"
        cmd = ("ros2 launch realsense2_camera rs_launch.py " + (f"camera_namespace:={ns} " if new else "")
               + "camera_name:=camera align_depth.enable:=true")
        return CameraLayout("rs_launch", prefix, "camera_link", False, "align_depth.enable:=true", cmd,
                            "realsense2_camera/launch/rs_launch.py (4.54.1 and 4.55.1+)")
    raise ValueError(f"camera profile {camera!r} unknown (interbotix | rs_launch)")


def _version(text: str) -> tuple[int, int]:
    try:
        major, minor = (int(v) for v in str(text).split(".")[:2])
    except ValueError:
        raise ValueError(f"realsense-ros version {text!r}: expected <major>.<minor>, e.g. 4.55") from None
    return major, minor


CAMERAS = ("interbotix", "rs_launch")
REALSENSE_VERSIONS = ("4.51", "4.54", "4.55", "4.56")


# --- the TF chain the graph needs -----------------------------------------------------------
def frame(ns: str, link: str) -> str:
    """An Interbotix URDF link under the robot namespace (robot_state_publisher frame_prefix-free
    names: the xacro itself writes ${robot_name}/<link>)."""
    return f"{ns}/{link}" if ns else link


def odom_frame(ns: str = ROBOT_NAME) -> str:
    """The odometry frame in TF: <ns>/odom on both bases (tf_rebroadcaster.yaml prefix, kobuki_node_params.yaml)."""
    return frame(ns, "odom")


def camera_link(ns: str = ROBOT_NAME) -> str:
    """pan_and_tilt.urdf.xacro: the camera's link is camera_${robot_name}_link (no namespace prefix)."""
    return f"camera_{ns}_link"


def camera_chain(base: str, ns: str = ROBOT_NAME) -> list[tuple[str, str, str]]:
    """(parent, child, who publishes it) from <ns>/odom down to camera_color_optical_frame."""
    b = BASES[base]
    chain = [(odom_frame(ns), frame(ns, b.root_link), "the base driver (odometry TF)" if base == "kobuki"
              else "the Create 3, rebroadcast by Interbotix's tf_rebroadcaster (use_base_odom_tf:=true)")]
    if b.root_link != "base_link":
        chain.append((frame(ns, b.root_link), frame(ns, "base_link"), "robot_state_publisher (URDF)"))
    chain += [(frame(ns, "base_link"), frame(ns, "camera_tower_link"), "robot_state_publisher (URDF)"),
              (frame(ns, "camera_tower_link"), frame(ns, "pan_link"), "robot_state_publisher (joint_states: pan)"),
              (frame(ns, "pan_link"), frame(ns, "tilt_link"), "robot_state_publisher (joint_states: tilt)"),
              (frame(ns, "tilt_link"), camera_link(ns), "robot_state_publisher (URDF)"),
              (camera_link(ns), COLOR_FRAME, "the RealSense driver (publish_tf)"),
              (COLOR_FRAME, COLOR_OPTICAL_FRAME, "the RealSense driver (publish_tf)")]
    return chain


def urdf_camera_links(base: str) -> list[tuple[str, tuple, str | None]]:
    """(child link, joint origin xyz, moving joint or None) along base_link -> camera_color_optical_frame."""
    b = BASES[base]
    return [("camera_tower_link", b.camera_tower_origin, None), ("pan_link", b.pan_origin, "pan"),
            ("tilt_link", TILT_ORIGIN, "tilt"), ("camera_link", CAMERA_ORIGIN, None),
            (COLOR_FRAME, COLOR_FRAME_OFFSET, None)]


def clamp_pan_tilt(pan: float, tilt: float) -> tuple[float, float]:
    return (min(max(pan, PAN_LIMITS[0]), PAN_LIMITS[1]), min(max(tilt, TILT_LIMITS[0]), TILT_LIMITS[1]))

"""Kinematic base (test double for the LoCoBot's base and pan/tilt): integrates ``cmd_vel`` into
``odom`` and moves the pan/tilt servos on Interbotix commands, publishing odometry, joint states
and TF as the real drivers do (names, frames and QoS from ``personal/robot/conventions.py``).

Parameters: ``base`` (create3 | kobuki: the odometry header / child frames and QoS of that base),
``robot_name`` ("" = this node's namespace, or ``locobot`` at the root), ``rate`` (Hz), ``latency``
(s), ``noise`` (relative velocity std), ``wall_x`` (metres; NaN = no wall) that blocks forward motion,
``odom_silent_after`` (s after start when odometry stops, to test stale-odometry handling; negative
= never), ``tilt_rate`` (rad/s of both servos), ``publish_tf``, ``publish_camera_tf`` (also the
RealSense driver's static frames camera_<robot>_link -> camera_color_frame -> optical).
Tests inject odometry faults mid-run with ``inject_odom_fault("silent" | "nan" | None)``.

Topics: sub ``cmd_vel`` (Twist), ``commands/joint_group`` (interbotix_xs_msgs/JointGroupCommand,
group ``camera`` = [pan, tilt]), ``commands/joint_single`` (JointSingleCommand, ``pan`` or ``tilt``);
pub ``odom`` (the base's frames: Create 3 ``odom`` -> ``base_link`` best effort, Kobuki
``<ns>/odom`` -> ``<ns>/base_footprint`` reliable), ``joint_states`` (pan, tilt), and with
``publish_tf`` ``/tf`` (``<ns>/odom`` -> root link stamped like the odometry; pan_link and
tilt_link computed from the ``joint_states`` messages as received, at their stamps — what
robot_state_publisher does on the robot) and ``/tf_static`` (the URDF's fixed joints; with
``publish_camera_tf`` the RealSense frames).
"""
from __future__ import annotations

import math
import time

from geometry_msgs.msg import Twist
from interbotix_xs_msgs.msg import JointGroupCommand, JointSingleCommand
from nav_msgs.msg import Odometry
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState

from personal.robot import conventions as C
from personal.robot.extrinsics import T_map_base, T_root_optical, urdf_joint_transforms
from personal.robot.kinematic_base import KinematicBase, PanTiltServo
from nodes.lifecycle import run_node, subscribe
from nodes.tf import TfBroadcaster, transform_stamped

CAMERA_FRAME = C.COLOR_OPTICAL_FRAME


def robot_name_of(node: Node, given: str) -> str:
    """The Interbotix robot_name: as given, else the node's namespace (as the graph's ``ns``), else ``locobot``."""
    return given or node.get_namespace().strip("/") or C.ROBOT_NAME


def tf_name(robot: str, link: str) -> str:
    """A link of the URDF chain as TF names it (conventions: <robot>/<link>, camera_<robot>_link, RealSense's)."""
    if link == "camera_link":
        return C.camera_link(robot)
    if link in (C.COLOR_FRAME, C.COLOR_OPTICAL_FRAME):
        return link
    return C.frame(robot, link)


class KinematicBaseNode(Node):
    def __init__(self, node_name: str = "kinematic_base", camera_tf: bool = True, **kwargs) -> None:
        super().__init__(node_name, **kwargs)
        self.declare_parameter("base", "create3")
        self.declare_parameter("robot_name", "")
        self.declare_parameter("rate", 50.0)
        self.declare_parameter("latency", 0.0)
        self.declare_parameter("noise", 0.0)
        self.declare_parameter("wall_x", float("nan"))
        self.declare_parameter("odom_silent_after", -1.0)
        self.declare_parameter("tilt_rate", 1.0)
        self.declare_parameter("publish_tf", True)
        self.declare_parameter("publish_camera_tf", camera_tf)
        g = lambda n: float(self.get_parameter(n).value)  # noqa: E731
        self.base_name = str(self.get_parameter("base").value)
        if self.base_name not in C.BASES:
            raise ValueError(f"parameter 'base': {self.base_name!r} unknown ({' | '.join(C.BASES)})")
        self.profile = C.BASES[self.base_name]
        self.robot = robot_name_of(self, str(self.get_parameter("robot_name").value))
        wall = g("wall_x")
        self.base = KinematicBase(latency=g("latency"), noise=g("noise"), wall_x=None if math.isnan(wall) else wall)
        self.servo = PanTiltServo(rate=g("tilt_rate"))
        self.silent_after = g("odom_silent_after")
        self.odom_fault: str | None = None  # "silent" | "nan": see inject_odom_fault
        self.t0 = self.last = time.monotonic()
        self.last_stamp = None  # stamp of the newest odometry / TF (the state they describe is the current one)
        qos = QoSProfile(depth=50 if self.profile.odom_reliable else 10, reliability=ReliabilityPolicy.RELIABLE
                         if self.profile.odom_reliable else ReliabilityPolicy.BEST_EFFORT)
        odom_topic, cmd_topic = self.base_topics()
        self.pub = self.create_publisher(Odometry, odom_topic, qos)
        self.joints_pub = self.create_publisher(JointState, C.JOINT_STATES_TOPIC, 10)
        self.tf = self.tf_static = None
        if self.get_parameter("publish_tf").value:
            self.tf = TfBroadcaster(self)
            self.tf_static = TfBroadcaster(self, static=True)
            self.tf_static.send(self._static_transforms(bool(self.get_parameter("publish_camera_tf").value)))
        subscribe(self, Twist, cmd_topic, self._on_cmd, 10)
        if self.tf is not None:  # robot_state_publisher's part: joint_states (as received) -> TF
            subscribe(self, JointState, C.JOINT_STATES_TOPIC, self._state_publisher, 10)
        subscribe(self, JointGroupCommand, C.JOINT_GROUP_TOPIC, self._on_group, C.COMMAND_QOS_DEPTH)
        subscribe(self, JointSingleCommand, C.JOINT_SINGLE_TOPIC, self._on_single, C.COMMAND_QOS_DEPTH)
        self.create_timer(1.0 / g("rate"), self._on_tick)

    def base_topics(self) -> tuple[str, str]:
        """(odometry, velocity) topic names: generic here (tests remap them), the base's own in the double."""
        return "odom", "cmd_vel"

    def _static_transforms(self, camera: bool):
        stamp = self.get_clock().now().to_msg()
        out = []
        for parent, child, T in urdf_joint_transforms(self.base_name):
            if child in ("pan_link", "tilt_link"):
                continue  # moving joints: /tf
            if child in (C.COLOR_FRAME, C.COLOR_OPTICAL_FRAME) and not camera:
                continue  # the RealSense driver's frames
            out.append(transform_stamped(tf_name(self.robot, parent), tf_name(self.robot, child), T, stamp))
        return out

    def _state_publisher(self, msg: JointState) -> None:
        names = list(msg.name)
        if not all(j in names for j in C.CAMERA_GROUP_JOINTS):
            return
        pan, tilt = (float(msg.position[names.index(j)]) for j in C.CAMERA_GROUP_JOINTS)
        self.tf.send([transform_stamped(tf_name(self.robot, parent), tf_name(self.robot, child), T, msg.header.stamp)
                      for parent, child, T in urdf_joint_transforms(self.base_name, pan, tilt)
                      if child in ("pan_link", "tilt_link")])

    def inject_odom_fault(self, kind: str | None) -> None:
        """From now on publish no odometry ("silent"), NaN poses ("nan"), or good ones again (None)."""
        if kind not in (None, "silent", "nan"):
            raise ValueError(f"unknown odometry fault {kind!r} (silent | nan | None)")
        self.odom_fault = kind

    def _on_cmd(self, msg: Twist) -> None:
        if not (math.isfinite(msg.linear.x) and math.isfinite(msg.angular.z)):
            raise ValueError(f"non-finite velocity ({msg.linear.x}, {msg.angular.z}) refused")
        self.base.command(msg.linear.x, msg.angular.z, time.monotonic())

    def _on_group(self, msg: JointGroupCommand) -> None:
        if msg.name != C.CAMERA_GROUP:
            raise ValueError(f"joint group {msg.name!r} is not driven by this double (only {C.CAMERA_GROUP!r})")
        if len(msg.cmd) != len(C.CAMERA_GROUP_JOINTS):
            raise ValueError(f"group {msg.name!r} takes {len(C.CAMERA_GROUP_JOINTS)} commands "
                             f"{list(C.CAMERA_GROUP_JOINTS)}, got {len(msg.cmd)}")
        self.servo.command(float(msg.cmd[0]), float(msg.cmd[1]))

    def _on_single(self, msg: JointSingleCommand) -> None:
        if msg.name not in C.CAMERA_GROUP_JOINTS:
            raise ValueError(f"joint {msg.name!r} is not driven by this double ({list(C.CAMERA_GROUP_JOINTS)})")
        pan, tilt = self.servo.target
        self.servo.command(float(msg.cmd) if msg.name == "pan" else pan, float(msg.cmd) if msg.name == "tilt" else tilt)

    def T_odom_camera(self):
        """Ground truth: the optical frame in <ns>/odom now (for tests)."""
        return T_map_base(self.base.x, self.base.y, self.base.yaw) @ T_root_optical(self.base_name, self.servo.pan,
                                                                                     self.servo.tilt)

    def _odometry(self, stamp) -> Odometry:
        odom = Odometry()
        odom.header.stamp = stamp
        odom.header.frame_id = self.profile.odom_header_frame.format(ns=self.robot)
        odom.child_frame_id = (self.profile.root_link if self.base_name == "create3"
                               else C.frame(self.robot, self.profile.root_link))
        odom.pose.pose.position.x, odom.pose.pose.position.y = self.base.x, self.base.y
        odom.pose.pose.orientation.z = math.sin(self.base.yaw / 2)
        odom.pose.pose.orientation.w = math.cos(self.base.yaw / 2)
        if self.odom_fault == "nan":
            odom.pose.pose.position.x = odom.pose.pose.position.y = math.nan
        return odom

    def _on_tick(self) -> None:
        now = time.monotonic()
        self.base.step(now, now - self.last)
        pan, tilt = self.servo.step(now - self.last)
        self.last = now
        stamp = self.get_clock().now().to_msg()
        js = JointState(name=list(C.CAMERA_GROUP_JOINTS), position=[float(pan), float(tilt)])
        js.header.stamp = stamp
        self.joints_pub.publish(js)  # the pan / tilt TF follows from it (_state_publisher)
        if 0 <= self.silent_after < now - self.t0 or self.odom_fault == "silent":
            return
        self.last_stamp = stamp
        odom = self._odometry(stamp)
        if self.tf is not None:  # TF first: whoever reads the odometry can look the camera up at its stamp
            T = T_map_base(self.base.x, self.base.y, self.base.yaw)
            self.tf.send([transform_stamped(C.odom_frame(self.robot), C.frame(self.robot, self.profile.root_link), T,
                                            stamp)])
        self.pub.publish(odom)


def main(args=None) -> None:
    run_node(KinematicBaseNode, args)


if __name__ == "__main__":
    main()

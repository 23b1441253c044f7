"""Kinematic base (test double for the LoCoBot base): integrates ``cmd_vel`` into ``odom`` and moves a
camera tilt servo, publishing both as TF the way a robot's drivers do.

Parameters: ``rate`` (Hz), ``latency`` (s), ``noise`` (relative velocity std), ``wall_x``
(metres; NaN = no wall) that blocks forward motion, ``odom_silent_after`` (s after start
when odometry stops, to test stale-odometry handling; negative = never), ``tilt_rate``
(rad/s of the servo), ``camera_xyz`` (tilt joint in base_link), ``publish_tf``. Tests inject
odometry faults mid-run with ``inject_odom_fault("silent" | "nan" | None)``.

Topics: sub ``cmd_vel`` (Twist), ``camera_tilt`` (std_msgs/Float64, radians, positive up: the
servo command); pub ``odom`` (base_link in odom) and, with ``publish_tf``, ``/tf``
(odom -> base_link, base_link -> camera_tilt_link rotated by the current tilt, both stamped like
the odometry) and ``/tf_static`` (camera_tilt_link -> camera_color_optical_frame).
"""
from __future__ import annotations

import math
import time

from geometry_msgs.msg import Twist
from nav_msgs.msg import Odometry
from rclpy.node import Node
from std_msgs.msg import Float64

from personal.robot.extrinsics import R_LINK_OPTICAL, T_base_optical, T_map_base
from personal.robot.kinematic_base import KinematicBase, TiltServo
from nodes.lifecycle import run_node, subscribe
from nodes.tf import TfBroadcaster, transform_stamped

TILT_FRAME = "camera_tilt_link"
CAMERA_FRAME = "camera_color_optical_frame"


class KinematicBaseNode(Node):
    def __init__(self, **kwargs) -> None:
        super().__init__("kinematic_base", **kwargs)
        self.declare_parameter("rate", 50.0)
        self.declare_parameter("latency", 0.0)
        self.declare_parameter("noise", 0.0)
        self.declare_parameter("wall_x", float("nan"))
        self.declare_parameter("odom_silent_after", -1.0)
        self.declare_parameter("tilt_rate", 1.0)
        self.declare_parameter("camera_xyz", [0.0, 0.0, 0.88])
        self.declare_parameter("publish_tf", True)
        g = lambda n: float(self.get_parameter(n).value)  # noqa: E731
        wall = g("wall_x")
        self.base = KinematicBase(latency=g("latency"), noise=g("noise"), wall_x=None if math.isnan(wall) else wall)
        self.servo = TiltServo(rate=g("tilt_rate"))
        self.camera_xyz = [float(v) for v in self.get_parameter("camera_xyz").value]
        self.silent_after = g("odom_silent_after")
        self.odom_fault: str | None = None  # "silent" | "nan": see inject_odom_fault
        self.t0 = self.last = time.monotonic()
        self.last_stamp = None  # stamp of the newest odometry / TF (the state they describe is the current one)
        self.pub = self.create_publisher(Odometry, "odom", 20)
        self.tf = self.tf_static = None
        if self.get_parameter("publish_tf").value:
            self.tf = TfBroadcaster(self)
            self.tf_static = TfBroadcaster(self, static=True)
            import numpy as np

            T = np.eye(4)
            T[:3, :3] = R_LINK_OPTICAL
            self.tf_static.send([transform_stamped(TILT_FRAME, CAMERA_FRAME, T, self.get_clock().now().to_msg())])
        subscribe(self, Twist, "cmd_vel", self._on_cmd, 10)
        subscribe(self, Float64, "camera_tilt", self._on_tilt, 10)
        self.create_timer(1.0 / g("rate"), self._on_tick)

    def inject_odom_fault(self, kind: str | None) -> None:
        """From now on publish no odometry ("silent"), NaN poses ("nan"), or good ones again (None)."""
        if kind not in (None, "silent", "nan"):
            raise ValueError(f"unknown odometry fault {kind!r} (silent | nan | None)")
        self.odom_fault = kind

    def _on_cmd(self, msg: Twist) -> None:
        if not (math.isfinite(msg.linear.x) and math.isfinite(msg.angular.z)):
            raise ValueError(f"non-finite velocity ({msg.linear.x}, {msg.angular.z}) refused")
        self.base.command(msg.linear.x, msg.angular.z, time.monotonic())

    def _on_tilt(self, msg: Float64) -> None:
        self.servo.command(float(msg.data))

    def T_odom_camera(self):
        """Ground truth: the optical frame in odom now (for tests)."""
        return T_map_base(self.base.x, self.base.y, self.base.yaw) @ T_base_optical(*self.camera_xyz, self.servo.tilt)

    def _on_tick(self) -> None:
        now = time.monotonic()
        self.base.step(now, now - self.last)
        self.servo.step(now - self.last)
        self.last = now
        if 0 <= self.silent_after < now - self.t0 or self.odom_fault == "silent":
            return
        stamp = self.last_stamp = self.get_clock().now().to_msg()
        odom = Odometry()
        odom.header.stamp = stamp
        odom.header.frame_id, odom.child_frame_id = "odom", "base_link"
        odom.pose.pose.position.x, odom.pose.pose.position.y = self.base.x, self.base.y
        odom.pose.pose.orientation.z = math.sin(self.base.yaw / 2)
        odom.pose.pose.orientation.w = math.cos(self.base.yaw / 2)
        if self.odom_fault == "nan":
            odom.pose.pose.position.x = odom.pose.pose.position.y = math.nan
        if self.tf is not None:  # TF first: whoever reads the odometry can look the camera up at its stamp
            T_tilt = T_base_optical(*self.camera_xyz, self.servo.tilt) @ _inv_link_optical()
            self.tf.send([transform_stamped("odom", "base_link", T_map_base(self.base.x, self.base.y, self.base.yaw), stamp),
                          transform_stamped("base_link", TILT_FRAME, T_tilt, stamp)])
        self.pub.publish(odom)


def _inv_link_optical():
    import numpy as np

    T = np.eye(4)
    T[:3, :3] = R_LINK_OPTICAL.T
    return T


def main(args=None) -> None:
    run_node(KinematicBaseNode, args)


if __name__ == "__main__":
    main()

"""Kinematic base (test double for the LoCoBot base): integrates ``cmd_vel`` into ``odom``.

Parameters: ``rate`` (Hz), ``latency`` (s), ``noise`` (relative velocity std), ``wall_x``
(metres; NaN = no wall) that blocks forward motion, ``odom_silent_after`` (s after start
when odometry stops, to test stale-odometry handling; negative = never).
"""
from __future__ import annotations

import math
import time

from geometry_msgs.msg import Twist
from nav_msgs.msg import Odometry
from rclpy.node import Node

from personal.robot.kinematic_base import KinematicBase
from nodes.lifecycle import run_node


class KinematicBaseNode(Node):
    def __init__(self, **kwargs) -> None:
        super().__init__("kinematic_base", **kwargs)
        self.declare_parameter("rate", 50.0)
        self.declare_parameter("latency", 0.0)
        self.declare_parameter("noise", 0.0)
        self.declare_parameter("wall_x", float("nan"))
        self.declare_parameter("odom_silent_after", -1.0)
        g = lambda n: float(self.get_parameter(n).value)  # noqa: E731
        wall = g("wall_x")
        self.base = KinematicBase(latency=g("latency"), noise=g("noise"), wall_x=None if math.isnan(wall) else wall)
        self.silent_after = g("odom_silent_after")
        self.t0 = self.last = time.monotonic()
        self.pub = self.create_publisher(Odometry, "odom", 20)
        self.create_subscription(Twist, "cmd_vel", self._on_cmd, 10)
        self.create_timer(1.0 / g("rate"), self._on_tick)

    def _on_cmd(self, msg: Twist) -> None:
        self.base.command(msg.linear.x, msg.angular.z, time.monotonic())

    def _on_tick(self) -> None:
        now = time.monotonic()
        self.base.step(now, now - self.last)
        self.last = now
        if 0 <= self.silent_after < now - self.t0:
            return
        odom = Odometry()
        odom.header.stamp = self.get_clock().now().to_msg()
        odom.header.frame_id, odom.child_frame_id = "odom", "base_link"
        odom.pose.pose.position.x, odom.pose.pose.position.y = self.base.x, self.base.y
        odom.pose.pose.orientation.z = math.sin(self.base.yaw / 2)
        odom.pose.pose.orientation.w = math.cos(self.base.yaw / 2)
        self.pub.publish(odom)


def main(args=None) -> None:
    run_node(KinematicBaseNode, args)


if __name__ == "__main__":
    main()

"""Base driver: executes discrete actions closed-loop on odometry (real LoCoBot or kinematic base).

Subscribes ``action`` (DiscreteAction JSON), ``odom`` (nav_msgs/Odometry), ``estop``
(std_msgs/Bool). Publishes ``cmd_vel`` (while an action runs, then one zero), ``action_outcome``
(ActionOutcome JSON: succeeded / blocked / timed_out / stale_odom / estop / rejected),
``camera_tilt`` (std_msgs/Float64, radians, for the pan-tilt servo), ``camera/pose``
(PoseStamped of the optical frame in the odometry frame) and, after every outcome,
``agent_state`` (AgentState JSON, reliable + transient local like the sim bridge's: odometry
position and yaw, pitch = camera tilt, collided = the move was blocked, step = actions
executed since start or since the last STOP, stopped after STOP, the action's request_id),
so the navigation node drives this base as it drives the bridge. Camera extrinsics come from the
``camera_*`` parameters, or from TF when ``tf2_ros`` is importable and ``use_tf`` is true.
"""
from __future__ import annotations

import math
import time

from geometry_msgs.msg import PoseStamped, Twist
from nav_msgs.msg import Odometry
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import Bool, Float64, String

from personal.interfaces.codec import CodecError, decode, encode
from personal.robot.base_controller import ACTION_NAMES, BaseController, Limits, Outcome, Pose2D
from personal.robot.extrinsics import T_base_optical, T_map_base, quaternion_from_matrix
from nodes.lifecycle import run_node

STATE_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
LIMIT_PARAMS = ("max_linear", "max_angular", "linear_accel", "angular_accel", "linear_tolerance",
                "action_timeout", "odom_timeout", "blocked_window", "forward_m")


class BaseDriver(Node):
    def __init__(self, **kwargs) -> None:
        super().__init__("base_driver", **kwargs)
        defaults = Limits()
        for name in LIMIT_PARAMS:
            self.declare_parameter(name, getattr(defaults, name))
        self.declare_parameter("turn_deg", 30.0)
        self.declare_parameter("angular_tolerance_deg", 2.0)
        self.declare_parameter("control_rate", 20.0)
        self.declare_parameter("camera_xyz", [0.0, 0.0, 0.88])
        self.declare_parameter("camera_frame", "camera_color_optical_frame")
        self.declare_parameter("use_tf", True)
        self.declare_parameter("episode_id", "locobot")  # echoed in agent_state
        p = {n: float(self.get_parameter(n).value) for n in LIMIT_PARAMS}
        limits = Limits(**p, turn_rad=math.radians(self.get_parameter("turn_deg").value),
                        angular_tolerance=math.radians(self.get_parameter("angular_tolerance_deg").value))
        self.ctl = BaseController(limits)
        self.camera_xyz = [float(v) for v in self.get_parameter("camera_xyz").value]
        self.tf_buffer = self._maybe_tf()
        self.request_id = ""
        self.odom_frame = "odom"
        self.odom_z = 0.0
        self.steps = 0  # actions executed since start or since the last STOP
        self.stopped = False
        self.cmd_pub = self.create_publisher(Twist, "cmd_vel", 10)
        self.outcome_pub = self.create_publisher(String, "action_outcome", 10)
        self.tilt_pub = self.create_publisher(Float64, "camera_tilt", 10)
        self.pose_pub = self.create_publisher(PoseStamped, "camera/pose", 10)
        self.state_pub = self.create_publisher(String, "agent_state", STATE_QOS)
        self.create_subscription(String, "action", self._on_action, 10)
        self.create_subscription(Odometry, "odom", self._on_odom, 20)
        self.create_subscription(Bool, "estop", self._on_estop, 10)
        self.create_timer(1.0 / float(self.get_parameter("control_rate").value), self._on_tick)

    def _maybe_tf(self):
        if not self.get_parameter("use_tf").value:
            return None
        try:
            import tf2_ros  # not on PyPI; present on full ROS installs
        except ImportError:
            self.get_logger().info("tf2_ros not importable: camera extrinsics from parameters")
            return None
        buffer = tf2_ros.Buffer()
        self._tf_listener = tf2_ros.TransformListener(buffer, self)
        return buffer

    def _on_action(self, msg: String) -> None:
        try:
            _, data = decode(msg.data, "DiscreteAction")
        except CodecError as e:
            self.get_logger().error(f"action: rejected malformed message: {e}")
            return
        rid = data["request_id"]
        out = self.ctl.start(data["action"], time.monotonic())
        self.get_logger().info(f"action {ACTION_NAMES[data['action']] if data['action'] < 6 else data['action']}"
                               f" ({rid or 'no id'})")
        if out is None:
            self.request_id = rid  # the running action's id (a rejected one must not overwrite it)
        else:
            self._report(out, rid)
            if data["action"] in (4, 5) and out.succeeded:
                self.tilt_pub.publish(Float64(data=self.ctl.tilt))

    def _on_odom(self, msg: Odometry) -> None:
        q = msg.pose.pose.orientation
        yaw = math.atan2(2 * (q.w * q.z + q.x * q.y), 1 - 2 * (q.y * q.y + q.z * q.z))
        p = msg.pose.pose.position
        self.odom_z = p.z
        self.ctl.update_odometry(Pose2D(p.x, p.y, yaw, time.monotonic()))
        self.odom_frame = msg.header.frame_id or "odom"
        self._publish_camera_pose(msg, p.x, p.y, yaw)

    def _publish_camera_pose(self, odom: Odometry, x: float, y: float, yaw: float) -> None:
        T = T_map_base(x, y, yaw) @ T_base_optical(*self.camera_xyz, self.ctl.tilt)
        pose = PoseStamped()
        pose.header.stamp = odom.header.stamp
        pose.header.frame_id = self.odom_frame
        pose.pose.position.x, pose.pose.position.y, pose.pose.position.z = (float(v) for v in T[:3, 3])
        o = pose.pose.orientation
        o.x, o.y, o.z, o.w = (float(v) for v in quaternion_from_matrix(T))
        self.pose_pub.publish(pose)

    def _on_estop(self, msg: Bool) -> None:
        self.ctl.set_estop(bool(msg.data))
        if msg.data:
            self.cmd_pub.publish(Twist())
            self.get_logger().warn("emergency stop engaged")

    def _on_tick(self) -> None:
        was_busy = self.ctl.busy
        (v, w), out = self.ctl.tick(time.monotonic())
        if was_busy:
            cmd = Twist()
            cmd.linear.x, cmd.angular.z = float(v), float(w)
            self.cmd_pub.publish(cmd)
        if out is not None:
            self._report(out)

    def _report(self, out: Outcome, request_id: str | None = None) -> None:
        rid = self.request_id if request_id is None else request_id
        log = self.get_logger().info if out.succeeded else self.get_logger().warn
        log(f"{ACTION_NAMES[out.action] if 0 <= out.action < 6 else out.action}: {out.status} ({out.detail})")
        self.outcome_pub.publish(String(data=encode("ActionOutcome", {
            "request_id": rid, "action": max(0, min(255, out.action)), "status": out.status,
            "detail": out.detail, "duration": out.duration, "distance": out.distance, "rotation": out.rotation,
        })))
        self._publish_state(out, rid)

    def _publish_state(self, out: Outcome, request_id: str) -> None:
        """AgentState after an outcome, as the sim bridge publishes it after a step."""
        if out.status != "rejected":
            if self.stopped:  # the first action after a STOP begins a new run
                self.steps, self.stopped = 0, False
            self.steps += 1
            self.stopped = out.action == 0 and out.succeeded
        pose = self.ctl.pose
        x, y, yaw = (pose.x, pose.y, pose.yaw) if pose is not None else (0.0, 0.0, 0.0)
        self.state_pub.publish(String(data=encode("AgentState", {
            "episode_id": str(self.get_parameter("episode_id").value),
            "position": {"x": float(x), "y": float(y), "z": float(self.odom_z)}, "yaw": float(yaw),
            "pitch": float(self.ctl.tilt), "collided": out.status == "blocked", "step": self.steps,
            "stopped": self.stopped, "request_id": request_id,
        })))


def main(args=None) -> None:
    run_node(BaseDriver, args, on_exit=lambda n: n.cmd_pub.publish(Twist()))


if __name__ == "__main__":
    main()

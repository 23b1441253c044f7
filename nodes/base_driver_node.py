"""Base driver: executes discrete actions closed-loop on odometry (real LoCoBot or kinematic base).

Subscribes ``action`` (personal/msg/DiscreteAction), ``odom`` (nav_msgs/Odometry), ``estop``
(std_msgs/Bool). Publishes ``cmd_vel`` (while an action runs, then one zero), ``action_outcome``
(ActionOutcome: succeeded / blocked / timed_out / stale_odom / estop / rejected / fault),
``camera_tilt`` (std_msgs/Float64, radians, for the pan-tilt servo), ``camera/pose``
(PoseStamped of the optical frame in the odometry frame) and, after every outcome,
``agent_state`` (AgentState, reliable + transient local like the sim bridge's: odometry
position and yaw, pitch = camera tilt, collided = the move was blocked, step = actions
executed since start or since the last STOP, stopped after STOP, the action's request_id),
so the navigation node drives this base as it drives the bridge. With ``use_tf`` (default) the
camera pose is the TF transform odom -> ``camera_frame`` at the odometry's stamp (``nodes/tf.py``:
tf2_ros on a full install, ``personal.tf`` on the pip ROS), so a moving pan/tilt mount is
followed; until TF has that chain, and with ``use_tf:=false``, it comes from ``camera_xyz`` and
the commanded tilt.

Faults (docs/reliability.md): odometry older than ``odom_timeout`` or with a non-finite pose is
stale — a running move stops within one control period (``stale_odom``, the detail says why) and
new moves are refused until good odometry returns; a non-finite velocity command is never sent
(``fault``); ``estop`` publishes a zero command at once and refuses moves until released.
"""
from __future__ import annotations

import math
import time

from geometry_msgs.msg import PoseStamped, Twist
from nav_msgs.msg import Odometry
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import Bool, Float64

from personal.msg import ActionOutcome, AgentState, DiscreteAction
from personal.robot.base_controller import ACTION_NAMES, BaseController, Limits, Outcome, Pose2D
from personal.robot.extrinsics import T_base_optical, T_map_base, quaternion_from_matrix
from personal.tf import ExtrapolationError, TfError
from nodes.lifecycle import run_node, subscribe
from nodes.tf import TfLookup

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
        self.camera_frame = str(self.get_parameter("camera_frame").value)
        self.tf = TfLookup(self) if self.get_parameter("use_tf").value else None
        self.tf_pending: list = []  # odometry messages whose camera transform had not arrived yet
        self.pose_source = "parameters"  # or "tf", once TF has the chain
        self.request_id = ""
        self.odom_frame = "odom"
        self.odom_z = 0.0
        self.steps = 0  # actions executed since start or since the last STOP
        self.stopped = False
        self.cmd_pub = self.create_publisher(Twist, "cmd_vel", 10)
        self.outcome_pub = self.create_publisher(ActionOutcome, "action_outcome", 10)
        self.tilt_pub = self.create_publisher(Float64, "camera_tilt", 10)
        self.pose_pub = self.create_publisher(PoseStamped, "camera/pose", 10)
        self.state_pub = self.create_publisher(AgentState, "agent_state", STATE_QOS)
        subscribe(self, DiscreteAction, "action", self._on_action, 10)
        subscribe(self, Odometry, "odom", self._on_odom, 20)
        subscribe(self, Bool, "estop", self._on_estop, 10)
        self.create_timer(1.0 / float(self.get_parameter("control_rate").value), self._on_tick)

    def _on_action(self, msg: DiscreteAction) -> None:
        rid, action = msg.request_id, int(msg.action)
        # an action outside the action space is rejected by the controller (and reported)
        out = self.ctl.start(action, time.monotonic())
        self.get_logger().info(f"action {ACTION_NAMES[action] if action < 6 else action} ({rid or 'no id'})")
        if out is None:
            self.request_id = rid  # the running action's id (a rejected one must not overwrite it)
        else:
            self._report(out, rid)
            if action in (4, 5) and out.succeeded:
                self.tilt_pub.publish(Float64(data=self.ctl.tilt))

    def _on_odom(self, msg: Odometry) -> None:
        q = msg.pose.pose.orientation
        yaw = math.atan2(2 * (q.w * q.z + q.x * q.y), 1 - 2 * (q.y * q.y + q.z * q.z))
        p = msg.pose.pose.position
        if not (self.ctl.update_odometry(Pose2D(p.x, p.y, yaw, time.monotonic())) and math.isfinite(p.z)):
            # stale for the controller (a move in progress stops on the next tick); no camera pose from it
            self.get_logger().warning(f"odom: {self.ctl.bad_odometry or f'non-finite z={p.z}'}: treated as stale, "
                                      "the base is stopped", throttle_duration_sec=2.0)
            return
        self.odom_z = p.z
        self.odom_frame = msg.header.frame_id or "odom"
        self._publish_camera_pose(msg, p.x, p.y, yaw)

    def _publish_camera_pose(self, odom: Odometry, x: float, y: float, yaw: float, since: float | None = None) -> None:
        since = time.monotonic() if since is None else since
        T = None
        if self.tf is not None:
            stamp = odom.header.stamp
            try:
                T = self.tf.lookup_matrix(self.odom_frame, self.camera_frame, stamp.sec * 1_000_000_000 + stamp.nanosec)
            except ExtrapolationError:
                if self.pose_source == "tf":  # the transform of this stamp is on its way: retried on the tick
                    if time.monotonic() - since < 0.5:  # else dropped: TF stopped for this stamp
                        self.tf_pending = (self.tf_pending + [(odom, x, y, yaw, since)])[-10:]
                    return
            except TfError as exc:
                if self.pose_source == "tf":
                    self.get_logger().warning(f"TF {self.odom_frame} -> {self.camera_frame}: {exc}; camera pose from "
                                           "camera_xyz and the commanded tilt", throttle_duration_sec=5.0)
            if T is not None and self.pose_source != "tf":
                self.pose_source = "tf"
                self.get_logger().info(f"camera pose from TF ({self.tf.backend}): {self.odom_frame} -> {self.camera_frame}")
        if T is None:
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
            self.get_logger().warning("emergency stop engaged")

    def _retry_tf_poses(self) -> None:
        pending, self.tf_pending = self.tf_pending, []
        for odom, x, y, yaw, since in pending:
            self._publish_camera_pose(odom, x, y, yaw, since)

    def _on_tick(self) -> None:
        self._retry_tf_poses()
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
        self.outcome_pub.publish(ActionOutcome(
            request_id=rid, action=max(0, min(255, out.action)), status=out.status, detail=out.detail,
            duration=float(out.duration), distance=float(out.distance), rotation=float(out.rotation)))
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
        state = AgentState(episode_id=str(self.get_parameter("episode_id").value), yaw=float(yaw),
                           pitch=float(self.ctl.tilt), collided=out.status == "blocked", step=self.steps,
                           stopped=self.stopped, request_id=request_id)
        state.position.x, state.position.y, state.position.z = float(x), float(y), float(self.odom_z)
        self.state_pub.publish(state)


def main(args=None) -> None:
    run_node(BaseDriver, args, on_exit=lambda n: n.cmd_pub.publish(Twist()))


if __name__ == "__main__":
    main()

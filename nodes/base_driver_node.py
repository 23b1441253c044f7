"""Base driver: executes discrete actions closed-loop on odometry (real LoCoBot or its doubles).

Subscribes ``action`` (personal/msg/DiscreteAction), ``odom`` (nav_msgs/Odometry, best effort: it
matches the Create 3's best-effort and the Kobuki's reliable publisher alike), ``joint_states``
(sensor_msgs/JointState: the measured pan / tilt), ``estop`` (std_msgs/Bool). Publishes ``cmd_vel``
(while an action runs, then one zero), ``commands/joint_group`` (interbotix_xs_msgs/JointGroupCommand,
group ``camera`` = [pan, tilt], Interbotix convention: positive tilt = down) for LOOK_UP / LOOK_DOWN,
``action_outcome`` (ActionOutcome: succeeded / blocked / timed_out / stale_odom / estop / rejected /
fault; a LOOK ends when joint_states reach the target, or times out saying where the joint stands),
``camera/pose`` (PoseStamped of the optical frame in ``<ns>/odom``) and, after every outcome,
``agent_state`` (AgentState, reliable + transient local like the sim bridge's: odometry position and
yaw, pitch = measured camera tilt, positive up as in the simulator, collided = the move was blocked,
step = actions executed since start or since the last STOP, stopped after STOP, the action's
request_id), so the navigation node drives this base as it drives the bridge.

Camera pose (``camera_pose``): ``tf`` (default) looks ``odom_frame`` (``<ns>/odom``; the odometry
header's own frame is not used: a Create 3 says ``odom``, which is not in TF) -> ``camera_frame`` up
at the odometry's stamp (``nodes/tf.py``: tf2_ros on a full install, ``personal.tf`` on the pip ROS).
While that chain is incomplete no pose is published and a warning every 5 s names the missing link
(``conventions.camera_chain``) and who publishes it: nothing is mapped with a guessed pose.
``fixed`` (explicit opt-in) composes the odometry with the URDF's mount numbers for ``base`` at
the measured pan / tilt (``personal.robot.extrinsics.T_root_optical``).

Faults (docs/reliability.md): odometry older than ``odom_timeout`` or with a non-finite pose is
stale — a running move stops within one control period (``stale_odom``, the detail says why) and
new moves are refused until good odometry returns; a non-finite velocity command is never sent
(``fault``); ``estop`` publishes a zero command at once and refuses moves until released.
"""
from __future__ import annotations

import math
import time

from geometry_msgs.msg import PoseStamped, Twist
from interbotix_xs_msgs.msg import JointGroupCommand
from nav_msgs.msg import Odometry
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool

from personal.msg import ActionOutcome, AgentState, DiscreteAction
from personal.robot import conventions as C
from personal.robot.base_controller import (
    ACTION_NAMES, DRIVER_PARAMETERS, BaseController, Outcome, Pose2D, StepCount, check_driver_parameters, limits_from,
)
from personal.robot.extrinsics import T_map_base, T_root_optical, quaternion_from_matrix
from personal.tf import ExtrapolationError, TfError
from nodes.kinematic_base_node import robot_name_of
from nodes.lifecycle import run_node, subscribe
from nodes.parameters import declare_parameters
from nodes.tf import TfLookup

STATE_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
# best effort: receives from reliable and best-effort publishers (a reliable subscriber would get nothing
# from a best-effort Create 3)
ODOM_QOS = QoSProfile(depth=20, reliability=ReliabilityPolicy.BEST_EFFORT)


# An odometry message waits this long (at most this many queued) for TF to reach its stamp, as tf2_ros's
# MessageFilter queues messages until their transform arrives: on a loaded computer TF can trail odometry
# by more than half a second for a while, and a shorter wait then maps nothing at all.
TF_WAIT_S = 2.0
TF_QUEUE = 100

class BaseDriver(Node):
    def __init__(self, **kwargs) -> None:
        super().__init__("base_driver", **kwargs)
        self.p = p = declare_parameters(self, DRIVER_PARAMETERS)
        check_driver_parameters(p)
        self.base, self.camera_pose = str(p["base"]), str(p["camera_pose"])
        self.ctl = BaseController(limits_from(p))
        self.robot = robot_name_of(self, str(p["robot_name"]))
        self.odom_frame = str(p["odom_frame"]) or C.odom_frame(self.robot)
        self.camera_frame = str(p["camera_frame"])
        self.tf = TfLookup(self) if self.camera_pose == "tf" else None
        self.tf_pending: list = []  # odometry messages whose camera transform had not arrived yet
        # "tf" once TF gave a pose (logged once, at that moment: operators and tests wait for that line);
        # "fixed"; "none" until then or while the chain is missing. Starting at "tf" hid the line whenever the
        # chain was already complete at the first odometry (a test then waited 120 s for it: a CI flake)
        self.pose_source = "fixed" if self.camera_pose == "fixed" else "none"
        self.poses_published = 0
        self.request_id = ""
        self.odom_z = 0.0
        self.steps = StepCount()
        self.cmd_pub = self.create_publisher(Twist, "cmd_vel", 10)
        self.outcome_pub = self.create_publisher(ActionOutcome, "action_outcome", 10)
        self.camera_pub = self.create_publisher(JointGroupCommand, C.JOINT_GROUP_TOPIC, C.COMMAND_QOS_DEPTH)
        self.pose_pub = self.create_publisher(PoseStamped, "camera/pose", 10)
        self.state_pub = self.create_publisher(AgentState, "agent_state", STATE_QOS)
        subscribe(self, DiscreteAction, "action", self._on_action, 10)
        subscribe(self, Odometry, "odom", self._on_odom, ODOM_QOS)
        subscribe(self, JointState, C.JOINT_STATES_TOPIC, self._on_joints, ODOM_QOS)
        subscribe(self, Bool, "estop", self._on_estop, 10)
        self.create_timer(1.0 / float(p["control_rate"]), self._on_tick)
        self.t_start = time.monotonic()
        self.get_logger().info(f"base {self.base}, camera pose from {self.camera_pose} "
                               f"({self.odom_frame} -> {self.camera_frame})")

    def _on_action(self, msg: DiscreteAction) -> None:
        rid, action = msg.request_id, int(msg.action)
        # an action outside the action space is rejected by the controller (and reported)
        out = self.ctl.start(action, time.monotonic())
        self.get_logger().info(f"action {ACTION_NAMES[action] if action < 6 else action} ({rid or 'no id'})")
        if out is None:
            self.request_id = rid  # the running action's id (a rejected one must not overwrite it)
            if action in (4, 5):  # the pan/tilt moves; the outcome waits for joint_states (tick)
                pan, tilt = self.ctl.camera_command
                self.camera_pub.publish(JointGroupCommand(name=C.CAMERA_GROUP, cmd=[float(pan), float(tilt)]))
        else:
            self._report(out, rid)

    def _on_joints(self, msg: JointState) -> None:
        names = list(msg.name)
        if not all(j in names for j in C.CAMERA_GROUP_JOINTS):
            return  # e.g. the base's wheel joints (joint_state_publisher merges several sources)
        if len(msg.position) != len(names):
            raise ValueError(f"joint_states: {len(names)} names but {len(msg.position)} positions")
        pan, tilt = (float(msg.position[names.index(j)]) for j in C.CAMERA_GROUP_JOINTS)
        self.ctl.update_joints(pan, tilt, time.monotonic())

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
        self._publish_camera_pose(msg, p.x, p.y, yaw)

    def _publish_camera_pose(self, odom: Odometry, x: float, y: float, yaw: float, since: float | None = None) -> None:
        since = time.monotonic() if since is None else since
        if self.tf is None:  # camera_pose:=fixed: the URDF mount at the measured joints
            pan, tilt = self.ctl.joints[:2] if self.ctl.joints is not None else (0.0, 0.0)
            T = T_map_base(x, y, yaw) @ T_root_optical(self.base, pan, tilt)
        else:
            stamp = odom.header.stamp
            try:
                T = self.tf.lookup_matrix(self.odom_frame, self.camera_frame, stamp.sec * 1_000_000_000 + stamp.nanosec)
            except ExtrapolationError as exc:  # this stamp's transforms may be on their way: retried on the tick
                if time.monotonic() - since < TF_WAIT_S:
                    self.tf_pending = (self.tf_pending + [(odom, x, y, yaw, since)])[-TF_QUEUE:]
                else:
                    self.get_logger().warning(f"no camera pose for odometry at {stamp.sec}.{stamp.nanosec:09d}: {exc}",
                                              throttle_duration_sec=5.0)
                return
            except TfError as exc:
                self._warn_missing_chain(exc)
                return
            if self.pose_source != "tf":
                self.pose_source = "tf"
                self.get_logger().info(f"camera pose from TF ({self.tf.backend}): {self.odom_frame} -> {self.camera_frame}")
        pose = PoseStamped()
        pose.header.stamp = odom.header.stamp
        pose.header.frame_id = self.odom_frame
        pose.pose.position.x, pose.pose.position.y, pose.pose.position.z = (float(v) for v in T[:3, 3])
        o = pose.pose.orientation
        o.x, o.y, o.z, o.w = (float(v) for v in quaternion_from_matrix(T))
        self.pose_pub.publish(pose)
        self.poses_published += 1

    def missing_link(self) -> str:
        """The first link of the expected chain (conventions.camera_chain) TF does not have, '' if none."""
        for parent, child, who in C.camera_chain(self.base, self.robot):
            try:
                self.tf.lookup_matrix(parent, child, 0)
            except TfError:
                return f"{parent} -> {child} (published by {who})"
        return ""

    def _warn_missing_chain(self, exc: TfError) -> None:
        self.pose_source = "none"
        missing = self.missing_link()
        where = f"missing link {missing}" if missing else str(exc)
        self.get_logger().warning(
            f"no camera pose: TF {self.odom_frame} -> {self.camera_frame} is incomplete: {where}. Nothing is mapped "
            "until it exists (`personal robot check` prints the fix; camera_pose:=fixed opts into the URDF mount)",
            throttle_duration_sec=5.0)

    def _on_estop(self, msg: Bool) -> None:
        self.ctl.set_estop(bool(msg.data))
        if msg.data:
            self.cmd_pub.publish(Twist())
            self.get_logger().warning("emergency stop engaged")

    def _retry_tf_poses(self) -> None:
        pending, self.tf_pending = self.tf_pending, []
        for odom, x, y, yaw, since in pending:
            self._publish_camera_pose(odom, x, y, yaw, since)

    def _warn_if_no_odometry(self, now: float) -> None:
        """Loud, every 5 s: no odometry at all (a wrong base profile would otherwise fail silently)."""
        if self.ctl.pose is not None or now - self.t_start < 2.0:
            return
        try:
            topic = self.resolve_topic_name("odom")
        except Exception:  # rclpy without resolve_topic_name
            topic = "odom"
        self.get_logger().warning(f"no odometry received on {topic} (base:={self.base}: {C.BASES[self.base].source}); "
                                  "moves are refused. Wrong base profile? `personal robot check` names the fix",
                                  throttle_duration_sec=5.0)

    def _on_tick(self) -> None:
        self._warn_if_no_odometry(time.monotonic())
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
        self.steps.count(out)
        pose = self.ctl.pose
        x, y, yaw = (pose.x, pose.y, pose.yaw) if pose is not None else (0.0, 0.0, 0.0)
        state = AgentState(episode_id=str(self.p["episode_id"]), yaw=float(yaw),
                           pitch=float(-self.ctl.tilt), collided=out.status == "blocked", step=self.steps.steps,
                           stopped=self.steps.stopped, request_id=request_id)
        # pitch: the simulator's convention (positive up), the Interbotix tilt joint's negative
        state.position.x, state.position.y, state.position.z = float(x), float(y), float(self.odom_z)
        self.state_pub.publish(state)


def main(args=None) -> None:
    run_node(BaseDriver, args, on_exit=lambda n: n.cmd_pub.publish(Twist()))


if __name__ == "__main__":
    main()

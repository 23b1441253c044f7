"""The assistant node's ``assistant/verify_object`` action server (VerifyObject); not a node itself.

Is the object at a candidate point the described instance? View 0 is the camera where the robot
stands; each further view follows one discrete action on ``action`` (face the point, approach it,
a turn either side: personal.assistant.verify.next_view_action), answered by the bridge's (or base
driver's) ``agent_state``, and the camera frame whose odometry matches that state. Each view is
judged by the verify-before-stop check (personal.navigation.verify_stop.StopVerifier: the depth
segmenter's proposal at the point + the attribute verifier; nothing reads instance ids) and the
views vote (ViewVote). Feedback per view; cancel between views; an action or frame not answered
within ``view_timeout_s`` aborts, naming it. The camera topics are subscribed only during a goal.
A goal is refused while a FindObject goal drives the robot. In the simulator the bridge takes the
views after a FindObject STOP only with ``continue_after_stop`` (the assistant graph sets it).
"""
from __future__ import annotations

import math
import uuid

from geometry_msgs.msg import PoseStamped
from nav_msgs.msg import Odometry
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
from sensor_msgs.msg import CameraInfo, Image

from personal.action import VerifyObject
from personal.assistant.verify import ViewVote, descriptions_for, next_view_action
from personal.interfaces.convert import to_dict
from personal.msg import AgentState, DiscreteAction
from nodes.lifecycle import serve_action, subscribe, wait_until

COMMAND_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
STATE_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
CAMERA = {"depth": (Image, "camera/aligned_depth_to_color/image_raw"), "rgb": (Image, "camera/color/image_raw"),
          "pose": (PoseStamped, "camera/pose"), "odom": (Odometry, "odom")}


def _yaw(q) -> float:
    return math.atan2(2.0 * (q.w * q.z + q.x * q.y), 1.0 - 2.0 * (q.y * q.y + q.z * q.z))


class VerifyServer:
    def __init__(self, node, find) -> None:
        self.node, self.find = node, find
        d = lambda name, default: node.declare_parameter(name, default).value  # noqa: E731
        self.view_timeout_s = float(d("view_timeout_s", 10.0))
        self.turn_deg = float(d("turn_deg", 30.0))
        self.near_m = float(d("near_m", 1.0))
        self.state: dict | None = None
        self.K = None
        self.sync = None
        self.pub_action = node.create_publisher(DiscreteAction, "action", COMMAND_QOS)
        subscribe(node, AgentState, "agent_state", lambda m: setattr(self, "state", to_dict(m)), STATE_QOS)
        serve_action(node, VerifyObject, "assistant/verify_object", self.execute)

    async def execute(self, handle):
        goal = handle.request
        if self.find.busy:
            handle.abort()
            return VerifyObject.Result(verdict="unsure", why="a FindObject goal is driving the robot")
        from personal.navigation.sync import FrameSync
        from personal.navigation.verify_stop import StopVerifier

        verifier = StopVerifier()
        verifier.descriptions = descriptions_for(goal.query, self.find.summary_for(self.state["episode_id"] if self.state else ""),
                                                 _extractor())
        point = (goal.candidate.point.x, goal.candidate.point.y)
        vote = ViewVote(max_views=max(1, int(goal.max_views)))
        self.sync = FrameSync(required=("depth", "rgb", "pose", "odom"))
        subs = self._subscribe_camera()
        try:
            return await self._views(handle, verifier, point, vote)
        finally:
            for sub in subs:
                self.node.destroy_subscription(sub)
            self.sync = None

    async def _views(self, handle, verifier, point, vote: ViewVote):
        if not await wait_until(self.node, lambda: self.state, self.view_timeout_s):
            return self._abort(handle, vote, f"no agent_state within {self.view_timeout_s:g} s: "
                                             "is the sim bridge (or base driver) running?")
        blocked = False
        while not vote.done:
            if handle.is_cancel_requested:
                handle.canceled()
                return self._result(vote, f"cancelled after {len(vote.checks)} view(s)")
            if vote.checks:
                action = next_view_action(self._pose(), point, len(vote.checks), turn_deg=self.turn_deg,
                                          near_m=self.near_m, blocked=blocked)
                request_id = f"verify-{uuid.uuid4().hex[:8]}-{len(vote.checks)}"
                self.pub_action.publish(DiscreteAction(action=action, request_id=request_id))
                if not await wait_until(self.node, lambda: self.state["request_id"] == request_id, self.view_timeout_s):
                    return self._abort(handle, vote, f"no agent_state answering action {action} within {self.view_timeout_s:g} s "
                                                     "(sim bridge down, or STOP ended its episode: continue_after_stop?)")
                blocked = bool(self.state["collided"])
            frame = await wait_until(self.node, self._frame, self.view_timeout_s)
            if frame is None:
                return self._abort(handle, vote, f"no camera frame (depth, colour, camera pose, odom, camera_info) matching "
                                                 f"the robot's pose within {self.view_timeout_s:g} s")
            vote.add(verifier.check(frame, point, float(self.state["position"]["z"]), len(vote.checks)))
            handle.publish_feedback(VerifyObject.Feedback(views=len(vote.checks), verdict_so_far=vote.verdict,
                                                          confidence=vote.confidence))
        handle.succeed()
        return self._result(vote, vote.why())

    def _subscribe_camera(self) -> list:
        subs = [subscribe(self.node, CameraInfo, "camera/color/camera_info", self._on_info, qos_profile_sensor_data)]
        for key, (kind, topic) in CAMERA.items():
            subs.append(subscribe(self.node, kind, topic, lambda m, k=key: self._on_camera(k, m), qos_profile_sensor_data))
        return subs

    def _on_info(self, msg: CameraInfo) -> None:
        from personal.mapping.ros_io import intrinsics_from_info

        self.K = intrinsics_from_info(msg, "camera/color/camera_info")[0]

    def _on_camera(self, key: str, msg) -> None:
        if self.sync is None:
            return
        stamp = (int(msg.header.stamp.sec), int(msg.header.stamp.nanosec))  # the bridge's one stamp per observation
        if key == "odom":
            p = msg.pose.pose
            msg = (p.position.x, p.position.y, _yaw(p.orientation))
        self.sync.add(stamp, key, msg)

    def _pose(self) -> tuple[float, float, float]:
        s = self.state
        return s["position"]["x"], s["position"]["y"], s["yaw"]

    def _frame(self):
        """The newest complete camera frame taken at the robot's current pose (personal.navigation.loop.Frame)."""
        from personal.mapping.ros_io import depth_from_msg, pose_to_matrix, rgb_from_msg
        from personal.navigation.loop import Frame

        group = self.sync.match(self._pose()) if self.sync is not None and self.K is not None else None
        if group is None:
            return None
        parts = group.parts
        return Frame(self._pose(), depth_from_msg(parts["depth"], CAMERA["depth"][1]), self.K,
                     pose_to_matrix(parts["pose"].pose), None, rgb_from_msg(parts["rgb"], CAMERA["rgb"][1]),
                     bool(self.state["collided"]))

    @staticmethod
    def _abort(handle, vote: ViewVote, why: str):
        handle.abort()
        return VerifyObject.Result(verdict="unsure", confidence=0.0, why=why, views=len(vote.checks))

    @staticmethod
    def _result(vote: ViewVote, why: str) -> VerifyObject.Result:
        return VerifyObject.Result(verdict=vote.verdict, confidence=float(vote.confidence), why=why, views=len(vote.checks))


def _extractor():
    from personal.grounding.extract import make_extractor

    return make_extractor("builtin")

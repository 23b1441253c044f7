"""The assistant node's ``assistant/find_object`` action server (FindObject); not a node itself.

A goal drives the navigation node: in the simulator the bridge's episode is restarted first
(``episode/reset``, std_srvs/Trigger, said again until answered; ``reset_service:=""`` on a robot), then ``nav/start`` carries
the query, the owner ("my" = the requester) and the household summary — the memory's current
ownership when it holds any (so a gift told a minute ago is grounded), else the episode's; ``nav/progress`` becomes the
feedback, ``nav/result`` the answer (personal.assistant.find). With ``verify`` the run's policy is
``<policy>+verify``: the navigation loop stops only on a candidate the verify-before-stop check does
not reject; every rejected candidate is written to the household memory as a verdict, and the found
object's last-seen pose too. Cancel sends ``nav/cancel``. A run silent for ``nav_timeout_s`` (the
first report: ``start_timeout_s``, the text model may be loading) aborts the goal, naming the node;
until that first report, ``nav/start`` is sent again every ``start_resend_s`` (the navigation node
ignores a repeat of the run in progress).
"""
from __future__ import annotations

import json
import time
import uuid

from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import String
from std_srvs.srv import Trigger

from personal.action import FindObject
from personal.assistant.find import (FindError, FindTracker, episode_id_from_reset, household_summary, owner_of,
                                     remember_found, remember_rejection, resolved_query, run_policy)
from personal.interfaces.convert import to_dict
from personal.msg import EpisodeDescriptor, NavigationRun, NavigationStart
from personal.resend import Resend
from nodes.goals import call_until_answered
from nodes.lifecycle import serve_action, sleep, subscribe, wait_until

COMMAND_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
RESET_RESEND_S = 2.5  # episode/reset said again until answered (a reply lost in discovery), within service_timeout_s


class Unanswered(RuntimeError):
    """A node the goal needs did not answer in time (the message names it)."""


class FindServer:
    def __init__(self, node) -> None:
        self.node = node
        d = lambda name, default: node.declare_parameter(name, default).value  # noqa: E731
        self.policy = d("policy", "value-map-rpg-owner")
        self.reset_service = d("reset_service", "episode/reset")
        self.service_timeout_s = float(d("service_timeout_s", 10.0))
        self.start_timeout_s = float(d("start_timeout_s", 60.0))
        self.nav_timeout_s = float(d("nav_timeout_s", 20.0))
        self.start_resend_s = float(d("start_resend_s", 10.0))
        self.busy = False
        self.tracker: FindTracker | None = None
        self.run: dict | None = None
        self.episode: dict | None = None
        self.pub_start = node.create_publisher(NavigationStart, "nav/start", COMMAND_QOS)
        self.pub_cancel = node.create_publisher(String, "nav/cancel", COMMAND_QOS)
        subscribe(node, String, "nav/progress", self._on_progress, COMMAND_QOS)
        subscribe(node, NavigationRun, "nav/result", self._on_result, COMMAND_QOS)
        subscribe(node, EpisodeDescriptor, "episode", lambda m: setattr(self, "episode", to_dict(m)), LATCHED)
        self.reset = node.create_client(Trigger, self.reset_service) if self.reset_service else None
        serve_action(node, FindObject, "assistant/find_object", self.execute)

    def _on_progress(self, msg: String) -> None:
        report = json.loads(msg.data)
        if self.tracker is not None and self.tracker.mine(report):
            self.tracker.on_progress(report)

    def _on_result(self, msg: NavigationRun) -> None:
        if self.tracker is not None and msg.episode_id == self.tracker.episode_id and msg.policy == self.tracker.policy:
            self.run = to_dict(msg)

    async def execute(self, handle):
        goal = handle.request
        if self.busy:
            return self._end(handle, why="another FindObject goal is driving the robot", abort=True)
        try:
            owner = owner_of(goal.query, goal.requester)
            policy = run_policy(self.policy, goal.verify)
            if not goal.query.strip():
                raise FindError("empty query")
        except FindError as exc:
            return self._end(handle, why=str(exc), abort=True)
        self.busy = True
        try:
            return await self._find(handle, resolved_query(goal.query, owner), owner, policy)
        except Unanswered as exc:
            self._stop_run()
            return self._end(handle, why=str(exc), abort=True)
        finally:
            self.busy, self.tracker = False, None

    async def _find(self, handle, query: str, owner: str, policy: str):
        goal = handle.request
        episode_id = await self._begin_episode()
        if not await wait_until(self.node, self.pub_start.get_subscription_count, self.service_timeout_s):
            raise Unanswered(f"nothing subscribes to nav/start within {self.service_timeout_s:g} s: is the navigation node running?")
        tracker = self.tracker = FindTracker(episode_id, policy, bool(goal.verify))
        self.run = None
        start = NavigationStart(episode_id=episode_id, policy=policy, max_steps=int(goal.max_steps or 500),
                                query=query, summary=self.summary_for(episode_id), owner=owner)
        self.pub_start.publish(start)
        shown, since = None, time.monotonic()
        resend = Resend(self.start_resend_s)  # personal/resend.py; the navigation node ignores a repeat
        resend.sent(since)
        while self.run is None:
            if handle.is_cancel_requested:
                return await self._cancel(handle, tracker, query)
            resend.heard = tracker.reports > 0
            if resend.due(time.monotonic()):
                self.node.get_logger().warning(f"no nav/progress {self.start_resend_s:g} s after nav/start: sent again")
                self.pub_start.publish(start)
            if (tracker.steps, tracker.status) != shown or tracker.unshown_rejection:
                shown, since = (tracker.steps, tracker.status), time.monotonic()
                handle.publish_feedback(FindObject.Feedback(**tracker.feedback()))
                self._remember_rejections(tracker, query)
            elif time.monotonic() - since > (self.nav_timeout_s if tracker.steps else self.start_timeout_s):
                raise Unanswered(f"no nav/progress from the navigation node for {time.monotonic() - since:.0f} s "
                                 f"(step {tracker.steps} of {episode_id})")
            await sleep(self.node, 0.1)
        out = tracker.outcome(self.run)
        self._remember_rejections(tracker, query)
        if out["success"] and self.node.memory is not None:
            remember_found(self.node.memory, query, out["xy"], self._floor_z(), out["verified"], out["confidence"])
        handle.succeed()
        return self._result(out)

    async def _begin_episode(self) -> str:
        """The episode id of the run: the bridge's restarted episode (sim), else a fresh one (robot)."""
        if self.reset is None:
            return f"find-{uuid.uuid4().hex[:8]}"
        if not await wait_until(self.node, self.reset.service_is_ready, self.service_timeout_s):
            raise Unanswered(f"service {self.reset_service} not offered within {self.service_timeout_s:g} s: is the sim bridge running?")
        future = call_until_answered(self.node, self.reset, Trigger.Request(), RESET_RESEND_S)  # safe to repeat: no run yet
        if not await wait_until(self.node, future.done, self.service_timeout_s):
            future.cancel()
            raise Unanswered(f"{self.reset_service} did not answer within {self.service_timeout_s:g} s")
        answer = future.result()
        if not answer.success:
            raise Unanswered(f"{self.reset_service} failed: {answer.message}")
        episode_id = episode_id_from_reset(answer.message)
        await wait_until(self.node, lambda: self.episode and self.episode["episode_id"] == episode_id, self.service_timeout_s)
        return episode_id

    def summary_for(self, episode_id: str) -> str:
        """The household description the policies read: the memory's current ownership, else the sim episode's."""
        episode = self.episode if self.episode is not None and self.episode["episode_id"] == episode_id else {}
        text, source = household_summary(self.node.memory, episode.get("summary", ""))
        self.node.get_logger().info(f"grounding with the {source}'s summary ({len(text)} characters)")
        return text

    def _floor_z(self) -> float:
        return float(self.episode["start_position"]["z"]) if self.episode else 0.0

    def _remember_rejections(self, tracker: FindTracker, query: str) -> None:
        for check in tracker.new_rejections(lambda c: c["verdict"] != "yes"):
            self.node.get_logger().info(f"{query!r}: candidate at {check['point']} {check['verdict']} at step "
                                        f"{check['step']} ({check['reason']})")
            if self.node.memory is not None:
                remember_rejection(self.node.memory, query, check, self._floor_z())

    async def _cancel(self, handle, tracker: FindTracker, query: str):
        self._stop_run()
        await wait_until(self.node, lambda: self.run is not None, self.service_timeout_s)
        self._remember_rejections(tracker, query)
        handle.canceled()
        return self._result({"success": False, "xy": None, "verified": False, "confidence": 0.0,
                             "why": f"cancelled after {tracker.steps} steps", "steps": tracker.steps})

    def _stop_run(self) -> None:
        if self.tracker is not None:
            self.pub_cancel.publish(String(data=self.tracker.episode_id))

    @staticmethod
    def _end(handle, why: str, abort: bool):
        handle.abort() if abort else handle.succeed()
        return FindObject.Result(success=False, why=why)

    def _result(self, out: dict) -> FindObject.Result:
        result = FindObject.Result(success=out["success"], verified=out["verified"], confidence=float(out["confidence"]),
                                   why=out["why"], steps=int(out["steps"]))
        result.pose.header.frame_id = "map"
        result.pose.header.stamp = self.node.get_clock().now().to_msg()
        if out["xy"] is not None:
            result.pose.pose.position.x, result.pose.pose.position.y = (float(v) for v in out["xy"])
            result.pose.pose.position.z = self._floor_z()
        result.pose.pose.orientation.w = 1.0
        return result

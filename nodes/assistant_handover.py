"""The assistant node's ``assistant/hand_over`` action server (HandOver); not a node itself.

A goal names a person and a tabletop task (mission, layout seed). The person's manipulation
preferences come from the household memory, or from the goal (personal.assistant.handover). The
server drives the tabletop simulator and the policy node as the PeRM evaluator does: it publishes
``perm/prompt`` ("Task: ... Preference: ...", latched) and then ``perm/episode``, and it records
``perm/oracle/state`` until the episode is done. The rollout is then scored with the PeRM metrics
(success, each preference's degree d, SA). These come from the simulator's state (the evaluator's
ground truth); the policy never reads them. Feedback every ``arm_feedback_every`` steps. Cancel
sends ``perm/stop``, which ends the episode and stops the arm.

There are two timeouts, and each aborts the goal and names what did not answer:
- ``arm_start_timeout_s``: how long to wait for the simulator and the policy to come up (robosuite
  and the learned policy take a while to load);
- ``arm_step_timeout_s``: how long the simulator may be silent once the episode runs.

The graph passes ``arm_policy`` / ``arm_backend``. The result names a learned policy that runs on a
simulator it was not trained for (personal.manipulation.distribution), and it names the scripted
ORACLE policy as such.
"""
from __future__ import annotations

import json
import time
import uuid

from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import String

from personal.action import HandOver
from personal.assistant.handover import HandOverError, HandOverTask, handover_task, score, summary
from personal.interfaces.convert import to_dict
from personal.interfaces.tabletop import state_dict
from personal.manipulation.trajectory import Trajectory
from personal.msg import PermEpisode, TabletopState, TaskPrompt
from personal.resend import Resend
from nodes.assistant_find import Unanswered
from nodes.lifecycle import serve_action, sleep, subscribe, wait_until

COMMAND_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
LATCHED = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL, reliability=ReliabilityPolicy.RELIABLE)
RESEND_AFTER_S = 5.0  # no first state yet: the episode is sent again (personal/resend.py, as the perm evaluator)


class HandOverServer:
    def __init__(self, node) -> None:
        self.node = node
        d = lambda name, default: node.declare_parameter(name, default).value  # noqa: E731
        self.start_timeout_s = float(d("arm_start_timeout_s", 120.0))
        self.step_timeout_s = float(d("arm_step_timeout_s", 30.0))
        self.feedback_every = max(1, int(d("arm_feedback_every", 10)))
        self.distribution = self._distribution(d("arm_policy", "learned"), d("arm_backend", "robosuite"))
        self.busy = False
        self.resend = Resend(RESEND_AFTER_S)
        self.task_id: str | None = None
        self.states: list[dict] = []
        self.pub_prompt = node.create_publisher(TaskPrompt, "perm/prompt", LATCHED)
        self.pub_episode = node.create_publisher(PermEpisode, "perm/episode", COMMAND_QOS)
        self.pub_stop = node.create_publisher(String, "perm/stop", COMMAND_QOS)
        subscribe(node, TabletopState, "perm/oracle/state", self._on_state, 100)
        serve_action(node, HandOver, "assistant/hand_over", self.execute)

    @staticmethod
    def _distribution(policy: str, backend: str) -> dict:
        from personal.manipulation.distribution import distribution_note

        return distribution_note(policy, backend)

    def _on_state(self, msg: TabletopState) -> None:
        if self.task_id is None or msg.task_id != self.task_id:
            return  # another rollout's (or a perm evaluator's)
        s = state_dict(to_dict(msg))
        if not self.states or s["step"] > self.states[-1]["step"]:
            self.states.append(s)
        elif s["done"] and s["step"] == self.states[-1]["step"]:
            self.states[-1] = s  # perm/stop: the same step again, now marked done

    async def execute(self, handle):
        goal = handle.request
        if self.busy:
            return self._end(handle, "another HandOver goal is using the arm")
        try:
            task = handover_task(self.node.memory, goal.person, goal.mission, int(goal.seed), goal.preference)
        except HandOverError as exc:
            return self._end(handle, str(exc))
        self.busy = True
        try:
            return await self._run(handle, task)
        except Unanswered as exc:
            self._stop()
            return self._end(handle, str(exc))
        finally:
            self.busy, self.task_id = False, None

    async def _run(self, handle, task: HandOverTask):
        for pub, what in ((self.pub_episode, "perm/episode (the tabletop simulator)"),
                          (self.pub_prompt, "perm/prompt (the policy node)")):
            if not await wait_until(self.node, pub.get_subscription_count, self.start_timeout_s):
                raise Unanswered(f"nothing subscribes to {what} within {self.start_timeout_s:g} s: "
                                 f"is the graph running with arm:=sim?")
        self.states, self.task_id = [], f"{task.task.task_id}/{uuid.uuid4().hex[:6]}"
        self.node.get_logger().info(f"hand-over {self.task_id}: {task.prompt!r} ({task.source})")
        handle.publish_feedback(HandOver.Feedback(step=0, status="starting"))
        self.pub_prompt.publish(TaskPrompt(task_id=self.task_id, prompt=task.prompt))
        await sleep(self.node, 0.05)  # the latched prompt lands before the first observation
        self.resend.sent(time.monotonic())
        self._send_episode(task)
        await self._follow(handle, task)
        if handle.is_cancel_requested:
            handle.canceled()
            return self._result(task, None, f"cancelled at step {len(self.states)}")
        handle.succeed()
        return self._result(task, score(task, Trajectory.from_states(self.states)))

    def _send_episode(self, task: HandOverTask) -> None:
        self.pub_episode.publish(PermEpisode(task_id=self.task_id, mission=task.task.mission, seed=task.task.seed))

    async def _follow(self, handle, task: HandOverTask) -> None:
        """Until the episode's last state (done), a cancel (then until the stopped state), or silence."""
        seen, since, shown, stopping = 0, time.monotonic(), 0, False
        while not (self.states and self.states[-1]["done"]):
            if handle.is_cancel_requested and not stopping:
                self._stop()
                stopping = True
            n, now = len(self.states), time.monotonic()
            if n != seen:
                seen, since = n, now
            elif now - since > (self.step_timeout_s if n else self.start_timeout_s):
                raise Unanswered(f"no perm/oracle/state from the tabletop simulator for {now - since:.0f} s "
                                 f"(step {n} of {self.task_id})")
            self.resend.heard = n > 0
            if self.resend.due(now):
                self._send_episode(task)
            if n - shown >= self.feedback_every:
                shown = n
                handle.publish_feedback(HandOver.Feedback(step=n, held=self.states[-1]["held"] or "", status="running"))
            await sleep(self.node, 0.02)

    def _stop(self) -> None:
        if self.task_id is not None:
            self.pub_stop.publish(String(data=self.task_id))

    def _policy_note(self) -> str:
        note = self.distribution
        return "" if note.get("in distribution") else f"; policy: {note['note']}"

    def _result(self, task: HandOverTask, result, cancelled: str = "") -> HandOver.Result:
        prefs = ",".join(task.task.prefs)
        if result is None:
            return HandOver.Result(success=False, prompt=task.prompt, preferences=prefs, satisfied_json="{}",
                                   steps=len(self.states), message=cancelled + self._policy_note())
        return HandOver.Result(success=result.success, prompt=task.prompt, preferences=prefs,
                               satisfied_json=json.dumps(result.d), sa=float(result.sa) if result.measured else 0.0,
                               steps=int(result.steps), message=summary(task, result) + self._policy_note())

    @staticmethod
    def _end(handle, why: str) -> HandOver.Result:
        handle.abort()
        return HandOver.Result(success=False, message=why, satisfied_json="{}")

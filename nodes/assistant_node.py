"""Assistant node: long household tasks as ROS 2 actions, with feedback and cancel.

Action ``assistant/run_routine`` (personal/action/RunRoutine): a person's routine, read from
the household memory (``<memory_dir>/<household>.sqlite``, preferences of domain "routine") or
given as steps, is sent to the appliance node one step at a time as ``home/plan`` (apply: true) and
answered by ``home/plan_result``; the appliance node's plan executor and safety layer judge every
step. Feedback after each step; a cancel takes effect between steps. A step unanswered within
``step_timeout_s`` aborts the goal and says which step.

Action ``assistant/find_object`` (FindObject, nodes/assistant_find.py): drives the navigation node
(``nav/start`` → ``nav/progress`` feedback → ``nav/result``), verify-before-stop with ``verify``;
rejected candidates and the found object's last-seen pose go to the household memory.
Action ``assistant/verify_object`` (VerifyObject, nodes/assistant_verify.py): views of a candidate
point, each judged by the verify-before-stop check, voted into yes / no / unsure.
Action ``assistant/hand_over`` (HandOver, nodes/assistant_handover.py): a tabletop task run by the
policy node with the person's manipulation preferences from the memory in the prompt, scored
with the PeRM preference metrics; cancel stops the arm (``perm/stop``).
Every goal runs under the reliability layer (nodes/lifecycle.py ``serve_action``: a goal whose
callback raises is aborted with the reason; every wait on another node is bounded and names it).
"""
from __future__ import annotations

import json
import time
import uuid

from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rclpy.task import Future

from personal.action import RunRoutine
from personal.assistant.routine import RoutineError, RoutineTally, one_step_plan, routine_steps
from personal.memory.desk import open_household
from personal.msg import HomePlan, PlanResult
from nodes.assistant_find import FindServer
from nodes.assistant_handover import HandOverServer
from nodes.assistant_verify import VerifyServer
from nodes.lifecycle import run_node, serve_action, subscribe

RELIABLE = QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE)


class AssistantNode(Node):
    def __init__(self, **kwargs) -> None:
        super().__init__("assistant", **kwargs)
        d = lambda name, default: self.declare_parameter(name, default).value  # noqa: E731
        memory_dir, household = d("memory_dir", ""), d("household", "home")
        self.memory = open_household(memory_dir, household) if memory_dir else None
        self.step_timeout_s = float(d("step_timeout_s", 10.0))
        self._answers: dict[str, Future] = {}
        self.plan_pub = self.create_publisher(HomePlan, "home/plan", RELIABLE)
        subscribe(self, PlanResult, "home/plan_result", self._on_plan_result, RELIABLE)
        serve_action(self, RunRoutine, "assistant/run_routine", self._run_routine)
        self.find = FindServer(self)
        self.verify = VerifyServer(self, self.find)
        self.handover = HandOverServer(self)
        self.get_logger().info("assistant ready: assistant/run_routine, assistant/find_object, assistant/verify_object, "
                               "assistant/hand_over"
                               + (f" (memory {self.memory.path})" if self.memory else " (no memory: goals give steps_json)"))

    def _on_plan_result(self, msg: PlanResult) -> None:
        future = self._answers.pop(msg.request_id, None)
        if future is not None and not future.done():
            future.set_result(json.loads(msg.report_json or "{}"))

    async def _run_routine(self, handle):
        goal = handle.request
        try:
            steps = routine_steps(self.memory, goal.person, goal.routine, goal.steps_json)
        except RoutineError as exc:
            handle.abort()
            return RunRoutine.Result(success=False, message=str(exc))
        tally = RoutineTally(len(steps))
        for index, step in enumerate(steps):
            if handle.is_cancel_requested:
                handle.canceled()
                return self._routine_result(tally, cancelled=True)
            report = await self._ask_plan(one_step_plan(goal.routine, index, step))
            if report is None:
                handle.abort()
                result = self._routine_result(tally)
                result.message = f"step {index + 1} ({step.get('appliance')}.{step.get('feature')}): no plan_result within " \
                                 f"{self.step_timeout_s:g} s — is the appliance node running?"
                return result
            outcome = tally.add(index, step, report)
            handle.publish_feedback(RunRoutine.Feedback(step=index + 1, total=len(steps), appliance=str(step.get("appliance", "")),
                                                        feature=str(step.get("feature", "")), outcome=outcome))
        handle.succeed()
        return self._routine_result(tally)

    async def _ask_plan(self, plan_json: str) -> dict | None:
        """One ``home/plan`` and its ``home/plan_result`` (``None`` after ``step_timeout_s``)."""
        if not await self._appliance_listening():
            return None
        request_id = f"assistant-{uuid.uuid4().hex[:12]}"
        answer = Future()
        self._answers[request_id] = answer

        def give_up():
            timer.cancel()
            if not answer.done():
                self._answers.pop(request_id, None)
                answer.set_result(None)

        timer = self.create_timer(self.step_timeout_s, give_up)
        self.plan_pub.publish(HomePlan(request_id=request_id, plan_json=plan_json, apply=True))
        report = await answer
        self.destroy_timer(timer)
        return report

    async def _appliance_listening(self) -> bool:
        """Wait (up to ``step_timeout_s``) until discovery has matched ``home/plan`` to a subscriber:
        a plan published before that is lost."""
        matched, start = Future(), time.monotonic()

        def check():
            count = self.plan_pub.get_subscription_count()
            if not matched.done() and (count or time.monotonic() - start > self.step_timeout_s):
                matched.set_result(count > 0)

        timer = self.create_timer(0.05, check)
        listening = await matched
        self.destroy_timer(timer)
        return listening

    @staticmethod
    def _routine_result(tally: RoutineTally, cancelled: bool = False) -> RunRoutine.Result:
        ok = tally.count("ok")
        return RunRoutine.Result(success=not cancelled and ok == tally.total, done=ok, refused=tally.count("refused"),
                                 failed=tally.count("failed"), message=tally.summary(cancelled),
                                 report_json=json.dumps(tally.outcomes))


def main(args=None) -> None:
    run_node(AssistantNode, args)


if __name__ == "__main__":
    main()

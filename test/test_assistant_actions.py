"""ROS 2 actions of the assistant node, driven by a real rclpy ActionClient: RunRoutine runs a
person's routine from the household memory through the appliance node step by step, with
feedback per step, the safety layer's refusals counted, and cancel between steps."""
import json

import pytest

from conftest import cancel_goal, wait_for

pytest.importorskip("rclpy")

THERMO = {"appliance": "thermostat", "feature": "set_target_temperature", "category": ["WELL_BEING"], "args": {"temperature_f": 70}}
UNLOCK = {"appliance": "door-lock", "feature": "unlock", "category": ["ROUTINE"], "args": {"user": "guest"}}
LOUD = {"appliance": "speaker", "feature": "set_volume", "category": ["ROUTINE"], "args": {"volume": 20}}  # outside [0, 10]


def _client(ros_context):
    from personal.action import RunRoutine

    client = ros_context.action_client(f"routine_client_{len(ros_context.nodes)}", RunRoutine, "assistant/run_routine")
    assert client.wait_for_server(timeout_sec=30), "assistant/run_routine never came up"
    _wait_until_feedback_flows(ros_context, client)
    return client


def _wait_until_feedback_flows(ros_context, client, timeout: float = 30.0) -> None:
    """The goal service can be up before discovery has matched the server's feedback publisher to this
    client: a fast routine's feedback would then be lost (once, in a full run: 40 steps done before the
    match). One-step goals until one's feedback arrives."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        feedback = []
        handle = _send(ros_context, client, feedback, person="Anna", routine="warm-up", steps_json=json.dumps([THERMO]))
        done = handle.get_result_async()
        wait_for(done.done, 30)
        if feedback or wait_for_or_none(lambda: feedback, 0.5):
            return
    raise AssertionError(f"no RunRoutine feedback reached the client within {timeout:g} s")


def wait_for_or_none(predicate, timeout: float):
    try:
        return wait_for(predicate, timeout)
    except TimeoutError:
        return None


def _send(ros_context, client, feedback, **goal):
    from personal.action import RunRoutine

    return ros_context.send_goal(client, RunRoutine.Goal(**goal), feedback)


def _start(run_node, tmp_path, routine):
    from personal.memory.store import HouseholdMemory

    with HouseholdMemory(tmp_path / "hh0007.sqlite") as mem:
        mem.set_preference("Anna", "routine", "evening", json.dumps(routine))
    appliance = run_node("nodes.appliance_node", "appliance_node", {"seed": 7})
    appliance.wait_for_log("appliances")
    run_node("nodes.assistant_node", "assistant", {"memory_dir": str(tmp_path), "household": "hh0007"}).wait_for_log(
        "assistant ready")


def test_run_routine_reports_every_step_and_the_safety_layer_refusals(ros_context, run_node, tmp_path):
    _start(run_node, tmp_path, [THERMO, UNLOCK, LOUD])
    client, feedback = _client(ros_context), []
    handle = _send(ros_context, client, feedback, person="Anna", routine="evening")
    done = handle.get_result_async()
    wait_for(done.done, 60)
    result = done.result().result
    assert (result.done, result.refused, result.failed, result.success) == (1, 1, 1, False), result
    assert [(f.step, f.total, f.outcome) for f in feedback] == [(1, 3, "ok"), (2, 3, "refused"), (3, 3, "failed")]
    rows = json.loads(result.report_json)
    assert "nobody" in rows[1]["message"] and "outside" in rows[2]["message"]

    handle = _send(ros_context, client, [], person="Anna", routine="morning")  # not in the memory
    done = handle.get_result_async()
    wait_for(done.done, 30)
    assert not done.result().result.success and "no routine 'morning'" in done.result().result.message


def test_run_routine_cancel_stops_between_steps(ros_context, run_node, tmp_path):
    _start(run_node, tmp_path, [THERMO] * 40)
    client, feedback = _client(ros_context), []
    handle = _send(ros_context, client, feedback, person="Anna", routine="evening")
    wait_for(lambda: len(feedback) >= 2, 60)
    result = cancel_goal(handle)
    assert 2 <= result.done < 40 and "cancelled" in result.message and not result.success


def test_personal_assistant_cli_streams_feedback_and_exits_with_the_projects_codes(run_node, tmp_path):
    """`personal assistant routine ...` against the running node: a line per step, the result, exit 3 (steps
    refused / failed); no server: exit 1 naming the action; bad arguments: exit 2."""
    import os
    import subprocess
    import sys

    from personal import exit_codes

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "personal", "assistant", *args], capture_output=True, text=True,
                              env=dict(os.environ), timeout=90)

    missing = cli("--wait", "1", "routine", "Anna", "evening")
    assert missing.returncode == exit_codes.FAILED and "assistant/run_routine not served" in missing.stderr
    assert cli("find").returncode == exit_codes.BAD_INPUT
    _start(run_node, tmp_path, [THERMO, UNLOCK, LOUD])
    done = cli("routine", "Anna", "evening")
    assert done.returncode == exit_codes.INCOMPLETE, done.stdout + done.stderr
    from nodes.assistant_client import MISSED

    lines = done.stdout.splitlines()  # a step whose feedback was lost is printed from the result, marked
    assert sorted(line.replace(MISSED, "") for line in lines[:3]) == [
        "step 1/3: thermostat.set_target_temperature ok", "step 2/3: door-lock.unlock refused",
        "step 3/3: speaker.set_volume failed"], lines
    assert lines[3].startswith("done 1, refused 1, failed 1")


def test_missed_feedback_steps_are_printed_from_the_result_and_marked():
    from types import SimpleNamespace

    from nodes.assistant_client import MISSED, missed_steps

    rows = [{"step": 1, "appliance": "thermostat", "feature": "set_target_temperature", "outcome": "ok"},
            {"step": 2, "appliance": "door-lock", "feature": "unlock", "outcome": "refused"}]
    result = SimpleNamespace(report_json=json.dumps(rows), done=1, refused=1, failed=0)
    assert missed_steps("routine", {2}, result) == [f"step 1/2: thermostat.set_target_temperature ok{MISSED}"]
    assert missed_steps("routine", {1, 2}, result) == [] and missed_steps("find", set(), result) == []


def test_wait_result_asks_again_when_the_goal_is_over_but_its_result_was_lost():
    """The first result response never comes (its writer had not matched this client); the goal's
    status says it is over, so after retry_after_s the result is asked again, and answered."""
    from types import SimpleNamespace

    from action_msgs.msg import GoalStatus

    from nodes.goals import wait_result

    class Handle:
        status = GoalStatus.STATUS_EXECUTING
        asked = 0

        def get_result_async(self):
            self.asked += 1
            return SimpleNamespace(done=lambda: self.asked > 1, result=lambda: "the result")

    handle, spins = Handle(), []

    def spin():
        spins.append(1)
        if len(spins) == 3:
            handle.status = GoalStatus.STATUS_SUCCEEDED

    assert wait_result(None, handle, retry_after_s=0.01, spin=spin) == "the result"
    assert handle.asked == 2 and len(spins) >= 4

    ticks, asked = [], []

    class Running(Handle):  # no terminal status: one request, however long the goal takes
        def get_result_async(self):
            asked.append(1)
            return SimpleNamespace(done=lambda: len(ticks) > 50, result=lambda: "late")

    assert wait_result(None, Running(), retry_after_s=0.0, spin=lambda: ticks.append(1)) == "late" and len(asked) == 1


def test_find_object_sends_nav_start_again_when_the_first_is_lost(ros_context):
    """The navigation double drops the first nav/start (as Fast DDS can when its publisher has only just
    seen the subscriber) and answers the second: the goal ends with the run's answer, not with a
    'no nav/progress' abort a minute later."""
    from rclpy.parameter import Parameter

    from nodes.assistant_node import AssistantNode
    from pan_fakes import NavigationLosingFirstStart
    from personal.action import FindObject
    from personal.msg import NavigationRun

    ros_context.add_node(AssistantNode(context=ros_context.context, parameter_overrides=[
        Parameter("reset_service", value=""), Parameter("start_resend_s", value=0.5)]))
    nav = NavigationLosingFirstStart(ros_context.make_node("navigation_double"), steps=7, run=lambda start: NavigationRun(
        episode_id=start.episode_id, policy=start.policy, steps=7, stopped=False))
    client = ros_context.action_client("find_client", FindObject, "assistant/find_object")
    assert client.wait_for_server(timeout_sec=20)
    wait_for(lambda: nav.progress.get_subscription_count() and nav.result.get_subscription_count(), 10)
    done = ros_context.send_goal(client, FindObject.Goal(query="Find Vera's vase.", max_steps=7)).get_result_async()
    wait_for(done.done, 20)
    answer = done.result().result
    assert answer.why == "not found within 7 steps" and answer.steps == 7, answer.why
    assert len(nav.starts) == 2 and nav.starts[0] == nav.starts[1]  # the same start, sent again once


def test_navigation_node_ignores_a_repeated_start_of_the_run_in_progress(ros_context):
    from rclpy.parameter import Parameter

    from nodes.navigation_node import NavigationNode
    from personal.msg import NavigationStart

    node = NavigationNode(context=ros_context.context, parameter_overrides=[Parameter("autostart", value=False)])
    try:
        start = NavigationStart(episode_id="e1", policy="random-frontier", max_steps=9, query="Find Ana's box.")
        node.on_start(start)
        first = node.run
        node.on_start(NavigationStart(episode_id="e1", policy="random-frontier", max_steps=9, query="Find Ana's box."))
        assert node.run is first and not first.done  # a repeat: the run goes on
        node.on_start(NavigationStart(episode_id="e1", policy="random-frontier", max_steps=9, query="Find Ana's bag."))
        assert node.run is not first and first.done  # another task supersedes it
    finally:
        node.destroy_node()


def test_a_service_call_sent_before_the_server_existed_is_said_again_and_answered(ros_context):
    """nodes.goals.call_until_answered, as the PAN evaluator's episode/load and FindObject's
    episode/reset use it: rclpy's call_async alone waits forever for a request no server read; said
    again, it is answered; a cancelled one stops being said."""
    from std_srvs.srv import Trigger

    from nodes.goals import call_until_answered

    node = ros_context.make_node("early_caller")
    client = node.create_client(Trigger, "probe/reset")
    once = client.call_async(Trigger.Request())
    again = call_until_answered(node, client, Trigger.Request(), resend_s=0.3)
    stopped = call_until_answered(node, node.create_client(Trigger, "probe/never"), Trigger.Request(), resend_s=0.1)
    stopped.cancel()
    calls = []

    def reset(request, response):
        calls.append(request)
        response.success, response.message = True, f"reset {len(calls)}"
        return response

    ros_context.make_node("late_server").create_service(Trigger, "probe/reset", reset)
    wait_for(again.done, 20)
    assert again.result().success and again.result().message.startswith("reset ")
    assert not once.done()  # the request sent once is lost for good
    assert stopped.cancelled() and not list(node.timers)  # both resend timers gone: answered, cancelled


def test_a_goal_sent_before_the_server_matched_is_said_again_and_answered(ros_context):
    """A goal request that reaches no server reader is lost (here: sent before the server exists; in CI,
    once, sent while discovery was one-sided, and the test waited 20 s for an answer). nodes.goals.send_goal
    says it again under the same goal id until answered; rclpy's send_goal_async alone waits forever."""
    from nodes.goals import send_goal
    from personal.action import RunRoutine

    client = ros_context.action_client("early_client", RunRoutine, "probe/run_routine")
    once = client.send_goal_async(RunRoutine.Goal(person="Anna", routine="once"))
    again = send_goal(ros_context.node_of(client), client, RunRoutine.Goal(person="Anna", routine="again"), resend_s=0.3)
    goals = _echo_routine_server(ros_context, "late_server", "probe/run_routine")
    wait_for(again.done, 20)
    assert again.result().accepted
    done = again.result().get_result_async()
    wait_for(done.done, 20)
    assert done.result().result.message == "again" and goals == ["again"]  # said again, run once
    assert not once.done()  # the request sent once is lost for good


def test_a_goal_whose_accepted_answer_is_lost_is_not_taken_for_rejected(ros_context):
    """The first request reaches the server and is accepted, but its answer is lost (in CI, once: the goal
    ran and sent feedback while the client saw "rejected"); the request said again is turned down as a
    duplicate. nodes.goals.send_goal reads the action's status topic: the server holds the goal, so the
    handle says accepted, and its result comes by goal id."""
    from rclpy.task import Future

    from nodes.goals import send_goal
    from personal.action import RunRoutine

    goals = _echo_routine_server(ros_context, "lossy_server", "probe/lossy_routine")
    client = ros_context.action_client("lossy_client", RunRoutine, "probe/lossy_routine")
    assert client.wait_for_server(timeout_sec=20)

    class FirstAnswerLost:
        """The client, except that the answer to the first goal request never arrives."""
        calls = 0

        def send_goal_async(self, goal, feedback_callback=None, goal_uuid=None):
            FirstAnswerLost.calls += 1
            sent = client.send_goal_async(goal, feedback_callback, goal_uuid=goal_uuid)
            return Future() if FirstAnswerLost.calls == 1 else sent

        def __getattr__(self, name):
            return getattr(client, name)

    sent = send_goal(ros_context.node_of(client), FirstAnswerLost(), RunRoutine.Goal(person="Anna", routine="lossy"),
                     resend_s=0.5)
    wait_for(sent.done, 20)
    assert FirstAnswerLost.calls == 2 and sent.result().accepted
    done = sent.result().get_result_async()
    wait_for(done.done, 20)
    assert done.result().result.message == "lossy" and goals == ["lossy"]  # run once


def _echo_routine_server(ros_context, node_name: str, action_name: str) -> list:
    """A RunRoutine server (the project's guarded one) that succeeds at once, answering the routine's name;
    the names it ran, in order."""
    from nodes.lifecycle import serve_action
    from personal.action import RunRoutine

    goals = []

    async def execute(handle):
        goals.append(handle.request.routine)
        handle.succeed()
        return RunRoutine.Result(success=True, message=handle.request.routine)

    serve_action(ros_context.make_node(node_name), RunRoutine, action_name, execute)
    return goals

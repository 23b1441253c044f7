"""FindObject and VerifyObject over a real sim bridge + navigation node, driven by a real rclpy
ActionClient: feedback arrives, the result comes, cancel stops the run; the household memory gets
the found object's last-seen pose and the candidates the verifier rejected.

The navigation node runs the ORACLE caption encoder (ground-truth captions embedded with MiniLM)
to keep the runs short; the verifier never reads instance ids. Episodes (generated, split easy):
seed 2 "Find Leo's washing machine." — value-map-rpg-owner+verify stops after ~140 steps on a
candidate the verifier accepts; seed 0 "Find Vera's vase." — the verifier turns a candidate down at
step ~34 (unsure, with reject_unsure) and the search goes on (cancelled here)."""
import pytest

from conftest import cancel_goal, wait_for

pytest.importorskip("rclpy")
pytestmark = pytest.mark.timeout(90)


def _graph(run_node, tmp_path, seed: int):
    bridge = run_node("sim_bridge.bridge_node", "sim_bridge", {"seed": seed, "scenes": 1, "episodes_per_scene": 1, "split": "easy",
                                                               "rate": 2.0})
    nav = run_node("nodes.navigation_node", "navigation", {"seed": seed, "scenes": 1, "autostart": False,
                                                          "encoder": "oracle", "reject_unsure": True})
    assistant = run_node("nodes.assistant_node", "assistant", {"memory_dir": str(tmp_path), "household": "hh"})
    assistant.wait_for_log("assistant ready", timeout=30)
    bridge.wait_for_log("episode 1/1", timeout=30)
    return nav, assistant


def _client(ros_context, action_type, name):
    client = ros_context.action_client(f"assistant_client_{len(ros_context.nodes)}", action_type, name)
    assert client.wait_for_server(timeout_sec=30), f"{name} never came up"
    return client


def _memory(tmp_path):
    from personal.memory.store import HouseholdMemory

    return HouseholdMemory(tmp_path / "hh.sqlite", create=False)


def test_find_object_verifies_before_it_succeeds_and_remembers_where(ros_context, run_node, tmp_path):
    from personal.action import FindObject

    _, assistant = _graph(run_node, tmp_path, seed=2)
    client, feedback = _client(ros_context, FindObject, "assistant/find_object"), []
    goal = FindObject.Goal(query="Find Leo's washing machine.", requester="Leo", max_steps=170, verify=True)
    handle = ros_context.send_goal(client, goal, feedback)
    done = handle.get_result_async()
    wait_for(done.done, 75)
    result = done.result().result
    assert result.success and result.verified, (result.why, assistant.log()[-3000:])
    assert 0 < result.steps <= 170 and result.confidence > 0 and "verified" in result.why
    steps = [f.steps for f in feedback]
    assert len(feedback) > 20 and steps == sorted(steps) and steps[-1] <= result.steps
    assert any(f.status == "approaching" for f in feedback) and any(f.best_candidate for f in feedback)
    with _memory(tmp_path) as mem:
        (found,) = [o for o in mem.objects() if o.category != "candidate"]
        seen = mem.last_seen(found.id)
        assert (round(seen.x, 2), round(seen.y, 2)) == (round(result.pose.pose.position.x, 2),
                                                        round(result.pose.pose.position.y, 2))
        assert seen.source == "verification"


def test_find_object_cancel_stops_the_run_and_keeps_the_rejected_candidate(ros_context, run_node, tmp_path):
    from personal.action import FindObject

    nav, _ = _graph(run_node, tmp_path, seed=0)
    client, feedback = _client(ros_context, FindObject, "assistant/find_object"), []
    handle = ros_context.send_goal(client, FindObject.Goal(query="Find Vera's vase.", max_steps=400, verify=True), feedback)
    wait_for(lambda: any(f.status == "rejected candidate" for f in feedback), 60)
    result = cancel_goal(handle, 20)
    assert "cancelled" in result.why and not result.success
    nav.wait_for_log("failure: cancelled", timeout=10)  # the navigation run itself ended
    with _memory(tmp_path) as mem:
        # the candidate is turned down as "unsure" (reject_unsure): its colours are a part's, which
        # alone cannot say no on a proposal mask (verify_stop part_rejects) — a verdict, not a "no"
        candidates = [o for o in mem.objects() if o.category == "candidate"]
        assert candidates, "the rejected candidate is an object in the memory"
        verdicts = mem.verdicts("Find Vera's vase.")
        assert verdicts.get(candidates[0].id) in ("no", "unsure"), verdicts


def test_verify_object_reports_each_view_and_a_verdict_and_cancels(ros_context, run_node, tmp_path):
    from action_msgs.msg import GoalStatus

    from personal.action import VerifyObject
    from personal.sim.bridge_logic import generate_episodes

    scenes, episodes = generate_episodes("easy", 1, 2, 1)
    target = scenes[episodes[0].scene_id].object(episodes[0].target_object_ids[0])
    _graph(run_node, tmp_path, seed=2)
    client, feedback = _client(ros_context, VerifyObject, "assistant/verify_object"), []
    goal = VerifyObject.Goal(query=f"Leo's {target.color} {target.category}", max_views=4)
    goal.candidate.header.frame_id = "map"
    goal.candidate.point.x, goal.candidate.point.y = float(target.box.center[0]), float(target.box.center[1])
    done = ros_context.send_goal(client, goal, feedback).get_result_async()
    wait_for(done.done, 40)
    result = done.result().result
    assert done.result().status == GoalStatus.STATUS_SUCCEEDED, result.why
    assert result.verdict in ("yes", "no", "unsure") and 1 <= result.views <= 4
    assert [f.views for f in feedback] == list(range(1, result.views + 1))
    assert "view(s)" in result.why

    feedback.clear()
    goal.max_views = 50
    goal.candidate.point.x, goal.candidate.point.y = 100.0, 100.0  # outside the house: every view unsure, no early stop
    handle = ros_context.send_goal(client, goal, feedback)
    wait_for(lambda: feedback, 30)
    cancel = handle.cancel_goal_async()
    wait_for(cancel.done, 20)
    done = handle.get_result_async()
    wait_for(done.done, 20)
    assert done.result().status == GoalStatus.STATUS_CANCELED and "cancelled" in done.result().result.why


def test_goals_abort_naming_the_node_that_does_not_answer(ros_context, run_node, tmp_path):
    from action_msgs.msg import GoalStatus

    from personal.action import FindObject, VerifyObject

    run_node("nodes.assistant_node", "assistant", {"service_timeout_s": 1.0, "view_timeout_s": 1.0}).wait_for_log(
        "assistant ready", timeout=30)
    find = _client(ros_context, FindObject, "assistant/find_object")
    for goal, why in ((FindObject.Goal(query="Find my mug."), "names no requester"),
                      (FindObject.Goal(query="Find Ana's mug."), "is the sim bridge running?")):
        done = ros_context.send_goal(find, goal, []).get_result_async()
        wait_for(done.done, 20)
        assert done.result().status == GoalStatus.STATUS_ABORTED and why in done.result().result.why
    verify = _client(ros_context, VerifyObject, "assistant/verify_object")
    done = ros_context.send_goal(verify, VerifyObject.Goal(query="Ana's red mug"), []).get_result_async()
    wait_for(done.done, 20)
    assert done.result().status == GoalStatus.STATUS_ABORTED and "no agent_state" in done.result().result.why

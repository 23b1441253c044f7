"""HandOver: a person's manipulation preferences from the household memory go into the policy's
prompt. The rollout is scored with the PeRM metrics. A real rclpy ActionClient drives the assistant
node, the tabletop simulator (kinematic stand-in) and the policy node (scripted ORACLE), all
in-process, with feedback and cancel."""
from __future__ import annotations

import json

import pytest

from personal.assistant.handover import HandOverError, handover_task
from personal.memory.store import HouseholdMemory


@pytest.fixture
def memory(tmp_path):
    with HouseholdMemory(tmp_path / "hh.sqlite") as mem:
        mem.set_preference("Tom", "manipulation", "any", "slow_down")
        mem.set_preference("Tom", "manipulation", "mat", "move_higher")
        mem.set_preference("Lily", "manipulation", "any", "grasp_by_handle,prefer_red")
        mem.set_preference("Eve", "manipulation", "any", "be_gentle")
        yield mem


def test_the_memory_gives_the_prompt_a_mission_entry_winning_over_any(memory):
    bin_task = handover_task(memory, "Tom", "bin", 3)
    assert bin_task.task.prefs == ("slow_down",) and bin_task.task.suite == "single" and bin_task.task.seed == 3
    assert "Task: put a block in the bin. Preference:" in bin_task.prompt and "any" in bin_task.source
    assert handover_task(memory, "Tom", "mat", 0).task.prefs == ("move_higher",)
    lily = handover_task(memory, "Lily", "bin", 0)  # a block has no handle: left out, and said so
    assert lily.task.prefs == ("prefer_red",) and lily.left_out == ("grasp_by_handle",)
    assert handover_task(memory, "Lily", "handle", 0).task.prefs == ("grasp_by_handle",)
    nobody = handover_task(memory, "Anna", "bin", 0)
    assert nobody.task.suite == "none" and nobody.prompt == "Task: put a block in the bin." and "Anna has no" in nobody.source
    override = handover_task(memory, "Tom", "bin", 0, "speed_up, prefer_red")
    assert override.task.prefs == ("speed_up", "prefer_red") and override.task.suite == "compose"
    assert handover_task(None, "Tom", "bin", 0).task.prefs == ()


def test_bad_goals_and_memory_entries_are_named(memory):
    with pytest.raises(HandOverError, match="Eve's manipulation.any.*'be_gentle'"):
        handover_task(memory, "Eve", "bin", 0)
    with pytest.raises(HandOverError, match="goal field 'preference'.*'fast'"):
        handover_task(memory, "Tom", "bin", 0, "fast")
    with pytest.raises(HandOverError, match="mission 'shelf' unknown"):
        handover_task(memory, "Tom", "shelf", 0)
    with pytest.raises(HandOverError, match="at most two"):
        handover_task(memory, "Tom", "bin", 0, "speed_up,prefer_red,keep_away")


# -- over ROS ---------------------------------------------------------------------------------


def _graph(ros_context, tmp_path, with_arm: bool = True, **assistant):
    from rclpy.parameter import Parameter

    from nodes.assistant_node import AssistantNode
    from nodes.policy_node import PolicyNode
    from nodes.tabletop_sim_node import TabletopSimNode

    def params(**kw):
        return [Parameter(k, value=v) for k, v in kw.items()]

    ctx = ros_context.context
    with HouseholdMemory(tmp_path / "hh.sqlite") as mem:
        mem.set_preference("Tom", "manipulation", "any", "move_higher")
    if with_arm:
        ros_context.add_node(TabletopSimNode(context=ctx, parameter_overrides=params(backend="kinematic", image_every=5)))
        ros_context.add_node(PolicyNode(context=ctx, parameter_overrides=params(backend="scripted")))
    ros_context.add_node(AssistantNode(context=ctx, parameter_overrides=params(
        memory_dir=str(tmp_path), household="hh", arm_policy="scripted", arm_backend="kinematic", **assistant)))
    from personal.action import HandOver

    client = ros_context.action_client(f"handover_client_{len(ros_context.nodes)}", HandOver, "assistant/hand_over")
    assert client.wait_for_server(timeout_sec=30), "assistant/hand_over never came up"
    return client


def _goal(ros_context, client, feedback, **fields):
    from personal.action import HandOver

    return ros_context.send_goal(client, HandOver.Goal(**fields), feedback)


def test_hand_over_runs_toms_preference_and_scores_it_as_the_perm_benchmark_does(ros_context, tmp_path):
    from conftest import wait_for
    from personal.manipulation.backends import make_backend
    from personal.manipulation.runner import run_episode
    from personal.manipulation.policies import make_policy
    from personal.manipulation.scoring import score_episode

    client, feedback = _graph(ros_context, tmp_path, arm_feedback_every=10), []
    done = _goal(ros_context, client, feedback, person="Tom", mission="mat", seed=1).get_result_async()
    wait_for(done.done, 90)
    r = done.result().result
    assert r.success and r.preferences == "move_higher" and "Preference:" in r.prompt, r
    assert "Tom's manipulation.any" in r.message and "scripted ORACLE" in r.message  # the oracle policy is named
    assert [f.status for f in feedback[:1]] == ["starting"] and any(f.status == "running" for f in feedback)
    # the same task in process, on the same simulator and policy: the same outcome and degree
    task = handover_task(HouseholdMemory(tmp_path / "hh.sqlite"), "Tom", "mat", 1).task
    run = run_episode(make_backend("kinematic"), make_policy("scripted"), task, max_steps=400, images=False)
    expected = score_episode(run.trajectory, task.layout, task_id=task.task_id, suite=task.suite, measured=task.measured,
                             prompted=True, prompt=task.prompt)
    assert json.loads(r.satisfied_json) == expected.d and r.sa == pytest.approx(expected.sa)
    assert abs(int(r.steps) - expected.steps) <= 2, (r.steps, expected.steps)

    again = _goal(ros_context, client, [], person="Tom", mission="mat", seed=1).get_result_async()  # the same task twice
    wait_for(again.done, 90)
    assert again.result().result.success and again.result().result.satisfied_json == r.satisfied_json


def test_hand_over_cancel_stops_the_arm(ros_context, tmp_path):
    from conftest import cancel_goal, wait_for

    client, feedback = _graph(ros_context, tmp_path, arm_feedback_every=2), []
    handle = _goal(ros_context, client, feedback, person="Tom", mission="bin", seed=0, preference="slow_down")
    wait_for(lambda: any(f.status == "running" for f in feedback), 60)
    result = cancel_goal(handle)
    assert not result.success and "cancelled at step" in result.message and result.preferences == "slow_down"


def test_hand_over_without_an_arm_or_with_a_bad_goal_aborts_naming_why(ros_context, tmp_path):
    from action_msgs.msg import GoalStatus

    from conftest import wait_for

    client = _graph(ros_context, tmp_path, with_arm=False, arm_start_timeout_s=1.0)
    for fields, why in (({"person": "Tom", "mission": "bin"}, "nothing subscribes to perm/episode"),
                        ({"person": "Tom", "mission": "shelf"}, "mission 'shelf' unknown")):
        done = _goal(ros_context, client, [], **fields).get_result_async()
        wait_for(done.done, 30)
        assert done.result().status == GoalStatus.STATUS_ABORTED and why in done.result().result.message

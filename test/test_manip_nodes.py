"""ROS nodes of the perm_eval graph, in-process on the kinematic stand-in (no robosuite): the whole
episode loop end to end, and the policy node surviving malformed messages."""
from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("rclpy")
from rclpy.parameter import Parameter  # noqa: E402
from sensor_msgs.msg import Image  # noqa: E402
from std_msgs.msg import Float32MultiArray  # noqa: E402

from conftest import wait_for  # noqa: E402
from nodes.perm_evaluator_node import LATCHED, PermEvaluatorNode  # noqa: E402
from nodes.policy_node import PolicyNode  # noqa: E402
from nodes.tabletop_sim_node import TabletopSimNode  # noqa: E402
from personal.interfaces.convert import from_dict  # noqa: E402
from personal.interfaces.tabletop import layout_fields  # noqa: E402
from personal.manipulation.suite import make_layout  # noqa: E402
from personal.msg import TabletopLayout, TaskPrompt  # noqa: E402


def _params(**kw):
    return [Parameter(k, value=v) for k, v in kw.items()]


def test_graph_nodes_run_episodes_and_write_report(ros_context, tmp_path):
    ctx = ros_context.context
    ros_context.add_node(TabletopSimNode(context=ctx, parameter_overrides=_params(backend="kinematic", image_every=5)))
    ros_context.add_node(PolicyNode(context=ctx, parameter_overrides=_params(backend="scripted")))
    ev = ros_context.add_node(PermEvaluatorNode(context=ctx, parameter_overrides=_params(
        missions="mat", prefs="prefer_blue,move_higher", seeds="0", suites="none,single", out_dir=str(tmp_path),
        strips=1, start_delay=0.5, policy="scripted", backend="kinematic")))
    wait_for(lambda: ev.finished, timeout=60)
    rows = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 4 and all(r["success"] for r in rows)
    single = {r["measured"][0]: r for r in rows if r["suite"] == "single"}
    assert single["prefer_blue"]["d"]["prefer_blue"] == 1.0 and single["move_higher"]["d"]["move_higher"] == 1.0
    report = (tmp_path / "report.md").read_text()
    assert "| prefer_blue | user_profile |" in report and list(tmp_path.glob("strip_*.png"))
    assert "scripted ORACLE" in report and "OUT OF DISTRIBUTION" not in report  # the graph's policy, not a default
    assert json.loads((tmp_path / "run.json").read_text())["distribution"]["simulator"] == "kinematic"
    from report_browser import check_report

    check_report(tmp_path, ["PeRM: rollout frames", "SR explicit", "Full report"], "perm_eval_report", min_images=2)
    strip = next(iter(ev.frames.values()))
    assert len(strip) >= 3 and strip[-1][0] == rows[0]["steps"] - 1  # every 20th step, then the last one


def test_rollouts_without_a_simulator_state_make_the_run_incomplete(ros_context, tmp_path):
    """A simulator that subscribes but never answers: no task is scored, the report says which were not
    (it used to log "scored as failed", score nothing and exit 0), and the exit code is INCOMPLETE."""
    from personal import exit_codes
    from personal.msg import PermEpisode, TaskPrompt

    ctx = ros_context.context
    silent = ros_context.make_node("silent_simulator")
    episodes = []
    silent.create_subscription(PermEpisode, "perm/episode", episodes.append, 10)
    silent.create_subscription(TaskPrompt, "perm/prompt", lambda m: None, LATCHED)
    ev = ros_context.add_node(PermEvaluatorNode(context=ctx, parameter_overrides=_params(
        missions="mat", prefs="prefer_blue", seeds="0", suites="single", out_dir=str(tmp_path),
        strips=0, start_delay=0.0, episode_timeout=1.0, policy="scripted", backend="kinematic")))
    wait_for(lambda: ev.finished, timeout=30)
    assert episodes and ev.exit_code == exit_codes.INCOMPLETE and ev.results == []
    report = (tmp_path / "report.md").read_text()
    assert "INCOMPLETE RUN" in report and "1 of 1 tasks not scored" in report, report[:1500]


def test_policy_node_survives_malformed_messages(ros_context):
    ctx = ros_context.context
    policy = ros_context.add_node(PolicyNode(context=ctx, parameter_overrides=_params(backend="scripted")))
    probe = ros_context.make_node("probe")
    actions = []
    probe.create_subscription(Float32MultiArray, "perm/action", lambda m: actions.append(np.array(m.data)), 10)
    pub_state = probe.create_publisher(Float32MultiArray, "perm/robot_state", 10)
    pub_img = probe.create_publisher(Image, "perm/agentview_image", 10)
    pub_layout = probe.create_publisher(TabletopLayout, "perm/oracle/layout", LATCHED)
    pub_prompt = probe.create_publisher(TaskPrompt, "perm/prompt", LATCHED)
    wait_for(lambda: pub_state.get_subscription_count() > 0 and pub_layout.get_subscription_count() > 0)
    layout = make_layout("bin", 0)
    pub_layout.publish(from_dict(TabletopLayout, layout_fields(layout.to_dict(), "t0")))
    pub_prompt.publish(TaskPrompt(task_id="t0", prompt="Task: put a block in the bin. Preference: Move faster."))
    bad_img = Image(height=128, width=128, encoding="rgb8", step=384, data=bytes(10))
    pub_img.publish(bad_img)
    pub_state.publish(Float32MultiArray(data=[0.1, 0.2, float("nan"), 0.0, 0.0, 0.0, 0.0, 0.0]))
    pub_state.publish(Float32MultiArray(data=[0.1, 0.2]))
    wait_for(lambda: policy.errors >= 3)
    assert not actions
    wait_for(lambda: policy.layout is not None and policy.prompt)
    assert json.loads(policy.layout) == json.loads(json.dumps(layout.to_dict()))  # the typed layout round-trips
    pub_state.publish(Float32MultiArray(data=[-0.1, 0.0, 1.0, 3.14, 0.0, 0.0, 0.04, -0.04]))
    wait_for(lambda: actions)
    assert actions[0].shape == (7,) and np.all(np.isfinite(actions[0]))


def test_policy_node_serves_openpi_protocol(ros_context):
    from openpi_client.websocket_client_policy import WebsocketClientPolicy

    from personal.manipulation.backends import make_backend
    from personal.manipulation.policies.base import make_observation

    node = ros_context.add_node(PolicyNode(context=ros_context.context,
                                           parameter_overrides=_params(backend="scripted", serve_port=0)))
    client = WebsocketClientPolicy(host="127.0.0.1", port=node.server.port)
    assert client.get_server_metadata()["policy"] == "oracle_scripted"
    layout = make_layout("mat", 1)
    obs = make_observation(make_backend("kinematic").reset(layout), "Task: put a block on the mat.", layout)
    assert client.infer(obs)["actions"].shape == (1, 7)


def test_policy_node_learned_backend_uses_environment_state(ros_context):
    """The default backend is the learned policy: without perm/environment_state it logs an error and
    waits; with it, it answers each robot state with an action (and never needs the oracle topics)."""
    from personal.manipulation.learned.features import environment_state

    ctx = ros_context.context
    policy = ros_context.add_node(PolicyNode(context=ctx, parameter_overrides=_params()))
    assert policy.policy.name == "learned_bc" and not policy.oracle_inputs
    probe = ros_context.make_node("probe_learned")
    actions = []
    probe.create_subscription(Float32MultiArray, "perm/action", lambda m: actions.append(np.array(m.data)), 10)
    pub_state = probe.create_publisher(Float32MultiArray, "perm/robot_state", 10)
    pub_env = probe.create_publisher(Float32MultiArray, "perm/environment_state", 10)
    pub_prompt = probe.create_publisher(TaskPrompt, "perm/prompt", LATCHED)
    wait_for(lambda: pub_state.get_subscription_count() > 0 and pub_env.get_subscription_count() > 0)
    pub_prompt.publish(TaskPrompt(task_id="t1", prompt="Task: put a block in the bin. Preference: Move slowly."))
    wait_for(lambda: policy.prompt)
    state = [-0.1028, 0.0, 1.011, 2.155, 2.156, 0.137, 0.0207, -0.0207]  # robosuite's home pose
    pub_state.publish(Float32MultiArray(data=state))
    wait_for(lambda: policy.errors >= 1)  # no environment state yet: logged, no action
    assert not actions
    env = environment_state(make_layout("bin", 0))
    pub_env.publish(Float32MultiArray(data=[float(v) for v in env]))
    wait_for(lambda: policy.env_state is not None)
    pub_state.publish(Float32MultiArray(data=state))
    wait_for(lambda: actions)
    assert actions[0].shape == (7,) and np.all(np.abs(actions[0]) <= 1)

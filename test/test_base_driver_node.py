"""Base driver node against the kinematic base node, over topics."""
from __future__ import annotations

import pytest

rclpy = pytest.importorskip("rclpy")
from rclpy.parameter import Parameter  # noqa: E402

from conftest import wait_for  # noqa: E402
from nodes.base_driver_node import STATE_QOS, BaseDriver  # noqa: E402
from nodes.kinematic_base_node import KinematicBaseNode  # noqa: E402
from personal.interfaces.convert import to_dict  # noqa: E402
from personal.msg import ActionOutcome, AgentState, DiscreteAction  # noqa: E402


class _Outcomes(list):
    states: list  # AgentState messages, in arrival order


def _params(**kw):
    return [Parameter(k, value=v) for k, v in kw.items()]


def _setup(ros_context, **base_params):
    base = ros_context.add_node(KinematicBaseNode(context=ros_context.context, parameter_overrides=_params(**base_params)))
    driver = ros_context.add_node(BaseDriver(context=ros_context.context, parameter_overrides=_params(use_tf=False)))
    probe = ros_context.make_node("probe")
    outcomes = _Outcomes()
    probe.create_subscription(ActionOutcome, "action_outcome", lambda m: outcomes.append(to_dict(m)), 10)
    states = []
    probe.create_subscription(AgentState, "agent_state", lambda m: states.append(to_dict(m)), STATE_QOS)
    outcomes.states = states
    pub = probe.create_publisher(DiscreteAction, "action", 10)
    wait_for(lambda: pub.get_subscription_count() > 0 and driver.cmd_pub.get_subscription_count() > 0
             and driver.ctl.pose is not None)
    _wait_for_steady_odometry(driver)
    return base, driver, pub, outcomes


def _wait_for_steady_odometry(driver, samples=10):
    """Discovery can stall delivery for a moment after start-up; begin once odometry flows."""
    import time

    seen = []

    def steady():
        stamp = driver.ctl.pose.stamp
        if not seen or stamp != seen[-1]:
            seen.append(stamp)
        return len(seen) >= samples and time.monotonic() - stamp < 0.1

    wait_for(steady, timeout=10)


def _send(pub, action, rid):
    pub.publish(DiscreteAction(action=action, request_id=rid))


def test_forward_and_turn_complete(ros_context):
    base, driver, pub, outcomes = _setup(ros_context)
    _send(pub, 1, "fwd")
    wait_for(lambda: outcomes, timeout=10)
    assert outcomes[-1]["status"] == "succeeded" and outcomes[-1]["request_id"] == "fwd", (outcomes, base.base.x, base.base._cmd)
    assert abs(base.base.x - 0.25) < 0.04
    _send(pub, 2, "left")
    wait_for(lambda: len(outcomes) == 2, timeout=10)
    assert outcomes[-1]["status"] == "succeeded"
    assert abs(base.base.yaw - 0.5236) < 0.08
    # one agent_state per outcome, from odometry, like the sim bridge's
    wait_for(lambda: len(outcomes.states) == 2, timeout=5)
    fwd, left = outcomes.states
    assert (fwd["request_id"], fwd["step"], fwd["collided"], fwd["stopped"]) == ("fwd", 1, False, False)
    assert fwd["position"]["x"] == pytest.approx(0.25, abs=0.04) and fwd["episode_id"] == "locobot"
    assert (left["request_id"], left["step"]) == ("left", 2)
    assert left["yaw"] == pytest.approx(0.5236, abs=0.08) and left["pitch"] == 0.0
    _send(pub, 4, "up")  # LOOK_UP: instant, the state's pitch is the camera tilt
    _send(pub, 0, "stop")
    wait_for(lambda: len(outcomes.states) == 4, timeout=5)
    up, stop = outcomes.states[2:]
    assert up["pitch"] == pytest.approx(0.5236, abs=1e-4) and up["step"] == 3 and not up["stopped"]
    assert stop["stopped"] and stop["step"] == 4 and stop["request_id"] == "stop"
    _send(pub, 3, "again")  # the first action after STOP starts a new count
    wait_for(lambda: len(outcomes.states) == 5, timeout=10)
    assert outcomes.states[-1]["step"] == 1 and not outcomes.states[-1]["stopped"]


def test_blocked_move_is_reported(ros_context):
    base, driver, pub, outcomes = _setup(ros_context, wall_x=0.3)
    _send(pub, 1, "blocked")
    wait_for(lambda: outcomes, timeout=10)
    assert outcomes[-1]["status"] == "blocked"
    assert base.base.x < 0.2
    wait_for(lambda: outcomes.states, timeout=5)
    st = outcomes.states[-1]
    assert st["collided"] and st["request_id"] == "blocked" and st["position"]["x"] < 0.2


def test_silent_odometry_stops_the_base(ros_context):
    base, driver, pub, outcomes = _setup(ros_context, odom_silent_after=1.0)
    wait_for(lambda: base.silent_after < (base.last - base.t0), timeout=5)
    _send(pub, 1, "stale")
    wait_for(lambda: outcomes, timeout=10)
    assert outcomes[-1]["status"] == "stale_odom"
    wait_for(lambda: base.base._cmd == (0.0, 0.0), timeout=2)  # the driver's final zero command arrives


def test_malformed_action_is_logged_and_survived(ros_context):
    base, driver, pub, outcomes = _setup(ros_context)
    _send(pub, 9, "bad")  # outside the action space: rejected with a reason
    wait_for(lambda: outcomes, timeout=5)
    assert outcomes[-1]["status"] == "rejected" and "outside the action space" in outcomes[-1]["detail"]
    _send(pub, 3, "right")
    wait_for(lambda: len(outcomes) == 2, timeout=10)
    assert outcomes[-1]["status"] == "succeeded"

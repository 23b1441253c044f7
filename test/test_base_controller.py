"""The base driver's closed loop against the kinematic base, without ROS."""
from __future__ import annotations

import math

import pytest

from personal.robot.base_controller import (LOOK_UP, MOVE_FORWARD, STOP, TURN_LEFT, TURN_RIGHT, BaseController,
                                            Limits, Pose2D)
from personal.robot.kinematic_base import KinematicBase

DT = 0.02


def run(action, base=None, limits=None, odom_until=math.inf, estop_at=math.inf, max_t=15.0):
    base = base or KinematicBase()
    ctl = BaseController(limits)
    t = 0.0
    ctl.update_odometry(Pose2D(base.x, base.y, base.yaw, t))
    out = ctl.start(action, t)
    peak_v = peak_a = 0.0
    last_v = 0.0
    while out is None and t < max_t:
        t += DT
        base.step(t, DT)
        if t < odom_until:
            ctl.update_odometry(Pose2D(base.x, base.y, base.yaw, t))
        if t >= estop_at:
            ctl.set_estop(True)
        (v, w), out = ctl.tick(t)
        base.command(v, w, t)
        peak_v = max(peak_v, abs(v))
        peak_a = max(peak_a, abs(v - last_v) / DT)
        last_v = v
    return out, base, ctl, peak_v, peak_a


def test_forward_completes_within_tolerance_and_limits():
    limits = Limits()
    out, base, ctl, peak_v, peak_a = run(MOVE_FORWARD, limits=limits)
    assert out.status == "succeeded", out
    assert abs(base.x - 0.25) <= limits.linear_tolerance + 0.01
    assert abs(base.y) < 0.01
    assert peak_v <= limits.max_linear + 1e-9
    assert peak_a <= limits.linear_accel + 1e-6
    assert ctl.tick(100.0)[0] == (0.0, 0.0)  # idle after the action: zero velocity


@pytest.mark.parametrize("action,sign", [(TURN_LEFT, 1), (TURN_RIGHT, -1)])
def test_turns_thirty_degrees(action, sign):
    out, base, *_ = run(action)
    assert out.status == "succeeded", out
    assert abs(base.yaw - sign * math.radians(30)) <= math.radians(3)


def test_forward_with_latency_and_noise_still_converges():
    out, base, *_ = run(MOVE_FORWARD, base=KinematicBase(latency=0.1, noise=0.05, seed=3))
    assert out.status == "succeeded", out
    assert abs(math.hypot(base.x, base.y) - 0.25) < 0.05


def test_blocked_move_is_reported_and_base_stops():
    out, base, ctl, *_ = run(MOVE_FORWARD, base=KinematicBase(wall_x=0.28))
    assert out.status == "blocked", out
    assert out.distance < 0.2
    assert not ctl.busy and ctl.tick(99.0)[0] == (0.0, 0.0)


def test_silent_odometry_stops_the_base():
    out, *_ = run(MOVE_FORWARD, odom_until=0.2)
    assert out.status == "stale_odom", out
    assert "old" in out.detail


def test_estop_and_instant_actions():
    out, *_ = run(MOVE_FORWARD, estop_at=0.3)
    assert out.status == "estop"
    ctl = BaseController()
    ctl.update_odometry(Pose2D(0, 0, 0, 0.0))
    assert ctl.start(STOP, 0.0).succeeded
    assert ctl.start(LOOK_UP, 0.0).succeeded and ctl.tilt == pytest.approx(math.radians(30))
    assert ctl.start(9, 0.0).status == "rejected"
    assert BaseController().start(MOVE_FORWARD, 0.0).status == "stale_odom"  # never had odometry


def test_timeout():
    out, *_ = run(MOVE_FORWARD, limits=Limits(action_timeout=0.3, blocked_window=5.0))
    assert out.status == "timed_out"

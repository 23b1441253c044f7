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
    assert ctl.start(LOOK_UP, 0.0) is None and ctl.camera_command[1] == pytest.approx(-math.radians(30))  # up = negative
    assert ctl.start(9, 0.0).status == "rejected"
    assert BaseController().start(MOVE_FORWARD, 0.0).status == "stale_odom"  # never had odometry


def test_timeout():
    out, *_ = run(MOVE_FORWARD, limits=Limits(action_timeout=0.3, blocked_window=5.0))
    assert out.status == "timed_out"


def test_nan_odometry_mid_move_stops_at_once():
    """issue 15, finding 4: NaN odometry disabled the blocked check; in-process the controller kept
    commanding 0.3 m/s for 8 s (until the action timeout)."""
    base, ctl, t = KinematicBase(), BaseController(), 0.0
    ctl.update_odometry(Pose2D(0.0, 0.0, 0.0, t))
    assert ctl.start(MOVE_FORWARD, t) is None
    while t < 0.3:  # accelerate with good odometry
        t += DT
        base.step(t, DT)
        ctl.update_odometry(Pose2D(base.x, base.y, base.yaw, t))
        (v, w), out = ctl.tick(t)
        base.command(v, w, t)
    assert out is None and ctl._cmd[0] > 0.05
    t += DT
    assert ctl.update_odometry(Pose2D(math.nan, base.y, base.yaw, t)) is False
    (v, w), out = ctl.tick(t)  # the very next control period
    assert (v, w) == (0.0, 0.0) and out.status == "stale_odom" and "non-finite odometry" in out.detail
    assert ctl.start(TURN_LEFT, t).status == "stale_odom"  # refused while the odometry is bad
    ctl.update_odometry(Pose2D(base.x, base.y, base.yaw, t + DT))  # good odometry again: moves are accepted
    assert ctl.start(TURN_LEFT, t + DT) is None


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_non_finite_pose_fields_count_as_stale(value):
    for pose in (Pose2D(value, 0.0, 0.0, 0.0), Pose2D(0.0, value, 0.0, 0.0), Pose2D(0.0, 0.0, value, 0.0)):
        ctl = BaseController()
        ctl.update_odometry(pose)
        out = ctl.start(MOVE_FORWARD, 0.0)
        assert out is not None and out.status == "stale_odom" and "non-finite" in out.detail


def test_non_finite_velocity_command_is_a_fault_and_stops():
    ctl = BaseController(Limits(linear_accel=math.nan))
    ctl.update_odometry(Pose2D(0.0, 0.0, 0.0, 0.0))
    assert ctl.start(MOVE_FORWARD, 0.0) is None
    (v, w), out = ctl.tick(DT)
    assert (v, w) == (0.0, 0.0) and out.status == "fault" and "non-finite velocity" in out.detail


def test_estop_mid_move_zeroes_the_command_and_release_allows_moves():
    base, ctl, t = KinematicBase(), BaseController(), 0.0
    ctl.update_odometry(Pose2D(0.0, 0.0, 0.0, t))
    ctl.start(MOVE_FORWARD, t)
    for _ in range(10):
        t += DT
        base.step(t, DT)
        ctl.update_odometry(Pose2D(base.x, base.y, base.yaw, t))
        (v, w), _ = ctl.tick(t)
        base.command(v, w, t)
    assert v > 0
    ctl.set_estop(True)
    (v, w), out = ctl.tick(t + DT)
    assert (v, w) == (0.0, 0.0) and out.status == "estop"
    assert ctl.start(MOVE_FORWARD, t + DT).status == "estop" and ctl.tick(t + 2 * DT)[0] == (0.0, 0.0)
    ctl.set_estop(False)
    ctl.update_odometry(Pose2D(base.x, base.y, base.yaw, t + 2 * DT))
    assert ctl.start(MOVE_FORWARD, t + 2 * DT) is None and ctl.tick(t + 3 * DT)[0][0] > 0


def test_look_waits_for_the_joint_and_says_where_it_stands():
    """issue 26: LOOK_* succeeded at once, assuming a tilt nothing had made; now the outcome waits
    for joint_states (conventions: positive tilt = down, limits from the URDF)."""
    from personal.robot import conventions as C
    from personal.robot.base_controller import LOOK_DOWN

    ctl = BaseController()
    assert ctl.start(LOOK_DOWN, 0.0) is None and ctl.busy
    assert ctl.camera_command == (0.0, pytest.approx(math.radians(30)))
    assert ctl.tick(0.5)[1] is None  # no joint feedback yet: still running
    ctl.update_joints(0.0, math.radians(15), 0.6)
    assert ctl.tick(0.6)[1] is None  # half way
    ctl.update_joints(0.0, math.radians(29.5), 0.9)
    out = ctl.tick(0.9)[1]
    assert out.succeeded and "29.5 deg" in out.detail and ctl.tilt == pytest.approx(math.radians(29.5))
    ctl.start(LOOK_DOWN, 1.0)
    ctl.start(LOOK_DOWN, 1.0)  # busy: rejected, not stacked
    out = ctl.tick(5.0)[1]
    assert out.status == "timed_out" and "tilt joint at 29.5 deg, commanded 60.0 deg" in out.detail
    fresh = BaseController()
    fresh.start(LOOK_UP, 0.0)
    assert "no joint_states received" in fresh.tick(4.0)[1].detail
    many = BaseController(Limits(max_tilt_rad=math.radians(120)))
    for k in range(5):
        many.start(LOOK_DOWN, float(k))
        many.update_joints(0.0, many.camera_command[1], float(k))
        many.tick(float(k))
    assert many.camera_command[1] == pytest.approx(C.TILT_LIMITS[1])  # clamped at the URDF's 75 degrees


def test_driver_parameters_make_the_limits_and_unknown_choices_are_refused():
    import math

    import pytest

    from personal.robot.base_controller import DRIVER_PARAMETERS, Limits, check_driver_parameters, limits_from

    p = {name: default for name, (default, _) in DRIVER_PARAMETERS.items()}
    assert limits_from(p) == Limits()  # the parameters' defaults are the controller's
    turned = limits_from({**p, "turn_deg": 90.0, "max_linear": 0.1})
    assert math.isclose(turned.turn_rad, math.pi / 2) and turned.max_linear == 0.1
    check_driver_parameters(p)
    with pytest.raises(ValueError, match="'camera_pose': 'guess' unknown"):
        check_driver_parameters({**p, "camera_pose": "guess"})
    with pytest.raises(ValueError, match="'base'"):
        check_driver_parameters({**p, "base": "roomba"})


def test_step_count_restarts_after_a_stop_and_skips_rejected_actions():
    from personal.robot.base_controller import Outcome, StepCount

    def out(action, status="succeeded"):
        return Outcome(action=action, status=status, detail="", duration=0.0, distance=0.0, rotation=0.0)

    count = StepCount()
    seen = []
    for o in (out(1), out(9, "rejected"), out(2, "blocked"), out(0), out(1)):
        count.count(o)
        seen.append((count.steps, count.stopped))
    assert seen == [(1, False), (1, False), (2, False), (3, True), (1, False)]

"""Preference metrics on synthetic trajectories with known answers, binning, SR/SA and conflict scoring."""
from __future__ import annotations

import numpy as np
import pytest

from personal.manipulation import preferences as P
from personal.manipulation.layout import TABLE_Z
from personal.manipulation.scoring import EpisodeResult, aggregate, combine, score_episode, summarize
from personal.manipulation.suite import MISSIONS, build_suite, make_layout
from personal.manipulation.trajectory import DT, Trajectory

LAYOUT = make_layout("mat", 0)


def straight_carry(obj="red_block", n=41, height=0.15, yaw_turn=0.0, speed=None, success=True):
    """Synthetic pick-and-place: eef at the block, lifts to ``height``, carries to the mat, releases."""
    spec = LAYOUT.get(obj)
    mat = LAYOUT.get("mat")
    start = np.array(spec.pos)
    goal = np.array([mat.pos[0], mat.pos[1], TABLE_Z + spec.half_size[2] + 0.002])
    s = np.linspace(0, 1, n)[:, None]
    eef = start + s * (goal - start)
    eef[:, 2] = np.maximum(eef[:, 2], TABLE_Z + height * np.sin(np.pi * s[:, 0]))
    held = [obj] * (n - 1) + [""]
    objects = {o.name: np.tile(o.pos, (n, 1)).astype(float) for o in LAYOUT.objects}
    objects[obj] = eef.copy()
    yaw = np.linspace(0.0, yaw_turn, n)
    return Trajectory(eef_pos=eef, eef_yaw=yaw, gripper=np.ones(n), held=held, objects=objects,
                      success=success, success_step=n - 1 if success else -1)


def test_binning_levels_and_direction():
    up = P.Binning((1.0, 2.0, 3.0))
    assert [up(x) for x in (0.5, 1.0, 2.5, 3.0, 9.0)] == [0.0, 0.25, 0.75, 1.0, 1.0]
    down = P.Binning((3.0, 2.0, 1.0), higher_is_better=False)
    assert [down(x) for x in (4.0, 3.0, 1.5, 1.0, 0.0)] == [0.0, 0.25, 0.75, 1.0, 1.0]
    assert up(float("nan")) == 0.0
    with pytest.raises(ValueError):
        P.Binning((3.0, 2.0, 1.0))


def test_registry_has_three_tiers_and_twelve_exercised_instances():
    tiers = {p.tier for p in P.PREFERENCES.values()}
    assert tiers == set(P.Tier)
    exercised = {p.id for p in P.PREFERENCES.values() if set(p.missions) & set(MISSIONS)}
    assert len(exercised) >= 12 and exercised == set(P.PREFERENCES)
    for p in P.PREFERENCES.values():
        assert p.text(LAYOUT) and p.context_text(LAYOUT) and p.unit


def test_prompts_explicit_and_contextual():
    assert P.prompt("put a block on the mat", ()) == "Task: put a block on the mat."
    assert P.prompt("put a block on the mat", ("speed_up",)) == "Task: put a block on the mat. Preference: Move faster."
    assert P.prompt("put a block on the mat", ("keep_away",), LAYOUT) == \
        "Task: put a block on the mat. Preference: Keep away from the green vase."
    ctx = P.prompt("put a block on the mat", ("speed_up",), contextual=True)
    assert ctx == "Task: put a block on the mat. Guests will use them immediately." and "Preference" not in ctx


def test_carry_height_and_rotation_known_answers():
    tr = straight_carry(height=0.30, yaw_turn=np.pi / 2)
    assert P.carry_height(tr, LAYOUT) == pytest.approx(0.30, abs=2e-3)
    assert P.get("move_higher").satisfaction(tr, LAYOUT) == 1.0
    assert P.get("close_to_ground").satisfaction(tr, LAYOUT) == 0.0
    assert P.carry_rotation_deg(tr, LAYOUT) == pytest.approx(90.0 * 39 / 40, abs=0.5)  # released one step early
    low = straight_carry(height=0.05)
    assert P.get("close_to_ground").satisfaction(low, LAYOUT) == 1.0
    assert P.get("rotate_when_placing").satisfaction(low, LAYOUT) == 0.0


def test_speed_and_acceleration_known_answers():
    n = 101
    eef = np.zeros((n, 3))
    eef[:, 0] = np.arange(n) * 0.01  # 0.2 m/s constant
    tr = Trajectory(eef, np.zeros(n), np.zeros(n), [""] * n, {}, success=True, success_step=n - 1)
    assert P.p95_speed(tr, LAYOUT) == pytest.approx(0.2)
    assert P.p95_acceleration(tr, LAYOUT) == pytest.approx(0.0, abs=1e-9)
    jerky = eef.copy()
    jerky[50:, 0] = jerky[50, 0]  # sudden stop: a 0.2 m/s drop in one step = 4 m/s^2
    tr2 = Trajectory(jerky, np.zeros(n), np.zeros(n), [""] * n, {}, success=True, success_step=n - 1)
    acc = np.linalg.norm(np.diff(jerky, n=2, axis=0), axis=1) / DT**2
    assert acc.max() == pytest.approx(4.0)
    assert P.p95_acceleration(tr2, LAYOUT) == pytest.approx(float(np.percentile(acc, 95)))


def test_steps_ratio_counts_steps_to_success():
    fast, slow = straight_carry(n=21), straight_carry(n=161)
    r_fast, r_slow = P.steps_ratio(fast, LAYOUT), P.steps_ratio(slow, LAYOUT)
    assert r_slow == pytest.approx(r_fast * 161 / 21)
    # reference: (|start - block| + |block - mat|_xy + 0.2 m) at 0.2 m/s + 1.6 s of gripper time
    red, mat = np.array(LAYOUT.get("red_block").pos), np.array(LAYOUT.get("mat").pos)
    ref = (np.linalg.norm(np.array(LAYOUT.eef_start) - red) + np.linalg.norm((mat - red)[:2]) + 0.2) / 0.2 + 1.6
    assert r_fast == pytest.approx(21 / (ref / DT))
    assert P.get("speed_up").satisfaction(fast, LAYOUT) == 1.0 and P.get("speed_up").satisfaction(slow, LAYOUT) == 0.0


def test_keep_away_clearance_known_answer():
    vase = LAYOUT.obstacle
    n = 10
    top = vase.pos[2] + vase.half_size[2]
    eef = np.tile([vase.pos[0], vase.pos[1], top + 0.07], (n, 1))  # hovering 7 cm above the vase
    tr = Trajectory(eef, np.zeros(n), np.zeros(n), [""] * n, {}, success=True, success_step=n - 1)
    assert P.min_clearance(tr, LAYOUT) == pytest.approx(0.07)
    assert P.get("keep_away").satisfaction(tr, LAYOUT) == 0.25


def test_grasp_by_handle_distance_known_answer():
    layout = make_layout("handle", 0)
    hammer = layout.get("hammer")
    n = 12
    pos = np.tile(hammer.pos, (n, 1)).astype(float)
    objects = {o.name: np.tile(o.pos, (n, 1)).astype(float) for o in layout.objects}
    for offset, expected_d in ((hammer.handle_offset, 1.0), (hammer.grasp_offset, 0.0)):
        eef = pos + np.array(offset) + [0, 0, 0.004]
        tr = Trajectory(eef, np.zeros(n), np.ones(n), [""] * 4 + ["hammer"] * 8, objects, success=True, success_step=n - 1)
        dist = np.linalg.norm(np.array(offset) - np.array(hammer.handle_offset) + [0, 0, 0.004])
        assert P.grasp_handle_distance(tr, layout) == pytest.approx(dist)
        assert P.get("grasp_by_handle").satisfaction(tr, layout) == expected_d


def test_push_lift_and_user_profile_from_executed_subgoals():
    n = 30
    red = np.array(LAYOUT.get("red_block").pos)
    mat = np.array(LAYOUT.get("mat").pos)
    path = red + np.linspace(0, 1, n)[:, None] * (np.array([mat[0], mat[1], red[2]]) - red)
    objects = {o.name: np.tile(o.pos, (n, 1)).astype(float) for o in LAYOUT.objects}
    objects["red_block"] = path
    pushed = Trajectory(path + [0, 0, 0.02], np.zeros(n), np.ones(n), [""] * n, objects, success=True, success_step=n - 1)
    assert P.lift_height(pushed, LAYOUT) == pytest.approx(0.0)
    assert P.get("push").satisfaction(pushed, LAYOUT) == 1.0
    goals = pushed.subgoals(LAYOUT.receptacles)
    assert [(g.skill, g.obj, g.target) for g in goals] == [("push", "red_block", "mat")]
    assert P.get("prefer_red").satisfaction(pushed, LAYOUT) == 1.0
    assert P.get("prefer_bigger").satisfaction(pushed, LAYOUT) == 0.0
    assert P.get("prefer_smaller").satisfaction(pushed, LAYOUT) == 1.0
    picked = straight_carry("blue_block")
    assert [g.skill for g in picked.subgoals(LAYOUT.receptacles)] == ["pick", "place"]
    assert P.get("prefer_blue").satisfaction(picked, LAYOUT) == 1.0
    assert P.get("push").satisfaction(picked, LAYOUT) == 0.0  # lifted well above 4 cm


def test_sa_gates_on_success_and_conflict_takes_the_better():
    tr = straight_carry(height=0.30)
    ok = score_episode(tr, LAYOUT, task_id="t", suite="conflict", measured=("move_higher", "close_to_ground"),
                       prompted=True, prompt="p")
    assert ok.d == {"move_higher": 1.0, "close_to_ground": 0.0}
    assert ok.sa == 1.0  # the better of two conflicting preferences
    failed = score_episode(straight_carry(height=0.30, success=False), LAYOUT, task_id="t", suite="conflict",
                           measured=("move_higher", "close_to_ground"), prompted=True, prompt="p")
    assert failed.sa == 0.0  # task first
    assert combine("compose", [1.0, 0.25]) == 0.625
    with pytest.raises(ValueError):
        combine("single", [1.0, 0.0])


def test_summarize_and_aggregate():
    def res(succ, d, prompted):
        return EpisodeResult("t", "single", "mat", 0, ("speed_up",), prompted, "", succ, 10, {"speed_up": 0.0},
                             {"speed_up": d})
    rs = [res(True, 1.0, True), res(True, 0.25, True), res(False, 1.0, True), res(True, 0.0, False)]
    s = summarize(rs[:3])
    assert s["SR"] == pytest.approx(2 / 3) and s["SA"] == pytest.approx(1.25 / 3)
    agg = aggregate(rs, key=lambda r: r.prompted)
    assert agg[False]["SA"] == 0.0 and agg[True]["n"] == 3


def test_suites_build_expected_instances():
    single = build_suite("single", ["bin", "mat"], ["push", "prefer_red"], [0, 1])
    assert {t.task_id for t in single} == {"single/mat/push/s0", "single/mat/push/s1", "single/bin/prefer_red/s0",
                                           "single/bin/prefer_red/s1", "single/mat/prefer_red/s0",
                                           "single/mat/prefer_red/s1"}
    none = build_suite("none", ["mat"], ["push"], [0])
    assert none[0].prefs == () and none[0].measured == ("push",) and "Preference" not in none[0].prompt
    conflict = build_suite("conflict", ["mat"], [], [0])
    assert all(len(t.measured) == 2 for t in conflict)
    assert make_layout("bin", 3).to_dict() == make_layout("bin", 3).to_dict()  # seeded

"""PAN metrics (SR within 1.0 m of the object's extent, SPL, DTG) against hand-made trajectories."""
from __future__ import annotations

import math

import pytest

from personal.navigation.eval.pan import (
    SUCCESS_RADIUS_M, GoalGeometry, PanEpisodeResult, distance_to_boxes, is_success, path_length, render_report,
    score_episode, spl, summarize, table_iv,
)
from personal.world.model import Box, Episode
from personal.sim.backends.synthetic import SyntheticBackend
from personal.sim.toy_scene import two_room_scene


def _episode(split="easy", eid="toy_0", targets=("box_2",)) -> Episode:
    return Episode(episode_id=eid, scene_id="toy_two_rooms", split=split, people=["Lisa"], ownership={"Lisa": list(targets)},
                   owner="Lisa", target_object_ids=list(targets), object_category="box", query="Find Lisa's box.",
                   summary="Lisa owns the red box in the kitchen.", extracted_summary=[], description=[],
                   start_position=(2.0, 1.0, 0.0), start_yaw=0.0)


def test_success_is_measured_to_the_object_extent_not_its_centre():
    box = Box((6.0, 1.0, 0.2), (0.4, 0.4, 0.4))  # footprint x 5.8-6.2, y 0.8-1.2
    assert SUCCESS_RADIUS_M == 1.0
    assert distance_to_boxes(4.8, 1.0, [box]) == pytest.approx(1.0)
    assert is_success(True, 4.8, 1.0, [box])  # 1.2 m from the centre, 1.0 m from the extent
    assert not is_success(True, 4.79, 1.0, [box])
    assert not is_success(False, 6.0, 1.0, [box])  # no STOP, no success
    assert distance_to_boxes(6.0, 1.1, [box]) == 0.0
    # nearest of several targets ("one of Lisa's boxes")
    far = Box((0.0, 0.0, 0.2), (0.4, 0.4, 0.4))
    assert is_success(True, 5.0, 1.0, [far, box])


def test_spl_formula():
    assert spl(True, 5.0, 10.0) == pytest.approx(0.5)
    assert spl(True, 5.0, 5.0) == pytest.approx(1.0)
    assert spl(True, 5.0, 4.0) == pytest.approx(1.0)  # max(P, L) in the denominator
    assert spl(False, 5.0, 5.0) == 0.0
    assert spl(True, math.inf, 3.0) == 0.0
    assert path_length([(0, 0, 0), (3, 4, 1.0), (3, 4, 2.0), (3, 5, 0)]) == pytest.approx(6.0)


@pytest.fixture(scope="module")
def toy():
    sim = SyntheticBackend()
    sim.load_scene(two_room_scene())
    return sim


def test_hand_made_trajectories_on_the_toy_scene(toy):
    ep = _episode()
    geo = GoalGeometry(toy, ep)
    # start (2, 1) -> door at x = 4, y 2.8-3.8 -> within 1 m of the box at (6, 1)
    assert 4.2 < geo.shortest < 5.2, geo.shortest  # ≈ 2.8 m to the door corner + 0.1 + 1.5 m
    good = [(2.0, 1.0), (3.0, 2.2), (3.8, 3.3), (4.6, 3.3), (5.2, 2.2), (5.5, 1.6)]
    r = score_episode(episode=ep, method="hand", poses=good, stopped=True, steps=12, target_boxes=geo.boxes,
                      shortest=geo.shortest, geodesic_to_goal=geo.geodesic_to_goal)
    P = path_length(good)
    assert r.success and r.dtg == pytest.approx(0.0, abs=0.06)
    assert r.spl == pytest.approx(geo.shortest / max(P, geo.shortest))
    assert 0.5 < r.spl <= 1.0
    # the same route with a detour: success, lower SPL
    detour = good[:3] + [(3.0, 3.6), (1.0, 3.6), (3.0, 3.6)] + good[3:]
    r2 = score_episode(episode=ep, method="hand", poses=detour, stopped=True, steps=30, target_boxes=geo.boxes,
                       shortest=geo.shortest, geodesic_to_goal=geo.geodesic_to_goal)
    assert r2.success and r2.spl < r.spl
    assert r2.spl == pytest.approx(geo.shortest / path_length(detour))
    # stopped in the doorway: 2.4 m from the box -> failure, SPL 0, DTG = geodesic rest of the way
    short = good[:4]
    r3 = score_episode(episode=ep, method="hand", poses=short, stopped=True, steps=8, target_boxes=geo.boxes,
                       shortest=geo.shortest, geodesic_to_goal=geo.geodesic_to_goal)
    assert not r3.success and r3.spl == 0.0
    assert 1.2 < r3.dtg < 2.6 and "stopped" in r3.failure_reason
    # reached the region but never called STOP: failure, DTG 0
    r4 = score_episode(episode=ep, method="hand", poses=good, stopped=False, steps=500, target_boxes=geo.boxes,
                       shortest=geo.shortest, geodesic_to_goal=geo.geodesic_to_goal)
    assert not r4.success and r4.spl == 0.0 and r4.dtg == pytest.approx(0.0, abs=0.06)
    assert "no STOP" in r4.failure_reason


def _res(method, split, success, spl_v, dtg, steps=10):
    return PanEpisodeResult(episode_id=f"{split}_{method}_{success}_{spl_v}", scene_id="s", split=split, method=method,
                            success=success, spl=spl_v, dtg=dtg, steps=steps, stopped=True, path_length=1.0,
                            geodesic_distance=1.0, stop_distance=0.5)


def test_summary_per_split_and_total_in_table_iv_layout():
    rs = [_res("a", "easy", True, 0.5, 0.0), _res("a", "easy", False, 0.0, 2.0), _res("a", "hard", True, 1.0, 0.0),
          _res("a", "medium", False, 0.0, math.inf)]
    s = summarize(rs)
    a = s["methods"]["a"]
    assert a["easy"]["sr"] == pytest.approx(50.0) and a["easy"]["spl"] == pytest.approx(25.0) and a["easy"]["dtg"] == 1.0
    assert a["hard"]["sr"] == 100.0 and a["medium"]["sr"] == 0.0
    assert a["medium"]["dtg"] is None and a["medium"]["dtg_inf"] == 1
    assert a["total"]["n"] == 4 and a["total"]["sr"] == pytest.approx(50.0) and a["total"]["spl"] == pytest.approx(37.5)
    rows = table_iv(s, {"a": "Method A"})
    assert rows[0].startswith("| Method | Easy SR↑ | SPL↑ | DTG↓ | Medium SR↑") and "Total SR↑" in rows[0]
    assert rows[2].startswith("| Method A | 50.00 | 25.00 | 1.00 |")
    report = render_report({**s, "meta": {}}, rs, {})
    assert "within 1 m of the target object's extent" in report

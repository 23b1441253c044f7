"""PInVerify environment semantics: direction resolution, unreachable/trap steps, start sector."""
from pathlib import Path

import pytest

from personal.verification.env import DIRECTION_OFFSETS, EpisodeOver, VerificationEnv, resolve_direction, start_sector
from personal.verification.schema import CaptureEpisode, PairEpisode, Viewpoint


def vp(sector, az, view="near", nav=True, vis=True):
    return Viewpoint(tag=f"s{sector}_{view}", sector_index=sector, view_type=view, navigable=nav,
                     mask_meets_threshold=vis, rgb=f"rgb/rgb_s{sector}_{view}.png", azimuth_deg=az)


def make_pair(viewpoints, valid=None, index=0):
    cap = CaptureEpisode(root=Path("/nonexistent"), scene_key="s", episode_id="e", object_id="o",
                         object_category="mug", viewpoints=viewpoints)
    valid = valid if valid is not None else cap.visible_sectors()
    return PairEpisode(scene_key="s", episode_id="e", object_id="o", object_category="mug", episode_path="e",
                       query_object_id="o", query_descriptions=["a", "b", "c"], target_descriptions=["a", "b", "c"],
                       pair_type="positive", label=1, valid_start_sectors=valid,
                       navigable_sectors=cap.navigable_sectors(), index=index, capture=cap)


def test_offsets_are_60_degree_multiples_and_symmetric():
    assert DIRECTION_OFFSETS["front"] == 0
    assert DIRECTION_OFFSETS["front-left"] == -DIRECTION_OFFSETS["front-right"] == -60
    assert DIRECTION_OFFSETS["back-left"] == -DIRECTION_OFFSETS["back-right"] == -120
    assert abs(DIRECTION_OFFSETS["back"]) == 180


def test_resolution_picks_closest_capture_within_30_degrees():
    cap = make_pair([vp(0, 15), vp(2, 75), vp(4, 100), vp(6, 200)]).capture
    # from 15°: front-right targets 75° -> sector 2 exactly; back-right targets 135° -> 100° is 35° off -> None
    assert resolve_direction(cap, 15, "front-right").sector_index == 2
    assert resolve_direction(cap, 15, "back-right") is None
    # back targets 195°: sector 6 at 200° (5° off)
    assert resolve_direction(cap, 15, "back").sector_index == 6
    # front-left targets -45° (=315°): nothing within 30°
    assert resolve_direction(cap, 15, "front-left") is None
    # 30° exactly is still inside the tolerance
    assert resolve_direction(cap, 45, "front").sector_index in (0, 2)
    with pytest.raises(ValueError, match="unknown direction"):
        resolve_direction(cap, 0, "up")


def test_non_navigable_captures_are_never_targets():
    cap = make_pair([vp(0, 0), vp(2, 60, nav=False, vis=False)]).capture
    assert resolve_direction(cap, 0, "front-right") is None


def test_unreachable_and_trap_steps_cost_a_step_with_warning():
    pair = make_pair([vp(0, 0), vp(0, 0, "far"), vp(2, 60, vis=False), vp(2, 60, "far", vis=False), vp(6, 180)])
    env = VerificationEnv(pair, seed=0)
    first = env.reset()
    assert first.step == 1 and first.status == "start" and first.sector_index in (0, 6)
    if first.sector_index == 6:  # go to sector 0 deterministically for the rest of the test
        assert env.move("back").status == "ok"
    base = env.steps
    obs = env.move("front-left")  # -60° from 0° -> 300°: nothing there
    assert obs.status == "unreachable" and obs.visibility_warning and not obs.new_view
    assert obs.sector_index == 0 and env.steps == base + 1
    obs = env.move("front-right")  # 60° -> sector 2, navigable but below threshold
    assert obs.status == "trap" and obs.visibility_warning and obs.new_view
    assert obs.sector_index == 2 and env.steps == base + 2
    assert obs.viewpoint.view_type == "near"  # trap view shown is the near capture
    obs = env.move("back-right")  # from 60°: +120° -> 180° = sector 6
    assert obs.status == "ok" and obs.visibility_warning is None


def test_horizon_is_six_steps():
    pair = make_pair([vp(0, 0), vp(2, 60), vp(4, 120), vp(6, 180), vp(8, 240), vp(10, 300)])
    env = VerificationEnv(pair, seed=1)
    env.reset()
    for _ in range(5):
        env.move("front-right")
    assert env.steps == 6 and env.done
    with pytest.raises(EpisodeOver):
        env.move("front-right")


def test_start_sector_is_visible_and_deterministic():
    views = [vp(0, 0, vis=False), vp(2, 60), vp(4, 120), vp(6, 180, vis=False)]
    starts = {start_sector(make_pair(views, index=i), seed=3) for i in range(40)}
    assert starts <= {2, 4} and starts == {2, 4}
    assert start_sector(make_pair(views, index=7), 3) == start_sector(make_pair(views, index=7), 3)


def test_arrival_prefers_visible_capture_of_the_sector():
    pair = make_pair([vp(0, 0), vp(2, 60, "near", vis=False), vp(2, 61, "far", vis=True)], valid=[0])
    env = VerificationEnv(pair)
    env.reset()
    obs = env.move("front-right")
    assert obs.status == "ok" and obs.viewpoint.view_type == "far"

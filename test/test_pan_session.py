"""PAN evaluator schedule and scoring without ROS (personal/navigation/pan_session.py)."""
import math

from personal.navigation.pan_session import PanSchedule, missing_run, score_run, unscored


def test_schedule_runs_every_policy_on_an_episode_before_the_next():
    s = PanSchedule(2, ["random-frontier", "oracle"])
    seen = []
    while not s.done():
        seen.append((s.current(), s.k, s.progress()))
        s.advance()
    assert seen == [((0, "random-frontier"), 0, "[1/4]"), ((0, "oracle"), 1, "[2/4]"),
                    ((1, "random-frontier"), 2, "[3/4]"), ((1, "oracle"), 3, "[4/4]")]
    assert PanSchedule(0, ["oracle"]).done()


def _episodes():
    from personal.sim.bridge_logic import generate_episodes

    scenes, eps = generate_episodes("easy", 1, 0, 1)
    return scenes, eps[0]


def test_a_run_that_never_came_is_scored_from_the_start_pose():
    from personal.sim.backends import make_backend

    scenes, ep = _episodes()
    run = missing_run(ep, "oracle", "")
    assert run["xs"] == [ep.start_position[0]] and run["steps"] == 0 and run["is_oracle"]
    assert missing_run(ep, "qs", "", {"failure_reason": "policy error"})["failure_reason"] == "policy error"
    r, poses, info = score_run(make_backend("synthetic"), scenes[ep.scene_id], ep, "random-frontier", None,
                               "no nav/result within 60 s")
    assert not r.success and r.steps == 0 and len(poses) == 1 and "no nav/result" in r.failure_reason
    assert info["run_failure"] == "no nav/result within 60 s" and r.dtg > 0


def test_unscored_is_a_failure_with_no_distance():
    _, ep = _episodes()
    r = unscored(ep, "qs", "scoring failed: KeyError")
    assert not r.success and r.failure_reason.startswith("scoring failed") and math.isinf(r.dtg)


def test_the_evaluator_loads_the_bridges_generated_episodes_and_habitat_needs_files():
    import pytest

    from personal.navigation.pan_session import PARAMETERS, load_scored_episodes
    from personal.sim.bridge_logic import generate_episodes

    p = {name: default for name, (default, _) in PARAMETERS.items()}
    scenes, eps = load_scored_episodes(p)
    want = generate_episodes("all", 1, 0, 1)[1]
    assert [e.episode_id for e in eps] == [e.episode_id for e in want] and set(scenes) >= {e.scene_id for e in eps}
    with pytest.raises(ValueError, match="episodes_dir"):
        load_scored_episodes({**p, "backend": "habitat"})


def test_report_meta_names_the_source_and_whether_perception_was_an_oracle():
    from personal.navigation.pan_session import PARAMETERS, report_meta
    from personal.sim.sensor_model import sensor_spec

    p = {name: default for name, (default, _) in PARAMETERS.items()}
    scenes, ep = _episodes()
    meta = report_meta(p, [ep, ep], ["oracle"], sensor_spec("ideal", "", 0), 12.34)
    assert meta["episodes"] == 2 and meta["scenes"] == 1 and meta["wall time (s)"] == 12.3
    assert meta["source"].startswith("generated: scenes=1 seed=0") and not meta["encoder_is_oracle"]
    oracle = report_meta({**p, "encoder": "oracle", "episodes_dir": "/data/eps"}, [ep], [], sensor_spec("ideal", "", 0), 0)
    assert oracle["encoder_is_oracle"] and "ORACLE" in oracle["perception"] and oracle["source"] == "/data/eps"

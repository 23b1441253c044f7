"""ROS-free parts of the sim bridge."""
import math
import shutil

import numpy as np
import pytest

from personal.world.habitat_format import EpisodeFormatError, write_episode_set
from personal.sim.backends.base import Action
from personal.sim.bridge_logic import (
    EpisodeSourceError, TwistIntegrator, check_action, encode_depth, encode_ids, episode_descriptor, load_episodes,
    splits_for,
)
from personal.sim.toy_scene import two_room_scene


from personal.world.model import Episode

START = (2.0, 1.0, 0.0)


def toy_episode() -> Episode:
    """Toy two-room scene, start (2, 1) facing +x (the wall x = 4 is 1.95 m ahead), target the red box."""
    return Episode(
        episode_id="toy_0", scene_id="toy_two_rooms", split="easy", people=["Ana"], ownership={"Ana": ["box_2"]},
        owner="Ana", target_object_ids=["box_2"], object_category="box", query="Find Ana's box.",
        summary="Ana owns the red box.", extracted_summary=["Ana owns the red box"], description=["the red box"],
        start_position=START, start_yaw=0.0, geodesic_distance=4.5,
    )


def test_check_action():
    assert check_action(1) is Action.MOVE_FORWARD
    with pytest.raises(ValueError, match=r"action 7 is outside the action space \(0=STOP, 1=MOVE_FORWARD"):
        check_action(7)


def test_twist_integrator_emits_discrete_steps():
    ti = TwistIntegrator()
    actions = []
    for k in range(20):  # 0.5 m/s for 1 s at 20 Hz -> 0.5 m -> two forward steps (first dt is assumed 0.1)
        actions += ti.update(k * 0.05, 0.5, 0.0)[0]
    assert actions.count(Action.MOVE_FORWARD) == 2
    ti = TwistIntegrator()
    turns = []
    for k in range(21):  # -pi/6 rad/s for ~1 s -> one right turn
        turns += ti.update(k * 0.05, 0.0, -math.pi / 6 * 1.05)[0]
    assert turns == [Action.TURN_RIGHT]
    assert ti.update(2.0, 0.0, 0.0) == ([], "")  # zero twist clears
    assert ti.update(2.05, -0.3, 0.0)[1].startswith("backward motion")


def test_twist_integrator_refuses_non_finite_and_clamps_extreme_speeds():
    """issue 15, finding 2: inf looped forever, 1e6 queued 400,000 steps, NaN disabled forward motion."""
    ti = TwistIntegrator()
    for bad in ((math.inf, 0.0), (0.0, -math.inf), (math.nan, 0.0), (0.0, math.nan)):
        actions, note = ti.update(0.0, *bad)
        assert actions == [] and "non-finite twist" in note
    actions, note = ti.update(0.05, 1e6, 0.0)  # first message: dt = 0.1 s at the 1 m/s clamp -> no step yet
    assert len(actions) <= 1 and "clamped" in note
    for k in range(2, 40):
        actions, note = ti.update(k * 0.05, 1e6, 1e6)
        assert len(actions) <= 3, actions  # bounded per message, whatever the speed
    fwd = TwistIntegrator()  # NaN does not poison the integrator: forward motion still works afterwards
    fwd.update(0.0, math.nan, 0.0)
    steps = [a for k in range(1, 21) for a in fwd.update(k * 0.05, 0.5, 0.0)[0]]
    assert steps.count(Action.MOVE_FORWARD) == 2  # as without the NaN (see the test above)


def test_depth_and_id_encodings():
    d = np.array([[0.0, 1.25], [5.0, 0.5]], dtype=np.float32)
    mm, b = encode_depth(d, "16UC1")
    assert b == 2 and mm.dtype == np.uint16 and mm.tolist() == [[0, 1250], [5000, 500]]
    m, b = encode_depth(d, "32FC1")
    assert b == 4 and math.isnan(m[0, 0]) and m[1, 0] == 5.0
    with pytest.raises(ValueError, match="depth encoding"):
        encode_depth(d, "8UC1")
    ids = np.array([[0, 70000]], dtype=np.int32)
    assert encode_ids(ids, "32SC1")[1] == 4
    with pytest.raises(ValueError, match="exceed 65535"):
        encode_ids(ids, "16UC1")


def test_load_episodes_and_descriptor(tmp_path):
    scene = two_room_scene()
    write_episode_set(tmp_path / "ok", [scene], [toy_episode()])
    scenes, eps = load_episodes(str(tmp_path / "ok"), "all")
    desc = episode_descriptor(eps[0], scenes["toy_two_rooms"], 0, 1)
    assert desc["target_positions"] == [{"x": 6.0, "y": 1.0, "z": 0.2}]
    with pytest.raises(EpisodeSourceError, match="no episodes for split 'hard'"):
        load_episodes(str(tmp_path / "ok"), "hard")
    with pytest.raises(EpisodeSourceError, match="unknown split 'weird'"):
        splits_for("weird")
    with pytest.raises(EpisodeFormatError, match="episode folder not found"):
        load_episodes(str(tmp_path / "missing"), "all")
    # unknown scene: the scene file is gone
    shutil.copytree(tmp_path / "ok", tmp_path / "noscene")
    (tmp_path / "noscene" / "scenes" / "toy_two_rooms.scene.json").unlink()
    with pytest.raises(EpisodeFormatError, match="unknown scene 'toy_two_rooms'"):
        load_episodes(str(tmp_path / "noscene"), "all")

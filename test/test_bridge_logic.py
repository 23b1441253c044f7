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


def test_the_bridge_source_generates_without_a_folder_and_habitat_needs_one():
    from personal.sim.bridge_logic import PARAMETERS, generate_episodes, load_source

    p = {name: default for name, (default, _) in PARAMETERS.items()}
    scenes, episodes, where = load_source(p, habitat=False)
    assert [e.episode_id for e in episodes] == [e.episode_id for e in generate_episodes("all", 1, 0, 3)[1]]
    assert where == "generated (split=all, scenes=1, seed=0)" and set(scenes) >= {e.scene_id for e in episodes}
    with pytest.raises(ValueError, match="episodes_dir"):
        load_source(p, habitat=True)


def test_base_and_mount_compose_back_to_the_camera_pose():
    from types import SimpleNamespace

    from personal.sim.bridge_logic import base_and_mount, quaternion_xyzw

    state = SimpleNamespace(x=1.0, y=-2.0, z=0.0, yaw=np.pi / 3)
    T_map_camera = np.eye(4)
    T_map_camera[:3, 3] = (1.1, -1.9, 0.88)
    T_map_base, T_base_camera = base_and_mount(state, T_map_camera)
    assert np.allclose(T_map_base @ T_base_camera, T_map_camera)
    assert np.allclose(T_map_base[:2, 3], (1.0, -2.0)) and np.isclose(T_base_camera[2, 3], 0.88)
    assert np.allclose(quaternion_xyzw(np.eye(3)), (0, 0, 0, 1))


def test_bridge_parameter_checks_name_the_parameter():
    from personal.sim.bridge_logic import PARAMETERS, backend_error, bridge_backend, result_line, tick_rate

    assert tick_rate(5.0) == (5.0, "") and tick_rate(0)[0] == 10.0 and "'rate' must be > 0" in tick_rate(-1)[1]
    p = {name: default for name, (default, _) in PARAMETERS.items()}
    with pytest.raises(ValueError, match="at least 8 px") as err:
        bridge_backend({**p, "width": 4})
    assert backend_error(err.value).startswith("parameter 'backend': parameters 'width'")
    with pytest.raises(Exception) as spec_err:
        bridge_backend({**p, "sensor": "no-such-camera"})
    assert backend_error(spec_err.value).startswith("parameter ")
    line = result_line("e1", {"success": True, "spl": 0.5, "distance_to_goal": 0.25, "steps": 12})
    assert line == "episode e1: SUCCESS SPL=0.50 DTG=0.25 m steps=12"

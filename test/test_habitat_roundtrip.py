"""Public-format PersONAL episodes through load -> Habitat backend -> habitat-sim's
``get_state``: every pose field comes back as the file wrote it (start position and rotation,
view point positions and rotations; goal positions through the same conversion).

Positions come back bit-exact in float32, the precision habitat-sim keeps poses in (magnum
``Vector3``); rotations as the same rotation to 1e-6 (float32 quaternion coefficients)."""
import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from habitat_fake import fake_habitat_sim
from personal.world import frames
from personal.world.episodes import generate_episodes
from personal.world.generator import generate_scene
from personal.world.habitat_format import load_episode_set
from public_format import PUBLIC, make_public_set
from personal.sim.backends.base import AgentState, CameraSpec
from personal.sim.bridge_logic import scene_assets


@pytest.fixture(scope="module")
def public_set(tmp_path_factory):
    root = tmp_path_factory.mktemp("public_roundtrip")
    scene = generate_scene(21, scene_id="synth_r")
    eps = [e for split in ("easy", "hard") for e in generate_episodes(scene, split, 2, seed=4)]
    episodes_dir, scenes_dir, published = make_public_set(root, [scene], eps)
    return episodes_dir, scenes_dir, published


@pytest.fixture(scope="module")
def backend(public_set):
    episodes_dir, scenes_dir, _ = public_set
    with fake_habitat_sim():
        from personal.sim.backends.habitat import HabitatBackend

        scenes, episodes = load_episode_set(episodes_dir, scene_models=False)
        assert scenes == {}  # public files: no scene models, only scene files
        assets = scene_assets(episodes, scenes, str(episodes_dir), str(scenes_dir))
        b = HabitatBackend(camera=CameraSpec(width=64, height=48))
        b.load_scene(assets[episodes[0].scene_id])
        yield b, episodes
        b.close()


def _assert_pose(backend, position, rotation):
    pos, rot = backend.habitat_pose()
    np.testing.assert_array_equal(pos, np.asarray(position, dtype=np.float32))
    assert frames.same_rotation(rot, rotation, tol=1e-6), (rot, rotation)


def test_start_pose_round_trip(public_set, backend):
    b, episodes = backend
    published = public_set[2]
    assert len(episodes) == len(published) == 4
    for ep in episodes:
        d = published[ep.episode_id]
        b.reset(ep)
        _assert_pose(b, d["start_position"], d["start_rotation"])
        s = b.state  # and the map pose the bridge publishes is the loaded one
        assert (s.x, s.y) == pytest.approx(ep.start_position[:2], abs=1e-6)
        assert abs(frames.wrap_angle(s.yaw - ep.start_yaw)) < 1e-6


def test_goal_and_view_point_round_trip(public_set, backend):
    b, episodes = backend
    published = public_set[2]
    docs = {}
    for f in public_set[0].glob("*/content/*.json.gz"):
        docs.update(json.loads(gzip.open(f, "rt").read())["goals_by_category"])
    checked = 0
    for ep in episodes:
        d = published[ep.episode_id]
        key = f"{Path(d['scene_id']).name}_{ep.object_category}"
        raw = {g["object_name"]: g for g in docs[key]}
        assert {g.object_name for g in ep.goals} == set(ep.target_object_ids)
        for goal in ep.goals:
            g = raw[goal.object_name]
            assert list(frames.map_to_habitat(goal.position)) == g["position"]  # exact
            assert goal.instance_id == g["object_id"] and goal.floor == int(g["floor_id"])
            for vp, vraw in zip(goal.view_points, g["view_points"], strict=True):
                b.reset(state=AgentState(*vp.position, vp.yaw, 0.0, goal.floor))
                _assert_pose(b, vraw["agent_state"]["position"], vraw["agent_state"]["rotation"])
                checked += 1
    assert checked >= 8


def test_the_published_excerpt_round_trips_too(backend):
    """The verbatim public files (HM3D poses): the fake places an agent at any pose without
    snapping, as habitat-sim's set_state does, so their poses go through the same path."""
    b, _ = backend
    for f in sorted(PUBLIC.glob("*/content/*.json.gz")):
        doc = json.loads(gzip.open(f, "rt").read())
        from personal.world.habitat_format import read_content_file

        _, eps = read_content_file(f)
        for ep, raw in zip(eps, doc["episodes"], strict=True):
            b.reset(ep)
            _assert_pose(b, raw["start_position"], raw["start_rotation"])
            goals = {g["object_name"]: g for gl in doc["goals_by_category"].values() for g in gl}
            for goal in ep.goals:
                g = goals[goal.object_name]
                assert list(frames.map_to_habitat(goal.position)) == g["position"]
                for vp, vraw in zip(goal.view_points, g["view_points"], strict=True):
                    b.reset(state=AgentState(*vp.position, vp.yaw, 0.0, goal.floor))
                    _assert_pose(b, vraw["agent_state"]["position"], vraw["agent_state"]["rotation"])

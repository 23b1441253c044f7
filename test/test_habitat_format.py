import gzip
import json
import math

import numpy as np
import pytest
from typer.testing import CliRunner

from personal.world.episodes import check_split_constraints, generate_episodes
from personal.world.generator import generate_scene
from personal.world.habitat_format import (
    EPISODE_FIELDS, GOAL_FIELDS, EpisodeFormatError, habitat_quat_to_yaw, habitat_to_map, load_episode_set,
    map_to_habitat, write_episode_set, yaw_to_habitat_quat,
)
from personal.world.mesh import read_ply


@pytest.fixture(scope="module")
def episode_set(tmp_path_factory):
    out = tmp_path_factory.mktemp("eps")
    scenes = [generate_scene(31, scene_id="synth_a"), generate_scene(32, scene_id="synth_b", two_floors=True)]
    eps = [e for s in scenes for split in ("easy", "medium", "hard") for e in generate_episodes(s, split, 3, seed=1)]
    files = write_episode_set(out, scenes, eps)
    return out, scenes, eps, files


def _copy(src, dst):
    import shutil

    shutil.copytree(src, dst)
    return dst


def _rewrite(path, fn):
    with gzip.open(path, "rt") as f:
        doc = json.load(f)
    fn(doc)
    with gzip.open(path, "wt") as f:
        json.dump(doc, f)


# ---------------------------------------------------------------- frames
def test_point_conversion_round_trip_and_axes():
    p = (1.0, 2.0, 3.0)
    assert map_to_habitat(p) == [1.0, 3.0, -2.0]  # map z (up) -> habitat y (up); map y (left) -> habitat -z
    assert habitat_to_map(map_to_habitat(p)) == p


@pytest.mark.parametrize("yaw", [0.0, 0.5, math.pi / 2, -2.0, 3.0])
def test_yaw_quaternion_round_trip_and_heading(yaw):
    q = yaw_to_habitat_quat(yaw)
    assert math.isclose(habitat_quat_to_yaw(q), yaw, abs_tol=1e-9)
    # rotate habitat's forward (0, 0, -1) by q about +y; it must equal the map heading in habitat axes
    x, y, z, w = q
    phi = 2 * math.atan2(y, w)
    fwd = np.array([-math.sin(phi), 0.0, -math.cos(phi)])
    np.testing.assert_allclose(fwd, map_to_habitat((math.cos(yaw), math.sin(yaw), 0.0)), atol=1e-9)


# ---------------------------------------------------------------- files
def test_layout_and_field_names(episode_set):
    out, scenes, eps, files = episode_set
    assert sorted(p.relative_to(out).as_posix() for p in files) == sorted(
        f"{split}/content/{s.scene_id}.json.gz" for split in ("easy", "medium", "hard") for s in scenes)
    for s in scenes:
        assert (out / "scenes" / f"{s.scene_id}.scene.json").exists()
        assert (out / "scenes" / f"{s.scene_id}.ply").exists()
    with gzip.open(out / "hard" / "content" / "synth_b.json.gz", "rt") as f:
        doc = json.load(f)
    assert doc["dataset_type"] == "Personalized-ObjectNav-v1"
    for ep in doc["episodes"]:
        assert set(EPISODE_FIELDS) <= set(ep)
        assert len(ep["start_rotation"]) == 4 and len(ep["start_position"]) == 3
        assert isinstance(ep["object_id"], (str, list))
        assert isinstance(ep["query"], list) and isinstance(ep["extracted_summary"], list) and isinstance(ep["description"], list)
        assert "geodesic_distance" in ep["info"]
        assert ep["goals"] == [] and isinstance(ep["floor_id"], str)
        assert "personal" not in ep and "personal" in ep["info"]  # extras only inside info
        key = f"synth_b.ply_{ep['object_category']}"  # habitat-lab's goals_key keeps the extension
        goal_names = [g["object_name"] for g in doc["goals_by_category"][key]]
        for oid in ep["object_id"] if isinstance(ep["object_id"], list) else [ep["object_id"]]:
            assert oid in goal_names
    n_vp = 0
    for key, goals in doc["goals_by_category"].items():
        assert key.startswith("synth_b.ply_")
        for g in goals:
            assert set(GOAL_FIELDS) <= set(g)
            assert "instance_id" not in g and isinstance(g["object_id"], int) and isinstance(g["floor_id"], str)
            assert key == f"synth_b.ply_{g['object_category']}"
            for vp in g["view_points"]:
                assert set(vp) == {"agent_state", "iou"} and set(vp["agent_state"]) == {"position", "rotation"}
                assert 0 < vp["iou"] <= 1
                n_vp += 1
    assert n_vp > 0


def test_view_points_near_their_goal(episode_set):
    out, scenes, _, _ = episode_set
    scene = scenes[0]
    with gzip.open(out / "easy" / "content" / f"{scene.scene_id}.json.gz", "rt") as f:
        doc = json.load(f)
    for goals in doc["goals_by_category"].values():
        for g in goals:
            obj = scene.object(g["object_name"])
            assert g["object_id"] == obj.instance_id
            for vp in g["view_points"]:
                x, y, _ = habitat_to_map(vp["agent_state"]["position"])
                assert obj.box.distance_2d(x, y) <= 1.0 + 1e-6


def test_round_trip_is_lossless(episode_set):
    out, scenes, eps, _ = episode_set
    loaded_scenes, loaded = load_episode_set(out)
    assert {k: v.to_dict() for k, v in loaded_scenes.items()} == {s.scene_id: s.to_dict() for s in scenes}
    key = lambda e: (e.split, e.episode_id)  # noqa: E731
    from_file = ("goals", "scene_file", "scene_dataset_config")  # what reading a file adds
    dump = lambda es: json.dumps([{k: v for k, v in e.to_dict().items() if k not in from_file}  # noqa: E731
                                  for e in sorted(es, key=key)])  # NaN-safe comparison
    assert dump(loaded) == dump(eps)
    by_scene = {s.scene_id: s for s in scenes}
    for e in loaded:
        check_split_constraints(e.ownership, e.split)
        assert e.scene_file == f"scenes/{e.scene_id}.ply" and e.scene_dataset_config == ""
        # each target's goal entry: its box centre and view points, in the map frame
        assert sorted(g.object_name for g in e.goals) == sorted(e.target_object_ids)
        for g in e.goals:
            obj = by_scene[e.scene_id].object(g.object_name)
            assert g.position == pytest.approx(obj.box.center) and g.instance_id == obj.instance_id
            assert g.view_points and all(obj.box.distance_2d(*v.position[:2]) <= 1.0 + 1e-6 for v in g.view_points)
        back = type(e).from_dict(json.loads(json.dumps(e.to_dict())))  # goals survive to_dict/from_dict
        assert back.goals == e.goals and json.dumps(back.to_dict()) == json.dumps(e.to_dict())


def test_mesh_in_folder_matches_scene(episode_set):
    out, scenes, _, _ = episode_set
    mesh = read_ply(out / "scenes" / "synth_a.ply")
    ids = set(np.unique(mesh.triangle_instance_id).tolist())
    assert ids == {0} | {o.instance_id for o in scenes[0].objects}


# ---------------------------------------------------------------- bad input
def test_missing_folder_and_missing_files(tmp_path):
    with pytest.raises(EpisodeFormatError, match="not found"):
        load_episode_set(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(EpisodeFormatError, match="no .*json.gz"):
        load_episode_set(tmp_path / "empty")


def test_malformed_json(episode_set, tmp_path):
    d = _copy(episode_set[0], tmp_path / "bad")
    (d / "easy" / "content" / "synth_a.json.gz").write_bytes(b"this is not gzip")
    with pytest.raises(EpisodeFormatError, match=r"synth_a\.json\.gz.*cannot read the gzipped file"):
        load_episode_set(d)


def test_missing_episode_field_names_file_and_field(episode_set, tmp_path):
    d = _copy(episode_set[0], tmp_path / "bad")
    path = d / "medium" / "content" / "synth_b.json.gz"
    _rewrite(path, lambda doc: doc["episodes"][1].pop("owner"))
    with pytest.raises(EpisodeFormatError, match=r"synth_b\.json\.gz: episodes\[1\]: missing field 'owner'"):
        load_episode_set(d)


def test_missing_goal_field(episode_set, tmp_path):
    d = _copy(episode_set[0], tmp_path / "bad")
    path = d / "hard" / "content" / "synth_a.json.gz"

    def drop(doc):
        next(iter(doc["goals_by_category"].values()))[0].pop("view_points")

    _rewrite(path, drop)
    with pytest.raises(EpisodeFormatError, match="missing field 'view_points'"):
        load_episode_set(d)


def test_unknown_scene_and_unknown_object(episode_set, tmp_path):
    d = _copy(episode_set[0], tmp_path / "bad")
    (d / "scenes" / "synth_b.scene.json").unlink()
    with pytest.raises(EpisodeFormatError, match="unknown scene 'synth_b'"):
        load_episode_set(d)
    d2 = _copy(episode_set[0], tmp_path / "bad2")

    def retarget(doc):
        doc["episodes"][0]["info"]["personal"]["target_object_ids"] = ["unicorn_999"]

    _rewrite(d2 / "easy" / "content" / "synth_a.json.gz", retarget)
    with pytest.raises(EpisodeFormatError, match="unicorn_999"):
        load_episode_set(d2)


def test_malformed_scene_json(episode_set, tmp_path):
    d = _copy(episode_set[0], tmp_path / "bad")
    (d / "scenes" / "synth_a.scene.json").write_text("{not json")
    with pytest.raises(EpisodeFormatError, match=r"synth_a\.scene\.json: malformed JSON"):
        load_episode_set(d)


# ---------------------------------------------------------------- the CLI end to end
def test_cli_generate_hard_then_reload_and_show(tmp_path):
    from personal.world.cli import app

    out = tmp_path / "x"
    res = CliRunner().invoke(app, ["generate", "--split", "hard", "--scenes", "3", "--episodes-per-scene", "4", "--seed", "3", "--out", str(out)])
    assert res.exit_code == 0, res.output
    scenes, eps = load_episode_set(out)
    assert len(scenes) == 3 and len(eps) == 12
    assert sorted(p.name for p in (out / "hard" / "content").iterdir()) == sorted(f"{s}.json.gz" for s in scenes)
    for e in eps:
        assert e.split == "hard"
        check_split_constraints(e.ownership, "hard")
    png = tmp_path / "top.png"
    res = CliRunner().invoke(app, ["show", str(out), "--episode", eps[0].episode_id, "--out", str(png)])
    assert res.exit_code == 0, res.output
    from PIL import Image

    im = Image.open(png)
    assert im.size[0] > 600 and im.size[1] > 600
    res = CliRunner().invoke(app, ["show", str(out), "--episode", "nope", "--out", str(png)])
    assert res.exit_code != 0 and "nope" in res.output
    res = CliRunner().invoke(app, ["generate", "--split", "extreme", "--out", str(out)])
    assert res.exit_code != 0

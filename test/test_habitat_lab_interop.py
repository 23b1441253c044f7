"""Our PersONAL episode sets judged by habitat-lab's own dataset code (PyPI habitat-lab,
stand-ins only for habitat_sim / magnum / corrade; see test/habitat_peer.py), and the
public PersONAL files read by both habitat-lab and us."""
import gzip
import json
import math
from pathlib import Path

import pytest

from habitat_peer import authors_filter, dataset_config, habitat_lab, with_personal_fields
from personal.world.episodes import generate_episodes
from personal.world.generator import generate_scene
from personal.world.habitat_format import load_episode_set, read_content_file, write_episode_set

PUBLIC = Path(__file__).parent / "data" / "personal_public"


@pytest.fixture(scope="module")
def objectnav():
    with habitat_lab() as module:
        yield module


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    out = tmp_path_factory.mktemp("habitat_set")
    scenes = [generate_scene(41, scene_id="synth_h1"), generate_scene(42, scene_id="synth_h2", two_floors=True)]
    eps = [e for s in scenes for split in ("easy", "medium", "hard") for e in generate_episodes(s, split, 4, seed=5)]
    write_episode_set(out, scenes, eps)
    return out, scenes, eps


def _load(objectnav, root, split):
    with with_personal_fields(objectnav) as dataset_cls:
        return dataset_cls(dataset_config(root, split))


def _as_floats(values, n):
    assert len(values) == n and all(isinstance(v, float) and math.isfinite(v) for v in values), values


@pytest.mark.parametrize("split", ["easy", "medium", "hard"])
def test_habitat_objectnav_loads_every_episode_with_goals(objectnav, written, split):
    root, scenes, eps = written
    expected = [e for e in eps if e.split == split]
    ds = _load(objectnav, root, split)
    assert len(ds.episodes) == len(expected) > 0  # 100 % of the written episodes
    assert sorted(ds.get_scenes_to_load(dataset_config(root, split))) == sorted(s.scene_id for s in scenes)
    for ep in ds.episodes:
        assert ep.goals, f"episode {ep.info['personal']['scene_id']}/{ep.object_category} has no goals"
        assert Path(ep.scene_id).exists()  # scene_id joined with scenes_dir names the mesh
        _as_floats(ep.start_position, 3)
        _as_floats(ep.start_rotation, 4)
        assert math.isclose(sum(q * q for q in ep.start_rotation), 1.0, rel_tol=1e-9)
        for g in ep.goals:
            assert g.object_category == ep.object_category
            _as_floats(g.position, 3)
            assert g.view_points
            for vp in g.view_points:
                _as_floats(vp.agent_state.position, 3)
                _as_floats(vp.agent_state.rotation, 4)
                assert 0 < vp.iou <= 1


@pytest.mark.parametrize("split", ["easy", "medium", "hard"])
def test_authors_filter_keeps_the_targets_on_their_floor(objectnav, written, split):
    root, scenes, eps = written
    ds = _load(objectnav, root, split)
    by_key = {(e.scene_id, e.object_category, e.owner, e.query): e for e in eps if e.split == split}
    for ep in ds.episodes:
        ours = by_key[(ep.info["personal"]["scene_id"], ep.object_category, ep.owner, ep.query[0])]
        kept = authors_filter(ep)
        names = {g.object_name for g in kept}
        assert set(ours.target_object_ids) <= names, (ours.episode_id, names)
        assert all(g.floor_id == ep.floor_id == str(ours.floor_id) for g in kept)
        # anything else kept is only the authors' substring match ("vase_1" in "vase_12")
        extra = names - set(ours.target_object_ids)
        assert all(any(n in t for t in ours.target_object_ids) for n in extra), extra


def test_round_trip_through_habitat_keeps_our_extras(objectnav, written, tmp_path):
    """Load with habitat-lab, write with habitat-lab's own to_json, read back with ours."""
    root, scenes, eps = written
    for split in ("easy", "medium", "hard"):
        ds = _load(objectnav, root, split)
        with with_personal_fields(objectnav):
            text = ds.to_json()
        path = tmp_path / split / "content" / "all.json.gz"
        path.parent.mkdir(parents=True)
        with gzip.open(path, "wt") as f:
            f.write(text)
        goals, back = read_content_file(path, split)
        assert all(k.endswith(".ply_" + k.split(".ply_")[1]) for k in goals)
        ours = sorted((e for e in eps if e.split == split), key=lambda e: (e.scene_id, e.episode_id))
        back = sorted(back, key=lambda e: (e.scene_id, e.episode_id))
        # ObjectNavDatasetV1 renumbers episode_id; everything else, our extras included, survives
        # (habitat's to_json writes the goals inline, scene_id joined with scenes_dir and
        # scene_dataset_config "default": what a file adds on reading is compared apart)
        from_file = ("goals", "scene_file", "scene_dataset_config")
        dump = lambda es: json.dumps([{k: v for k, v in {**e.to_dict(), "episode_id": None}.items()  # noqa: E731
                                       if k not in from_file} for e in es])
        assert dump(back) == dump(ours)
        for e in back:
            assert sorted(g.object_name for g in e.goals) == sorted(e.target_object_ids)
            assert all(g.view_points for g in e.goals) and Path(e.scene_file).is_absolute()


def test_public_personal_files_load_with_habitat_and_with_ours(objectnav):
    total = 0
    for split, n_targets in (("hard", 1), ("medium", 2)):
        ds = _load(objectnav, PUBLIC, split)
        assert len(ds.episodes) == 1
        ep = ds.episodes[0]
        kept = authors_filter(ep)
        assert len(kept) == n_targets and len(ep.goals) > n_targets  # the filter drops other floors / instances
        _, ours = read_content_file(PUBLIC / split / "content" / f"{Path(ep.scene_id).name.split('.')[0]}.json.gz", split)
        assert ours[0].owner == ep.owner and ours[0].floor_id == int(ep.floor_id)
        assert sorted(ours[0].target_object_ids) == sorted(g.object_name for g in kept)
        total += 1
    assert total == 2


def test_stock_habitat_classes_reject_personal_fields(objectnav, written):
    """Why with_personal_fields exists: stock habitat-lab rejects any PersONAL episode,
    the authors' own files included (attrs refuses unknown keys)."""
    root, _, _ = written
    with pytest.raises(TypeError, match="unexpected keyword"):
        objectnav.ObjectNavDatasetV1(dataset_config(PUBLIC, "hard"))
    with pytest.raises(TypeError, match="unexpected keyword"):
        objectnav.ObjectNavDatasetV1(dataset_config(root, "hard"))


def test_our_reader_still_reads_what_we_wrote(written):
    root, scenes, eps = written
    loaded_scenes, loaded = load_episode_set(root)
    assert len(loaded) == len(eps) and set(loaded_scenes) == {s.scene_id for s in scenes}

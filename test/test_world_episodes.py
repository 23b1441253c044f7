import json
import math
import re

import pytest

from personal.world.episodes import (
    START_CLEARANCE, check_split_constraints, generate_episodes, object_phrase, ownership_matrix,
    substitute_names, summary_template,
)
from personal.world.generator import generate_scene, is_navigable
from personal.world.model import SPLITS


@pytest.fixture(scope="module")
def scenes():
    return [generate_scene(21), generate_scene(22), generate_scene(23, two_floors=True)]


@pytest.fixture(scope="module")
def episodes(scenes):
    return {split: [(s, e) for s in scenes for e in generate_episodes(s, split, 12, seed=5)] for split in SPLITS}


# ---------------------------------------------------------------- the checker itself
@pytest.mark.parametrize(
    "split, ownership, ok",
    [
        ("easy", {"A": ["o1"], "B": ["o2"]}, True),
        ("easy", {"A": ["o1", "o2"], "B": ["o3"]}, False),  # r_A = 2
        ("easy", {"A": ["o1"], "B": ["o1"]}, False),  # shared object, M != N
        ("easy", {"A": ["o1"], "B": []}, False),  # r_B = 0
        ("medium", {"A": ["o1", "o2"], "B": ["o3"]}, True),
        ("medium", {"A": ["o1"], "B": ["o2"]}, False),  # nobody owns several
        ("medium", {"A": ["o1", "o2"], "B": ["o2"]}, False),  # shared object
        ("medium", {"A": ["o1", "o2"], "B": []}, False),  # r_B = 0
        ("hard", {"A": ["o1", "o2"], "B": ["o2"]}, True),
        ("hard", {"A": ["o1", "o2"], "B": ["o3"]}, False),  # nothing shared
        ("hard", {"A": ["o1"], "B": ["o1"]}, False),  # nobody owns several
        ("hard", {"A": ["o1", "o2"], "B": ["o2"], "C": []}, False),  # r_C = 0
    ],
)
def test_check_split_constraints(split, ownership, ok):
    if ok:
        check_split_constraints(ownership, split)
    else:
        with pytest.raises(ValueError, match=split):
            check_split_constraints(ownership, split)


def test_checker_rejects_unknown_split():
    with pytest.raises(ValueError, match="unknown split"):
        check_split_constraints({"A": ["o1"]}, "extreme")


# ---------------------------------------------------------------- generated episodes
@pytest.mark.parametrize("split", SPLITS)
def test_generated_episodes_satisfy_split(episodes, split):
    stats = {"shared": 0, "multi": 0}
    for scene, e in episodes[split]:
        assert e.split == split
        check_split_constraints(e.ownership, split)
        people, objects, a = ownership_matrix(e.ownership)
        assert people == e.people
        for o in objects:
            scene.object(o)  # exists
        stats["shared"] += int((a.sum(axis=0) > 1).sum())
        stats["multi"] += int((a.sum(axis=1) > 1).sum())
        if split == "easy":
            assert len(people) == len(objects)
    if split == "hard":
        assert stats["shared"] > 0
    if split != "easy":
        assert stats["multi"] > 0


def test_queries_and_one_of_targets(episodes):
    n_one_of = 0
    for split in SPLITS:
        for scene, e in episodes[split]:
            owned_same = [o for o in e.ownership[e.owner] if scene.object(o).category == e.object_category]
            assert sorted(e.target_object_ids) == sorted(owned_same)
            if len(e.target_object_ids) > 1:
                n_one_of += 1
                plural = re.escape(e.object_category)
                assert re.fullmatch(rf"Find one of {e.owner}'s {plural}\w*\.|Find one of {e.owner}'s pairs of .+\.", e.query) or \
                    e.query.startswith(f"Find one of {e.owner}'s "), e.query
            else:
                assert e.query == f"Find {e.owner}'s {e.object_category}."
            assert e.description == [scene.object(o).caption for o in e.target_object_ids]
            assert len({scene.object(o).floor for o in e.target_object_ids}) == 1
    assert n_one_of >= 3


def test_summary_states_every_relation(episodes):
    for split in SPLITS:
        for scene, e in episodes[split]:
            assert "<person" not in e.summary
            sentences = re.split(r"(?<=\.)\s+", e.summary)
            n_rel = 0
            for person, objs in e.ownership.items():
                for oid in objs:
                    n_rel += 1
                    obj = scene.object(oid)
                    room = scene.room(obj.room_id).name
                    hits = [s for s in sentences if object_phrase(obj) in s and person in s and room in s]
                    assert hits, f"{e.episode_id}: relation {person} -> {oid} missing from summary:\n{e.summary}"
            assert len(e.extracted_summary) == n_rel
            for person, objs in e.ownership.items():
                for oid in objs:
                    obj = scene.object(oid)
                    assert f"{person} owns the {object_phrase(obj)} in the {scene.room(obj.room_id).name}" in e.extracted_summary


def test_summaries_use_varied_templates(episodes):
    verbs = set()
    for split in SPLITS:
        for _, e in episodes[split]:
            for v in (" owns the ", " belongs to ", " is owned by ", " share the ", " is shared by ", "'s.", " is the owner of "):
                if v in e.summary:
                    verbs.add(v)
    assert len(verbs) >= 5


def test_start_poses(episodes):
    for split in SPLITS:
        for scene, e in episodes[split]:
            target = scene.object(e.target_object_ids[0])
            assert e.floor_id == target.floor
            x, y, z = e.start_position
            assert z == next(f.z for f in scene.floors if f.index == e.floor_id)
            assert is_navigable(scene, e.floor_id, x, y, START_CLEARANCE)
            assert -math.pi <= e.start_yaw <= math.pi
            assert math.isnan(e.geodesic_distance)  # computed by the simulator, not here


def test_episodes_deterministic(scenes):
    def dump(seed):  # NaN geodesic distances compare unequal, so compare the JSON text
        return json.dumps([e.to_dict() for e in generate_episodes(scenes[0], "hard", 4, seed=seed)])

    a, b, c = dump(9), dump(9), dump(10)
    assert a == b and a != c


def test_placeholders_then_names(scenes):
    import random

    s = scenes[0]
    objs = [o.object_id for o in s.objects if o.attributes["caption_unique"]][:3]
    tpl = summary_template(random.Random(0), s, ["Lisa", "Tom"], {"Lisa": objs[:2], "Tom": objs[1:]})
    assert "<person1>" in tpl and "<person2>" in tpl and "Lisa" not in tpl
    text = substitute_names(tpl, ["Lisa", "Tom"])
    assert "Lisa" in text and "Tom" in text and "<person" not in text
    with pytest.raises(ValueError, match="person3"):
        substitute_names("<person3> owns it.", ["Lisa", "Tom"])


def test_unknown_split_rejected(scenes):
    with pytest.raises(ValueError, match="unknown split"):
        generate_episodes(scenes[0], "extreme", 1, seed=0)


def test_every_target_has_a_reachable_view_point(episodes):
    from personal.world.episodes import FloorNav
    from personal.world.generator import AGENT_RADIUS, clearance

    navs = {}
    for split in SPLITS:
        for scene, e in episodes[split]:
            nav = navs.setdefault((scene.scene_id, e.floor_id), FloorNav(scene, e.floor_id))
            for oid in e.target_object_ids:
                obj = scene.object(oid)
                vps = nav.view_points(obj)
                assert vps, f"{e.episode_id}: {oid} has no view point"
                for vp in vps:
                    x, y, _ = vp["position"]
                    assert obj.box.distance_2d(x, y) <= 1.0
                    assert clearance(scene, e.floor_id, x, y) >= AGENT_RADIUS - 0.05
                    assert 0 < vp["visible_fraction"] <= 1


def test_visibility_is_blocked_by_walls():
    from personal.world.episodes import visible_fraction
    from personal.world.model import Box, Floor, Room, Scene, SceneObject, Wall

    mug = SceneObject(1, "mug_1", "mug", "red", (200, 0, 0), "the red mug", "room_0", 0, Box((3.0, 0.0, 0.05), (0.1, 0.1, 0.1)))
    wall = Wall(Box((2.0, 0.0, 1.3), (0.1, 4.0, 2.6)))
    scene = Scene("t", 0, [Floor(0, 0.0)], [Room("room_0", "kitchen", 0, (0.0, -2.0, 4.0, 2.0))], [wall], [mug])
    assert visible_fraction(scene, mug, 1.0, 0.0) == 0.0  # wall in between
    assert visible_fraction(scene, mug, 3.5, 0.5) == 1.0  # same side, nothing in the way

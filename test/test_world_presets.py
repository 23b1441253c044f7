"""Household size presets: the HM3D-sized one follows its published figures, the default is unchanged."""
import math
from collections import Counter

import numpy as np
import pytest

from personal.world import catalog
from personal.world.generator import GRID_RES, PRESETS, generate_scene, occupancy_grid, room_type

# the published figures the hm3d preset follows (docs/simulator.md cites them)
HM3D_ROOMS_PER_SCENE = 3100 / 216  # HM3DSem (arXiv 2210.05633): 3,100 rooms in 216 spaces
HM3D_NAVIGABLE_M2_PER_SCENE = 112_500 / 1000  # HM3D (arXiv 2109.08238): 112.5k m2 over 1,000 scenes

SEEDS = (20000, 20001, 20002)


@pytest.fixture(scope="module")
def hm3d():
    return [generate_scene(s, preset="hm3d") for s in SEEDS]


@pytest.fixture(scope="module")
def default():
    return [generate_scene(s) for s in SEEDS]


def _navigable_m2(scene):
    blocked, _ = occupancy_grid(scene, 0)
    return float((~blocked).sum()) * GRID_RES ** 2


def test_hm3d_preset_follows_the_published_room_count_and_navigable_area(hm3d, default):
    rooms = [len(s.rooms) for s in hm3d]
    lo, hi = PRESETS["hm3d"].rooms_per_floor
    assert all(lo <= n <= hi for n in rooms)
    assert abs(np.mean(rooms) - HM3D_ROOMS_PER_SCENE) <= 2.5
    nav = [_navigable_m2(s) for s in hm3d]
    assert abs(np.mean(nav) - HM3D_NAVIGABLE_M2_PER_SCENE) <= 0.2 * HM3D_NAVIGABLE_M2_PER_SCENE, nav
    # and it is a different size class from the default households
    assert np.mean(nav) > 1.8 * np.mean([_navigable_m2(s) for s in default])
    assert all(4 <= len(s.rooms) <= 8 for s in default)


def test_hm3d_rooms_tile_the_floor_and_have_known_names(hm3d):
    from personal.grounding.ownership_rules import ROOM_WORDS

    for s in hm3d:
        names = [r.name for r in s.rooms]
        assert len(set(names)) == len(names)
        for n in names:
            assert room_type(n) in catalog.ROOM_TYPES
            assert n.split()[-1] in ROOM_WORDS or n in ROOM_WORDS, f"{n!r}: the extractor would not see a room"
        area = sum((r.bounds[2] - r.bounds[0]) * (r.bounds[3] - r.bounds[1]) for r in s.rooms)
        x0, y0 = min(r.bounds[0] for r in s.rooms), min(r.bounds[1] for r in s.rooms)
        x1, y1 = max(r.bounds[2] for r in s.rooms), max(r.bounds[3] for r in s.rooms)
        assert math.isclose(area, (x1 - x0) * (y1 - y0), rel_tol=1e-6)
        assert s.scene_id.startswith("hm3dsize_")


def test_hm3d_preset_has_more_same_category_objects(hm3d, default):
    def per_category(scenes):
        return np.mean([np.mean(list(Counter(o.category for o in s.objects if not o.is_furniture).values()))
                        for s in scenes])

    assert per_category(hm3d) > 1.3 * per_category(default)


def test_hm3d_episodes_and_oracle_captions(hm3d):
    from personal.models.oracle import captions_for_scene_id, captions_from_scene
    from personal.world.episodes import generate_episodes

    s = hm3d[0]
    assert captions_for_scene_id(s.scene_id) == captions_from_scene(s)
    for split in ("easy", "hard"):
        (ep,) = generate_episodes(s, split, 1, 0)
        assert ep.target_object_ids and all(s.object(o) for o in ep.target_object_ids)


def test_unknown_preset_is_named():
    with pytest.raises(ValueError, match="size preset 'huge'"):
        generate_scene(0, preset="huge")


def test_hm3d_episodes_give_look_alikes_of_the_query_to_other_people(hm3d, default):
    """More same-category objects owned by different people: the summary gives another
    instance of the query's category to someone else more often than in default households."""
    from personal.world.episodes import generate_episodes

    def share(scenes):
        eps = [(s, e) for s in scenes[:2] for sp in ("easy", "medium", "hard") for e in generate_episodes(s, sp, 10, 0)]
        return sum(any(s.object(o).category == e.object_category and o not in e.target_object_ids
                       for p, objs in e.ownership.items() if p != e.owner for o in objs) for s, e in eps) / len(eps)

    assert share(hm3d) >= 0.2 and share(hm3d) > 2 * share(default)

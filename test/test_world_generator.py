import math

import numpy as np
import pytest
from scipy import ndimage

from personal.world import catalog
from personal.world.generator import AGENT_RADIUS, generate_scene, is_navigable, occupancy_grid
from personal.world.model import Scene

SEEDS = (0, 1, 2, 3, 4, 5)


@pytest.fixture(scope="module")
def scenes():
    return [generate_scene(s) for s in SEEDS] + [generate_scene(100 + s, two_floors=True) for s in range(3)]


def test_deterministic_for_a_seed():
    a, b = generate_scene(11), generate_scene(11)
    assert a.to_dict() == b.to_dict()
    assert generate_scene(12).to_dict() != a.to_dict()
    assert Scene.from_dict(a.to_dict()).to_dict() == a.to_dict()


def test_catalog_has_60_categories_with_fine_grained_attributes():
    cats = catalog.CATEGORIES
    assert len(cats) >= 60
    assert sum(c.furniture for c in cats.values()) >= 20 and sum(not c.furniture for c in cats.values()) >= 40
    for name in ("backpack", "mug", "laptop", "teddy bear", "bed", "sofa", "cabinet", "sideboard"):
        assert name in cats
    for c in cats.values():
        assert all(s > 0 for s in c.size) and c.rooms and c.colors and c.materials and c.patterns
        assert all(col in catalog.COLORS for col in c.colors)
        if not c.furniture:
            assert c.on or c.under, f"{c.name} has nowhere to go"
    with_parts = [c for c in cats.values() if c.parts]
    assert len(with_parts) >= 0.8 * len(cats)
    assert {"handle"} <= {p.name for p in cats["mug"].parts}
    assert {"strap"} <= {p.name for p in cats["backpack"].parts}
    assert {"screen"} <= {p.name for p in cats["laptop"].parts}
    assert len({p for c in cats.values() for p in c.patterns}) >= 5


def test_rooms_objects_and_floors(scenes):
    for s in scenes:
        for fl in s.floors:
            rooms = [r for r in s.rooms if r.floor == fl.index]
            assert 4 <= len(rooms) <= 8
            names = [r.name for r in rooms]
            assert len(set(names)) == len(names)
            assert all(n in catalog.ROOM_TYPES for n in names)
            # rooms tile the floor rectangle
            area = sum((r.bounds[2] - r.bounds[0]) * (r.bounds[3] - r.bounds[1]) for r in rooms)
            x0, y0, x1, y1 = _floor_bounds(rooms)
            assert math.isclose(area, (x1 - x0) * (y1 - y0), rel_tol=1e-6)
            assert 7 <= x1 - x0 <= 9.5 and 8.5 <= y1 - y0 <= 11.5
        assert 40 <= len(s.objects) <= 120
        ids = [o.instance_id for o in s.objects]
        assert len(set(ids)) == len(ids) and min(ids) >= 1
        for o in s.objects:
            assert o.object_id == f"{o.category.replace(' ', '_')}_{o.instance_id}"
            r = s.room(o.room_id)
            assert r.floor == o.floor and r.contains(o.box.center[0], o.box.center[1])
            z = next(f.z for f in s.floors if f.index == o.floor)
            assert o.box.min[2] >= z - 1e-6 and o.box.max[2] <= z + 2.6


def test_second_floor_is_stacked_at_3m(scenes):
    two = [s for s in scenes if len(s.floors) == 2]
    assert two
    for s in two:
        assert [f.z for f in s.floors] == [0.0, 3.0]
        assert any(o.floor == 1 and o.box.min[2] >= 3.0 for o in s.objects)
        assert {r.floor for r in s.rooms} == {0, 1}


def test_all_rooms_connected_for_the_agent(scenes):
    """Inflating walls and furniture by the agent radius leaves one free region touching every room."""
    for s in scenes:
        for fl in s.floors:
            blocked, (ox, oy) = occupancy_grid(s, fl.index, inflate=AGENT_RADIUS)
            labels, _ = ndimage.label(~blocked)
            sizes = np.bincount(labels.ravel())
            sizes[0] = 0
            main = labels == sizes.argmax()
            for r in (r for r in s.rooms if r.floor == fl.index):
                i0, i1 = int((r.bounds[0] - ox) / 0.05), int((r.bounds[2] - ox) / 0.05)
                j0, j1 = int((r.bounds[1] - oy) / 0.05), int((r.bounds[3] - oy) / 0.05)
                assert main[i0:i1, j0:j1].any(), f"{s.scene_id}: {r.name} unreachable"


def _floor_bounds(rooms):
    return (min(r.bounds[0] for r in rooms), min(r.bounds[1] for r in rooms),
            max(r.bounds[2] for r in rooms), max(r.bounds[3] for r in rooms))


def _wall_gaps(scene, floor_z, axis, coord, lo, hi):
    """Intervals of the wall line (axis, coord) between lo and hi that no wall box covers."""
    covered = []
    for w in scene.walls:
        b = w.box
        if not (b.min[2] <= floor_z + 1.0 <= b.max[2]):
            continue
        if axis == "x" and abs(b.center[0] - coord) < 1e-6 and b.size[0] < 0.2:
            covered.append((b.min[1], b.max[1]))
        if axis == "y" and abs(b.center[1] - coord) < 1e-6 and b.size[1] < 0.2:
            covered.append((b.min[0], b.max[0]))
    gaps, pos = [], lo
    for a, b in sorted(covered):
        if a > pos + 1e-6:
            gaps.append((pos, min(a, hi)))
        pos = max(pos, b)
    if pos < hi - 1e-6:
        gaps.append((pos, hi))
    return [(a, b) for a, b in gaps if b > a + 1e-6]


def _room_edges(r):
    x0, y0, x1, y1 = r.bounds
    return [("x", x0, y0, y1), ("x", x1, y0, y1), ("y", y0, x0, x1), ("y", y1, x0, x1)]


def test_doors_are_wide_enough_and_outer_walls_closed(scenes):
    n_doors = 0
    for s in scenes:
        for fl in s.floors:
            rooms = [r for r in s.rooms if r.floor == fl.index]
            fx0, fy0, fx1, fy1 = _floor_bounds(rooms)
            seen = set()
            for r in rooms:
                for axis, coord, lo, hi in _room_edges(r):
                    exterior = coord in ((fx0, fx1) if axis == "x" else (fy0, fy1))
                    gaps = _wall_gaps(s, fl.z, axis, coord, lo, hi)
                    if exterior:
                        assert not gaps, f"{s.scene_id}: opening in the outer wall of {r.name}"
                        continue
                    for a, b in gaps:
                        assert b - a >= 0.9, f"{s.scene_id}: door of {r.name} at {axis}={coord} only {b - a:.2f} m wide"
                        seen.add((axis, coord, round(a, 3)))
            n_doors += len(seen)
    assert n_doors >= len(scenes) * 3


def test_furniture_does_not_overlap_and_small_objects_rest_on_supports(scenes):
    for s in scenes:
        by_id = {o.object_id: o for o in s.objects}
        furn = [o for o in s.objects if o.is_furniture]
        for i, a in enumerate(furn):
            for b in furn[i + 1:]:
                if a.floor == b.floor:
                    overlap = all(a.box.min[k] < b.box.max[k] - 1e-6 and b.box.min[k] < a.box.max[k] - 1e-6 for k in (0, 1))
                    assert not overlap, f"{a.object_id} overlaps {b.object_id}"
        for o in s.objects:
            if o.is_furniture:
                continue
            sup = by_id[o.attributes["support"]]
            assert sup.room_id == o.room_id
            assert o.category in [c.name for c in catalog.SMALL]
            inside = all(sup.box.min[k] - 1e-6 <= o.box.min[k] and o.box.max[k] <= sup.box.max[k] + 1e-6 for k in (0, 1))
            assert inside, f"{o.object_id} not within {sup.object_id}'s footprint"
            if o.attributes["placement"] == "under":
                assert o.box.max[2] <= sup.box.min[2] + 1e-6
            else:
                assert o.box.min[2] >= sup.box.min[2] - 1e-6


def test_captions_in_personal_style(scenes):
    n, unique = 0, 0
    for s in scenes:
        for o in s.objects:
            n += 1
            unique += o.attributes["caption_unique"]
            assert o.caption.startswith("the ") and o.category in o.caption and o.color in o.caption
            if not o.is_furniture:
                sup = s.object(o.attributes["support"])
                assert f" {o.attributes['placement']} the " in o.caption and sup.category in o.caption
            assert o.attributes["material"] and o.attributes["pattern"] in catalog.PATTERNS
            if o.attributes["pattern"] != "plain":
                assert o.attributes["pattern"] in o.caption
            for p in o.parts:
                assert p.color in catalog.COLORS and tuple(p.rgb) == catalog.COLORS[p.color]
    assert unique / n >= 0.95
    captions = [o.caption for s in scenes for o in s.objects]
    assert any(" under the " in c for c in captions) and any(" with a" in c for c in captions)


def test_start_pose_helper(scenes):
    s = scenes[0]
    r = s.rooms[0]
    assert not is_navigable(s, 0, r.bounds[0] + 0.01, r.bounds[1] + 0.01)  # a corner touches walls
    assert not is_navigable(s, 0, -5.0, -5.0)  # outside the house


def test_every_part_shows_outside_its_object(scenes):
    """Parts carry fine-grained attributes; a part buried inside its object could never be seen."""
    for s in scenes:
        for o in s.objects:
            for p in o.parts:
                out = max(max(o.box.min[k] - p.box.min[k], p.box.max[k] - o.box.max[k]) for k in range(3))
                assert out >= 0.001, f"{o.object_id}: part {p.name!r} is hidden inside the object"

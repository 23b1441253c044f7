"""The world is worth seeing: every attribute a caption states is drawn by the renderer.

Patterns, materials, category shapes, coloured parts, textured structure, per-household
lighting and structure labels, measured on rendered pixels."""
import math
import re

import numpy as np
import pytest

from personal.world import appearance as ap
from personal.world import catalog, shapes
from personal.world.generator import generate_scene
from personal.world.mesh import STRUCTURE_CLASSES, scene_mesh
from personal.world.model import Box, Floor, ObjectPart, Room, Scene, SceneObject, Wall
from personal.sim.backends.base import AgentState, CameraSpec
from personal.sim.backends.synthetic import camera_pose
from personal.sim.render import Renderer

CAM = CameraSpec(width=320, height=240)


def _stage(category="cushion", colour="red", pattern="plain", material="cotton", parts=(), seed=0, size=(0.6, 0.2, 0.6)):
    """One object 1.2 m in front of a camera at (0, 0) facing +x, in a plain room."""
    rgb = catalog.COLORS[colour]
    obj = SceneObject(
        instance_id=1, object_id=f"{category}_1", category=category, color=colour, rgb=rgb, caption="", room_id="r",
        floor=0, box=Box((1.2, 0.0, 0.88), size), attributes={"pattern": pattern, "material": material, "yaw_quarter_turns": 1},
        parts=list(parts),
    )
    walls = [Wall(Box((3.0, 0.0, 1.3), (0.1, 6.0, 2.6)))]
    return Scene("stage", seed, [Floor(0, 0.0, 2.6)], [Room("r", "living room", 0, (-3.0, -3.0, 3.0, 3.0))], walls, [obj])


def _object_image(scene: Scene) -> tuple[np.ndarray, np.ndarray]:
    r = Renderer(scene_mesh(scene), CAM, nthreads=1)
    rgb, _, ids = r.render(camera_pose(AgentState(0.0, 0.0, 0.0, 0.0, 0.0), CAM))
    mask = ids == 1
    assert mask.sum() > 500, "the object must fill part of the frame"
    return rgb.astype(float), mask


def _object_pixels(scene: Scene) -> np.ndarray:
    rgb, mask = _object_image(scene)
    return rgb[mask]


def _texture_energy(rgb: np.ndarray, mask: np.ndarray) -> float:
    """Mean absolute difference between horizontal neighbours inside the object."""
    both = mask[:, 1:] & mask[:, :-1]
    return float(np.abs(rgb[:, 1:] - rgb[:, :-1]).mean(-1)[both].mean())


@pytest.mark.parametrize("pattern", ap.PATTERN_NAMES)
def test_each_pattern_differs_measurably_from_plain(pattern):
    plain = _object_pixels(_stage(pattern="plain"))
    drawn = _object_pixels(_stage(pattern=pattern))
    assert plain.shape == drawn.shape  # same geometry, same pixels
    # the second colour covers a good share of the object and changes its colour spread
    changed = np.abs(drawn - plain).max(axis=1) > 40
    assert changed.mean() > 0.1, f"{pattern}: only {changed.mean():.1%} of the object's pixels changed"
    assert drawn.mean(axis=1).std() > plain.mean(axis=1).std() + 15


def test_patterns_are_distinguishable_from_each_other():
    tiles = ap.texture_stack()[0]
    for i, a in enumerate(ap.PATTERN_NAMES):
        for b in ap.PATTERN_NAMES[i + 1:]:
            ta, tb = tiles[ap.TEXTURE_ID[a]] > 0.5, tiles[ap.TEXTURE_ID[b]] > 0.5
            iou = (ta & tb).sum() / (ta | tb).sum()
            assert iou < 0.5, f"{a} and {b} tiles look alike (IoU {iou:.2f})"


def test_pattern_stays_on_the_object_when_it_turns():
    # surface coordinates are the object's own: turning the object turns its stripes with it
    a = _stage(category="cushion", pattern="striped")
    m = scene_mesh(a)
    body = (m.triangle_instance_id == 1) & (m.triangle_pattern == ap.TEXTURE_ID["striped"])
    a.objects[0].attributes["yaw_quarter_turns"] = 3
    m3 = scene_mesh(a)
    body3 = (m3.triangle_instance_id == 1) & (m3.triangle_pattern == ap.TEXTURE_ID["striped"])
    np.testing.assert_allclose(np.sort(m.triangle_uv[body].ravel()), np.sort(m3.triangle_uv[body3].ravel()), atol=1e-6)


CAPTION_MATERIALS = ("wood", "metal", "glass", "fabric", "leather", "plastic")


def test_materials_shade_differently():
    images = {m: _object_image(_stage(category="toy chest", colour="grey", material=m, size=(0.8, 0.45, 0.5)))
              for m in CAPTION_MATERIALS}
    looks = {m: rgb[mask] for m, (rgb, mask) in images.items()}
    for i, a in enumerate(CAPTION_MATERIALS):
        for b in CAPTION_MATERIALS[i + 1:]:
            diff = np.abs(looks[a] - looks[b]).mean()
            assert diff > 2.0, f"{a} and {b} shade alike (mean difference {diff:.1f})"
    # wood has grain and fabric a weave (fine texture plain plastic lacks); glass and metal
    # reflect the room
    energy = {m: _texture_energy(*images[m]) for m in CAPTION_MATERIALS}
    assert energy["wood"] > 1.5 * energy["plastic"] and energy["fabric"] > 1.5 * energy["plastic"], energy


def test_every_catalog_material_and_category_is_drawn():
    for c in catalog.CATEGORIES.values():
        assert c.name in shapes.BODY_RECIPES, f"category {c.name!r} has no shape recipe"
        for m in c.materials:
            assert m in ap.MATERIAL_OF, f"material {m!r} of {c.name!r} has no shading class"
        for p in c.patterns:
            assert p == "plain" or p in ap.PATTERN_NAMES


def test_category_shapes_stay_near_their_box():
    for c in catalog.CATEGORIES.values():
        w, d, h = c.size
        g = shapes.Geom.concat([p.geom for p in shapes.body_pieces(c.name, (w, d, h))])
        assert len(g.tris) >= 12
        over = np.abs(g.verts) - np.array([w, d, h]) / 2
        assert (over < np.maximum(0.2 * np.array([w, d, h]), 0.03)).all(), f"{c.name} spills out of its box"


def test_shapes_tell_categories_apart():
    # a mug, a vase and a book of similar size used to be the same box: their silhouettes differ now
    sil = {}
    for cat_name in ("mug", "vase", "book", "ball", "bowl"):
        c = catalog.category(cat_name)
        size = tuple(0.3 * s / max(c.size) for s in c.size)
        sc = _stage(category=cat_name, colour="blue", material=c.materials[0], size=size)
        r = Renderer(scene_mesh(sc), CAM, nthreads=1)
        _, _, ids = r.render(camera_pose(AgentState(0.6, 0.0, 0.0, 0.0, -0.5), CAM))
        sil[cat_name] = ids == 1
    names = list(sil)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            inter, union = (sil[a] & sil[b]).sum(), (sil[a] | sil[b]).sum()
            assert inter / union < 0.85, f"{a} and {b} have the same silhouette"


_CAPTION = re.compile(r"^the (?P<look>.+?) (?P<relation>(on|under|next to|against|at) .+)$")


@pytest.mark.parametrize("seed", [0, 7])
def test_no_caption_states_an_attribute_the_renderer_does_not_draw(seed):
    scene = generate_scene(seed)
    m = scene_mesh(scene)
    adjectives = {v: k for k, v in {"wood": "wooden", "metal": "metal", "glass": "glass", "leather": "leather",
                                    "wool": "woollen", "plastic": "plastic"}.items()}
    for o in scene.objects:
        mine = m.triangle_instance_id == o.instance_id
        words = _CAPTION.match(o.caption).group("look")
        look, _, part = words.partition(" with ")
        # category and colour: the object's shape is its category's, its body has its colour
        assert look.endswith(o.category), o.caption
        assert o.category in shapes.BODY_RECIPES
        assert (m.triangle_rgb[mine] == o.rgb).all(axis=1).any(), o.caption
        stated = look[: -len(o.category)].split()
        for w in stated:
            if w in ap.PATTERN_NAMES:
                assert (m.triangle_pattern[mine] == ap.TEXTURE_ID[w]).any(), f"{o.caption}: {w} not drawn"
            elif w in adjectives or w in ap.MATERIAL_OF:
                mat = ap.MATERIAL_OF[adjectives.get(w, w)]
                assert (m.triangle_material[mine] == ap.MATERIAL_ID[mat]).any(), f"{o.caption}: {w} not drawn"
        if part:
            name = part.split(" ", 1)[1] if part.split(" ", 1)[0] in ("a", "an") else part
            p = next(p for p in o.parts if name.endswith(p.name))
            assert name.startswith(p.color)
            assert (m.triangle_rgb[mine] == p.rgb).all(axis=1).any(), f"{o.caption}: part colour not drawn"


def test_walls_and_floors_are_textured_and_lighting_varies_between_households():
    looks = [ap.house_look(generate_scene(s)) for s in range(6)]
    assert len({lk.lighting.key_dir for lk in looks}) == 6
    assert len({lk.lighting.ambient for lk in looks}) == 6
    floors = {r.floor_material for lk in looks for r in lk.rooms.values()}
    assert {"planks", "tiles"} <= floors
    # same stage, two households' light: different pixels
    a = _object_pixels(_stage(seed=1))
    b = _object_pixels(_stage(seed=2))
    assert np.abs(a - b).mean() > 3
    for name in ("planks", "tiles", "carpet", "paint", "wallpaper"):
        tile = ap.texture_stack()[0, ap.TEXTURE_ID[name]]
        assert tile.std() > 0.02, f"{name} is flat"


def test_structure_labels_from_render_labels():
    from personal.sim.toy_scene import two_room_scene

    r = Renderer(scene_mesh(two_room_scene()), CameraSpec(), nthreads=1)
    # in room_a looking at the door in the wall x = 4 (y 2.8 - 3.8)
    rgb, depth, ids, cls = r.render_labels(camera_pose(AgentState(2.5, 3.3, 0.0, 0.0, 0.0), CameraSpec()))
    assert cls.dtype == np.uint8 and cls.shape == ids.shape
    names = set(STRUCTURE_CLASSES[i] for i in np.unique(cls))
    assert {"wall", "floor", "ceiling", "door"} <= names
    assert (cls[ids > 0] == 0).all()  # objects are class 0
    assert cls[5, 320] == STRUCTURE_CLASSES.index("ceiling") and cls[-5, 320] == STRUCTURE_CLASSES.index("floor")


def test_parts_are_drawn_in_their_colour():
    handle = ObjectPart("handle", "yellow", catalog.COLORS["yellow"], Box((1.2, 0.062, 0.88), (0.025, 0.025, 0.06)))
    sc = _stage(category="mug", colour="blue", material="ceramic", parts=[handle], size=(0.09, 0.09, 0.1))
    r = Renderer(scene_mesh(sc), CAM, nthreads=1)
    rgb, _, ids = r.render(camera_pose(AgentState(0.75, 0.0, 0.0, 0.0, 0.0), CAM))
    px = rgb[ids == 1].astype(int)
    yellowish = (px[:, 0] > 120) & (px[:, 1] > 100) & (px[:, 2] < 80)
    blueish = (px[:, 2] > px[:, 0] + 30)
    assert yellowish.sum() > 10 and blueish.sum() > 100
    assert math.isfinite(float(px.mean()))

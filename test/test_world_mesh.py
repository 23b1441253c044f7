import numpy as np
import pytest

from personal.world.mesh import STRUCTURE_CLASSES, read_ply, scene_mesh, write_ply
from personal.world.model import Box, Floor, ObjectPart, Room, Scene, SceneObject, Wall


def _tiny_scene() -> Scene:
    mug = SceneObject(
        instance_id=7, object_id="mug_7", category="mug", color="blue", rgb=(20, 40, 200),
        caption="the blue mug", room_id="room_0", floor=0,
        box=Box((1.0, 1.0, 0.05), (0.1, 0.1, 0.1)),
        parts=[ObjectPart("handle", "black", (0, 0, 0), Box((1.07, 1.0, 0.05), (0.04, 0.02, 0.06)))],
    )
    return Scene(
        scene_id="tiny", seed=0, floors=[Floor(0, 0.0, 2.5)],
        rooms=[Room("room_0", "kitchen", 0, (0.0, 0.0, 3.0, 2.0))],
        walls=[Wall(Box((1.5, -0.05, 1.25), (3.0, 0.1, 2.5)), (200, 200, 200))],
        objects=[mug],
    )


def test_mesh_counts_ids_colours():
    m = scene_mesh(_tiny_scene())
    assert m.vertices.dtype == np.float32 and m.triangles.dtype == np.int32
    assert m.triangle_instance_id.dtype == np.int32 and m.triangle_rgb.dtype == np.uint8
    for name in ("triangle_rgb2", "triangle_pattern", "triangle_period", "triangle_material", "triangle_uv",
                 "triangle_class", "triangle_gain"):
        assert len(getattr(m, name)) == m.n_triangles, name
    mug = m.triangle_instance_id == 7
    # a mug is a lathed cup with a ring handle, far more than a 12-triangle box
    assert mug.sum() > 100
    assert (m.triangle_instance_id[:36] == 0).all()  # wall + floor slab + ceiling slab first
    assert (m.triangle_class[:12] == STRUCTURE_CLASSES.index("wall")).all()
    assert (m.triangle_class[mug] == STRUCTURE_CLASSES.index("object")).all()
    colours = {tuple(c) for c in m.triangle_rgb[mug]}
    assert (20, 40, 200) in colours  # the body's colour
    assert (0, 0, 0) in colours  # the handle keeps its own colour
    # the mug and its handle stay inside (or touch) their boxes
    v = m.vertices[m.triangles[mug]].reshape(-1, 3)
    assert v[:, 0].min() > 0.94 and v[:, 0].max() < 1.1 and v[:, 2].min() > -1e-6 and v[:, 2].max() < 0.1 + 1e-6


def test_boxes_wind_outward():
    m = scene_mesh(_tiny_scene())
    normals = m.triangle_normals()[:36]
    v = m.vertices[m.triangles[:36]]
    tri_centre = v.mean(axis=1)
    # wall, floor slab and ceiling slab: 12 consecutive triangles each
    box_centre = np.repeat(tri_centre.reshape(-1, 12, 3).mean(axis=1), 12, axis=0)
    outward = np.einsum("ij,ij->i", normals, tri_centre - box_centre)
    assert (outward > 0).all()


def test_floor_and_ceiling_slabs_placement():
    m = scene_mesh(_tiny_scene())
    slab_z = m.vertices[m.triangles[12:36]].reshape(-1, 3)[:, 2]
    assert np.isclose(slab_z.max(), 2.5 + 0.05)  # ceiling slab top
    floor_top = m.vertices[m.triangles[12:24]].reshape(-1, 3)[:, 2].max()
    assert np.isclose(floor_top, 0.0, atol=1e-6)


def test_ply_round_trip_with_and_without_sidecar(tmp_path):
    m = scene_mesh(_tiny_scene())
    p = write_ply(m, tmp_path / "tiny.ply")
    back = read_ply(p)
    for name in ("vertices", "triangles", "triangle_instance_id", "triangle_rgb", "triangle_rgb2", "triangle_pattern",
                 "triangle_period", "triangle_material", "triangle_uv", "triangle_class", "triangle_gain"):
        np.testing.assert_array_equal(getattr(back, name), getattr(m, name))
    assert back.lighting == m.lighting
    (tmp_path / "tiny.npz").unlink()
    parsed = read_ply(p)  # geometry from the PLY itself (vertices duplicated per triangle)
    np.testing.assert_allclose(parsed.vertices[parsed.triangles], m.vertices[m.triangles])
    np.testing.assert_array_equal(parsed.triangle_instance_id, m.triangle_instance_id)
    np.testing.assert_array_equal(parsed.triangle_rgb, m.triangle_rgb)


def test_open3d_reads_ply(tmp_path):
    o3d = pytest.importorskip("open3d")
    m = scene_mesh(_tiny_scene())
    p = write_ply(m, tmp_path / "tiny.ply")
    tm = o3d.io.read_triangle_mesh(str(p))
    assert len(tm.triangles) == m.n_triangles
    assert tm.has_vertex_colors()


def test_read_errors_name_the_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.ply"):
        read_ply(tmp_path / "nope.ply")
    bad = tmp_path / "bad.ply"
    bad.write_bytes(b"garbage")
    with pytest.raises(ValueError, match="bad.ply"):
        read_ply(bad)

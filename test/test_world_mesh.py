import numpy as np
import pytest

from personal.world.mesh import read_ply, scene_mesh, write_ply
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
    # wall + floor slab + ceiling slab + mug + handle, 12 triangles each
    assert m.n_triangles == 5 * 12
    assert m.vertices.dtype == np.float32 and m.triangles.dtype == np.int32
    assert m.triangle_instance_id.dtype == np.int32 and m.triangle_rgb.dtype == np.uint8
    assert (m.triangle_instance_id == 7).sum() == 24  # mug body + handle share the id
    handle = m.triangle_rgb[-12:]
    assert (handle == 0).all()  # part keeps its own colour
    assert (m.triangle_rgb[-24:-12] == (20, 40, 200)).all()


def test_winding_points_outward():
    m = scene_mesh(_tiny_scene())
    normals = m.triangle_normals()
    v = m.vertices[m.triangles]
    tri_centre = v.mean(axis=1)
    # each box is 12 consecutive triangles; box centre = mean of its triangle centres
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
    for name in ("vertices", "triangles", "triangle_instance_id", "triangle_rgb"):
        np.testing.assert_array_equal(getattr(back, name), getattr(m, name))
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

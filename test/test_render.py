"""Renderer: depth against analytic geometry, instance ids, intrinsics, clipping."""
import math

import numpy as np
import pytest

from personal.world.mesh import SceneMesh, scene_mesh
from personal.world.model import Box, Floor, Room, Scene, Wall
from personal.sim.backends.base import AgentState, CameraSpec
from personal.sim.backends.synthetic import camera_pose
from personal.sim.render import Renderer
from personal.sim.toy_scene import two_room_scene

CAM = CameraSpec()


@pytest.fixture(scope="module")
def mesh() -> SceneMesh:
    return scene_mesh(two_room_scene())


@pytest.fixture(scope="module")
def renderer(mesh) -> Renderer:
    return Renderer(mesh, CAM, nthreads=1)


def _render(r: Renderer, **state):
    return r.render(camera_pose(AgentState(**{"z": 0.0, **state}), r.camera))


def _pixel_rays_map(T: np.ndarray, K: np.ndarray, w: int, h: int) -> np.ndarray:
    u, v = np.meshgrid(np.arange(w), np.arange(h))
    d = np.stack([(u - K[0, 2]) / K[0, 0], (v - K[1, 2]) / K[1, 1], np.ones(u.shape)], -1)
    return d @ T[:3, :3].T  # unit optical z, expressed in the map frame


def test_intrinsics_match_hfov():
    K = CAM.intrinsics()
    assert K.shape == (3, 3)
    assert math.degrees(2 * math.atan((CAM.width / 2) / K[0, 0])) == pytest.approx(79.0)
    assert K[0, 0] == K[1, 1]
    assert (K[0, 2], K[1, 2]) == ((CAM.width - 1) / 2, (CAM.height - 1) / 2)


def test_output_types(renderer):
    rgb, depth, ids = _render(renderer, x=2.0, y=1.0, yaw=0.3)
    assert rgb.shape == (480, 640, 3) and rgb.dtype == np.uint8
    assert depth.shape == (480, 640) and depth.dtype == np.float32
    assert ids.shape == (480, 640) and ids.dtype == np.int32
    assert rgb.std() > 5  # shading and colours make a non-uniform image


def test_planar_depth_on_facing_wall(renderer):
    # Agent at (2, 1) facing +x; the wall x = 4 has its face at x = 3.95 -> 1.95 m ahead.
    rgb, depth, ids = _render(renderer, x=2.0, y=1.0, yaw=0.0)
    assert depth[239:241, 319:321] == pytest.approx(1.95, abs=1e-4)
    T = camera_pose(AgentState(2.0, 1.0, 0.0, 0.0), CAM)
    d = _pixel_rays_map(T, CAM.intrinsics(), CAM.width, CAM.height)
    # analytic hit with the plane x = 3.95 (d has unit optical z, so t is planar depth)
    t = (3.95 - T[0, 3]) / d[..., 0]
    hit = T[:3, 3] + t[..., None] * d
    on_wall = (hit[..., 1] > 0.1) & (hit[..., 1] < 2.75) & (hit[..., 2] > 0.05) & (hit[..., 2] < 2.55)
    assert on_wall.sum() > 0.5 * on_wall.size
    np.testing.assert_allclose(depth[on_wall], 1.95, atol=1e-4)
    assert np.all(ids[on_wall] == 0)  # structure
    # wall pixels are one paint with a faint texture; the floor looks different
    wall = rgb[on_wall].astype(float)
    assert len(np.unique(wall.reshape(-1, 3), axis=0)) > 1
    assert wall.mean(axis=1).std() < 12
    assert np.abs(wall.mean(axis=0) - rgb[-20:, 300:340].reshape(-1, 3).mean(axis=0)).max() > 10


def test_box_instance_and_depth(renderer):
    # Red box (id 2) spans x 5.8-6.2; looking down 30 deg from x = 4.5 the optical
    # axis meets its front face 1.3 m ahead, i.e. at planar depth 1.3 / cos(30 deg).
    rgb, depth, ids = _render(renderer, x=4.5, y=1.0, yaw=0.0, pitch=-math.radians(30))
    assert ids[240, 320] == 2
    assert depth[240, 320] == pytest.approx(1.3 / math.cos(math.radians(30)), abs=5e-3)
    T = camera_pose(AgentState(4.5, 1.0, 0.0, 0.0, -math.radians(30)), CAM)
    d = _pixel_rays_map(T, CAM.intrinsics(), CAM.width, CAM.height)[240, 320]
    assert depth[240, 320] == pytest.approx((5.8 - 4.5) / d[0], abs=1e-4)  # exact for this pixel's ray
    mask = ids == 2
    assert 1000 < mask.sum() < 0.5 * mask.size
    assert tuple(rgb[240, 320]) != tuple(rgb[0, 0])
    # the colour of the box keeps its red dominance after shading
    r, g, b = (int(c) for c in rgb[240, 320])
    assert r > 2 * g and r > 2 * b


def test_depth_clipped_to_range():
    # one wall 5.5 m ahead (beyond max_depth) and one 4.9 m ahead (inside)
    def wall_at(x):
        s = Scene("clip", 0, [Floor(0, 0.0)], [Room("r", "room", 0, (-1, -10, 10, 10))],
                  [Wall(Box((x + 0.05, 0.0, 1.3), (0.1, 40.0, 40.0)))], [])
        m = scene_mesh(s)
        # keep only the wall (drop floor/ceiling slabs) so every centre ray hits it
        return m.subset(np.arange(12))

    for x, expected in ((5.5, 0.0), (4.9, 4.9)):
        r = Renderer(wall_at(x), CAM, nthreads=1)
        _, depth, _ = _render(r, x=0.0, y=0.0, yaw=0.0)
        assert depth[240, 320] == pytest.approx(expected, abs=1e-4)
    r = Renderer(wall_at(0.4), CAM, nthreads=1)  # closer than min_depth
    _, depth, _ = _render(r, x=0.0, y=0.0, yaw=0.0)
    assert np.all(depth == 0.0)


@pytest.mark.parametrize("state", [
    dict(x=2.0, y=1.0, yaw=0.6), dict(x=1.0, y=1.0, yaw=0.3, pitch=-0.5),
    dict(x=5.0, y=2.0, yaw=3.0, pitch=0.5), dict(x=7.0, y=3.0, yaw=-2.5, pitch=-1.0),
    dict(x=3.0, y=3.3, yaw=0.1, pitch=-0.3),
])
def test_adaptive_matches_exact(mesh, renderer, state):
    exact = Renderer(mesh, CAM, nthreads=1, mode="exact")
    a, e = _render(renderer, **state), _render(exact, **state)
    assert (a[2] != e[2]).mean() < 1e-3
    # textures are looked up per pixel in both modes; interpolated depth may move a texel
    assert (np.abs(a[0].astype(int) - e[0].astype(int)) > 24).any(-1).mean() < 1e-3
    close = np.isclose(a[1], e[1], atol=1e-4)
    assert close.mean() > 0.999


def test_bad_pose_rejected(renderer):
    with pytest.raises(ValueError, match="T_map_camera"):
        renderer.render(np.eye(3))


def test_bad_mode_rejected(mesh):
    with pytest.raises(ValueError, match="mode"):
        Renderer(mesh, CAM, mode="fast")


def _triangle_depth(tri: np.ndarray, origin: np.ndarray, dirs: np.ndarray) -> np.ndarray:
    """Nearest hit parameter of each ray with a set of triangles (Moller-Trumbore in numpy,
    independent of Embree), inf on misses; dirs with unit optical z give planar depth."""
    v0, e1, e2 = tri[:, 0], tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]
    best = np.full(len(dirs), np.inf)
    for k, d in enumerate(dirs):
        p = np.cross(d, e2)
        det = np.einsum("ij,ij->i", e1, p)
        ok = np.abs(det) > 1e-12
        inv = np.where(ok, 1.0 / np.where(ok, det, 1.0), 0.0)
        s = origin - v0
        u = np.einsum("ij,ij->i", s, p) * inv
        q = np.cross(s, e1)
        v = (q @ d) * inv
        t = np.einsum("ij,ij->i", e2, q) * inv
        hit = ok & (u >= 0) & (v >= 0) & (u + v <= 1) & (t > 1e-6)
        if hit.any():
            best[k] = t[hit].min()
    return best


def test_depth_matches_independent_ray_triangle_intersection_on_generated_scene():
    from personal.world.generator import generate_scene
    from personal.sim.navgrid import NavGrid

    scene = generate_scene(3)
    m = scene_mesh(scene)
    r = Renderer(m, CAM, nthreads=1)
    tri = m.vertices[m.triangles].astype(np.float64)
    grid = NavGrid(scene, 0)
    iy, ix = np.nonzero(grid.free)
    rng = np.random.default_rng(0)
    for k in rng.choice(len(iy), 3, replace=False):
        x, y = grid.cell_center(int(iy[k]), int(ix[k]))
        state = AgentState(x, y, 0.0, float(rng.uniform(-math.pi, math.pi)), float(rng.choice([-0.5, 0.0, 0.5])))
        T = camera_pose(state, CAM)
        _, depth, _ = r.render(T)
        pix = rng.integers(0, [CAM.height, CAM.width], size=(120, 2))
        d = _pixel_rays_map(T, CAM.intrinsics(), CAM.width, CAM.height)[pix[:, 0], pix[:, 1]]
        t = _triangle_depth(tri, T[:3, 3], d)
        expected = np.where((t >= CAM.min_depth) & (t <= CAM.max_depth), t, 0.0)
        got = depth[pix[:, 0], pix[:, 1]]
        # rays grazing an edge may differ; everything else agrees to float precision
        assert np.mean(np.abs(got - expected) < 1e-3) > 0.98

"""Back-projection, voxel downsampling, per-pixel confidence and the occupancy grid."""
import numpy as np
import pytest
import yaml

from personal.mapping.grid import GridGeometry
from personal.mapping.occupancy import FREE, OCCUPIED, UNKNOWN, OccupancyGrid
from personal.depth import depth_to_metres
from personal.mapping.projection import backproject, pixel_confidence, voxel_downsample

# optical (x right, y down, z fwd) -> map (x fwd, y left, z up), camera looking along +x
R_FWD = np.array([[0.0, 0.0, 1.0], [-1.0, 0.0, 0.0], [0.0, -1.0, 0.0]])


def pose(x=0.0, y=0.0, z=0.0, R=R_FWD):
    T = np.eye(4)
    T[:3, :3] = R
    T[:3, 3] = (x, y, z)
    return T


def K_of(w=64, h=48, f=40.0):
    return np.array([[f, 0, (w - 1) / 2], [0, f, (h - 1) / 2], [0, 0, 1.0]])


def test_plane_at_known_depth_lands_on_the_plane():
    K = K_of()
    depth = np.full((48, 64), 2.0, np.float32)
    fp = backproject(depth, K, pose(1.0, 2.0, 0.5))
    assert len(fp) == 48 * 64
    np.testing.assert_allclose(fp.points[:, 0], 3.0, atol=1e-5)  # the plane x = 1 + 2
    u, v = fp.pixels % 64, fp.pixels // 64
    np.testing.assert_allclose(fp.points[:, 1], 2.0 - (u - K[0, 2]) / K[0, 0] * 2.0, atol=1e-5)
    np.testing.assert_allclose(fp.points[:, 2], 0.5 - (v - K[1, 2]) / K[1, 1] * 2.0, atol=1e-5)
    np.testing.assert_allclose(fp.camera_position, (1.0, 2.0, 0.5))


def test_floor_plane_seen_from_a_tilted_camera():
    # camera 1 m above the floor pitched 90 deg down: optical z = map -z, optical x = map -y
    R_down = np.array([[0.0, -1.0, 0.0], [-1.0, 0.0, 0.0], [0.0, 0.0, -1.0]])
    fp = backproject(np.full((48, 64), 1.0, np.float32), K_of(), pose(0, 0, 1.0, R_down))
    np.testing.assert_allclose(fp.points[:, 2], 0.0, atol=1e-6)


def test_invalid_depth_is_dropped_and_millimetres_accepted():
    depth = np.full((48, 64), 2.0, np.float32)
    depth[0, :10] = 0.0
    depth[1, :10] = np.nan
    depth[2, :10] = np.inf
    depth[3, :10] = 9.0  # beyond max_depth
    depth[4, :10] = 0.2  # below min_depth
    fp = backproject(depth, K_of(), pose(), min_depth=0.5, max_depth=5.0)
    assert len(fp) == 48 * 64 - 50
    mm = (np.nan_to_num(depth, posinf=0) * 1000).astype(np.uint16)
    fp_mm = backproject(mm, K_of(), pose(), min_depth=0.5, max_depth=5.0)
    np.testing.assert_allclose(fp_mm.points, fp.points, atol=1e-4)
    assert depth_to_metres(mm).dtype == np.float32
    with pytest.raises(ValueError, match="dtype"):
        depth_to_metres(np.zeros((4, 4), np.int8))


def test_stride_samples_rows_and_columns():
    fp = backproject(np.full((48, 64), 1.0, np.float32), K_of(), pose(), stride=4)
    assert len(fp) == 12 * 16
    assert set(np.unique(fp.pixels % 64)) == set(range(0, 64, 4))


def test_bad_intrinsics_and_pose_are_named():
    with pytest.raises(ValueError, match="K"):
        backproject(np.ones((4, 4), np.float32), np.eye(2), pose())
    with pytest.raises(ValueError, match="T_map_camera"):
        backproject(np.ones((4, 4), np.float32), K_of(), np.full((4, 4), np.nan))


def test_voxel_downsample_keeps_one_point_per_voxel():
    pts = np.array([[0.01, 0.01, 0.01], [0.02, 0.03, 0.04], [0.51, 0.0, 0.0], [0.0, 0.0, 1.2]], np.float32)
    keep = voxel_downsample(pts, 0.1)
    assert list(keep) == [0, 2, 3]


def test_confidence_falls_off_with_angle_and_range():
    K = K_of()
    centre = np.array([24 * 64 + 32]), np.array([24 * 64 + 0])
    c_mid = pixel_confidence(K, (48, 64), centre[0], np.array([0.5]))
    c_edge = pixel_confidence(K, (48, 64), centre[1], np.array([0.5]))
    c_far = pixel_confidence(K, (48, 64), centre[0], np.array([4.5]))
    assert c_mid[0] > 0.99 and c_edge[0] < 0.01 and 0 < c_far[0] < c_mid[0]


def room_points(size=4.0, step=0.02, height=2.6):
    """Floor, four walls and a ceiling of a size x size room with a corner at the origin."""
    g = np.arange(0.0, size + 1e-9, step)
    X, Y = np.meshgrid(g, g)
    floor = np.stack([X.ravel(), Y.ravel(), np.zeros(X.size)], 1)
    ceiling = floor + [0, 0, height]
    zs = np.arange(0.0, height, 0.1)
    walls = []
    for w in (0.0, size):
        A, Z = np.meshgrid(g, zs)
        walls.append(np.stack([np.full(A.size, w), A.ravel(), Z.ravel()], 1))
        walls.append(np.stack([A.ravel(), np.full(A.size, w), Z.ravel()], 1))
    return np.concatenate([floor, ceiling] + walls).astype(np.float32)


def test_occupancy_of_a_known_room():
    occ = OccupancyGrid(0.1)
    occ.integrate(room_points(), np.array([2.0, 2.0, 0.88]))
    st = occ.state()
    geo = occ.geometry

    def at(x, y):
        iy, ix = geo.cell(x, y)
        return st[iy, ix]

    for x, y in [(2.0, 2.0), (0.5, 0.5), (3.5, 1.0), (1.0, 3.55)]:
        assert at(x, y) == FREE, (x, y)
    for x, y in [(0.0, 2.0), (4.0, 1.0), (2.0, 4.0), (2.0, 0.0)]:
        assert at(x, y) == OCCUPIED, (x, y)
    assert at(-1.0, -1.0) == UNKNOWN and at(6.0, 2.0) == UNKNOWN
    interior = st[geo.cell(0.3, 0.3)[0] : geo.cell(3.7, 3.7)[0], geo.cell(0.3, 0.3)[1] : geo.cell(3.7, 3.7)[1]]
    assert (interior == FREE).all()  # the ceiling is not an obstacle
    nav = occ.navigable(agent_radius=0.3)
    iy, ix = geo.cell(0.15, 2.0)
    assert occ.free_mask()[iy, ix] and not nav[iy, ix]  # free but within the agent radius of a wall


def test_free_space_stops_at_an_obstacle_and_grid_grows():
    occ = OccupancyGrid(0.1, bounds=(0, 0, 1, 1))
    shape0 = occ.geometry.shape
    wall = np.array([[3.0, y, z] for y in np.arange(-1, 1.01, 0.05) for z in (0.5, 1.0)], np.float32)
    occ.integrate(wall, np.array([0.0, 0.0, 0.88]))
    assert occ.geometry.shape[1] > shape0[1]
    st, geo = occ.state(), occ.geometry
    assert st[geo.cell(1.5, 0.0)] == FREE and st[geo.cell(3.0, 0.0)] == OCCUPIED
    assert st[geo.cell(3.5, 0.0)] == UNKNOWN  # behind the wall


def test_occupancy_msg_fields_and_nav2_pair_round_trip(tmp_path):
    occ = OccupancyGrid(0.1)
    occ.integrate(room_points(), np.array([2.0, 2.0, 0.88]))
    f = occ.to_occupancy_grid_msg_fields()
    assert f["width"] * f["height"] == len(f["data"]) and f["data"].dtype == np.int8
    assert set(np.unique(f["data"])) == {UNKNOWN, FREE, OCCUPIED}
    # row-major from the origin: cell (row=iy, col=ix) at index iy*width+ix
    iy, ix = occ.geometry.cell(0.0, 2.0)
    assert f["data"][iy * f["width"] + ix] == OCCUPIED
    path = occ.save(tmp_path / "maps" / "room")
    meta = yaml.safe_load(path.read_text())
    assert meta["mode"] == "trinary" and meta["negate"] == 0 and meta["image"] == "occupancy.pgm"
    assert meta["origin"][:2] == list(occ.geometry.origin)
    back = OccupancyGrid.load(path)
    np.testing.assert_array_equal(back.state(), occ.state())
    assert back.geometry == occ.geometry
    from PIL import Image

    img = np.asarray(Image.open(tmp_path / "maps" / "room" / "occupancy.pgm"))
    assert img[0].tolist() == np.flipud(np.where(occ.state() == -1, 205, np.where(occ.state() == 0, 254, 0)))[0].tolist()
    with pytest.raises(FileNotFoundError, match="nothere"):
        OccupancyGrid.load(tmp_path / "nothere.yaml")


def test_grid_geometry_growth_keeps_cells_in_place():
    geo = GridGeometry.from_bounds((0, 0, 2, 2), 0.5)
    new, (r, c) = geo.grown_to(-1.0, -0.2, 1.0, 1.0, chunk=1.0)
    assert new.origin[0] <= -1.0 and new.origin[1] <= -0.2
    x, y = geo.center(0, 0)
    assert new.cell(float(x), float(y)) == (r, c)

"""Frontiers and frontier exploration, closed loop with the synthetic simulator.

Rendering is at 160x120 (same 79 deg HFOV, so the same geometry at a quarter of the
resolution) to keep the closed-loop runs within a few seconds each.
"""
import math

import numpy as np
import pytest
from scipy import ndimage

from personal.mapping.exploration import Act, ExplorerConfig, FrontierExplorer
from personal.mapping.frontier import detect_frontiers
from personal.mapping.grid import GridGeometry
from personal.mapping.pipeline import MapBuilder, MapConfig


def test_frontier_clusters_with_centroid_and_size():
    st = np.full((20, 30), -1, np.int8)
    st[5:15, 5:15] = 0  # a free square in unknown space
    st[5:15, 15] = 100  # its right side is a wall
    geo = GridGeometry(0.1, (0.0, 0.0), st.shape)
    frontiers, labels = detect_frontiers(st, geo, min_size=3)
    assert len(frontiers) == 1  # the three open sides form one 8-connected cluster
    f = frontiers[0]
    # left column, top and bottom rows; the cells touching the wall are excluded
    assert f.size == 10 + 2 * 8
    assert 0.5 < f.centroid[0] < 1.5 and 0.9 < f.centroid[1] < 1.1
    st[:, :] = 0
    assert detect_frontiers(st, geo)[0] == []


def test_collision_leaves_a_virtual_obstacle_and_replans():
    st = np.zeros((60, 60), np.int8)
    st[:, 50:] = -1  # unknown beyond x = 5 m: frontier straight ahead
    geo = GridGeometry(0.1, (0.0, 0.0), st.shape)
    ex = FrontierExplorer(ExplorerConfig(initial_spin=False))
    pose = (2.0, 3.0, 0.0)
    assert ex.act(st, geo, pose) == Act.MOVE_FORWARD
    a = ex.act(st, geo, pose, collided=True)  # an obstacle the map does not show
    assert ex.status.collisions == 1 and len(ex._blocked) == 1
    assert a in (Act.TURN_LEFT, Act.TURN_RIGHT)  # goes around, not into the same spot again


def test_stops_when_nothing_is_left_and_respects_the_budget():
    st = np.full((40, 40), 100, np.int8)
    st[5:35, 5:35] = 0  # closed room, all seen
    geo = GridGeometry(0.1, (0.0, 0.0), st.shape)
    ex = FrontierExplorer(ExplorerConfig(initial_spin=False))
    assert ex.act(st, geo, (2.0, 2.0, 0.0)) == Act.STOP and ex.status.reason == "no reachable frontier"
    ex = FrontierExplorer(ExplorerConfig(max_steps=3))
    acts = [ex.act(st, geo, (2.0, 2.0, 0.0)) for _ in range(5)]
    assert acts[:3] == [Act.TURN_LEFT] * 3 and acts[3] == Act.STOP and ex.status.reason == "step budget spent"


def explore(scene, start, max_steps=2500):
    from personal.mapping.session import explore as run
    from personal.sim.backends.base import AgentState, CameraSpec
    from personal.sim.backends.synthetic import SyntheticBackend

    backend = SyntheticBackend(camera=CameraSpec(width=160, height=120))
    backend.load_scene(scene)
    obs = backend.reset(state=AgentState(start[0], start[1], 0.0, 0.3))
    mb = MapBuilder(MapConfig(stride=1))
    ex = FrontierExplorer(ExplorerConfig(max_steps=max_steps))
    run(backend, obs, mb, ex)
    return backend, mb, ex


def reachable_coverage(backend, mb, start):
    """Share of the simulator's navigable cells reachable from start that the map marks free."""
    grid = backend._loaded().navgrids[0]
    labels, _ = ndimage.label(grid.free, structure=np.ones((3, 3)))
    reach = labels == labels[grid.cell(*start)]
    iy, ix = np.nonzero(reach)
    xy = np.stack([grid.spec.x0 + ix * grid.spec.res, grid.spec.y0 + iy * grid.spec.res], 1)
    cy, cx = mb.occupancy.geometry.cells(xy)
    inside = mb.occupancy.geometry.inside(cy, cx)
    free = np.zeros(len(xy), bool)
    free[inside] = mb.occupancy.free_mask()[cy[inside], cx[inside]]
    return free.mean()


@pytest.mark.timeout(120)
def test_explores_the_two_room_scene():
    from personal.sim.toy_scene import two_room_scene

    backend, mb, ex = explore(two_room_scene(), (2.0, 1.0))
    cov = reachable_coverage(backend, mb, (2.0, 1.0))
    assert ex.status.done and ex.status.reason == "no reachable frontier" and ex.status.steps <= 2500
    assert cov >= 0.90, f"coverage {cov:.3f} after {ex.status.steps} steps"


@pytest.mark.timeout(120)
def test_explores_a_generated_household():
    from personal.world.generator import generate_scene

    scene = generate_scene(3)  # 6 rooms
    living = scene.rooms[0]
    from personal.sim.backends.synthetic import SyntheticBackend

    probe = SyntheticBackend()
    probe.load_scene(scene)
    cx, cy = (living.bounds[0] + living.bounds[2]) / 2, (living.bounds[1] + living.bounds[3]) / 2
    start = probe.snap_to_navigable(cx, cy)
    backend, mb, ex = explore(scene, start)
    cov = reachable_coverage(backend, mb, start)
    assert ex.status.done and ex.status.steps <= 2500
    assert cov >= 0.90, f"coverage {cov:.3f} after {ex.status.steps} steps ({ex.status.reason})"


def test_planner_shortcuts_equal_the_scipy_operations_they_replace():
    """The explorer's cheaper operations give exactly what the scipy calls they replace gave (the
    exploration, and so the maps, must not change): the thresholded distance transform, the disc
    minimum at frontier cells, the frontier mask's dilations."""
    from personal.mapping.exploration import _disc_min_at, _near
    from personal.mapping.frontier import frontier_mask
    from personal.mapping.occupancy import FREE, OCCUPIED, UNKNOWN

    rng = np.random.default_rng(0)
    eight = np.ones((3, 3), bool)
    for _ in range(150):
        shape = (int(rng.integers(1, 45)), int(rng.integers(1, 45)))
        occ = rng.random(shape) < rng.random() * 0.1
        res, clearance = float(rng.choice([0.025, 0.05, 0.1])), float(rng.choice([0.0, 0.05, 0.09, 0.18, 0.35]))
        edt = ndimage.distance_transform_edt(~occ) * res if occ.any() else np.full(shape, np.inf)
        assert np.array_equal(_near(occ, res, clearance), ~(edt > clearance))
        values = np.where(rng.random(shape) < 0.4, np.inf, rng.random(shape) * 50)
        r = int(rng.integers(1, 8))
        yy, xx = np.mgrid[-r : r + 1, -r : r + 1]
        ref = ndimage.minimum_filter(values, footprint=(yy**2 + xx**2) <= r * r, mode="constant", cval=np.inf)
        rows, cols = rng.integers(0, shape[0], 30), rng.integers(0, shape[1], 30)
        assert np.array_equal(_disc_min_at(values, rows, cols, r), ref[rows, cols])
        state = rng.choice(np.array([UNKNOWN, FREE, OCCUPIED], np.int8), size=shape, p=rng.dirichlet([1, 1, 1]))
        near_unknown = ndimage.binary_dilation(state == UNKNOWN, structure=ndimage.generate_binary_structure(2, 1))
        near_occupied = ndimage.binary_dilation(state == OCCUPIED, structure=eight)
        assert np.array_equal(frontier_mask(state), (state == FREE) & near_unknown & ~near_occupied)


def test_the_map_matches_a_pose_only_within_2_cm_and_2_degrees_and_once_the_grid_has_the_frame():
    from personal.mapping.exploration import map_matches_pose

    status = {"x": 1.0, "y": 2.0, "yaw": math.pi - 0.01, "stamp_ns": 5_000}
    assert map_matches_pose(status, (1.01, 2.0, -math.pi + 0.01), 5_000)  # yaw wraps around ±pi
    assert not map_matches_pose(status, (1.03, 2.0, math.pi), 5_000)
    assert not map_matches_pose(status, (1.0, 2.0, math.pi - 0.06), 5_000)
    assert not map_matches_pose(status, (1.0, 2.0, math.pi - 0.01), 4_999)  # the grid predates the frame

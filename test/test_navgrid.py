"""Navigable grid: obstacles, geodesic distances around walls, paths, snapping."""
import math

import numpy as np
import pytest

from personal.sim.navgrid import AGENT_RADIUS, NavGrid
from personal.sim.toy_scene import DOOR_Y, two_room_scene

RES = 0.05


@pytest.fixture(scope="module")
def grid() -> NavGrid:
    return NavGrid(two_room_scene(), floor=0)


def _taut_string_around_corners(p, q, c1, c2, rho):
    """Shortest path from p to q passing above the end (c1..c2, horizontal segment at the
    top of a wall) of an obstacle grown by rho: tangent, arc, straight, arc, tangent."""
    def tangent_and_angle(pt, c):
        d = math.dist(pt, c)
        phi = math.atan2(pt[1] - c[1], pt[0] - c[0])
        a = math.acos(rho / d)
        # of the two tangent points take the one nearer the top of the circle
        ang = min((phi + a, phi - a), key=lambda t: abs(math.remainder(t - math.pi / 2, 2 * math.pi)))
        return math.sqrt(d * d - rho * rho), abs(math.remainder(ang - math.pi / 2, 2 * math.pi))

    l1, a1 = tangent_and_angle(p, c1)
    l2, a2 = tangent_and_angle(q, c2)
    return l1 + rho * a1 + math.dist(c1, c2) + rho * a2 + l2


def test_obstacles(grid):
    assert grid.is_navigable(2.0, 1.0)  # open floor (on a flat rug)
    assert grid.is_navigable(1.0, 1.0)  # the rug is below the body band
    assert not grid.is_navigable(4.0, 1.0)  # inside the wall x = 4
    assert not grid.is_navigable(3.9, 1.0)  # within the agent radius of the wall
    assert grid.is_navigable(4.0, sum(DOOR_Y) / 2)  # door
    assert not grid.is_navigable(2.0, 3.2)  # table
    assert grid.is_navigable(7.5, 3.5)  # under a lamp hanging above the body band
    assert not grid.is_navigable(-1.0, 1.0)  # outside the house
    assert not grid.is_navigable(100.0, 100.0)  # outside the grid


def test_clearance_matches_radius(grid):
    # free cells along y = 1 in room_a stop about one radius from the wall faces x = 0.05 and 3.95
    xs = np.arange(0.0, 4.0, 0.01)
    free = np.array([grid.is_navigable(x, 1.0) for x in xs])
    assert xs[free].min() == pytest.approx(0.05 + AGENT_RADIUS, abs=2 * RES)
    assert xs[free].max() == pytest.approx(3.95 - AGENT_RADIUS, abs=2 * RES)


def test_geodesic_around_wall(grid):
    p, q = (2.0, 1.0), (5.5, 0.5)
    d = grid.geodesic_distance(p, [q])
    assert d > math.dist(p, q) + 1.0  # must go through the door at y 2.8-3.8
    # obstacle cells are grown by half a cell before inflation, hence rho
    expected = _taut_string_around_corners(p, q, (3.95, DOOR_Y[0]), (4.05, DOOR_Y[0]), AGENT_RADIUS + RES / 2)
    assert d == pytest.approx(expected, rel=0.025)


def test_geodesic_same_room_is_euclidean(grid):
    p, q = (1.0, 0.5), (3.0, 2.5)
    assert grid.geodesic_distance(p, [q]) == pytest.approx(math.dist(p, q), rel=0.02)
    assert grid.geodesic_distance(p, [p]) == pytest.approx(0.0, abs=RES)


def test_multi_goal_takes_nearest(grid):
    p, near, far = (2.0, 1.0), (3.0, 1.0), (6.0, 0.5)
    both = grid.geodesic_distance(p, [far, near])
    assert both == pytest.approx(grid.geodesic_distance(p, [near]), abs=RES)
    assert both < grid.geodesic_distance(p, [far])


def test_unreachable_is_inf(grid):
    assert grid.is_navigable(9.0, 1.0)  # the closet floor is free...
    assert math.isinf(grid.geodesic_distance((2.0, 1.0), [(9.0, 1.0)]))  # ...but has no door
    assert grid.shortest_path((2.0, 1.0), (9.0, 1.0)) == []
    assert math.isinf(grid.geodesic_distance((2.0, 1.0), [(50.0, 50.0)]))  # far off the map


def test_shortest_path_is_navigable_and_connected(grid):
    p, q = (2.0, 1.0), (5.5, 0.5)
    path = grid.shortest_path(p, q)
    assert len(path) > 10
    assert math.dist(path[0], p) < RES and math.dist(path[-1], q) < RES
    assert all(grid.is_navigable(x, y) for x, y in path)
    steps = np.linalg.norm(np.diff(np.array(path), axis=0), axis=1)
    assert steps.max() <= RES * math.sqrt(5) + 1e-9  # 16-neighbourhood moves
    # the path goes through the door and its length is the geodesic distance
    assert any(3.9 < x < 4.1 and DOOR_Y[0] < y < DOOR_Y[1] for x, y in path)
    assert steps.sum() == pytest.approx(grid.geodesic_distance(p, [q]), abs=2 * RES)


def test_snap(grid):
    sx, sy = grid.snap(2.0, 3.2)  # table centre -> nearest free cell beside the table
    assert grid.is_navigable(sx, sy)
    assert math.dist((sx, sy), (2.0, 3.2)) < 0.3 + AGENT_RADIUS + 2 * RES
    assert grid.snap(2.0, 1.0) == pytest.approx((2.0, 1.0), abs=RES)
    assert grid.snap(50.0, 50.0, max_dist=1.0) is None


def test_bad_floor():
    with pytest.raises(ValueError, match="floor 3"):
        NavGrid(two_room_scene(), floor=3)

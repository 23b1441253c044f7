"""Planner, path follower, collision rule and scorers of the PAN navigation library."""
from __future__ import annotations

import math

import numpy as np
import pytest

from personal.mapping.exploration import Act
from personal.mapping.grid import GridGeometry
from personal.mapping.occupancy import FREE, OCCUPIED, UNKNOWN
from personal.navigation.follower import CollisionGuard, PathFollower, pure_pursuit_twist
from personal.navigation.planner import PlanGrid, path_length
from personal.sim.backends.base import Action


def _room_with_door() -> tuple[np.ndarray, GridGeometry]:
    """4 m x 4 m free room split by a wall at x = 2 m with a 1 m door (y 3-4); unknown beyond x = 3.5."""
    geo = GridGeometry(0.05, (0.0, 0.0), (80, 80))
    state = np.full(geo.shape, FREE, np.int8)
    state[:, 39:41] = OCCUPIED  # wall x 1.95-2.05
    state[60:80, 39:41] = FREE  # door y 3.0-4.0
    state[:, 70:] = UNKNOWN
    state[0, :] = state[-1, :] = OCCUPIED
    return state, geo


def test_planner_goes_through_the_door_and_never_into_unknown():
    state, geo = _room_with_door()
    grid = PlanGrid(state, geo, agent_radius=0.18)
    field = grid.distances_from(1.0, 1.0)
    goal = field.nearest(grid.near([(3.0, 1.0)], 0.15))
    assert goal is not None
    path = field.path_to(goal)
    assert math.dist(path[0], (1.0, 1.0)) < 0.1 and math.dist(path[-1], (3.0, 1.0)) < 0.2
    crossing = [p for p in path if 1.9 < p[0] < 2.1]
    assert crossing and all(p[1] > 3.0 for p in crossing), "must cross the wall through the door"
    assert 5.0 < path_length(path) < 6.0  # (1,1) -> door (2, 3.2) -> (3,1): ~2.4 + 0.2 + 2.4 + bends
    assert field.nearest(grid.near([(3.8, 1.0)], 0.1)) is None  # unknown space is not planned through
    assert not grid.is_free(2.0, 1.0) and grid.is_free(1.0, 1.0)


def test_pure_pursuit_twist_turns_towards_the_path():
    v, w = pure_pursuit_twist((0.0, 0.0, 0.0), [(0.0, 0.0), (1.0, 0.3), (2.0, 0.6)])
    assert v > 0 and w > 0
    v, w = pure_pursuit_twist((0.0, 0.0, 0.0), [(0.0, 0.0), (-1.0, 0.0)])
    assert v == 0.0 and w != 0.0  # behind: turn in place


@pytest.fixture(scope="module")
def generated():
    from personal.world.episodes import generate_episodes
    from personal.world.generator import generate_scene
    from personal.sim.backends.synthetic import SyntheticBackend

    scene = generate_scene(7)
    sim = SyntheticBackend()
    sim.load_scene(scene)
    episodes = generate_episodes(scene, "easy", 2, 0)
    return scene, sim, episodes


def test_path_follower_reaches_a_reachable_goal_on_a_generated_map(generated):
    scene, sim, episodes = generated
    ep = episodes[0]
    obs = sim.reset(ep)
    # a goal several metres away along the navigable grid: the target's nearest navigable approach
    tgt = scene.object(ep.target_object_ids[0]).box
    goal = sim.snap_to_navigable(*tgt.center[:2])
    path = sim.shortest_path((obs.state.x, obs.state.y), goal)
    assert len(path) > 1
    length = path_length(path)
    assert length > 1.0
    follower = PathFollower()
    steps, collisions = 0, 0
    budget = 3 * int(length / 0.25) + 40
    while steps < budget:
        s = sim.state
        a = follower.action((s.x, s.y, s.yaw), path, sim.is_navigable)
        if a is None:
            break
        obs = sim.step(Action(a))
        collisions += obs.collided
        steps += 1
    s = sim.state
    assert math.dist((s.x, s.y), path[-1]) < follower.goal_tolerance_m + 0.05, f"stuck after {steps} steps"
    assert collisions == 0  # every forward step was checked against the free space first


def test_collision_guard_never_forwards_into_the_same_wall_twice():
    guard = CollisionGuard()
    guard.observe(None, False, 0.0)
    assert guard.check(Act.MOVE_FORWARD, 0.0) == Act.MOVE_FORWARD
    guard.observe(Act.MOVE_FORWARD, True, 0.0)  # it collided
    assert guard.check(Act.MOVE_FORWARD, 0.0, prefer_left=False) == Act.TURN_RIGHT
    assert guard.check(Act.MOVE_FORWARD, math.radians(30)) == Act.MOVE_FORWARD  # another heading is fine
    guard.observe(Act.TURN_RIGHT, False, -math.radians(30))
    assert guard.check(Act.MOVE_FORWARD, -math.radians(30)) == Act.MOVE_FORWARD


class _AlwaysForward:
    """A naive policy that always drives straight on (to provoke collisions)."""

    name, label, is_oracle, needs_map, needs_features = "forward", "forward", False, True, False
    turn_left_hint = True

    def reset(self, spec):
        self.info = {}

    def act(self, inp):
        return int(Act.MOVE_FORWARD)


def _assert_collision_rule(traj):
    for i in range(len(traj.actions) - 1):
        if traj.actions[i] == Act.MOVE_FORWARD and traj.collisions[i] and traj.actions[i + 1] == Act.MOVE_FORWARD:
            yaw0, yaw1 = traj.poses[i][2], traj.poses[i + 1][2]
            assert abs(math.remainder(yaw1 - yaw0, 2 * math.pi)) > 1e-3, f"forward into the same wall at step {i + 1}"


def test_loop_turns_away_after_hitting_a_wall(generated):
    from personal.navigation.loop import NavigationLoop, run_episode
    from personal.navigation.mapper import OnlineMapper

    _, sim, episodes = generated
    loop = NavigationLoop(_AlwaysForward(), OnlineMapper(), max_steps=40)
    traj = run_episode(sim, episodes[0], loop)
    assert sum(traj.collisions) >= 1, "the naive policy should have hit something in 40 steps"
    assert traj.guard_overrides >= 1
    _assert_collision_rule(traj)


@pytest.mark.parametrize("policy", ["random-frontier", "value-map-rpg-owner"])
def test_explorers_never_issue_an_action_into_a_wall_twice_in_a_row(generated, policy):
    from pan_fakes import BagOfWordsModel

    from personal.navigation.eval.pan_run import PanComponents, build_loop
    from personal.grounding.extract import make_extractor
    from personal.grounding.pipeline import TextEmbedder
    from personal.models.oracle import OracleCaptionEncoder, captions_from_scene
    from personal.navigation.loop import run_episode

    scene, sim, episodes = generated
    enc = OracleCaptionEncoder(captions_from_scene(scene), model=BagOfWordsModel())
    comps = PanComponents(enc, TextEmbedder(enc), make_extractor("builtin"))
    loop = build_loop(policy, comps, max_steps=90)
    traj = run_episode(sim, episodes[1], loop)
    _assert_collision_rule(traj)
    assert traj.steps >= 10
    moved = path_length(traj.path_xy())
    assert moved > 1.0, f"{policy} hardly moved ({moved:.2f} m in {traj.steps} steps)"
    assert (loop.mapper.state() == FREE).sum() * 0.05**2 > 5.0  # it mapped more than 5 m² of floor


def test_a_proposals_points_off_its_median_depth_carry_no_feature():
    """NavMapConfig.proposal_depth_tol_m: noisy depth spreads a proposal along the rays; only the points
    near its median depth place its embedding, and a point in no proposal stays in none."""
    from personal.navigation.mapper import NavMapConfig, OnlineMapper, depth_consistent

    groups = np.array([0, 0, 0, 0, 1, 1, 1, -1])
    depth = np.array([2.0, 2.05, 1.95, 2.6, 4.0, 4.1, 3.0, 9.0])
    assert depth_consistent(groups, depth, 0.2).tolist() == [0, 0, 0, -1, 1, 1, -1, -1]
    assert depth_consistent(groups, depth, 5.0).tolist() == groups.tolist()

    # in the online map: one frame of a wall 2 m ahead whose proposal has a far-flung streak of points
    h, w = 48, 64
    K = np.array([[40.0, 0, w / 2], [0, 40.0, h / 2], [0, 0, 1]])
    T = np.array([[0, 0, 1, 0], [-1, 0, 0, 0], [0, -1, 0, 0.9], [0, 0, 0, 1]], float)  # optical: z forward = map x
    depth_img = np.full((h, w), 2.0, np.float32)
    depth_img[:, :8] = 4.5  # the streak: 2.5 m behind the rest of the proposal

    def features(depth, rgb, ids, fp):
        return np.zeros(len(fp.pixels), int), np.ones((1, 4), np.float32)

    def feature_xs(tol):
        """Map x of the centres of the cells that got a feature."""
        m = OnlineMapper(NavMapConfig(proposal_depth_tol_m=tol, stride=1), features=features, feature_dim=4)
        m.integrate(depth_img, K, T, (0.0, 0.0))
        rows, cols = np.nonzero(m.feature_map.confidence > 0)
        return m.feature_map.geometry.center(rows, cols)[0]

    every, kept = feature_xs(0.0), feature_xs(0.5)
    assert (every > 3.5).any() and not (kept > 3.5).any(), "the streak's cells lose the proposal's feature"
    assert (kept > 1.5).any(), "the wall itself keeps it"

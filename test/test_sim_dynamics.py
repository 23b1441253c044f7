"""Synthetic backend: discrete actions, collisions, camera pose, episodes."""
import math

import numpy as np
import pytest

from personal.world.model import Episode
from personal.sim.backends.base import Action, AgentState
from personal.sim.backends.synthetic import SyntheticBackend
from personal.sim.toy_scene import two_room_scene


@pytest.fixture(scope="module")
def backend() -> SyntheticBackend:
    b = SyntheticBackend(render_threads=1)
    b.load_scene(two_room_scene())
    return b


def _reset(b, x=2.0, y=1.0, yaw=0.0, pitch=0.0):
    return b.reset(state=AgentState(x, y, 0.0, yaw, pitch))


def _episode(**kw) -> Episode:
    d = dict(episode_id="e0", scene_id="toy_two_rooms", split="easy", people=["Lisa"],
             ownership={"Lisa": ["box_2"]}, owner="Lisa", target_object_ids=["box_2"], object_category="box",
             query="Find Lisa's box.", summary="Lisa owns the red box.", extracted_summary=["Lisa owns box"],
             description=["the red box"], start_position=(2.0, 1.0, 0.0), start_yaw=math.pi / 2)
    d.update(kw)
    return Episode(**d)


def test_move_forward(backend):
    _reset(backend, yaw=0.0)
    obs = backend.step(Action.MOVE_FORWARD)
    assert not obs.collided
    assert (obs.state.x, obs.state.y) == pytest.approx((2.25, 1.0))
    np.testing.assert_allclose(obs.T_map_camera[:3, 3], (2.25, 1.0, 0.88))
    _reset(backend, yaw=math.pi / 2)
    obs = backend.step(Action.MOVE_FORWARD)
    assert (obs.state.x, obs.state.y) == pytest.approx((2.0, 1.25))


def test_turns(backend):
    _reset(backend, yaw=0.0)
    assert backend.step(Action.TURN_LEFT).state.yaw == pytest.approx(math.radians(30))
    backend.step(Action.TURN_RIGHT)
    obs = backend.step(Action.TURN_RIGHT)
    assert obs.state.yaw == pytest.approx(math.radians(-30))
    assert (obs.state.x, obs.state.y) == (2.0, 1.0)
    for _ in range(5):
        obs = backend.step(Action.TURN_RIGHT)
    assert obs.state.yaw == pytest.approx(math.pi, abs=1e-9) or obs.state.yaw == pytest.approx(-math.pi)
    # optical z axis points along the heading; optical x to the right
    _reset(backend, yaw=math.pi / 2)
    T = backend.render().T_map_camera
    np.testing.assert_allclose(T[:3, 2], (0.0, 1.0, 0.0), atol=1e-12)
    np.testing.assert_allclose(T[:3, 0], (1.0, 0.0, 0.0), atol=1e-12)
    np.testing.assert_allclose(T[:3, 1], (0.0, 0.0, -1.0), atol=1e-12)


def test_look_up_down_clamped(backend):
    _reset(backend)
    obs = backend.step(Action.LOOK_UP)
    assert obs.state.pitch == pytest.approx(math.radians(30))
    assert obs.T_map_camera[2, 2] == pytest.approx(math.sin(math.radians(30)))  # optical z tilts up
    for _ in range(3):
        obs = backend.step(Action.LOOK_UP)
    assert obs.state.pitch == pytest.approx(math.radians(60))
    for _ in range(5):
        obs = backend.step(Action.LOOK_DOWN)
    assert obs.state.pitch == pytest.approx(math.radians(-60))
    # looking down sees the floor closer in the image centre than looking level does
    assert 0 < obs.depth[240, 320] < 1.2


def test_collision_against_wall(backend):
    _reset(backend, x=3.6, yaw=0.0)  # wall face at x = 3.95, radius 0.18
    obs = backend.step(Action.MOVE_FORWARD)
    assert obs.collided
    assert (obs.state.x, obs.state.y) == (3.6, 1.0)
    assert backend.step(Action.TURN_LEFT).collided is False


def test_collision_slides_along_wall(backend):
    _reset(backend, x=3.6, yaw=math.radians(45))
    obs = backend.step(Action.MOVE_FORWARD)
    assert obs.collided
    assert obs.state.x == pytest.approx(3.6)
    assert obs.state.y == pytest.approx(1.0 + 0.25 * math.sin(math.radians(45)))


def test_walk_through_door_never_enters_obstacles(backend):
    # follow the shortest path with the discrete actions; every pose stays navigable
    _reset(backend, x=2.0, y=2.0, yaw=0.0)
    path = backend.shortest_path((2.0, 2.0), (5.0, 3.3))
    for wx, wy in path[::5] + [path[-1]]:
        for _ in range(40):
            s = backend.state
            if math.hypot(wx - s.x, wy - s.y) < 0.2:
                break
            err = math.remainder(math.atan2(wy - s.y, wx - s.x) - s.yaw, 2 * math.pi)
            act = Action.TURN_LEFT if err > math.radians(15) else Action.TURN_RIGHT if err < -math.radians(15) \
                else Action.MOVE_FORWARD
            backend.step(act)
            assert backend.is_navigable(backend.state.x, backend.state.y)
    assert backend.state.x > 4.2  # reached room_b through the door


def test_stop(backend):
    _reset(backend)
    before = backend.state
    obs = backend.step(Action.STOP)
    assert obs.extras["stopped"] and not obs.collided
    assert obs.state == before


def test_invalid_action(backend):
    _reset(backend)
    with pytest.raises(ValueError, match="unknown action 9"):
        backend.step(9)
    assert backend.step(1).state.x == pytest.approx(2.25)  # ints map onto Action


def test_episode_reset_and_goal_distance(backend):
    ep = _episode()
    obs = backend.reset(ep)
    assert (obs.state.x, obs.state.y, obs.state.yaw) == pytest.approx((2.0, 1.0, math.pi / 2))
    assert obs.K.shape == (3, 3)
    d = backend.episode_goal_distance(ep)
    # goal region: within 1 m of the box footprint (5.8-6.2, 0.8-1.2), behind the wall with the door
    assert math.isfinite(d)
    assert d > math.dist((2.0, 1.0), (4.8, 1.0))
    assert d < backend.geodesic_distance((2.0, 1.0), [(5.5, 0.5)])
    with pytest.raises(ValueError, match="scene 'other'"):
        backend.reset(_episode(scene_id="other"))


def test_unloaded_backend_errors():
    b = SyntheticBackend()
    with pytest.raises(RuntimeError, match="load_scene"):
        b.reset(state=AgentState(0, 0, 0, 0))


def test_generated_episodes_are_consistent_with_the_simulator():
    from personal.world.episodes import generate_episodes
    from personal.world.generator import generate_scene

    b = SyntheticBackend(render_threads=1)
    scene = generate_scene(1, two_floors=True)
    b.load_scene(scene)
    for ep in generate_episodes(scene, "hard", 4, seed=1):
        x, y, _ = ep.start_position
        assert b.is_navigable(x, y, ep.floor_id), ep.episode_id
        d = b.episode_goal_distance(ep)
        assert math.isfinite(d) and d > 0, ep.episode_id
        obs = b.reset(ep)
        assert obs.state.z == next(f.z for f in scene.floors if f.index == ep.floor_id)
        assert obs.T_map_camera[2, 3] == pytest.approx(obs.state.z + 0.88)
        assert (obs.depth > 0).mean() > 0.5  # indoors almost every pixel sees something within 5 m

"""Contract tests: the Habitat backend driven through the habitat_sim contract fake
(test/fakes/habitat_sim, habitat-sim 0.3 semantics, refusing what the real API lacks), on a
synthetic household exported for habitat-sim (PLY + stage config + semantic mesh).

The synthetic simulator renders the same household in the map frame with the same ray caster,
so its images are the reference: equal depth and instance ids prove the frames, the
intrinsics, the image layout and the exported scene's orientation at once."""
import math
import os
import shutil

import numpy as np
import pytest

from habitat_fake import fake_habitat_sim
from personal.world import frames
from personal.world.episodes import generate_episodes
from personal.world.generator import generate_scene
from personal.world.habitat_format import load_episode_set, write_episode_set
from personal.world.model import SceneAsset
from personal.sim.backends.base import Action, AgentState, CameraSpec
from personal.sim.backends.synthetic import SyntheticBackend

CAM = CameraSpec(width=160, height=120)  # non-square: a swapped [height, width] shows


@pytest.fixture(scope="module")
def hs():
    with fake_habitat_sim() as module:
        yield module


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    out = tmp_path_factory.mktemp("habitat_contract")
    scene = generate_scene(11, scene_id="synth_c")
    write_episode_set(out, [scene], generate_episodes(scene, "easy", 3, seed=2))
    scenes, episodes = load_episode_set(out)
    return out, scenes["synth_c"], episodes


@pytest.fixture(scope="module")
def backends(hs, world):
    from personal.sim.backends.habitat import HabitatBackend

    out, scene, _ = world
    hab = HabitatBackend(camera=CAM)
    hab.load_scene(SceneAsset(scene.scene_id, str(out / "scenes" / "synth_c.ply"), "", scene))
    syn = SyntheticBackend(camera=CAM, render_threads=1)
    syn.load_scene(scene)
    yield hab, syn
    hab.close()


def _same_state(a: AgentState, b: AgentState, tol=1e-5):
    assert (a.x, a.y, a.z) == pytest.approx((b.x, b.y, b.z), abs=tol)
    assert abs(frames.wrap_angle(a.yaw - b.yaw)) < tol and a.pitch == pytest.approx(b.pitch, abs=tol)


def _open_pose(backend, scene, clearance=1.2):
    """A start pose with ``clearance`` metres of free floor straight ahead."""
    for room in scene.rooms:
        x0, y0, x1, y1 = room.bounds
        cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
        for yaw in (0.0, math.pi / 2, math.pi, -math.pi / 2):
            pts = [(cx + d * math.cos(yaw), cy + d * math.sin(yaw)) for d in np.arange(0, clearance + 0.01, 0.05)]
            if all(backend.is_navigable(x, y) for x, y in pts):
                return AgentState(cx, cy, 0.0, yaw, 0.0, 0)
    raise AssertionError("no open pose in the scene")


# ------------------------------------------------------------------ poses and motion
def test_reset_places_the_agent_at_the_files_pose(backends, world):
    hab, syn = backends
    ep = world[2][0]
    hab.reset(ep)
    pos, rot = hab.habitat_pose()
    np.testing.assert_array_equal(pos, np.float32(frames.map_to_habitat(ep.start_position)))
    assert frames.same_rotation(rot, frames.yaw_to_habitat_quat(ep.start_yaw), tol=1e-6)
    _same_state(hab.state, syn.reset(ep).state)


def test_forward_and_turns(backends, world):
    hab, syn = backends
    start = _open_pose(syn, world[1])
    hab.reset(state=start)
    o = hab.step(Action.MOVE_FORWARD)
    assert not o.collided
    s = hab.state
    assert (s.x - start.x, s.y - start.y) == pytest.approx((0.25 * math.cos(start.yaw), 0.25 * math.sin(start.yaw)), abs=1e-5)
    hab.step(Action.TURN_LEFT)
    assert frames.wrap_angle(hab.state.yaw - start.yaw) == pytest.approx(math.radians(30), abs=1e-5)  # left = +yaw
    hab.step(Action.TURN_RIGHT)
    hab.step(Action.TURN_RIGHT)
    assert frames.wrap_angle(hab.state.yaw - start.yaw) == pytest.approx(math.radians(-30), abs=1e-5)
    assert (hab.state.x, hab.state.y) == pytest.approx((s.x, s.y), abs=1e-6)  # turning does not move
    # the synthetic simulator agrees step by step
    syn.reset(state=start)
    for a in (Action.MOVE_FORWARD, Action.TURN_LEFT, Action.TURN_RIGHT, Action.TURN_RIGHT):
        syn.step(a)
    _same_state(hab.state, syn.state)


def test_look_up_and_down_stop_at_60_degrees(backends, world):
    hab, _ = backends
    hab.reset(state=_open_pose(hab, world[1]))
    pitches = []
    for a in [Action.LOOK_UP] * 3 + [Action.LOOK_DOWN] * 5:
        o = hab.step(a)
        pitches.append(round(math.degrees(hab.state.pitch), 4))
        assert not o.collided
    assert pitches == [30, 60, 60, 30, 0, -30, -60, -60]
    s = hab.state
    np.testing.assert_allclose(o.T_map_camera, frames.optical_camera_pose(s.x, s.y, s.z + CAM.height_m, s.yaw, s.pitch),
                               atol=1e-5)
    hab.reset(state=AgentState(s.x, s.y, s.z, s.yaw, math.radians(30), 0))  # a reset with a pitch looks that way
    assert math.degrees(hab.state.pitch) == pytest.approx(30, abs=1e-4)


def test_collisions_stop_at_walls(backends, world):
    hab, syn = backends
    start = _open_pose(syn, world[1])
    hab.reset(state=start)
    collided = [hab.step(Action.MOVE_FORWARD).collided for _ in range(60)]
    assert not collided[0] and any(collided)
    first = collided.index(True)
    s = hab.state
    assert hab.is_navigable(s.x, s.y)  # never left the navmesh
    before = (s.x, s.y)
    assert hab.step(Action.MOVE_FORWARD).collided  # pressing on does not get through
    assert math.dist(before, (hab.state.x, hab.state.y)) < 0.25
    travelled = math.dist((start.x, start.y), (s.x, s.y))
    assert travelled >= 0.25 * first - 1e-6


# ------------------------------------------------------------------ images
def test_depth_units_range_and_layout_match_the_reference(backends, world):
    hab, syn = backends
    for ep in world[2]:
        o, r = hab.reset(ep), syn.reset(ep)
        for a in (None, Action.TURN_LEFT, Action.LOOK_DOWN):
            if a is not None:
                o, r = hab.step(a), syn.step(a)
            assert o.depth.shape == (CAM.height, CAM.width) and o.depth.dtype == np.float32
            assert o.depth.flags.c_contiguous  # habitat hands out a flipped view; the backend copies
            valid = o.depth > 0
            assert valid.mean() > 0.5
            assert o.depth[valid].min() >= CAM.min_depth and o.depth[valid].max() <= CAM.max_depth  # metres, clipped
            # same geometry, same ray caster: equal but for a few block-edge pixels where the adaptive
            # renderer's plane groups differ (the exported PLY carries no textures or materials)
            diff = np.abs(o.depth - r.depth)
            assert (diff <= 2e-4).mean() > 0.999 and diff.max() < 0.05
            np.testing.assert_allclose(o.T_map_camera, r.T_map_camera, atol=1e-5)
            np.testing.assert_allclose(o.K, r.K)


def test_rgb_layout_and_semantic_ids_match_the_reference(backends, world):
    hab, syn = backends
    seen = set()
    for ep in world[2]:
        o, r = hab.reset(ep), syn.reset(ep)
        assert o.rgb.shape == (CAM.height, CAM.width, 3) and o.rgb.dtype == np.uint8 and o.rgb.flags.c_contiguous
        assert o.instance_ids.dtype == np.int32
        assert (o.instance_ids == r.instance_ids).mean() > 0.999
        seen |= set(np.unique(o.instance_ids)) - {0}
        # shading differs (lights are fixed in each renderer's world frame) but hue does not:
        # a flipped, mirrored or channel-swapped image would
        def chroma(img):
            f = img.astype(np.float64) + 1.0
            return f / f.sum(axis=2, keepdims=True)
        assert np.median(np.abs(chroma(o.rgb) - chroma(r.rgb))) < 0.02
    assert len(seen) >= 3


# ------------------------------------------------------------------ geodesics and measures
def test_geodesics_navigability_and_snapping(backends, world):
    hab, syn = backends
    scene = world[1]
    start = _open_pose(syn, scene)
    ahead = (start.x + math.cos(start.yaw), start.y + math.sin(start.yaw))
    assert hab.geodesic_distance((start.x, start.y), [ahead]) == pytest.approx(1.0, abs=0.06)
    path = hab.shortest_path((start.x, start.y), ahead)
    assert math.dist(path[0], (start.x, start.y)) < 0.06 and math.dist(path[-1], ahead) < 0.06
    # across rooms the geodesic agrees with the synthetic navigable grid's (two discretisations)
    ep = world[2][0]
    far = ep.view_point_positions()[0]
    g_hab = hab.geodesic_distance(ep.start_position[:2], [far[:2]])
    g_syn = syn.geodesic_distance(ep.start_position[:2], [far[:2]])
    assert math.isfinite(g_hab) and g_hab == pytest.approx(g_syn, rel=0.1)
    assert g_hab >= math.dist(ep.start_position[:2], far[:2]) - 1e-6
    # a point inside a wall: not navigable, snaps next to it, unreachable as a goal only if outside
    wall = scene.walls[len(scene.walls) // 2].box
    wx, wy = wall.center[0], wall.center[1]
    assert not hab.is_navigable(wx, wy)
    snapped = hab.snap_to_navigable(wx, wy)
    assert snapped is not None and hab.is_navigable(*snapped) and math.dist(snapped, (wx, wy)) < 1.0
    x0, y0, _, _ = scene.bounds()
    assert hab.geodesic_distance((start.x, start.y), [(x0 - 10, y0 - 10)]) == math.inf


def test_dtg_success_and_spl_from_view_points(backends, world):
    from personal.navigation.eval.pan import goal_geometry
    from personal.navigation.eval.pan import episode_result

    hab, _ = backends
    scene = world[1]
    ep = world[2][0]
    geo = goal_geometry(hab, ep, scene)
    assert geo.shortest == pytest.approx(hab.episode_goal_distance(ep)) and math.isfinite(geo.shortest)
    vp = ep.goals[0].view_points[0]
    assert geo.geodesic_to_goal(*vp.position[:2]) == pytest.approx(0.0, abs=1e-6)  # at a view point, DTG = 0
    # stopping at a view point is within 1 m of the target's box: success; SPL from the path taken
    start = ep.start_position
    poses = [(start[0], start[1], ep.start_yaw), (vp.position[0], vp.position[1], vp.yaw)]
    r = episode_result(hab, ep, scene, poses, steps=2, stopped=True)
    taken = math.dist(start[:2], vp.position[:2])
    assert r["success"] and r["distance_to_goal"] == pytest.approx(0.0, abs=1e-6)
    assert r["spl"] == pytest.approx(geo.shortest / max(taken, geo.shortest))
    assert r["geodesic_distance"] == pytest.approx(geo.shortest) and r["soft_spl"] == pytest.approx(r["spl"])
    # stopping where it started fails, DTG is the start's geodesic, SPL 0
    r = episode_result(hab, ep, scene, poses[:1], steps=1, stopped=True)
    assert not r["success"] and r["spl"] == 0 and r["distance_to_goal"] == pytest.approx(geo.shortest)
    assert "from the nearest target" in r["failure_reason"]
    # without a scene model (HM3D) success is measured to the goal's centre
    geo2 = goal_geometry(hab, ep, None)
    assert geo2.extent.startswith("goal centre") and geo2.boxes[0].center == ep.goals[0].position


# ------------------------------------------------------------------ the exported scene's orientation
def test_exported_scene_is_oriented_like_its_episodes(hs, world):
    """habitat-sim's own loading rules (the fake follows them) put the exported PLY where the
    episode file's habitat positions expect it: starts and view points on the navmesh, the goal
    object seen from its view points, its centre inside its semantic-mesh instance."""
    out, scene, episodes = world
    sim = _bare_simulator(hs, str(out / "scenes" / "synth_c.ply"))
    for ep in episodes:
        assert sim.pathfinder.is_navigable(np.float32(frames.map_to_habitat(ep.start_position)))
        for goal in ep.goals:
            lo, hi = _instance_box(sim, goal.instance_id)
            centre = np.array(frames.map_to_habitat(goal.position))
            assert np.all(lo - 1e-4 <= centre) and np.all(centre <= hi + 1e-4)
            for vp in goal.view_points[:2]:
                p = np.float32(frames.map_to_habitat(vp.position))
                assert sim.pathfinder.is_navigable(p)
                _look_from(hs, sim, p, frames.yaw_to_habitat_quat(vp.yaw))
                ids = sim.get_sensor_observations()["semantic"]
                h, w = ids.shape
                assert goal.instance_id in ids[h // 4: 3 * h // 4, w // 4: 3 * w // 4]
    sim.close()


def test_without_its_stage_config_the_ply_would_lie_on_its_side(hs, world, tmp_path):
    """The negative control: habitat-sim's default for a plain PLY (y up) puts the same file
    where none of the episode's positions are navigable."""
    out, _, episodes = world
    for name in ("synth_c.ply", "synth_c_semantic.ply"):
        shutil.copy(out / "scenes" / name, tmp_path / name)
    sim = _bare_simulator(hs, str(tmp_path / "synth_c.ply"))
    starts = [np.float32(frames.map_to_habitat(ep.start_position)) for ep in episodes]
    assert not any(sim.pathfinder.is_navigable(p) for p in starts)
    sim.close()


def _bare_simulator(hs, scene_file):
    cfg = hs.SimulatorConfiguration()
    cfg.scene_id = scene_file
    agent = hs.agent.AgentConfiguration()
    spec = hs.CameraSensorSpec()
    spec.uuid, spec.sensor_type, spec.resolution, spec.position, spec.hfov = "semantic", hs.SensorType.SEMANTIC, [96, 128], [0, 0.88, 0], 79
    agent.sensor_specifications = [spec]
    sim = hs.Simulator(hs.Configuration(cfg, [agent]))
    settings = hs.NavMeshSettings()
    settings.agent_radius, settings.agent_height = 0.18, 0.88
    sim.recompute_navmesh(sim.pathfinder, settings)
    return sim


def _look_from(hs, sim, position, rotation_xyzw):
    from habitat_sim.utils.common import quat_from_coeffs

    s = hs.AgentState()
    s.position = position
    s.rotation = quat_from_coeffs(np.asarray(rotation_xyzw))
    sim.get_agent(0).set_state(s)


def _instance_box(sim, instance_id):
    mesh = sim._stage.semantic_mesh  # the fake's semantic mesh in habitat's frame
    v = mesh.vertices[mesh.triangles[mesh.triangle_instance_id == instance_id].reshape(-1)]
    assert len(v), f"instance {instance_id} not in the semantic mesh"
    return v.min(axis=0), v.max(axis=0)


# ------------------------------------------------------------------ refusals and missing files
def test_the_fake_refuses_what_habitat_sim_lacks(hs, backends):
    spec = hs.CameraSensorSpec()
    with pytest.raises(AttributeError, match="CameraSensorSpec has no attribute 'hfov_deg'"):
        spec.hfov_deg = 79
    with pytest.raises(AttributeError, match="SimulatorConfiguration has no attribute 'scene'"):
        hs.SimulatorConfiguration().scene = "x.glb"
    hab, _ = backends
    sim = hab._sim
    with pytest.raises(AttributeError, match="Simulator has no attribute 'get_navmesh'"):
        sim.get_navmesh()
    with pytest.raises(NotImplementedError, match="semantic_scene exists"):
        sim.semantic_scene
    with pytest.raises(AttributeError, match="no attribute 'yaw'"):
        hs.AgentState().yaw = 1.0
    with pytest.raises(AssertionError, match="No action fly in action space"):
        sim.get_agent(0).act("fly")
    with pytest.raises(ValueError, match="normalized quaternion"):
        from habitat_sim.utils.common import quat_from_coeffs

        sim.get_agent(0).set_state(hs.AgentState(np.zeros(3), quat_from_coeffs([0, 0.5, 0, 0.5])))
    with pytest.raises(AttributeError, match="habitat_sim.Sim\\b|no attribute habitat_sim.Sim"):
        hs.Sim
    with pytest.raises(TypeError, match="ShortestPath or MultiGoalShortestPath"):
        sim.pathfinder.find_path([(0, 0, 0)])


def test_the_fake_copies_habitat_sim_behaviour_that_is_easy_to_get_wrong(hs, backends):
    """Details checked against habitat-sim v0.3.3 (docs/habitat.md, "Assumed vs verified")."""
    from habitat_sim._config import SemanticSensorTarget

    assert hs.CameraSensorSpec().semantic_target == SemanticSensorTarget.SEMANTIC_ID  # VisualSensor.h
    path = hs.MultiGoalShortestPath()
    path.requested_ends.append(np.ones(3, np.float32))  # the real getter returns a copy
    assert path.requested_ends == []
    path.requested_ends = [np.ones(3)]
    assert len(path.requested_ends) == 1
    hab, _ = backends
    sim = hab._sim
    agent = sim.get_agent(0)
    before = agent.get_state()
    try:  # Simulator.initialize_agent with a navmesh: a random navigable point, a random heading
        state = sim.initialize_agent(0).get_state()
        assert sim.pathfinder.is_navigable(state.position) and state.position.dtype == np.float32
    finally:
        agent.set_state(before)


def test_missing_scene_files_are_reported_by_path(hs, world, tmp_path):
    from personal.sim.backends.habitat import HabitatBackend
    from personal.sim.bridge_logic import EpisodeSourceError, scene_assets

    hab = HabitatBackend(camera=CAM)
    with pytest.raises(FileNotFoundError, match=f"scene file not found: {tmp_path}/nope.ply"):
        hab.load_scene(SceneAsset("nope", str(tmp_path / "nope.ply")))
    out, scene, episodes = world
    with pytest.raises(FileNotFoundError, match="scene dataset config not found: .*missing.json"):
        hab.load_scene(SceneAsset("synth_c", str(out / "scenes" / "synth_c.ply"), str(tmp_path / "missing.json")))
    with pytest.raises(EpisodeSourceError) as e:
        scene_assets(episodes, {}, str(out), str(tmp_path / "elsewhere"))
    assert f"scene 'synth_c': {tmp_path}/elsewhere/scenes/synth_c.ply" in str(e.value)
    assert os.path.isfile(out / "scenes" / "synth_c.stage_config.json")

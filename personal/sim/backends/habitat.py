"""Thin Habitat-Sim backend behind :class:`SimBackend` (used when ``habitat_sim`` imports).

It replays PersONAL episode files as published: a scene is a :class:`SceneAsset` (the
mesh or stage named by the episode's ``scene_id`` under the scenes folder, plus the scene
dataset config), no scene model needed. Synthetic households exported by
``personal world generate`` load the same way (their PLY has a stage config beside it,
``personal.world.habitat_scene``).

Frames: every conversion goes through :mod:`personal.world.frames`, the convention the
episode files use, so a file's habitat pose reaches habitat-sim unchanged and
``state`` / ``habitat_pose`` give it back.

The habitat-sim API used here, with the habitat-sim 0.3 source it follows (the contract
fake in ``test/fakes/habitat_sim`` implements exactly this subset):
``Simulator(Configuration(SimulatorConfiguration, [AgentConfiguration]))``, ``reconfigure``,
``close``; ``CameraSensorSpec`` (uuid, sensor_type, resolution [h, w], position, hfov);
``agent.ActionSpec`` / ``ActuationSpec`` (amount; constraint for look_up/down);
``get_agent(0)`` with ``set_state`` / ``get_state`` (``AgentState`` with position,
rotation, ``sensor_states``) and ``act``; ``get_sensor_observations``;
``pathfinder.is_loaded`` / ``find_path`` (``ShortestPath``, ``MultiGoalShortestPath``) /
``snap_point`` / ``is_navigable``; ``NavMeshSettings`` + ``recompute_navmesh``;
``utils.common.quat_from_coeffs``.
"""
from __future__ import annotations

import math
import os

import numpy as np

from personal.world import frames
from personal.world.model import Episode, Scene, SceneAsset
from personal.sim.backends.base import Action, AgentState, CameraSpec, Observation, SimBackend

INSTALL_HINT = (
    "HabitatBackend needs the `habitat-sim` package, which is distributed through conda, not PyPI: "
    "`conda install habitat-sim -c conda-forge -c aihabitat` (add `headless` for machines without a display). "
    "Use the synthetic backend (make_backend('synthetic')) otherwise."
)
LOOK_LIMIT_DEG = 60.0  # LoCoBot camera tilt limit (ActuationSpec.constraint of look_up/look_down)
SENSORS = ("rgb", "depth", "semantic")

_ACTION_NAMES = {
    Action.MOVE_FORWARD: "move_forward",
    Action.TURN_LEFT: "turn_left",
    Action.TURN_RIGHT: "turn_right",
    Action.LOOK_UP: "look_up",
    Action.LOOK_DOWN: "look_down",
}


def import_habitat_sim():
    try:
        import habitat_sim  # noqa: F401
        import habitat_sim.utils.common  # noqa: F401  (quat_from_coeffs)
    except ImportError as e:
        raise ImportError(f"{INSTALL_HINT} (import error: {e})") from e
    return habitat_sim


def _xyzw(q) -> tuple[float, float, float, float]:
    """(x, y, z, w) of a numpy-quaternion (habitat-sim's ``AgentState.rotation`` type)."""
    return (float(q.x), float(q.y), float(q.z), float(q.w))


class HabitatBackend(SimBackend):
    """Habitat-Sim with the PersONAL LoCoBot agent (camera 0.88 m, HFOV 79°, 640x480,
    MOVE 0.25 m, TURN 30°, LOOK ±30° within ±60°, radius 0.18 m).

    ``scene_files`` maps a scene id to a scene file for :meth:`load_scene` with a
    :class:`Scene`; ``SceneAsset`` carries its own path. ``scene_dataset_config``
    overrides the one an asset names."""

    scores_with_view_points = True  # personal.navigation.eval.pan.goal_geometry: DTG/SPL from the goals' view points

    def __init__(self, camera: CameraSpec | None = None, scene_files: dict[str, str] | None = None,
                 scene_dataset_config: str | None = None, gpu_device_id: int = 0):
        self._hs = import_habitat_sim()
        self.camera = camera or CameraSpec()
        self.scene_files = dict(scene_files or {})
        self.scene_dataset_config = scene_dataset_config or ""
        self.gpu_device_id = gpu_device_id
        self._sim = None
        self._asset: SceneAsset | None = None
        self._floor = 0
        self._floor_z: dict[int, float] = {}
        self.navmesh_recomputed = False

    # -- configuration -----------------------------------------------------
    def _sensor(self, uuid: str, kind):
        c = self.camera
        spec = self._hs.CameraSensorSpec()
        spec.uuid = uuid
        spec.sensor_type = kind
        spec.resolution = [c.height, c.width]
        spec.position = [0.0, c.height_m, 0.0]
        spec.hfov = c.hfov_deg
        return spec

    def _config(self, asset: SceneAsset):
        hs = self._hs
        sim_cfg = hs.SimulatorConfiguration()
        sim_cfg.scene_id = asset.path
        sim_cfg.gpu_device_id = self.gpu_device_id
        sim_cfg.scene_dataset_config_file = asset.dataset_config or "default"
        agent = hs.agent.AgentConfiguration()
        agent.radius = self.agent_radius
        agent.height = self.camera.height_m
        agent.sensor_specifications = [
            self._sensor("rgb", hs.SensorType.COLOR),
            self._sensor("depth", hs.SensorType.DEPTH),
            self._sensor("semantic", hs.SensorType.SEMANTIC),
        ]
        act, ctl = hs.agent.ActionSpec, hs.agent.ActuationSpec
        agent.action_space = {
            "move_forward": act("move_forward", ctl(amount=self.forward_step_m)),
            "turn_left": act("turn_left", ctl(amount=self.turn_deg)),
            "turn_right": act("turn_right", ctl(amount=self.turn_deg)),
            "look_up": act("look_up", ctl(amount=self.tilt_deg, constraint=LOOK_LIMIT_DEG)),
            "look_down": act("look_down", ctl(amount=self.tilt_deg, constraint=LOOK_LIMIT_DEG)),
        }
        return hs.Configuration(sim_cfg, [agent])

    def _ensure_navmesh(self) -> None:
        """HM3D scenes ship a .navmesh; an exported synthetic household has none, and habitat-sim
        then does no collision checking: build one for the LoCoBot's radius and height."""
        sim = self._sim
        if sim.pathfinder.is_loaded:
            return
        settings = self._hs.NavMeshSettings()
        settings.set_defaults()
        settings.agent_radius = self.agent_radius
        settings.agent_height = self.camera.height_m
        if not sim.recompute_navmesh(sim.pathfinder, settings):
            raise RuntimeError(f"{self._asset.path}: habitat-sim could not build a navmesh for this scene")
        self.navmesh_recomputed = True

    # -- scene -------------------------------------------------------------
    def load_scene(self, scene: SceneAsset | Scene) -> None:
        asset = self._asset_of(scene)
        check_scene_files(asset)
        cfg = self._config(asset)
        if self._sim is None:
            self._sim = self._hs.Simulator(cfg)
        else:
            self._sim.reconfigure(cfg)
        self._asset = asset
        self._floor_z = {f.index: f.z for f in asset.scene.floors} if asset.scene is not None else {}
        self._ensure_navmesh()

    def _asset_of(self, scene) -> SceneAsset:
        if isinstance(scene, SceneAsset):
            if self.scene_dataset_config:
                return SceneAsset(scene.scene_id, scene.path, self.scene_dataset_config, scene.scene)
            return scene
        if isinstance(scene, Scene):
            if scene.scene_id not in self.scene_files:
                raise ValueError(f"HabitatBackend: no scene file for scene {scene.scene_id!r}; pass a SceneAsset "
                                 "(the exported scenes/<id>.ply) or scene_files={id: path}")
            return SceneAsset(scene.scene_id, self.scene_files[scene.scene_id], self.scene_dataset_config, scene)
        raise TypeError(f"HabitatBackend.load_scene expects a SceneAsset or a Scene, got {type(scene).__name__}")

    @property
    def asset(self) -> SceneAsset:
        self._require_sim()
        return self._asset

    def _require_sim(self):
        if self._sim is None:
            raise RuntimeError("HabitatBackend: no scene loaded; call load_scene(scene) first")
        return self._sim

    # -- episode / state ---------------------------------------------------
    def reset(self, episode: Episode | None = None, state: AgentState | None = None) -> Observation:
        sim = self._require_sim()
        if state is None:
            if episode is None:
                raise ValueError("HabitatBackend.reset needs an episode or a state")
            x, y, z = episode.start_position
            state = AgentState(x, y, z, episode.start_yaw, 0.0, episode.floor_id)
            self._floor_z.setdefault(episode.floor_id, float(z))
        self.set_habitat_pose(frames.map_to_habitat((state.x, state.y, state.z)), frames.yaw_to_habitat_quat(state.yaw))
        self._floor = state.floor
        for _ in range(int(round(abs(state.pitch) / math.radians(self.tilt_deg)))):
            sim.get_agent(0).act("look_up" if state.pitch > 0 else "look_down")
        return self.render()

    def set_habitat_pose(self, position, rotation_xyzw) -> None:
        """Place the agent at a habitat position and (x, y, z, w) rotation, as a file gives them."""
        from habitat_sim.utils.common import quat_from_coeffs

        s = self._hs.AgentState()
        s.position = np.asarray(position, dtype=np.float32)
        s.rotation = quat_from_coeffs(np.asarray(rotation_xyzw, dtype=np.float64))
        self._require_sim().get_agent(0).set_state(s)

    def habitat_pose(self) -> tuple[np.ndarray, tuple[float, float, float, float]]:
        """The agent's habitat position and (x, y, z, w) rotation as habitat-sim reports them."""
        s = self._require_sim().get_agent(0).get_state()
        return np.asarray(s.position), _xyzw(s.rotation)

    @property
    def state(self) -> AgentState:
        s = self._require_sim().get_agent(0).get_state()
        x, y, z = frames.habitat_to_map(s.position)
        yaw = frames.habitat_quat_to_yaw(_xyzw(s.rotation))
        _, pitch = frames.heading_and_pitch(self._camera_pose(s))
        return AgentState(x, y, z, yaw, pitch, self._floor)

    def _camera_pose(self, agent_state) -> np.ndarray:
        cam = agent_state.sensor_states["rgb"]
        return frames.gl_camera_to_map(cam.position, _xyzw(cam.rotation))

    # -- dynamics and rendering --------------------------------------------
    def step(self, action: Action) -> Observation:
        sim = self._require_sim()
        try:
            action = Action(action)
        except ValueError:
            raise ValueError(f"unknown action {action!r}; valid: {[f'{a.value}={a.name}' for a in Action]}") from None
        collided = False
        if action != Action.STOP:
            collided = bool(sim.get_agent(0).act(_ACTION_NAMES[action]))
        obs = self.render()
        obs.collided = collided
        obs.extras["action"] = action.name
        obs.extras["stopped"] = action == Action.STOP
        return obs

    def render(self) -> Observation:
        sim = self._require_sim()
        o = sim.get_sensor_observations()
        c = self.camera
        depth = np.asarray(o["depth"], dtype=np.float32)  # metres along the optical axis, 0 = nothing hit
        depth = np.where((depth >= c.min_depth) & (depth <= c.max_depth), depth, np.float32(0))
        agent_state = sim.get_agent(0).get_state()
        return Observation(
            rgb=np.ascontiguousarray(np.asarray(o["rgb"])[..., :3], dtype=np.uint8),  # RGBA -> RGB
            depth=np.ascontiguousarray(depth),
            instance_ids=np.ascontiguousarray(o["semantic"], dtype=np.int32),
            state=self.state,
            T_map_camera=self._camera_pose(agent_state),
            K=c.intrinsics(),
        )

    # -- geometry queries (map frame) ---------------------------------------
    def floor_height(self, floor: int) -> float:
        """Floor height: the scene model's, else the episode start's, else the agent's."""
        if floor in self._floor_z:
            return self._floor_z[floor]
        return float(self.state.z)

    def path_distance(self, start_xyz, goals_xyz) -> float:
        """habitat-sim's geodesic distance from a map point to the nearest of several (inf when
        none is reachable): ``MultiGoalShortestPath`` + ``pathfinder.find_path``."""
        sim = self._require_sim()
        if not len(goals_xyz):
            return math.inf
        path = self._hs.MultiGoalShortestPath()
        path.requested_start = np.asarray(frames.map_to_habitat(start_xyz), dtype=np.float32)
        path.requested_ends = [np.asarray(frames.map_to_habitat(g), dtype=np.float32) for g in goals_xyz]
        return float(path.geodesic_distance) if sim.pathfinder.find_path(path) else math.inf

    def geodesic_distance(self, start, goals, floor: int = 0) -> float:
        z = self.floor_height(floor)
        return self.path_distance((start[0], start[1], z), [(g[0], g[1], z) for g in goals])

    def shortest_path(self, start, goal, floor: int = 0) -> list[tuple[float, float]]:
        sim, z = self._require_sim(), self.floor_height(floor)
        path = self._hs.ShortestPath()
        path.requested_start = np.asarray(frames.map_to_habitat((start[0], start[1], z)), dtype=np.float32)
        path.requested_end = np.asarray(frames.map_to_habitat((goal[0], goal[1], z)), dtype=np.float32)
        if not sim.pathfinder.find_path(path):
            return []
        return [frames.habitat_to_map(p)[:2] for p in path.points]

    def is_navigable(self, x: float, y: float, floor: int = 0) -> bool:
        p = np.asarray(frames.map_to_habitat((x, y, self.floor_height(floor))), dtype=np.float32)
        return bool(self._require_sim().pathfinder.is_navigable(p))

    def snap_to_navigable(self, x: float, y: float, floor: int = 0) -> tuple[float, float] | None:
        p = np.asarray(frames.map_to_habitat((x, y, self.floor_height(floor))), dtype=np.float32)
        snapped = np.asarray(self._require_sim().pathfinder.snap_point(p), dtype=np.float64)
        if not np.all(np.isfinite(snapped)):
            return None
        return frames.habitat_to_map(snapped)[:2]

    def episode_goal_distance(self, episode: Episode) -> float:
        """Geodesic distance from the episode start to the nearest view point of its targets."""
        return self.path_distance(episode.start_position, episode.view_point_positions())

    def close(self) -> None:
        if self._sim is not None:
            self._sim.close()
            self._sim = None


def check_scene_files(asset: SceneAsset) -> None:
    """FileNotFoundError naming the path when the scene or its dataset config is missing
    (habitat-sim itself would abort the process on a missing scene)."""
    if not os.path.isfile(asset.path):
        raise FileNotFoundError(f"scene {asset.scene_id!r}: scene file not found: {asset.path}")
    if asset.dataset_config and asset.dataset_config != "default" and not os.path.isfile(asset.dataset_config):
        raise FileNotFoundError(f"scene {asset.scene_id!r}: scene dataset config not found: {asset.dataset_config}")

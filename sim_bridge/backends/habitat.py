"""Thin Habitat-Sim backend behind :class:`SimBackend` (used when ``habitat_sim`` imports).

Frames. Habitat is y-up with the agent looking along -z; our map frame is
REP 103 (x forward, y left, z up). A point converts as

    map = (-hab_z, -hab_x, hab_y)        hab = (-map_y, map_z, -map_x)

and a Habitat agent rotation of ``theta`` about +y is a map yaw of ``theta``
(identity faces map +x). Habitat sensors use the OpenGL camera convention
(x right, y up, looking along -z); the optical frame we publish is x right,
y down, z forward, i.e. the camera frame turned 180° about its x axis.
"""
from __future__ import annotations

import math

import numpy as np

from personal.world.model import Episode, Scene
from sim_bridge.backends.base import Action, AgentState, CameraSpec, Observation, SimBackend

INSTALL_HINT = (
    "HabitatBackend needs the `habitat-sim` package, which is distributed through conda, not PyPI: "
    "`conda install habitat-sim -c conda-forge -c aihabitat` (add `headless` for machines without a display). "
    "Use the synthetic backend (make_backend('synthetic')) otherwise."
)

# map <- habitat (proper rotation, det = +1)
R_MAP_HAB = np.array([[0.0, 0.0, -1.0], [-1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
# habitat/OpenGL camera (x right, y up, -z forward) <- optical (x right, y down, z forward)
_R_GL_OPTICAL = np.diag([1.0, -1.0, -1.0])

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
    except ImportError as e:
        raise ImportError(f"{INSTALL_HINT} (import error: {e})") from e
    return habitat_sim


def hab_to_map(p) -> np.ndarray:
    return R_MAP_HAB @ np.asarray(p, dtype=np.float64)


def map_to_hab(p) -> np.ndarray:
    return R_MAP_HAB.T @ np.asarray(p, dtype=np.float64)


def yaw_to_hab_quat(yaw: float) -> tuple[float, float, float, float]:
    """(x, y, z, w) quaternion of a rotation by ``yaw`` about Habitat's +y axis."""
    return (0.0, math.sin(yaw / 2), 0.0, math.cos(yaw / 2))


def hab_quat_to_yaw(q) -> float:
    """Map yaw of a Habitat agent rotation given as (x, y, z, w) (heading of its -z axis)."""
    x, y, z, w = q
    # rotate hab forward (0, 0, -1) by q, then read the heading in the map frame
    fwd_hab = np.array([-2 * (x * z + w * y), -2 * (y * z - w * x), -(1 - 2 * (x * x + y * y))])
    f = hab_to_map(fwd_hab)
    return math.atan2(f[1], f[0])


def gl_camera_to_map(position_hab, rotation_hab_xyzw) -> np.ndarray:
    """4x4 optical -> map from a Habitat sensor state (position, OpenGL-camera rotation)."""
    x, y, z, w = rotation_hab_xyzw
    r_hab_gl = np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])
    T = np.eye(4)
    T[:3, :3] = R_MAP_HAB @ r_hab_gl @ _R_GL_OPTICAL
    T[:3, 3] = hab_to_map(position_hab)
    return T


class HabitatBackend(SimBackend):
    """Habitat-Sim with the PersONAL LoCoBot agent. ``scene_files`` maps a scene_id to a
    scene file (.glb/.ply) when the scene id itself is not a path; ``scene_dataset_config``
    is passed through for HM3D-style datasets (semantic annotations)."""

    def __init__(self, camera: CameraSpec | None = None, scene_files: dict[str, str] | None = None,
                 scene_dataset_config: str | None = None, gpu_device_id: int = 0):
        self._hs = import_habitat_sim()
        self.camera = camera or CameraSpec()
        self.scene_files = dict(scene_files or {})
        self.scene_dataset_config = scene_dataset_config
        self.gpu_device_id = gpu_device_id
        self._sim = None
        self._scene: Scene | None = None

    # -- configuration -----------------------------------------------------
    def _sensor(self, uuid: str, kind):
        hs, c = self._hs, self.camera
        spec = hs.CameraSensorSpec()
        spec.uuid, spec.sensor_type = uuid, kind
        spec.resolution = [c.height, c.width]
        spec.position = [0.0, c.height_m, 0.0]
        spec.hfov = c.hfov_deg
        return spec

    def _config(self, scene_file: str):
        hs = self._hs
        sim_cfg = hs.SimulatorConfiguration()
        sim_cfg.scene_id = scene_file
        sim_cfg.gpu_device_id = self.gpu_device_id
        if self.scene_dataset_config:
            sim_cfg.scene_dataset_config_file = self.scene_dataset_config
        agent = hs.agent.AgentConfiguration()
        agent.radius = self.agent_radius
        agent.height = self.camera.height_m
        agent.sensor_specifications = [
            self._sensor("rgb", hs.SensorType.COLOR),
            self._sensor("depth", hs.SensorType.DEPTH),
            self._sensor("semantic", hs.SensorType.SEMANTIC),
        ]
        act = hs.agent.ActionSpec
        ctl = hs.agent.ActuationSpec
        agent.action_space = {
            "move_forward": act("move_forward", ctl(amount=self.forward_step_m)),
            "turn_left": act("turn_left", ctl(amount=self.turn_deg)),
            "turn_right": act("turn_right", ctl(amount=self.turn_deg)),
            "look_up": act("look_up", ctl(amount=self.tilt_deg, constraint=60.0)),
            "look_down": act("look_down", ctl(amount=self.tilt_deg, constraint=60.0)),
        }
        return hs.Configuration(sim_cfg, [agent])

    # -- SimBackend --------------------------------------------------------
    def load_scene(self, scene: Scene) -> None:
        path = self.scene_files.get(scene.scene_id, scene.scene_id)
        cfg = self._config(path)
        if self._sim is None:
            self._sim = self._hs.Simulator(cfg)
        else:
            self._sim.reconfigure(cfg)
        self._scene = scene

    def _require_sim(self):
        if self._sim is None:
            raise RuntimeError("HabitatBackend: no scene loaded; call load_scene(scene) first")
        return self._sim

    def reset(self, episode: Episode | None = None, state: AgentState | None = None) -> Observation:
        sim = self._require_sim()
        if state is None:
            if episode is None:
                raise ValueError("HabitatBackend.reset needs an episode or a state")
            x, y, z = episode.start_position
            state = AgentState(x, y, z, episode.start_yaw, 0.0, episode.floor_id)
        agent = sim.get_agent(0)
        s = self._hs.AgentState()
        s.position = map_to_hab((state.x, state.y, state.z)).astype(np.float32)
        from habitat_sim.utils.common import quat_from_coeffs  # takes (x, y, z, w)

        s.rotation = quat_from_coeffs(np.array(yaw_to_hab_quat(state.yaw)))
        agent.set_state(s)
        self._floor = state.floor
        return self.render()

    def step(self, action: Action) -> Observation:
        sim = self._require_sim()
        action = Action(action)
        collided = False
        if action != Action.STOP:
            collided = bool(sim.get_agent(0).act(_ACTION_NAMES[action]))
        obs = self.render()
        obs.collided = collided
        obs.extras["action"] = action.name
        obs.extras["stopped"] = action == Action.STOP
        return obs

    @property
    def state(self) -> AgentState:
        agent = self._require_sim().get_agent(0)
        s = agent.get_state()
        p = hab_to_map(s.position)
        q = s.rotation
        yaw = hab_quat_to_yaw((q.x, q.y, q.z, q.w))
        cam = s.sensor_states["rgb"]
        T = gl_camera_to_map(cam.position, (cam.rotation.x, cam.rotation.y, cam.rotation.z, cam.rotation.w))
        fwd = T[:3, 2]  # optical z in the map frame
        pitch = math.atan2(fwd[2], math.hypot(fwd[0], fwd[1]))
        return AgentState(float(p[0]), float(p[1]), float(p[2]), yaw, pitch, getattr(self, "_floor", 0))

    def render(self) -> Observation:
        sim = self._require_sim()
        o = sim.get_sensor_observations()
        c = self.camera
        depth = np.asarray(o["depth"], dtype=np.float32)
        depth = np.where((depth >= c.min_depth) & (depth <= c.max_depth), depth, np.float32(0))
        cam = sim.get_agent(0).get_state().sensor_states["rgb"]
        T = gl_camera_to_map(cam.position, (cam.rotation.x, cam.rotation.y, cam.rotation.z, cam.rotation.w))
        return Observation(
            rgb=np.ascontiguousarray(np.asarray(o["rgb"])[..., :3], dtype=np.uint8),
            depth=depth,
            instance_ids=np.asarray(o["semantic"]).astype(np.int32),
            state=self.state,
            T_map_camera=T,
            K=c.intrinsics(),
        )

    def geodesic_distance(self, start, goals, floor: int = 0) -> float:
        hs, sim = self._hs, self._require_sim()
        z = self._floor_z(floor)
        path = hs.MultiGoalShortestPath()
        path.requested_start = map_to_hab((start[0], start[1], z))
        path.requested_ends = [map_to_hab((g[0], g[1], z)) for g in goals]
        return float(path.geodesic_distance) if sim.pathfinder.find_path(path) else math.inf

    def shortest_path(self, start, goal, floor: int = 0) -> list[tuple[float, float]]:
        hs, sim = self._hs, self._require_sim()
        z = self._floor_z(floor)
        path = hs.ShortestPath()
        path.requested_start = map_to_hab((start[0], start[1], z))
        path.requested_end = map_to_hab((goal[0], goal[1], z))
        if not sim.pathfinder.find_path(path):
            return []
        return [tuple(hab_to_map(p)[:2]) for p in path.points]

    def is_navigable(self, x: float, y: float, floor: int = 0) -> bool:
        return bool(self._require_sim().pathfinder.is_navigable(map_to_hab((x, y, self._floor_z(floor)))))

    def _floor_z(self, floor: int) -> float:
        if self._scene is not None:
            for f in self._scene.floors:
                if f.index == floor:
                    return f.z
        return 0.0

    def close(self) -> None:
        if self._sim is not None:
            self._sim.close()
            self._sim = None

"""The embedded synthetic simulator: procedural scene mesh + CPU ray casting.

Dynamics follow PersONAL's LoCoBot: MOVE_FORWARD 0.25 m, TURN_LEFT/RIGHT 30°,
LOOK_UP/DOWN 30° (pitch clamped to ±60°), STOP. Collisions are checked on the
navigable grid (agent radius 0.18 m): a forward step whose straight segment
leaves navigable space is replaced by the longer feasible of its x-only and
y-only components (sliding along the axis-aligned walls of these scenes), or by
no motion at all; either way ``collided`` is True.
"""
from __future__ import annotations

import math
from collections import OrderedDict

import numpy as np

from personal.world import frames
from personal.world.checks import start_problem
from personal.world.mesh import SceneMesh, scene_mesh
from personal.world.model import Episode, Scene
from personal.sim.backends.base import Action, AgentState, CameraSpec, Observation, SimBackend
from personal.sim.navgrid import SceneNavGrids
from personal.sim.render import Renderer

MAX_PITCH_RAD = math.radians(60.0)
SUCCESS_RADIUS_M = 1.0  # PersONAL PAN: STOP within 1 m of the target object's box

def camera_pose(state: AgentState, camera: CameraSpec) -> np.ndarray:
    """4x4 camera optical frame -> map for an agent state (camera ``height_m`` above its floor)."""
    pitch = state.pitch + math.radians(camera.pitch_deg) if camera.pitch_deg else state.pitch
    return frames.optical_camera_pose(state.x, state.y, state.z + camera.height_m, state.yaw, pitch)


def _wrap(a: float) -> float:
    return (a + math.pi) % (2 * math.pi) - math.pi


class _LoadedScene:
    def __init__(self, scene: Scene, camera: CameraSpec, nthreads: int, agent_radius: float):
        self.scene = scene
        self.mesh: SceneMesh = scene_mesh(scene)
        self.renderer = Renderer(self.mesh, camera, nthreads=nthreads)
        self.navgrids = SceneNavGrids(scene, agent_radius=agent_radius)


class SyntheticBackend(SimBackend):
    """CPU simulator of a :class:`Scene`. Geometry queries use the navigable grid
    (see :mod:`personal.sim.navgrid`); rendering uses :class:`personal.sim.render.Renderer`."""

    def __init__(self, camera: CameraSpec | None = None, render_threads: int = 0, cache_scenes: int = 4):
        self.camera = camera or CameraSpec()
        self.render_threads = render_threads
        self._cache: OrderedDict[tuple, _LoadedScene] = OrderedDict()
        self._cache_size = max(int(cache_scenes), 1)
        self._cur: _LoadedScene | None = None
        self._state: AgentState | None = None

    # -- scene -------------------------------------------------------------
    def load_scene(self, scene: Scene) -> None:
        if not isinstance(scene, Scene):
            raise TypeError(f"SyntheticBackend.load_scene expects a personal.world.model.Scene, got {type(scene).__name__}")
        key = (scene.scene_id, scene.seed, id(scene))
        if key not in self._cache:
            self._cache[key] = _LoadedScene(scene, self.camera, self.render_threads, self.agent_radius)
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        self._cache.move_to_end(key)
        self._cur = self._cache[key]
        self._state = None

    @property
    def scene(self) -> Scene:
        return self._loaded().scene

    @property
    def mesh(self) -> SceneMesh:
        return self._loaded().mesh

    def _loaded(self) -> _LoadedScene:
        if self._cur is None:
            raise RuntimeError("SyntheticBackend: no scene loaded; call load_scene(scene) first")
        return self._cur

    def _floor_z(self, floor: int) -> float:
        for f in self.scene.floors:
            if f.index == floor:
                return f.z
        raise ValueError(f"scene {self.scene.scene_id!r} has no floor {floor}")

    # -- episode / state ---------------------------------------------------
    def reset(self, episode: Episode | None = None, state: AgentState | None = None) -> Observation:
        cur = self._loaded()
        if state is not None:
            self._state = AgentState(state.x, state.y, self._floor_z(state.floor), _wrap(state.yaw),
                                     float(np.clip(state.pitch, -MAX_PITCH_RAD, MAX_PITCH_RAD)), state.floor)
        elif episode is not None:
            if episode.scene_id != cur.scene.scene_id:
                raise ValueError(f"episode {episode.episode_id!r} is for scene {episode.scene_id!r} "
                                 f"but scene {cur.scene.scene_id!r} is loaded")
            problem = start_problem(episode, cur.scene)  # a NaN or far-away start fails here, by name
            if problem:
                raise ValueError(problem)
            x, y, _ = episode.start_position
            self._state = AgentState(float(x), float(y), self._floor_z(episode.floor_id), _wrap(episode.start_yaw),
                                     0.0, episode.floor_id)
        else:
            raise ValueError("SyntheticBackend.reset needs an episode or a state")
        return self.render()

    @property
    def state(self) -> AgentState:
        if self._state is None:
            raise RuntimeError("SyntheticBackend: no agent yet; call reset() first")
        s = self._state
        return AgentState(s.x, s.y, s.z, s.yaw, s.pitch, s.floor)

    # -- dynamics ----------------------------------------------------------
    def step(self, action: Action) -> Observation:
        try:
            action = Action(action)
        except ValueError:
            raise ValueError(f"unknown action {action!r}; valid: {[f'{a.value}={a.name}' for a in Action]}") from None
        s = self.state
        collided = False
        if action == Action.MOVE_FORWARD:
            collided = self._move_forward(s)
        elif action in (Action.TURN_LEFT, Action.TURN_RIGHT):
            sign = 1.0 if action == Action.TURN_LEFT else -1.0
            s.yaw = _wrap(s.yaw + sign * math.radians(self.turn_deg))
        elif action in (Action.LOOK_UP, Action.LOOK_DOWN):
            sign = 1.0 if action == Action.LOOK_UP else -1.0
            s.pitch = float(np.clip(s.pitch + sign * math.radians(self.tilt_deg), -MAX_PITCH_RAD, MAX_PITCH_RAD))
        self._state = s
        obs = self.render()
        obs.collided = collided
        obs.extras["action"] = action.name
        obs.extras["stopped"] = action == Action.STOP
        return obs

    def _segment_free(self, x0: float, y0: float, x1: float, y1: float, floor: int) -> bool:
        grid = self._loaded().navgrids[floor]
        n = max(int(math.ceil(math.hypot(x1 - x0, y1 - y0) / (grid.spec.res / 2))), 1)
        return all(grid.is_navigable(x0 + (x1 - x0) * k / n, y0 + (y1 - y0) * k / n) for k in range(1, n + 1))

    def _move_forward(self, s: AgentState) -> bool:
        """Moves ``s`` in place; returns True on collision."""
        dx, dy = self.forward_step_m * math.cos(s.yaw), self.forward_step_m * math.sin(s.yaw)
        if self._segment_free(s.x, s.y, s.x + dx, s.y + dy, s.floor):
            s.x, s.y = s.x + dx, s.y + dy
            return False
        # slide: keep the longer feasible axis component of the step
        for ddx, ddy in sorted([(dx, 0.0), (0.0, dy)], key=lambda d: -abs(d[0] + d[1])):
            if abs(ddx + ddy) > 1e-3 and self._segment_free(s.x, s.y, s.x + ddx, s.y + ddy, s.floor):
                s.x, s.y = s.x + ddx, s.y + ddy
                break
        return True

    # -- rendering ---------------------------------------------------------
    def render(self) -> Observation:
        cur = self._loaded()
        s = self.state
        T = camera_pose(s, self.camera)
        rgb, depth, ids = cur.renderer.render(T)
        return Observation(rgb=rgb, depth=depth, instance_ids=ids, state=s, T_map_camera=T,
                           K=cur.renderer.K.copy(), extras={"render_timing": dict(cur.renderer.last_timing)})

    # -- geometry queries --------------------------------------------------
    def geodesic_distance(self, start, goals, floor: int = 0) -> float:
        return self._loaded().navgrids[floor].geodesic_distance(tuple(start[:2]), [tuple(g[:2]) for g in goals])

    def shortest_path(self, start, goal, floor: int = 0) -> list[tuple[float, float]]:
        return self._loaded().navgrids[floor].shortest_path(tuple(start[:2]), tuple(goal[:2]))

    def is_navigable(self, x: float, y: float, floor: int = 0) -> bool:
        return self._loaded().navgrids[floor].is_navigable(x, y)

    def snap_to_navigable(self, x: float, y: float, floor: int = 0) -> tuple[float, float] | None:
        return self._loaded().navgrids[floor].snap(x, y)

    def goal_distance(self, x: float, y: float, target_object_ids: list[str], floor: int = 0,
                      success_radius: float = SUCCESS_RADIUS_M) -> float:
        """Geodesic distance from (x, y) to the nearest navigable cell within
        ``success_radius`` of any target object's box footprint (inf if none is reachable)."""
        scene = self.scene
        boxes = [scene.object(oid).box for oid in target_object_ids]
        grid = self._loaded().navgrids[floor]
        return grid.geodesic_to_cells((x, y), grid.cells_near_boxes(boxes, success_radius))

    def episode_goal_distance(self, episode: Episode, success_radius: float = SUCCESS_RADIUS_M) -> float:
        """Geodesic distance from the episode start to the success region of its targets
        (for ``info.geodesic_distance`` and SPL's shortest-path length)."""
        x, y, _ = episode.start_position
        return self.goal_distance(x, y, list(episode.target_object_ids), episode.floor_id, success_radius)

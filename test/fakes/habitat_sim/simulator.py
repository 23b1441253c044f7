"""``habitat_sim.Simulator`` and ``habitat_sim.Configuration`` of the contract fake.

Read from habitat-sim 0.3 ``src_python/habitat_sim/simulator.py``:

- ``Configuration(sim_cfg, agents, metadata_mediator=None, enable_batch_renderer=False)``.
- ``Simulator(config)``: ``_sanitize_config`` (at least one agent; ``load_semantic_mesh`` is
  switched on by a SEMANTIC sensor); ``__set_from_config`` loads the scene, creates one
  ``Agent`` per agent config, installs ``step_filter`` as their move filter and calls
  ``initialize_agent`` (a random navigable point and a random heading about +y when a navmesh
  is loaded, else the origin; the fake draws both from ``random_seed`` with its own generator).
  ``reconfigure(config)`` rebuilds only when the config differs. ``close()``.
- ``get_agent(agent_id)``, ``initialize_agent(agent_id, initial_state=None)``.
- ``get_sensor_observations(agent_ids=0)``: for one agent id a dict uuid -> observation,
  each ``np.flip(buffer, axis=0)`` of the sensor's buffer (``Sensor.get_observation``):
  COLOR (H, W, channels) uint8 RGBA, DEPTH (H, W) float32, SEMANTIC (H, W) uint32.
- ``step_filter(start, end)``: ``pathfinder.try_step`` when ``allow_sliding`` else
  ``try_step_no_sliding``; unchanged without a navmesh.
- ``recompute_navmesh(pathfinder, navmesh_settings)`` (``SimBindings.cpp``); the
  ``navmesh_settings`` field of ``SimulatorConfiguration`` recomputes at load when given
  (its binding's doc string).

The scene itself: ``_scene.py``; the navmesh: ``nav.py``.
"""
from __future__ import annotations

import attr
import numpy as np
import quaternion as qt

from ._config import SensorType, SimulatorConfiguration
from ._scene import LoadedStage
from ._strict import refuse
from .agent import Agent, AgentState
from .nav import PathFinder


@attr.s(auto_attribs=True, slots=True)
class Configuration:
    sim_cfg: SimulatorConfiguration
    agents: list
    metadata_mediator: object = None
    enable_batch_renderer: bool = False


_REAL_SIMULATOR_ATTRS = {
    "seed", "reset", "reset_agent", "add_sensor", "start_async_render_and_step_physics", "start_async_render",
    "get_sensor_observations_async_finish", "last_state", "make_greedy_follower", "step_physics",
    "get_active_scene_graph", "get_active_semantic_scene_graph", "semantic_scene", "renderer", "gpu_device",
    "random", "frustum_culling", "get_asset_template_manager", "get_lighting_template_manager",
    "get_object_template_manager", "get_physics_template_manager", "get_stage_template_manager",
    "get_rigid_object_manager", "get_articulated_object_manager", "get_world_time", "get_physics_time_step",
    "get_gravity", "set_gravity", "get_stage_is_collidable", "set_stage_is_collidable", "cast_ray",
    "get_light_setup", "set_light_setup", "get_current_light_setup", "curr_scene_name", "metadata_mediator",
    "active_dataset", "navmesh_visualization", "gfx_replay_manager", "get_debug_line_render", "scene_aabb",
    "add_trajectory_object", "add_gradient_trajectory_object", "get_physics_contact_points",
    "perform_discrete_collision_detection", "get_runtime_perf_stat_names", "get_runtime_perf_stat_values",
    "save_current_scene_config", "get_stage_initialization_template", "build_vertex_color_map_report",
    "create_rigid_constraint", "update_rigid_constraint", "remove_rigid_constraint", "step_world",
    "agents", "config",
}


class Simulator:
    _real_name = "Simulator"
    _real_only = tuple(_REAL_SIMULATOR_ATTRS)

    def __init__(self, config: Configuration) -> None:
        self._closed = False
        self._set_from_config(config)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        refuse(self, name)

    # -- configuration -------------------------------------------------------
    @staticmethod
    def _sanitize(config: Configuration) -> None:
        if not isinstance(config, Configuration):
            raise TypeError(f"Simulator(config): expected habitat_sim.Configuration, got {type(config).__name__}")
        if not isinstance(config.sim_cfg, SimulatorConfiguration):
            raise TypeError("Configuration.sim_cfg must be a habitat_sim.SimulatorConfiguration")
        if len(config.agents) == 0:
            raise RuntimeError("Config has not agents specified.  Must specify at least 1 agent")
        if config.enable_batch_renderer:
            raise NotImplementedError("the contract fake has no batch renderer")
        for agent_cfg in config.agents:
            for spec in agent_cfg.sensor_specifications:
                spec.check()
                if spec.sensor_type == SensorType.SEMANTIC:
                    config.sim_cfg.load_semantic_mesh = True
            uuids = [s.uuid for s in agent_cfg.sensor_specifications]
            assert len(set(uuids)) == len(uuids), f"Error, sensor uuids repeat: {uuids}"

    def _set_from_config(self, config: Configuration) -> None:
        self._sanitize(config)
        cfg = config.sim_cfg
        if not cfg.scene_id:
            raise NotImplementedError("the contract fake needs a scene (SimulatorConfiguration.scene_id)")
        self._stage = LoadedStage(cfg.scene_id, cfg.scene_dataset_config_file, cfg.load_semantic_mesh)
        self._pathfinder = PathFinder()
        self._rng = np.random.default_rng(cfg.random_seed)  # real: pathfinder.seed(random_seed), self.random
        if cfg.navmesh_settings is not None:
            self.recompute_navmesh(self._pathfinder, cfg.navmesh_settings)
        self._config = config
        self._agents = [Agent(a, self) for a in config.agents]
        for i in range(len(self._agents)):
            self.initialize_agent(i)

    def reconfigure(self, config: Configuration) -> None:
        self._sanitize(config)
        if config != self._config:
            self._set_from_config(config)

    def close(self, destroy: bool = True) -> None:
        for a in getattr(self, "_agents", []):
            a.close()
        self._agents = []
        self._closed = True

    def __enter__(self) -> "Simulator":
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.close(destroy=True)

    # -- agents ----------------------------------------------------------------
    def get_agent(self, agent_id: int) -> Agent:
        return self._agents[agent_id]

    def initialize_agent(self, agent_id: int, initial_state: AgentState | None = None) -> Agent:
        agent = self.get_agent(agent_id)
        if initial_state is None:
            initial_state = AgentState()
            if self._pathfinder.is_loaded:  # as the real one: a random navigable point, a random heading
                rng = self._rng
                initial_state.position = self._pathfinder._random_point(rng)
                yaw = rng.uniform(0.0, 2.0 * np.pi)
                initial_state.rotation = qt.quaternion(np.cos(yaw / 2), 0.0, np.sin(yaw / 2), 0.0)
        agent.set_state(initial_state, is_initial=True)
        return agent

    # -- navigation -------------------------------------------------------------
    @property
    def pathfinder(self) -> PathFinder:
        return self._pathfinder

    def recompute_navmesh(self, pathfinder: PathFinder, navmesh_settings) -> bool:
        from ._config import NavMeshSettings

        if not isinstance(pathfinder, PathFinder) or not isinstance(navmesh_settings, NavMeshSettings):
            raise TypeError("recompute_navmesh(pathfinder: PathFinder, navmesh_settings: NavMeshSettings)")
        return pathfinder._build(self._stage.raycaster, self._stage.bounds, navmesh_settings)

    def step_filter(self, start_pos, end_pos):
        if self._pathfinder.is_loaded:
            if self._config.sim_cfg.allow_sliding:
                return self._pathfinder.try_step(start_pos, end_pos)
            return self._pathfinder.try_step_no_sliding(start_pos, end_pos)
        return end_pos

    # -- sensors ------------------------------------------------------------------
    def get_sensor_observations(self, agent_ids=0):
        if not isinstance(agent_ids, int):
            raise NotImplementedError("the contract fake renders one agent per call (agent_ids: int)")
        if self._closed:
            raise RuntimeError("Simulator is closed")
        agent = self.get_agent(agent_ids)
        obs = {}
        for spec in agent.agent_config.sensor_specifications:
            position, R_gl = agent._sensor_pose(spec.uuid)
            buffer = self._stage.draw(spec, position, R_gl, spec.sensor_type)
            if spec.sensor_type == SensorType.COLOR and spec.channels != 4:
                buffer = np.ascontiguousarray(buffer[..., : spec.channels])
            obs[spec.uuid] = np.flip(buffer, axis=0)
        return obs

    def step(self, action, dt: float = 1.0 / 60.0):
        """``Simulator.step`` for the default agent: act, then observe, with ``collided``."""
        if isinstance(action, dict):
            raise NotImplementedError("the contract fake steps the default agent only")
        agent_id = self._config.sim_cfg.default_agent_id
        collided = self.get_agent(agent_id).act(action)
        obs = self.get_sensor_observations(agent_id)
        obs["collided"] = collided
        return obs

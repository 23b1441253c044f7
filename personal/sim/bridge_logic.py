"""ROS-free parts of the sim bridge: where episodes come from, what the episode
descriptor says, how ``cmd_vel`` becomes discrete actions, and depth encodings.
Tested without ROS; ``sim_bridge.bridge_node`` wraps them in rclpy (an episode's score is
PAN's: ``personal.navigation.eval.pan.episode_result``)."""
from __future__ import annotations

import math
import os
from dataclasses import dataclass

import numpy as np

from personal.world.model import SPLITS, Episode, Scene, SceneAsset
from personal.sim.backends.base import Action

ACTION_SPACE = {a.value: a.name for a in Action}


# the sim bridge node's parameters: {name: (default, description)}
PARAMETERS = {
    "episodes_dir": ("", "PersONAL episode folder (personal world generate, or the public files' {split} parent); "
                         "empty = generate in memory"),
    "scenes_dir": ("", "folder the episodes' scene_id paths are relative to (habitat; default: episodes_dir)"),
    "scene_dataset_config": ("", "scene dataset config for habitat-sim; empty = the one each episode names"),
    "scene": ("", "replay only the episodes of this scene id (e.g. 4ok3usBNeis); empty = all"),
    "split": ("all", "easy | medium | hard | all: which episodes to replay / generate"),
    "scenes": (1, "households to generate when episodes_dir is empty"),
    "seed": (0, "generator seed when episodes_dir is empty"),
    "episodes_per_scene": (3, "episodes per scene and split when generating"),
    "start_index": (0, "first episode to load"),
    "continue_after_stop": (False, "after the episode's STOP (scored then, once) take further actions, never scored: "
                                   "the assistant verifies what a navigation request found; false = refuse them"),
    "backend": ("synthetic", "synthetic | habitat | auto"),
    "rate": (10.0, "sensor publish rate, Hz: the latest observation is re-published when no frame went out for "
                   "1/rate s (a fresh frame per action is published at once; stepping faster re-publishes nothing)"),
    "width": (640, "camera image width, px (LoCoBot RealSense: 640)"),
    "height": (480, "camera image height, px (LoCoBot RealSense: 480)"),
    "publish_clock": (False, "publish /clock (simulated time) and stamp with it"),
    "depth_encoding": ("16UC1", "16UC1 (mm) | 32FC1 (m)"),
    "semantic_encoding": ("32SC1", "32SC1 | 16UC1"),
    "map_frame": ("map", "fixed frame"),
    "base_frame": ("base_link", "robot base frame"),
    "camera_frame": ("camera_color_optical_frame", "optical frame of all camera images"),
    "publish_tf": (True, "publish map -> base_link -> camera frame on /tf"),
    "log_every": (5.0, "seconds between 'published ...' summaries (0 = never)"),
    "sensor": ("ideal", "camera model (personal/sim/sensor_model.py): ideal | d435 | d435-harsh"),
    "sensor_overrides": ("", "preset fields to override, e.g. hfov_deg=69,height_m=1.25"),
    "sensor_seed": (0, "seed of the camera model's noise"),
}


class EpisodeSourceError(ValueError):
    pass


def splits_for(split: str) -> tuple[str, ...]:
    if split in ("", "all"):
        return SPLITS
    if split not in SPLITS:
        raise EpisodeSourceError(f"parameter 'split': unknown split {split!r} (easy|medium|hard|all)")
    return (split,)


def load_episodes(episodes_dir: str, split: str, scene_models: bool = True) -> tuple[dict[str, Scene], list[Episode]]:
    """Scenes and episodes of ``split`` from a PersONAL episode folder (``scene_models=False``
    also accepts episodes without our scene model: the public HM3D files)."""
    from personal.world.habitat_format import load_episode_set

    from personal.world.checks import start_problem

    scenes, episodes = load_episode_set(episodes_dir, scene_models)  # raises EpisodeFormatError naming file + field
    wanted = splits_for(split)
    episodes = [e for e in episodes if e.split in wanted]
    if not episodes:
        raise EpisodeSourceError(f"{episodes_dir}: no episodes for split {split!r}")
    problems = [p for p in (start_problem(e, scenes[e.scene_id]) for e in episodes if e.scene_id in scenes) if p]
    if problems:  # refused before anything runs, rather than a crash or a silent SR 0 later
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        raise EpisodeSourceError(f"{episodes_dir}: {'; '.join(problems[:3])}{more}")
    return scenes, episodes


# habitat-lab's datasets strip this from a scene_id before joining it with scenes_dir
DEFAULT_SCENE_PATH_PREFIX = "data/scene_datasets/"


def scene_file_path(scene_file: str, scenes_dir: str) -> str:
    """Where an episode's ``scene_id`` lies: joined with ``scenes_dir`` as habitat-lab's
    ``ObjectNavDatasetV1`` does (after stripping ``data/scene_datasets/``)."""
    if scene_file.startswith(DEFAULT_SCENE_PATH_PREFIX):
        scene_file = scene_file[len(DEFAULT_SCENE_PATH_PREFIX):]
    return os.path.join(scenes_dir, scene_file)


def dataset_config_candidates(config: str, scenes_dir: str) -> list[str]:
    """Places a file's ``scene_dataset_config`` may name: as written (habitat-lab uses it
    relative to the working directory), then under ``scenes_dir`` without its leading
    ``./data/scene_datasets/``."""
    tail = config[2:] if config.startswith("./") else config
    if tail.startswith(DEFAULT_SCENE_PATH_PREFIX):
        tail = tail[len(DEFAULT_SCENE_PATH_PREFIX):]
    return list(dict.fromkeys([config, os.path.join(scenes_dir, tail)]))


def scene_assets(episodes: list[Episode], scenes: dict[str, Scene], episodes_dir: str, scenes_dir: str = "",
                 dataset_config: str = "") -> dict[str, SceneAsset]:
    """What habitat-sim loads for each scene of ``episodes``: the scene file under
    ``scenes_dir`` (default: the episode folder, where ``personal world generate`` puts its
    meshes) and the scene dataset config (``dataset_config`` overrides the files').
    Raises EpisodeSourceError listing every missing file by path."""
    base = scenes_dir or episodes_dir
    assets: dict[str, SceneAsset] = {}
    missing: list[str] = []
    for ep in episodes:
        if ep.scene_id in assets:
            continue
        if not ep.scene_file:
            raise EpisodeSourceError(f"episode {ep.episode_id!r}: no scene_id file path to load")
        path = scene_file_path(ep.scene_file, base)
        if not os.path.isfile(path):
            missing.append(f"scene {ep.scene_id!r}: {path}")
        config = dataset_config or ep.scene_dataset_config
        if config and config != "default":
            found = [c for c in dataset_config_candidates(config, base) if os.path.isfile(c)]
            if not found:
                tried = " or ".join(dataset_config_candidates(config, base))
                missing.append(f"scene dataset config of {ep.scene_id!r}: {tried}")
            config = found[0] if found else config
        assets[ep.scene_id] = SceneAsset(ep.scene_id, path, config if config != "default" else "", scenes.get(ep.scene_id))
    if missing:
        raise EpisodeSourceError("missing scene files (give scenes_dir:= the folder the episodes' scene_id paths are "
                                 "relative to):\n  " + "\n  ".join(dict.fromkeys(missing)))
    return assets


def only_scene(episodes: list[Episode], scene_id: str, where: str) -> list[Episode]:
    """The episodes of one scene (all when ``scene_id`` is empty)."""
    if not scene_id:
        return episodes
    kept = [e for e in episodes if e.scene_id == scene_id]
    if not kept:
        known = sorted({e.scene_id for e in episodes})
        raise EpisodeSourceError(f"parameter 'scene': no episodes of scene {scene_id!r} in {where} (scenes: {', '.join(known)})")
    return kept


def episode_index(episodes: list[Episode], episode_id: str, index: int = -1) -> int:
    """The position of ``episode_id`` in the bridge's episode list, or ``index`` checked against it
    when ``episode_id`` is empty (episode/load)."""
    if not episode_id:
        if not 0 <= index < len(episodes):
            raise ValueError(f"episode index {index} is outside the bridge's {len(episodes)} episodes")
        return index
    for i, ep in enumerate(episodes):
        if ep.episode_id == episode_id:
            return i
    raise ValueError(f"episode {episode_id!r} is not among the bridge's {len(episodes)} episodes")


def scene_model(scene) -> Scene | None:
    """Our scene model behind what a backend loads (a Scene, or a SceneAsset's ``scene``)."""
    return scene.scene if isinstance(scene, SceneAsset) else scene


def generate_episodes(split: str, scenes: int, seed: int, per_scene: int) -> tuple[dict[str, Scene], list[Episode]]:
    """Generate households and personalized episodes in memory (same naming as `personal world generate`)."""
    from personal.world.episodes import generate_episodes as gen_eps
    from personal.world.generator import generate_scene

    if scenes < 1 or per_scene < 1:
        raise EpisodeSourceError(f"need scenes >= 1 and episodes_per_scene >= 1, got {scenes} and {per_scene}")
    out_scenes: dict[str, Scene] = {}
    episodes: list[Episode] = []
    for k in range(scenes):
        scene = generate_scene(seed + k, scene_id=f"synth_{seed + k:05d}")
        out_scenes[scene.scene_id] = scene
        for sp in splits_for(split):
            episodes.extend(gen_eps(scene, sp, per_scene, seed))
    return out_scenes, episodes


def episode_descriptor(episode: Episode, scene: Scene | None, index: int, count: int) -> dict:
    """Payload of ``personal/msg/EpisodeDescriptor`` (target positions are box centres, or the
    goals' centres from the episode file when there is no scene model)."""

    def point(p) -> dict:
        return {"x": float(p[0]), "y": float(p[1]), "z": float(p[2])}

    targets = []
    if scene is None:
        targets = [point(g.position) for g in episode.goals]
        if not targets:
            raise EpisodeSourceError(f"episode {episode.episode_id!r}: no goal entries for its targets in the episode file")
    for oid in episode.target_object_ids if scene is not None else ():
        try:
            targets.append(point(scene.object(oid).box.center))
        except KeyError:
            raise EpisodeSourceError(
                f"episode {episode.episode_id!r}: target {oid!r} is not in scene {scene.scene_id!r}") from None
    return {
        "episode_id": str(episode.episode_id),
        "scene_id": episode.scene_id,
        "split": episode.split,
        "query": episode.query,
        "summary": episode.summary,
        "extracted_summary": list(episode.extracted_summary),
        "owner": episode.owner,
        "object_category": episode.object_category,
        "target_object_ids": list(episode.target_object_ids),
        "description": list(episode.description),
        "target_positions": targets,
        "start_position": point(episode.start_position),
        "start_yaw": float(episode.start_yaw),
        "floor_id": int(episode.floor_id),
        "geodesic_distance": float(episode.geodesic_distance),
        "index": index,
        "count": count,
    }


def load_source(p: dict, habitat: bool) -> tuple[dict, list, str]:
    """(scenes, episodes, where from) of the bridge's parameters: ``episodes_dir`` (habitat: its
    episodes' scene files under ``scenes_dir``) or, without it, generated in memory."""
    if p["episodes_dir"]:
        scenes, episodes = load_episodes(p["episodes_dir"], p["split"], scene_models=not habitat)
        episodes = only_scene(episodes, p["scene"], p["episodes_dir"])
        if habitat:  # habitat-sim loads scene files: the episodes' scene_id under scenes_dir
            scenes = scene_assets(episodes, scenes, p["episodes_dir"], p["scenes_dir"], p["scene_dataset_config"])
        return scenes, episodes, p["episodes_dir"]
    if habitat:
        raise ValueError("backend habitat replays episode files: give episodes_dir:= (the public PersONAL "
                         "files, or a folder written by `personal world generate --out DIR`)")
    scenes, episodes = generate_episodes(p["split"], int(p["scenes"]), int(p["seed"]), int(p["episodes_per_scene"]))
    return scenes, episodes, f"generated (split={p['split']}, scenes={p['scenes']}, seed={p['seed']})"


def bridge_backend(p: dict):
    """(backend, camera spec) of the bridge's parameters: ideal gives the plain backend (the renderer's
    frames), any other camera model passes every frame through it."""
    from personal.sim.sensor_model import make_sensor_backend, sensor_spec

    if int(p["width"]) < 8 or int(p["height"]) < 8:
        raise ValueError(f"parameters 'width' / 'height': at least 8 px, got {p['width']}x{p['height']}")
    spec = sensor_spec(p["sensor"], p["sensor_overrides"], int(p["sensor_seed"]))
    return make_sensor_backend(p["backend"], spec, int(p["width"]), int(p["height"])), spec


def backend_error(exc: Exception) -> str:
    """The log line of a ``bridge_backend`` failure: a camera-model error names its own parameter."""
    from personal.sim.sensor_model import SensorSpecError

    return f"parameter {exc}" if isinstance(exc, SensorSpecError) else f"parameter 'backend': {exc}"


def tick_rate(rate: float) -> tuple[float, str]:
    """(the sensor publish rate, Hz; why it was replaced, "" if it was not)."""
    if float(rate) > 0:
        return float(rate), ""
    return 10.0, f"parameter 'rate' must be > 0, got {float(rate)}; using 10 Hz"


def result_line(episode_id: str, result: dict) -> str:
    return (f"episode {episode_id}: {'SUCCESS' if result['success'] else 'failure'} SPL={result['spl']:.2f} "
            f"DTG={result['distance_to_goal']:.2f} m steps={result['steps']}")


def agent_state(episode_id: str, obs, step: int, stopped: bool, request_id: str) -> dict:
    """AgentState fields after a reset (``request_id`` "") or an action."""
    s = obs.state
    return {
        "episode_id": str(episode_id),
        "position": {"x": float(s.x), "y": float(s.y), "z": float(s.z)},
        "yaw": float(s.yaw), "pitch": float(s.pitch), "floor": int(s.floor),
        "collided": bool(obs.collided), "step": step, "stopped": stopped, "request_id": request_id,
    }


def base_and_mount(state, T_map_camera) -> tuple[np.ndarray, np.ndarray]:
    """(T_map_base, T_base_camera) of the agent ``state`` (x, y, z, yaw) and its camera pose in the map."""
    T_map_base = np.eye(4)
    T_map_base[:3, 3] = (state.x, state.y, state.z)
    c, s = math.cos(state.yaw), math.sin(state.yaw)
    T_map_base[:2, :2] = [[c, -s], [s, c]]
    inverse = np.eye(4)  # of a rigid transform: (R, t) -> (R^T, -R^T t)
    inverse[:3, :3] = T_map_base[:3, :3].T
    inverse[:3, 3] = -T_map_base[:3, :3].T @ T_map_base[:3, 3]
    return T_map_base, inverse @ np.asarray(T_map_camera, dtype=float)


def quaternion_xyzw(R: np.ndarray) -> tuple[float, float, float, float]:
    from scipy.spatial.transform import Rotation

    x, y, z, w = Rotation.from_matrix(R).as_quat()
    return float(x), float(y), float(z), float(w)


def check_action(value: int) -> Action:
    if value not in ACTION_SPACE:
        space = ", ".join(f"{k}={v}" for k, v in ACTION_SPACE.items())
        raise ValueError(f"action {value} is outside the action space ({space})")
    return Action(value)


@dataclass
class TwistIntegrator:
    """Integrates ``cmd_vel`` over time and emits a discrete action each time the
    accumulated motion reaches one step (0.25 m forward or 30° of turn).

    ``dt`` between messages is capped (``max_dt``) so a lone message after a pause does not
    jump; a zero twist clears what was accumulated. Backward motion and sideways motion have
    no discrete action and are ignored (reported by ``update``'s second return value).
    Speeds are clamped to ``max_linear`` / ``max_angular`` (a LoCoBot does 0.7 m/s), so one
    message yields at most a step or two; a non-finite twist is refused and changes nothing
    (before: ``inf`` looped forever, ``1e6`` queued 400,000 steps, NaN poisoned the sum).
    """

    forward_step_m: float = 0.25
    turn_step_rad: float = math.radians(30.0)
    max_dt: float = 0.2
    deadband: float = 1e-3
    max_linear: float = 1.0  # m/s
    max_angular: float = math.pi  # rad/s
    _dist: float = 0.0
    _angle: float = 0.0
    _last_t: float | None = None

    def update(self, t: float, linear_x: float, angular_z: float) -> tuple[list[Action], str]:
        if not (math.isfinite(linear_x) and math.isfinite(angular_z) and math.isfinite(t)):
            return [], f"non-finite twist (linear.x={linear_x}, angular.z={angular_z}) refused"
        note = ""
        if abs(linear_x) > self.max_linear or abs(angular_z) > self.max_angular:
            note = (f"twist (linear.x={linear_x:g}, angular.z={angular_z:g}) clamped to "
                    f"{self.max_linear:g} m/s, {self.max_angular:.3g} rad/s")
            linear_x = max(-self.max_linear, min(self.max_linear, linear_x))
            angular_z = max(-self.max_angular, min(self.max_angular, angular_z))
        dt = 0.0 if self._last_t is None else min(max(t - self._last_t, 0.0), self.max_dt)
        if self._last_t is None:
            dt = self.max_dt / 2  # first message: assume a typical controller period
        self._last_t = t
        if abs(linear_x) < self.deadband and abs(angular_z) < self.deadband:
            self._dist = self._angle = 0.0
            return [], note
        if linear_x < -self.deadband:
            note = "backward motion has no discrete action; ignored"
            linear_x = 0.0
        self._dist += max(linear_x, 0.0) * dt
        self._angle += angular_z * dt
        actions: list[Action] = []
        while abs(self._angle) >= self.turn_step_rad:
            sign = 1.0 if self._angle > 0 else -1.0
            actions.append(Action.TURN_LEFT if sign > 0 else Action.TURN_RIGHT)
            self._angle -= sign * self.turn_step_rad
        while self._dist >= self.forward_step_m:
            actions.append(Action.MOVE_FORWARD)
            self._dist -= self.forward_step_m
        return actions, note


def encode_depth(depth_m: np.ndarray, encoding: str) -> tuple[np.ndarray, int]:
    """Depth (metres, 0 = invalid) -> (array, bytes per pixel) in ``16UC1`` (mm, 0 invalid,
    like the RealSense) or ``32FC1`` (metres, NaN invalid, REP 118)."""
    if encoding == "16UC1":
        mm = np.clip(np.round(depth_m * 1000.0), 0, 65535).astype(np.uint16)
        return mm, 2
    if encoding == "32FC1":
        out = depth_m.astype(np.float32, copy=True)
        out[~(out > 0)] = np.nan
        return out, 4
    raise ValueError(f"depth encoding {encoding!r} not supported (16UC1 | 32FC1)")


def encode_ids(ids: np.ndarray, encoding: str) -> tuple[np.ndarray, int]:
    if encoding == "32SC1":
        return ids.astype(np.int32, copy=False), 4
    if encoding == "16UC1":
        if ids.size and int(ids.max()) > 65535:
            raise ValueError("instance ids exceed 65535; use 32SC1")
        return ids.astype(np.uint16), 2
    raise ValueError(f"semantic encoding {encoding!r} not supported (32SC1 | 16UC1)")

"""ROS-free parts of the sim bridge: where episodes come from, what the episode
descriptor says, how ``cmd_vel`` becomes discrete actions, and depth encodings.
Tested without ROS; ``bridge_node`` wraps them in rclpy."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from personal.world.model import SPLITS, Episode, Scene
from sim_bridge.backends.base import Action

ACTION_SPACE = {a.value: a.name for a in Action}


class EpisodeSourceError(ValueError):
    pass


def splits_for(split: str) -> tuple[str, ...]:
    if split in ("", "all"):
        return SPLITS
    if split not in SPLITS:
        raise EpisodeSourceError(f"parameter 'split': unknown split {split!r} (easy|medium|hard|all)")
    return (split,)


def load_episodes(episodes_dir: str, split: str) -> tuple[dict[str, Scene], list[Episode]]:
    """Scenes and episodes of ``split`` from a PersONAL episode folder."""
    from personal.world.habitat_format import load_episode_set

    scenes, episodes = load_episode_set(episodes_dir)  # raises EpisodeFormatError naming file + field
    wanted = splits_for(split)
    episodes = [e for e in episodes if e.split in wanted]
    if not episodes:
        raise EpisodeSourceError(f"{episodes_dir}: no episodes for split {split!r}")
    return scenes, episodes


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


def episode_descriptor(episode: Episode, scene: Scene, index: int, count: int) -> dict:
    """Payload of ``personal/msg/EpisodeDescriptor`` (target positions are box centres)."""

    def point(p) -> dict:
        return {"x": float(p[0]), "y": float(p[1]), "z": float(p[2])}

    targets = []
    for oid in episode.target_object_ids:
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
    """

    forward_step_m: float = 0.25
    turn_step_rad: float = math.radians(30.0)
    max_dt: float = 0.2
    deadband: float = 1e-3
    _dist: float = 0.0
    _angle: float = 0.0
    _last_t: float | None = None

    def update(self, t: float, linear_x: float, angular_z: float) -> tuple[list[Action], str]:
        dt = 0.0 if self._last_t is None else min(max(t - self._last_t, 0.0), self.max_dt)
        if self._last_t is None:
            dt = self.max_dt / 2  # first message: assume a typical controller period
        self._last_t = t
        note = ""
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

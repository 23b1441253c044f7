"""The navigation loop (ROS-free): observation → maps → policy → collision guard → action.

The navigation node and the offline evaluator both drive a :class:`NavigationLoop`, so the
agent behaves the same over topics and in-process. :func:`run_episode` runs one episode on
a simulator backend directly (no ROS) and returns its :class:`Trajectory`.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace

import numpy as np

from personal.mapping.exploration import Act
from personal.navigation.follower import CollisionGuard
from personal.navigation.mapper import OnlineMapper
from personal.navigation.policies import EpisodeSpec, NavPolicy, StepInput

MAX_STEPS = 500  # PersONAL PAN budget


@dataclass
class Frame:
    """One observation as the loop needs it (from a backend Observation or ROS topics)."""

    pose: tuple[float, float, float]  # x, y, yaw (map frame)
    depth: np.ndarray | None = None  # HxW metres (or uint16 mm)
    K: np.ndarray | None = None
    T_map_camera: np.ndarray | None = None
    instance_ids: np.ndarray | None = None
    rgb: np.ndarray | None = None
    collided: bool = False


@dataclass
class Trajectory:
    episode_id: str
    policy: str
    poses: list[tuple[float, float, float]] = field(default_factory=list)  # pose before each action, then the final one
    actions: list[int] = field(default_factory=list)
    collisions: list[bool] = field(default_factory=list)  # outcome of each action
    stopped: bool = False
    guard_overrides: int = 0
    info: dict = field(default_factory=dict)
    timing_ms: dict = field(default_factory=dict)

    @property
    def steps(self) -> int:
        return len(self.actions)

    @property
    def final_xy(self) -> tuple[float, float]:
        return self.poses[-1][0], self.poses[-1][1]

    def path_xy(self) -> list[tuple[float, float]]:
        return [(p[0], p[1]) for p in self.poses]


class NavigationLoop:
    MAX_CHECKS_PER_STEP = 3  # verifications of successive candidates within one step
    MAX_AIM_TURNS = 6  # turns spent facing one candidate before it is judged (180 deg at 30 deg a turn)
    AIM_SAME_M = 0.3  # a detected point this close to an aimed one is the same candidate

    def __init__(self, policy: NavPolicy, mapper: OnlineMapper | None = None, max_steps: int = MAX_STEPS,
                 stop_verifier=None, memory_fade: float = 1.0, look_before_verifying: bool = False) -> None:
        if policy.needs_map and mapper is None:
            raise ValueError(f"policy {policy.name!r} builds maps online: give the loop an OnlineMapper")
        if policy.needs_features and (mapper is None or mapper.feature_map is None):
            raise ValueError(f"policy {policy.name!r} needs a feature map: give the mapper an encoder (features=...)")
        self.policy = policy
        self.mapper = mapper
        self.max_steps = max_steps
        self.stop_verifier = stop_verifier  # verify before stop (personal.navigation.verify_stop), or None
        self.memory_fade = memory_fade  # kept map: feature confidence scaled by this per new request (1 = no fade)
        # "+look+verify": face the candidate, tilting the camera down if it is not in view, before the verdict
        self.look_before_verifying = bool(look_before_verifying and stop_verifier is not None)
        self._aims: list[dict] = []  # per candidate point: turns spent facing it, whether the camera tilted for it
        self._tilt = 0  # LOOK_DOWNs not yet undone
        self.guard = CollisionGuard()
        self.step_count = 0
        self._last_action: int | None = None
        self._last_pose: tuple[float, float, float] | None = None
        self.done = False
        self.timing = {"map": 0.0, "policy": 0.0}

    def reset(self, spec: EpisodeSpec, keep_map: bool = False) -> None:
        """A new task. ``keep_map``: a later request in the same home keeps what the robot has
        mapped so far (occupancy and features, map frame) instead of starting blind."""
        if self.mapper is not None and not keep_map:
            self.mapper.reset(spec.floor_z)
        if self.mapper is not None and keep_map:
            if self.memory_fade < 1.0:
                self.mapper.fade_features(self.memory_fade)
            self.mapper.occupancy.forget_recent()  # what this request sees itself (policies.as_if_blind)
            spec = replace(spec, map_kept=True)  # the policy may use what earlier requests saw
        self.policy.reset(spec)
        if self.stop_verifier is not None:
            from personal.grounding.pipeline import query_owner

            extractor = getattr(self.policy, "extractor", None)
            phrases = extractor.extract(spec.summary or "") if extractor is not None else []
            self.stop_verifier.prepare(spec.query, phrases, (spec.owner or "").strip() or query_owner(spec.query))
        self.guard.reset()
        self._aims, self._tilt = [], 0  # a new episode starts with the camera level
        self.step_count = 0
        self._last_action = None
        self._last_pose = None
        self.done = False
        self.timing = {"map": 0.0, "policy": 0.0}

    def step(self, frame: Frame) -> int:
        """The next action for ``frame`` (the observation after the previous action)."""
        if self.done:
            return int(Act.STOP)
        x, y, yaw = frame.pose
        t0 = time.perf_counter()
        if self.mapper is not None:
            if frame.collided and self._last_action == Act.MOVE_FORWARD and self._last_pose is not None:
                self.mapper.mark_collision(*self._last_pose)
            if frame.depth is not None:
                self.mapper.integrate(frame.depth, frame.K, frame.T_map_camera, (x, y), frame.rgb, frame.instance_ids)
        t1 = time.perf_counter()
        if self.stop_verifier is not None:
            self.stop_verifier.observe(frame)
        self.guard.observe(self._last_action, frame.collided, yaw)
        inp = StepInput(frame.pose, self.step_count, self.max_steps, self.mapper)
        action = self.policy.act(inp)
        aiming = None
        for _ in range(self.MAX_CHECKS_PER_STEP if self.stop_verifier is not None else 0):
            point = self.policy.info.get("stop_point_target") if action == Act.STOP else None
            if point is None:
                break
            floor_z, feature = self.mapper.cfg.floor_z if self.mapper else None, self._cell_feature(point)
            if self.look_before_verifying:
                aiming = self._aim(frame, tuple(point), floor_z, feature)
                if aiming is not None:
                    action = aiming
                    break
            check = self.stop_verifier.check(frame, tuple(point), floor_z, self.step_count, cell_feature=feature)
            if not self.stop_verifier.rejects(check):
                break
            self.policy.reject_target(point)  # not the described instance: keep searching
            action = self.policy.act(inp)
        if aiming is None and self._tilt and action != Act.STOP:
            action, self._tilt = Act.LOOK_UP, self._tilt - 1  # level the camera before the search goes on
        action = self.guard.check(action, yaw, prefer_left=getattr(self.policy, "turn_left_hint", True))
        self.timing["map"] += t1 - t0
        self.timing["policy"] += time.perf_counter() - t1
        self.step_count += 1
        self._last_action, self._last_pose = int(action), (x, y, yaw)
        if action == Act.STOP or self.step_count >= self.max_steps:
            self.done = True
        return int(action)


    def _aim(self, frame: Frame, point: tuple[float, float], floor_z, feature) -> int | None:
        """The action that brings the candidate at ``point`` into view before it is judged, or None
        once it is (or the turns are spent): face it, then, if no proposal of the view lies near it,
        tilt the camera down once (a low object next to the robot is below a level camera's view)."""
        aim = next((a for a in self._aims if math.dist(a["point"], point) <= self.AIM_SAME_M), None)
        if aim is None:
            aim = {"point": point, "turns": 0, "tilted": False}
            self._aims.append(aim)
        face = getattr(self.policy, "follower", None)
        turn = face.face(frame.pose, point) if face is not None and hasattr(face, "face") else None
        if turn is not None and aim["turns"] < self.MAX_AIM_TURNS:
            aim["turns"] += 1
            return int(turn)
        if not aim["tilted"] and self._tilt == 0 and not self.stop_verifier.sees(frame, point, floor_z, feature):
            aim["tilted"], self._tilt = True, 1
            return int(Act.LOOK_DOWN)
        return None

    def _cell_feature(self, point) -> np.ndarray | None:
        """The feature-map vector of the detected cell (what the detection was scored on)."""
        fm = self.mapper.feature_map if self.mapper is not None else None
        if fm is None or fm.embeddings.size == 0:
            return None
        r, c = fm.geometry.cell(float(point[0]), float(point[1]))
        return fm.embeddings[r, c] if fm.geometry.inside(r, c) else None


def frame_from_observation(obs, with_features: bool = True) -> Frame:
    """A :class:`Frame` from a ``personal.sim.backends.base.Observation``. With features it carries
    the colour frame (what a learned encoder reads) and the instance ids (read only by the ORACLE
    encoder; the learned ones never look at them)."""
    s = obs.state
    return Frame((s.x, s.y, s.yaw), obs.depth, obs.K, obs.T_map_camera,
                 obs.instance_ids if with_features else None, obs.rgb if with_features else None, bool(obs.collided))


def run_episode(backend, episode, loop: NavigationLoop, keep_map: bool = False, on_first_step=None) -> Trajectory:
    """Drive ``loop`` on ``backend`` (scene already loaded) for one ``Episode``; no ROS.
    ``keep_map``: start from the map of the loop's previous episodes (same home and floor).
    ``on_first_step``: called once after the first step (evaluator diagnostics)."""
    from personal.sim.backends.base import Action

    obs = backend.reset(episode)
    floor_z = obs.state.z
    spec = EpisodeSpec(episode.episode_id, episode.query, episode.summary, episode.owner, floor_z, episode.floor_id)
    loop.reset(spec, keep_map=keep_map)
    traj = Trajectory(episode.episode_id, loop.policy.name)
    t_sim = 0.0
    t_start = time.perf_counter()
    while True:
        s = obs.state
        traj.poses.append((s.x, s.y, s.yaw))
        if loop.done:
            break
        action = loop.step(frame_from_observation(obs, loop.policy.needs_features))
        if on_first_step is not None and loop.step_count == 1:
            on_first_step()
        traj.actions.append(action)
        if action == Action.STOP:
            traj.stopped = True
            traj.collisions.append(False)
            loop.done = True
            continue
        t = time.perf_counter()
        obs = backend.step(Action(action))
        t_sim += time.perf_counter() - t
        traj.collisions.append(bool(obs.collided))
    wall = time.perf_counter() - t_start
    n = max(traj.steps, 1)
    traj.guard_overrides = loop.guard.overrides
    traj.info = dict(getattr(loop.policy, "info", {}) or {})
    if loop.stop_verifier is not None:
        traj.info["stop_checks"] = [c.to_dict() for c in loop.stop_verifier.checks]
    traj.timing_ms = {"sim_per_step": 1e3 * t_sim / n, "map_per_step": 1e3 * loop.timing["map"] / n,
                      "policy_per_step": 1e3 * loop.timing["policy"] / n, "wall_s": wall}
    return traj

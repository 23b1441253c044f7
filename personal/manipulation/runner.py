"""Run task instances: backend + policy -> recorded trajectory -> scored EpisodeResult.

Used in-process by ``personal perm eval`` and by the evaluator node; the ROS graph runs the
same loop with the backend and the policy in separate nodes.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from personal.manipulation.backends.base import TabletopBackend
from personal.manipulation.learned.features import environment_state
from personal.manipulation.policies.base import Policy, check_actions, make_observation, wants_oracle_inputs
from personal.manipulation.scoring import EpisodeResult, score_episode
from personal.manipulation.suite import TaskInstance
from personal.manipulation.trajectory import Trajectory

MAX_STEPS = 400  # 20 s at 20 Hz


class Recorder:
    """Accumulates the oracle state after every step into a Trajectory."""

    def __init__(self) -> None:
        self.eef, self.yaw, self.grip, self.held = [], [], [], []
        self.objects: dict[str, list] = {}
        self.frames: list[tuple[int, np.ndarray]] = []

    def add(self, backend: TabletopBackend, frame: np.ndarray | None = None) -> None:
        s = backend.oracle_state()
        if frame is not None:
            self.frames.append((len(self.eef), frame))
        self.eef.append(s.eef_pos)
        self.yaw.append(s.eef_yaw)
        self.grip.append(s.gripper)
        self.held.append(s.held)
        for k, v in s.objects.items():
            self.objects.setdefault(k, []).append(v)

    def trajectory(self, success: bool, success_step: int) -> Trajectory:
        return Trajectory(eef_pos=np.array(self.eef), eef_yaw=np.unwrap(np.array(self.yaw)), gripper=np.array(self.grip),
                          held=list(self.held), objects={k: np.array(v) for k, v in self.objects.items()},
                          success=success, success_step=success_step, frames=self.frames)


@dataclass
class EpisodeRun:
    result: EpisodeResult
    trajectory: Trajectory
    infer_ms: list[float] = field(default_factory=list)
    wall_s: float = 0.0


def run_episode(backend: TabletopBackend, policy: Policy, task: TaskInstance, *, max_steps: int = MAX_STEPS,
                replan: int = 5, images: bool = True, frame_every: int = 0, oracle_layout: bool | None = None) -> EpisodeRun:
    """Roll out one task. ``replan``: actions executed from each chunk before asking again (openpi-style).
    ``images=False`` skips camera rendering (fine for the state-based policies, which ignore images).
    ``oracle_layout``: send the ``oracle/*`` keys (default: unless the policy declares ``oracle: False``).
    Every observation carries ``observation/environment_state`` (the object slots)."""
    if oracle_layout is None:
        oracle_layout = wants_oracle_inputs(policy)
    t0 = time.perf_counter()
    layout = task.layout
    policy.reset()
    obs = backend.reset(layout, render=images or frame_every > 0)
    rec = Recorder()
    rec.add(backend, obs.get("agentview_image") if frame_every else None)
    success_step, infer_ms, queue = -1, [], []
    for t in range(max_steps):
        if not queue:
            tic = time.perf_counter()
            objects = backend.oracle_state().objects
            out = policy.infer(make_observation(obs, task.prompt, layout if oracle_layout else None,
                                                objects if oracle_layout else None, environment_state(layout, objects)))
            infer_ms.append((time.perf_counter() - tic) * 1e3)
            queue = list(check_actions(out["actions"])[:replan])
        want_frame = frame_every > 0 and (t + 1) % frame_every == 0
        obs = backend.step(queue.pop(0), render=images or want_frame)
        rec.add(backend, obs.get("agentview_image") if want_frame else None)
        if backend.success():
            success_step = t + 1
            break
    if frame_every and (not rec.frames or rec.frames[-1][0] != len(rec.eef) - 1):
        rec.frames.append((len(rec.eef) - 1, backend.observe(render=True)["agentview_image"]))  # the last frame
    traj = rec.trajectory(success_step >= 0, success_step)
    result = score_episode(traj, layout, task_id=task.task_id, suite=task.suite, measured=task.measured,
                           prompted=bool(task.prefs), prompt=task.prompt)
    return EpisodeRun(result, traj, infer_ms, time.perf_counter() - t0)

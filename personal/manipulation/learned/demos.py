"""Record demonstrations from the oracle policy: every mission x preference (and none) x layout seed.

The demonstrator is ``OracleScriptedPolicy`` (it plans from the true layout). It is prompted with the
registry's wording, which its keyword lexicon parses; each episode is *labelled* with one of the
training wordings of its preference (``phrasings.TRAIN``, cycled), as LIBERO-PeRM pairs paraphrased
instructions with its generated trajectories. The recorded action is the oracle's clean command; on
half of the episodes a small Gaussian perturbation is added to what is executed (DART-style noise
injection), so the data also shows how the oracle recovers from small deviations. Failed episodes are
dropped and counted.

Layout seeds: ``TRAIN_SEED_BASE`` and up, one fresh layout per episode; evaluation uses seeds below
``VAL_SEED_BASE`` (held-out test) and ``VAL_SEED_BASE`` .. ``TRAIN_SEED_BASE`` - 1 (validation), so
training and evaluation layouts never share a seed.
"""
from __future__ import annotations

import logging
import os
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from personal.manipulation import phrasings
from personal.manipulation import preferences as P
from personal.manipulation.learned.dataset import Episode, LeRobotWriter
from personal.manipulation.learned.features import environment_state
from personal.manipulation.suite import MISSIONS, applicable, make_layout

log = logging.getLogger(__name__)

TRAIN_SEED_BASE = 1000
VAL_SEED_BASE = 500
SEEDS_PER_TASK = 100  # seed = TRAIN_SEED_BASE + SEEDS_PER_TASK * task_index + k
NOISE_SIGMA = 0.1  # action units (0.1 = 5 mm commanded delta per step), on xyz and yaw
MAX_STEPS = 400
NONE = ""  # the no-preference "preference"


@dataclass(frozen=True)
class DemoSpec:
    mission: str
    pref: str  # "" = no preference
    seed: int
    wording: int  # index into phrasings.TRAIN[pref]
    noise: float

    @property
    def demonstrator_prompt(self) -> str:
        return P.prompt(MISSIONS[self.mission].task, (self.pref,) if self.pref else (), make_layout(self.mission, self.seed))

    @property
    def label_prompt(self) -> str:
        task = MISSIONS[self.mission].task
        if not self.pref:
            return P.prompt(task)
        wording = phrasings.TRAIN[self.pref][self.wording % len(phrasings.TRAIN[self.pref])]
        return phrasings.prompt(task, wording, make_layout(self.mission, self.seed))


def demo_tasks(missions: list[str], prefs: list[str]) -> list[tuple[str, str]]:
    """(mission, preference or "") pairs: each mission with no preference and every applicable one."""
    return [(m, p) for m in missions for p in [NONE, *prefs] if not p or applicable(p, m)]


def plan_demos(missions: list[str], prefs: list[str], per_task: int, noisy_fraction: float = 0.5) -> list[DemoSpec]:
    if per_task > SEEDS_PER_TASK:
        raise ValueError(f"at most {SEEDS_PER_TASK} episodes per task (seed blocks), got {per_task}")
    specs = []
    for t, (m, p) in enumerate(demo_tasks(missions, prefs)):
        for k in range(per_task):
            noisy = (k % 2 == 1) if noisy_fraction == 0.5 else (k < round(noisy_fraction * per_task))
            specs.append(DemoSpec(m, p, TRAIN_SEED_BASE + SEEDS_PER_TASK * t + k, k, NOISE_SIGMA if noisy else 0.0))
    return specs


def record(backend, spec: DemoSpec, max_steps: int = MAX_STEPS) -> tuple[Episode, dict]:
    """Roll the oracle out once; returns the episode and a summary (success, steps, oracle d)."""
    from personal.manipulation.policies.base import make_observation
    from personal.manipulation.policies.scripted import OracleScriptedPolicy
    from personal.manipulation.runner import Recorder
    from personal.manipulation.scoring import score_episode

    cpu0 = time.process_time()
    layout = make_layout(spec.mission, spec.seed)
    policy = OracleScriptedPolicy(chunk=1)
    rng = np.random.default_rng(spec.seed)
    obs = backend.reset(layout, render=False)
    rec = Recorder()
    rec.add(backend)
    states, envs, actions = [], [], []
    success_step = -1
    for t in range(max_steps):
        objects = {k: v[-1] for k, v in rec.objects.items()}
        o = make_observation(obs, spec.demonstrator_prompt, layout, objects)
        a = np.asarray(policy.infer(o)["actions"][0], np.float32)
        states.append(o["observation/state"])
        envs.append(environment_state(layout, objects))
        actions.append(a)
        executed = a.copy()
        if spec.noise > 0:
            executed[[0, 1, 2, 5]] += rng.normal(0.0, spec.noise, 4)
        obs = backend.step(np.clip(executed, -1, 1), render=False)
        rec.add(backend)
        if backend.success():
            success_step = t + 1
            break
    traj = rec.trajectory(success_step >= 0, success_step)
    measured = (spec.pref,) if spec.pref else ()
    res = score_episode(traj, layout, task_id="demo", suite="single", measured=measured, prompted=bool(spec.pref),
                        prompt=spec.demonstrator_prompt) if measured else None
    summary = {"success": bool(traj.success), "steps": len(actions), "d": res.d.get(spec.pref) if res else None,
               "cpu_s": round(time.process_time() - cpu0, 3)}
    meta = {**asdict(spec), "preference": spec.pref or "none", "demonstrator": policy.name, **summary}
    return Episode(np.array(states), np.array(envs), np.array(actions), spec.label_prompt, meta), summary


_WORKER_BACKEND = None


def _record_many(specs: list[DemoSpec]) -> list[tuple[Episode, dict]]:
    """Worker: one robosuite environment per process, kept across batches (rebuilt only when the
    mission changes)."""
    global _WORKER_BACKEND
    if _WORKER_BACKEND is None:
        os.environ.setdefault("MUJOCO_GL", "egl")
        from personal.manipulation.backends import make_backend

        _WORKER_BACKEND = make_backend("robosuite")
    return [record(_WORKER_BACKEND, s) for s in specs]


def generate(out: Path, missions: list[str], prefs: list[str], per_task: int, workers: int = 2,
             batch: int = 8, progress: Callable[[int, int, dict], None] | None = None,
             backend_factory: Callable | None = None) -> dict:
    """Record all demonstrations into a LeRobot v2.1 dataset at ``out``; returns a summary.

    ``workers`` processes each run their own robosuite environment; ``backend_factory`` (tests) records
    in-process on a given backend instead."""
    specs = plan_demos(missions, prefs, per_task)
    writer = LeRobotWriter(out)
    t0 = time.perf_counter()
    kept, dropped, done, cpu_s = 0, [], 0, 0.0
    batches = [specs[i : i + batch] for i in range(0, len(specs), batch)]

    def consume(results):
        nonlocal kept, done, cpu_s
        for ep, summary in results:
            done += 1
            cpu_s += summary["cpu_s"]
            if summary["success"]:
                writer.add(ep)
                kept += 1
            else:
                dropped.append(ep.meta)
            if progress:
                progress(done, len(specs), ep.meta)

    simulator = "robosuite"  # _record_many's workers
    if backend_factory is not None:
        backend = backend_factory()
        simulator = getattr(backend, "name", type(backend).__name__)
        for b in batches:
            consume([record(backend, s) for s in b])
    else:
        with ProcessPoolExecutor(max_workers=max(1, workers)) as pool:
            for results in pool.map(_record_many, batches):
                consume(results)
    wall = time.perf_counter() - t0
    summary = {"episodes_planned": len(specs), "episodes_kept": kept, "episodes_dropped": len(dropped),
               "dropped": [{k: d[k] for k in ("mission", "preference", "seed", "noise")} for d in dropped],
               "frames": writer.n_frames, "wall_s": round(wall, 1), "workers": workers,
               "simulator": simulator,  # the policy's training distribution (personal.manipulation.distribution)
               # CPU time of the rollouts: what they cost where the workers have a core each
               "cpu_s": round(cpu_s, 1), "missions": missions,
               "preferences": prefs, "per_task": per_task, "noise_sigma": NOISE_SIGMA,
               "seed_range": [min(s.seed for s in specs), max(s.seed for s in specs)]}
    writer.close(extra=summary)
    return summary

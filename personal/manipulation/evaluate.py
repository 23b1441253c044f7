"""In-process evaluation: task instances -> rollouts -> EpisodeResults, results.jsonl and report.md.

Rollouts are deterministic given (mission, seed, prompt), so tasks sharing all three (the
no-preference prompt scored against several preferences) share one rollout.
"""
from __future__ import annotations

import json
import logging
import os
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Callable

from personal.manipulation.backends.base import TabletopBackend
from personal.manipulation.policies.base import Policy
from personal.manipulation.runner import EpisodeRun, run_episode
from personal.manipulation.scoring import EpisodeResult, score_episode
from personal.manipulation.suite import TaskInstance, build_suite

log = logging.getLogger(__name__)

MUST_SHOW_PREFS = ["speed_up", "slow_down", "smooth", "keep_away", "move_higher", "rotate_when_placing",
                   "prefer_red", "prefer_bigger"]


def eval_tasks(missions: list[str], prefs: list[str], seeds: list[int], suites: list[str],
               paraphrase_sets: str = "ABC") -> list[TaskInstance]:
    tasks: list[TaskInstance] = []
    for suite in suites:
        tasks += build_suite(suite, missions, prefs, seeds, paraphrase_sets)
    return tasks


def check_held_out(policy: Policy, tasks: list[TaskInstance]) -> None:
    """A learned policy must not be scored on layouts it was trained on (its checkpoint names the seeds)."""
    seeds = getattr(policy, "train_seed_range", None)
    if not seeds:
        return
    used = sorted({t.seed for t in tasks if seeds[0] <= t.seed <= seeds[1]})
    if used:
        raise ValueError(f"layout seeds {used[:5]}{'…' if len(used) > 5 else ''} are in the training range {list(seeds)} "
                         f"of {policy.name}; evaluate on held-out seeds (below {seeds[0]})")


def evaluate(backend: TabletopBackend, policy: Policy, tasks: list[TaskInstance], *, max_steps: int = 400,
             images: bool = False, strips_for: Callable[[TaskInstance], bool] = lambda t: False, frame_every: int = 20,
             progress: Callable[[int, int, EpisodeResult], None] | None = None,
             replan: int = 5) -> tuple[list[EpisodeResult], dict]:
    """Run every task; returns results and {task_id: frames} for the tasks selected by ``strips_for``."""
    check_held_out(policy, tasks)
    cache: dict[tuple, EpisodeRun] = {}
    results, strips = [], {}
    for k, task in enumerate(tasks):
        key = (task.mission, task.seed, task.prompt)
        want_strip = strips_for(task)
        run = cache.get(key)
        if run is None or (want_strip and not run.trajectory.frames):
            run = run_episode(backend, policy, task, max_steps=max_steps, images=images,
                              frame_every=frame_every if want_strip else 0, replan=replan)
            cache[key] = run
        res = score_episode(run.trajectory, task.layout, task_id=task.task_id, suite=task.suite,
                            measured=task.measured, prompted=bool(task.prefs), prompt=task.prompt)
        results.append(res)
        if want_strip:
            strips[task.task_id] = run.trajectory.frames
        if progress:
            progress(k + 1, len(tasks), res)
    return results, strips


_WORKER: dict = {}


def _eval_batch(args) -> tuple[list[EpisodeResult], dict]:
    """Worker: a backend and a policy per process, kept across batches."""
    backend_name, policy_name, policy_kwargs, tasks, kwargs = args
    key = (backend_name, policy_name, json.dumps(policy_kwargs, sort_keys=True, default=str))
    if _WORKER.get("key") != key:
        os.environ.setdefault("MUJOCO_GL", "egl")
        from personal.manipulation.backends import make_backend
        from personal.manipulation.policies import make_policy

        _WORKER.update(key=key, backend=make_backend(backend_name), policy=make_policy(policy_name, **policy_kwargs))
    return evaluate(_WORKER["backend"], _WORKER["policy"], tasks, **kwargs)


def evaluate_parallel(backend: str, policy: str, policy_kwargs: dict, tasks: list[TaskInstance], *, workers: int = 2,
                      batch: int = 6, progress: Callable[[int, int, EpisodeResult], None] | None = None,
                      **kwargs) -> tuple[list[EpisodeResult], dict]:
    """``evaluate`` over ``workers`` processes, each with its own simulator and policy (built by name, so
    the policy must be constructible in a fresh process: learned, scripted, or a remote server).
    Tasks stay in order; batches keep tasks that share a rollout together."""
    if workers <= 1:
        from personal.manipulation.backends import make_backend
        from personal.manipulation.policies import make_policy

        return evaluate(make_backend(backend), make_policy(policy, **policy_kwargs), tasks, progress=progress, **kwargs)
    batches, cur = [], []
    for t in tasks:  # tasks sharing (mission, seed, prompt) are adjacent in eval_tasks order for "none"
        if cur and len(cur) >= batch and (t.mission, t.seed, t.prompt) != (cur[-1].mission, cur[-1].seed, cur[-1].prompt):
            batches.append(cur)
            cur = []
        cur.append(t)
    if cur:
        batches.append(cur)
    results, strips, done = [], {}, 0
    with ProcessPoolExecutor(max_workers=workers) as pool:
        for res, frames in pool.map(_eval_batch, [(backend, policy, policy_kwargs, b, kwargs) for b in batches]):
            results += res
            strips.update(frames)
            for r in res:
                done += 1
                if progress:
                    progress(done, len(tasks), r)
    return results, strips


def write_results(results: list[EpisodeResult], out_dir: Path) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "results.jsonl"
    with path.open("w") as fh:
        for r in results:
            fh.write(json.dumps(r.to_dict()) + "\n")
    return path


def load_results(path: Path) -> list[EpisodeResult]:
    out = []
    for line in Path(path).read_text().splitlines():
        d = json.loads(line)
        d.pop("sa", None)
        d.pop("combined_d", None)
        d["measured"] = tuple(d["measured"])
        out.append(EpisodeResult(**d))
    return out

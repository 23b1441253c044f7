"""In-process evaluation: task instances -> rollouts -> EpisodeResults, results.jsonl and report.md.

Rollouts are deterministic given (mission, seed, prompt), so tasks sharing all three (the
no-preference prompt scored against several preferences) share one rollout.
"""
from __future__ import annotations

import json
import logging
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


def eval_tasks(missions: list[str], prefs: list[str], seeds: list[int], suites: list[str]) -> list[TaskInstance]:
    tasks: list[TaskInstance] = []
    for suite in suites:
        tasks += build_suite(suite, missions, prefs, seeds)
    return tasks


def evaluate(backend: TabletopBackend, policy: Policy, tasks: list[TaskInstance], *, max_steps: int = 400,
             images: bool = False, strips_for: Callable[[TaskInstance], bool] = lambda t: False, frame_every: int = 20,
             progress: Callable[[int, int, EpisodeResult], None] | None = None) -> tuple[list[EpisodeResult], dict]:
    """Run every task; returns results and {task_id: frames} for the tasks selected by ``strips_for``."""
    cache: dict[tuple, EpisodeRun] = {}
    results, strips = [], {}
    for k, task in enumerate(tasks):
        key = (task.mission, task.seed, task.prompt)
        want_strip = strips_for(task)
        run = cache.get(key)
        if run is None or (want_strip and not run.trajectory.frames):
            run = run_episode(backend, policy, task, max_steps=max_steps, images=images,
                              frame_every=frame_every if want_strip else 0)
            cache[key] = run
        res = score_episode(run.trajectory, task.layout, task_id=task.task_id, suite=task.suite,
                            measured=task.measured, prompted=bool(task.prefs), prompt=task.prompt)
        results.append(res)
        if want_strip:
            strips[task.task_id] = run.trajectory.frames
        if progress:
            progress(k + 1, len(tasks), res)
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

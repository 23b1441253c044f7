"""The PAN evaluator's schedule and scoring without ROS (nodes/pan_evaluator_node.py is its rclpy
shell): every (episode, policy) run in order, which bridge service loads its episode, and the
scored record of a NavigationRun (or of a run that never came).
"""
from __future__ import annotations

import json


class PanSchedule:
    """Runs ``(episode index, policy)``, episode-major; the cursor ``k`` is the run in progress."""

    def __init__(self, n_episodes: int, methods: list[str]) -> None:
        self.runs = [(i, m) for i in range(n_episodes) for m in methods]
        self.k = 0

    def done(self) -> bool:
        return self.k >= len(self.runs)

    def current(self) -> tuple[int, str]:
        return self.runs[self.k]

    def service(self) -> str:
        """'next' for a new episode after the first (the bridge moves on), else 'reset' (the same
        episode again, for the next policy, or the very first)."""
        i, _ = self.runs[self.k]
        first_of_episode = self.k == 0 or self.runs[self.k - 1][0] != i
        return "next" if first_of_episode and self.k > 0 else "reset"

    def advance(self) -> None:
        self.k += 1

    def progress(self) -> str:
        return f"[{self.k + 1}/{len(self.runs)}]"


def missing_run(ep, policy: str, failure: str, previous: dict | None = None) -> dict:
    """NavigationRun fields of a run that did not move: the episode's start pose, no steps."""
    return {"xs": [ep.start_position[0]], "ys": [ep.start_position[1]], "yaws": [ep.start_yaw], "stopped": False,
            "steps": 0, "collided": [], "guard_overrides": 0, "is_oracle": policy == "oracle", "info_json": "{}",
            "failure_reason": failure or (previous or {}).get("failure_reason", "")}


def score_run(sim, scene, ep, policy: str, run: dict | None, failure: str = ""):
    """(PanEpisodeResult, poses, info) of ``run`` (NavigationRun fields; None or no poses: the run
    never moved) against the ground truth of ``scene`` in the scoring simulator ``sim``."""
    from personal.navigation.eval.pan import goal_geometry, score_episode
    from personal.sim.bridge_logic import scene_model

    sim.load_scene(scene)
    geo = goal_geometry(sim, ep, scene_model(scene))
    if run is None or not run["xs"]:
        run = missing_run(ep, policy, failure, run)
    poses = list(zip(run["xs"], run["ys"], run["yaws"]))
    try:
        info = json.loads(run.get("info_json") or "{}")
    except ValueError:
        info = {}
    if run.get("failure_reason"):
        info["run_failure"] = run["failure_reason"]
    r = score_episode(episode=ep, method=policy, poses=poses, stopped=run["stopped"], steps=run["steps"],
                      target_boxes=geo.boxes, shortest=geo.shortest, geodesic_to_goal=geo.geodesic_to_goal,
                      collisions=sum(bool(c) for c in run["collided"]), guard_overrides=run.get("guard_overrides", 0),
                      is_oracle=bool(run.get("is_oracle")), info=info, radius=geo.radius)
    if run.get("failure_reason") and not r.success:
        r.failure_reason = f"{r.failure_reason}; {run['failure_reason']}"
    return r, poses, info


def unscored(ep, policy: str, reason: str):
    """The record of a run whose ground truth was unusable (a recorded failure, not a dead evaluator)."""
    from personal.navigation.eval.pan import PanEpisodeResult

    return PanEpisodeResult(ep.episode_id, ep.scene_id, ep.split, policy, False, 0.0, float("inf"), 0, False, 0.0,
                            float("nan"), float("nan"), failure_reason=reason)

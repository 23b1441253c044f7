"""The PAN evaluator's schedule and scoring without ROS (nodes/pan_evaluator_node.py is its rclpy
shell): every (episode, policy) run in order, which bridge service loads its episode, and the
scored record of a NavigationRun (or of a run that never came).
"""
from __future__ import annotations

import json

# the evaluator node's parameters: {name: (default, description)}
PARAMETERS = {
    "methods": ("random-frontier,value-map-qs,value-map-rpg,value-map-rpg-owner,oracle", "policies to evaluate"),
    "episodes_dir": ("", "as the bridge: PersONAL episode folder; empty = generated"),
    "backend": ("synthetic", "as the bridge: the simulator whose ground truth scores the runs (synthetic | habitat)"),
    "scenes_dir": ("", "as the bridge (habitat)"),
    "scene_dataset_config": ("", "as the bridge (habitat)"),
    "split": ("all", "as the bridge"),
    "scenes": (1, "as the bridge"),
    "seed": (0, "as the bridge"),
    "episodes_per_scene": (1, "as the bridge"),
    "max_steps": (500, "step budget per episode"),
    "run_timeout": (900.0, "seconds one (episode, policy) run may take before it is recorded as a failure"),
    "out_dir": ("runs/pan_eval", "run folders are created under this"),
    "sample_plots": (6, "trajectory plots for this many sampled episodes"),
    "encoder": ("lit", "as the navigation node: the encoder its report headline names"),
    "upper_bound": ("oracle-encoder", "oracle-encoder: re-run the value-map explorers with the ORACLE encoder in-process "
                                      "(synthetic backend) and report them beside the run as an upper bound | none"),
    "extractor": ("builtin", "as the navigation node (the upper bound uses the same extractor)"),
    "sensor": ("ideal", "as the bridge: its camera model (reported; the upper bound uses it too)"),
    "sensor_overrides": ("", "as the bridge"),
    "sensor_seed": (0, "as the bridge"),
}


class PanSchedule:
    """Runs ``(episode index, policy)``, episode-major; the cursor ``k`` is the run in progress."""

    def __init__(self, n_episodes: int, methods: list[str]) -> None:
        self.runs = [(i, m) for i in range(n_episodes) for m in methods]
        self.k = 0

    def done(self) -> bool:
        return self.k >= len(self.runs)

    def current(self) -> tuple[int, str]:
        return self.runs[self.k]

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


def load_scored_episodes(p: dict):
    """(scenes, episodes) of the bridge's source, as the bridge loads them with the same parameters."""
    from personal.sim.bridge_logic import generate_episodes, load_episodes, scene_assets

    if p["backend"] == "habitat":  # the public HM3D files have no scene models; habitat-sim loads the scene files
        if not p["episodes_dir"]:
            raise ValueError("backend habitat scores episode files: give episodes_dir:=")
        scenes, episodes = load_episodes(p["episodes_dir"], p["split"], scene_models=False)
        return scene_assets(episodes, scenes, p["episodes_dir"], p["scenes_dir"], p["scene_dataset_config"]), episodes
    if p["episodes_dir"]:
        return load_episodes(p["episodes_dir"], p["split"])
    return generate_episodes(p["split"], int(p["scenes"]), int(p["seed"]), int(p["episodes_per_scene"]))


def report_meta(p: dict, episodes: list, methods: list[str], sensor, wall_s: float) -> dict:
    """The report's run description (what ran, on which episodes, with which perception)."""
    from personal.navigation.eval.pan_run import is_oracle_encoder

    oracle = is_oracle_encoder(p["encoder"])
    return {
        "run": "ROS graph pan_eval (sim bridge + navigation node + evaluator)",
        "episodes": len(episodes),
        "scenes": len({e.scene_id for e in episodes}),
        "source": p["episodes_dir"] or f"generated: scenes={p['scenes']} seed={p['seed']} "
                                       f"episodes_per_scene={p['episodes_per_scene']} split={p['split']}",
        "methods": methods,
        "step budget": p["max_steps"],
        "sensor": sensor.describe(),
        "encoder": p["encoder"],
        "encoder_is_oracle": oracle,
        "perception": "navigation node's encoder " + (
            "(ORACLE: ground-truth instance ids → caption embeddings)" if oracle
            else "(learned: reads the colour image and depth, no ground truth)"),
        "wall time (s)": round(wall_s, 1),
    }

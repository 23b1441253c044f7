"""A navigation run's progress after each step, as a plain dict (ROS-free).

The navigation node publishes it on ``nav/progress`` (JSON) so that a client driving a run (the
assistant's FindObject action) can stream what the robot is doing — the best candidate so far,
whether it is approaching or verifying one — without reading the node's maps.
"""
from __future__ import annotations

REJECTED = "rejected candidate"


def run_progress(loop, episode_id: str, policy: str) -> dict:
    """``{"episode_id", "policy", "step", "max_steps", "status", "best", "checks"}`` for ``loop``
    (personal.navigation.loop.NavigationLoop) just after its last step. ``best``: the newest
    detection ``{"point": [x, y], "score"}`` or None; ``checks``: every verify-before-stop verdict
    so far (``StopCheck.to_dict``); ``status``: exploring | approaching | verifying | rejected candidate."""
    info = getattr(loop.policy, "info", {}) or {}
    detections = info.get("detections") or []
    verifier = loop.stop_verifier
    checks = [c.to_dict() for c in verifier.checks] if verifier is not None else []
    return {"episode_id": episode_id, "policy": policy, "step": int(loop.step_count), "max_steps": int(loop.max_steps),
            "status": _status(loop, checks), "best": dict(detections[-1]) if detections else None, "checks": checks}


def is_progress_of(report: dict, episode_id: str, policy: str) -> bool:
    """Whether a ``nav/progress`` report (``run_progress``) is of the run of ``policy`` on ``episode_id``."""
    return report.get("episode_id") == episode_id and report.get("policy") == policy


def _status(loop, checks: list[dict]) -> str:
    last_step = loop.step_count - 1  # the check of the step just taken carries its 0-based index
    if checks and checks[-1]["step"] == last_step:
        return REJECTED if loop.stop_verifier.rejects(_verdict(checks[-1])) else "verifying"
    goal = getattr(loop.policy, "goal", None)
    return "approaching" if goal is not None and goal.kind == "target" else "exploring"


def _verdict(check: dict):
    from personal.navigation.verify_stop import StopCheck

    return StopCheck(check["verdict"], check["reason"], tuple(check["point"]))

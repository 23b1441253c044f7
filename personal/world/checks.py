"""Sanity checks of episodes against their scene (ROS-free), for loaders and simulators.

A start pose must be finite and inside the scene: a NaN start used to reach the navigation
grid (ValueError deep in personal/sim/navgrid.py, and pan_eval wrote no report), and a start
1e9 m away was accepted silently and scored SR 0 with no warning.
"""
from __future__ import annotations

import math

START_MARGIN_M = 1.0  # how far outside the rooms' extent a start may lie (walls, door gaps)


def start_problem(episode, scene, margin: float = START_MARGIN_M) -> str:
    """Why ``episode``'s start pose is unusable in ``scene`` ("" when it is fine)."""
    where = f"episode {episode.episode_id!r}"
    pos = tuple(episode.start_position)
    if len(pos) != 3 or not all(math.isfinite(float(v)) for v in pos) or not math.isfinite(float(episode.start_yaw)):
        return f"{where}: start pose {pos}, yaw {episode.start_yaw} is not finite"
    rooms = [r for r in scene.rooms if r.floor == episode.floor_id]
    if not rooms:
        return f"{where}: floor {episode.floor_id} does not exist in scene {scene.scene_id!r}"
    x0, y0 = min(r.bounds[0] for r in rooms), min(r.bounds[1] for r in rooms)
    x1, y1 = max(r.bounds[2] for r in rooms), max(r.bounds[3] for r in rooms)
    x, y = float(pos[0]), float(pos[1])
    if not (x0 - margin <= x <= x1 + margin and y0 - margin <= y <= y1 + margin):
        return (f"{where}: start position ({x:g}, {y:g}) is outside scene {scene.scene_id!r} "
                f"(floor {episode.floor_id} spans x {x0:.1f}..{x1:.1f}, y {y0:.1f}..{y1:.1f} m)")
    return ""

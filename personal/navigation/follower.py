"""Turning a planned path into actions.

Discrete (simulator and real robot alike): aim at the path point ``lookahead_m`` ahead;
turn 30° while the heading error exceeds half a turn, else MOVE_FORWARD 0.25 m. On the
real LoCoBot the same discrete actions go to ``nodes/base_driver_node.py`` (topic
``action``), which executes each one closed-loop on odometry and publishes ``cmd_vel``,
so no separate velocity controller is needed. :func:`pure_pursuit_twist` is the hook for a
base that should be driven continuously instead (it returns the ``cmd_vel`` to publish).

:class:`CollisionGuard` enforces the collision rule for every policy: after a
MOVE_FORWARD that collided, the next action is never MOVE_FORWARD at the same heading.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from personal.mapping.exploration import Act, wrap_angle


@dataclass
class PathFollower:
    lookahead_m: float = 0.5
    turn_deg: float = 30.0
    forward_m: float = 0.25
    goal_tolerance_m: float = 0.2

    def target(self, x: float, y: float, path: list[tuple[float, float]]) -> tuple[float, float]:
        """The path point ``lookahead_m`` along the path (or its end)."""
        travelled, prev = 0.0, (x, y)
        # skip path points behind the agent: start from the point nearest to it
        start = min(range(len(path)), key=lambda i: math.dist(path[i], (x, y)))
        for p in path[start:]:
            travelled += math.dist(prev, p)
            prev = p
            if travelled >= self.lookahead_m:
                return p
        return path[-1]

    def reached(self, x: float, y: float, path: list[tuple[float, float]]) -> bool:
        return not path or math.dist((x, y), path[-1]) < self.goal_tolerance_m

    def heading_error(self, pose: tuple[float, float, float], path: list[tuple[float, float]]) -> float:
        x, y, yaw = pose
        tx, ty = self.target(x, y, path)
        return wrap_angle(math.atan2(ty - y, tx - x) - yaw)

    def action(self, pose: tuple[float, float, float], path: list[tuple[float, float]],
               is_free: Callable[[float, float], bool] | None = None) -> int | None:
        """Next discrete action along ``path``; None once its end is reached.

        With ``is_free`` (a free-space test of the agent's centre), the heading is the one of
        the reachable 30° headings whose forward step is free and ends closest to the
        lookahead point (ties favour fewer turns); a blocked step is never proposed when a
        free one makes progress. Without it (or when no free step makes progress), aim
        straight at the lookahead point.
        """
        x, y, yaw = pose
        if self.reached(x, y, path):
            return None
        if is_free is not None:
            k = self._best_heading(pose, self.target(x, y, path), is_free)
            if k is not None:
                return int(Act.MOVE_FORWARD) if k == 0 else int(Act.TURN_LEFT if k > 0 else Act.TURN_RIGHT)
        err = self.heading_error(pose, path)
        if abs(err) > math.radians(self.turn_deg / 2 + 1):
            return int(Act.TURN_LEFT if err > 0 else Act.TURN_RIGHT)
        return int(Act.MOVE_FORWARD)

    def step_free(self, x: float, y: float, heading: float, is_free) -> bool:
        """Is every point of the forward step from (x, y) along ``heading`` free (5 cm samples)?"""
        n = max(2, int(math.ceil(self.forward_m / 0.05)))
        c, s = math.cos(heading), math.sin(heading)
        return all(is_free(x + self.forward_m * c * i / n, y + self.forward_m * s * i / n) for i in range(1, n + 1))

    def _best_heading(self, pose, target, is_free) -> int | None:
        """Turns (signed count, 0 = go straight) to the best free heading, or None."""
        x, y, yaw = pose
        here = math.dist((x, y), target)
        n = int(round(360.0 / self.turn_deg))
        best, best_score = None, math.inf
        for k in sorted(range(-(n // 2) + 1, n // 2 + 1), key=abs):
            h = yaw + math.radians(self.turn_deg) * k
            ex, ey = x + self.forward_m * math.cos(h), y + self.forward_m * math.sin(h)
            d = math.dist((ex, ey), target)
            score = d + 0.03 * abs(k)
            if d < here - 0.05 and score < best_score and self.step_free(x, y, h, is_free):
                best, best_score = k, score
        return best

    def face(self, pose: tuple[float, float, float], point: tuple[float, float]) -> int | None:
        """Turn towards ``point``; None once facing it within half a turn."""
        x, y, yaw = pose
        err = wrap_angle(math.atan2(point[1] - y, point[0] - x) - yaw)
        if abs(err) > math.radians(self.turn_deg / 2 + 1):
            return int(Act.TURN_LEFT if err > 0 else Act.TURN_RIGHT)
        return None


def pure_pursuit_twist(pose: tuple[float, float, float], path: list[tuple[float, float]], *, lookahead_m: float = 0.5,
                       max_linear: float = 0.3, max_angular: float = 1.0, turn_in_place_rad: float = 0.8) -> tuple[float, float]:
    """(linear m/s, angular rad/s) for a continuous base following ``path`` (pure pursuit):
    curvature 2·sin(α)/L to the lookahead point; turn in place when it is far off the heading."""
    if not path:
        return 0.0, 0.0
    x, y, yaw = pose
    tx, ty = PathFollower(lookahead_m=lookahead_m).target(x, y, path)
    dist = math.hypot(tx - x, ty - y)
    if dist < 1e-6:
        return 0.0, 0.0
    alpha = wrap_angle(math.atan2(ty - y, tx - x) - yaw)
    if abs(alpha) > turn_in_place_rad:
        return 0.0, math.copysign(max_angular, alpha)
    v = max_linear * min(1.0, dist / lookahead_m)
    w = v * 2.0 * math.sin(alpha) / max(dist, 1e-6)
    return v, max(-max_angular, min(max_angular, w))


class CollisionGuard:
    """Never MOVE_FORWARD into the same wall twice in a row.

    ``check`` gets the policy's proposal; after a collided MOVE_FORWARD it replaces a second
    MOVE_FORWARD at (almost) the same heading with a turn towards ``prefer_left``.
    """

    def __init__(self, yaw_tolerance_rad: float = math.radians(5.0)) -> None:
        self.yaw_tol = yaw_tolerance_rad
        self.reset()

    def reset(self) -> None:
        self._blocked_yaw: float | None = None
        self.overrides = 0

    def observe(self, last_action: int | None, collided: bool, yaw: float) -> None:
        """Record the outcome of the last action (call before ``check``)."""
        if last_action == Act.MOVE_FORWARD and collided:
            self._blocked_yaw = yaw
        elif last_action in (Act.TURN_LEFT, Act.TURN_RIGHT) or (last_action == Act.MOVE_FORWARD and not collided):
            self._blocked_yaw = None

    def blocked(self, yaw: float) -> bool:
        return self._blocked_yaw is not None and abs(wrap_angle(yaw - self._blocked_yaw)) < self.yaw_tol

    def check(self, action: int, yaw: float, prefer_left: bool = True) -> int:
        if action == Act.MOVE_FORWARD and self.blocked(yaw):
            self.overrides += 1
            return int(Act.TURN_LEFT if prefer_left else Act.TURN_RIGHT)
        return int(action)

"""Pairing the bridge's per-step messages for the navigation node (ROS-free).

The sim bridge publishes, per observation, depth / instance ids / camera pose / odometry
with one shared header stamp (best effort, re-published at its rate), then an
``AgentState`` (reliable) echoing the action's ``request_id``. Topics are not ordered with
respect to each other, so :class:`FrameSync` groups the sensor messages by stamp and
:meth:`FrameSync.match` returns the newest complete group whose odometry equals the pose of
the awaited agent state (the observation *after* the action, never an older one; a blocked
step that did not move gives the same view either way).
"""
from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any


@dataclass
class FrameParts:
    stamp: tuple[int, int]
    parts: dict[str, Any] = field(default_factory=dict)

    def has(self, required) -> bool:
        return all(k in self.parts for k in required)


def pose_matches(odom_pose: tuple[float, float, float], state_pose: tuple[float, float, float],
                 pos_tol: float = 1e-3, yaw_tol: float = 1e-3) -> bool:
    (x0, y0, a0), (x1, y1, a1) = odom_pose, state_pose
    return math.hypot(x1 - x0, y1 - y0) <= pos_tol and abs(math.remainder(a1 - a0, 2 * math.pi)) <= yaw_tol


class FrameSync:
    def __init__(self, required=("depth", "pose", "odom"), keep: int = 8) -> None:
        self.required = tuple(required)
        self.keep = keep
        self._groups: OrderedDict[tuple[int, int], FrameParts] = OrderedDict()

    def add(self, stamp: tuple[int, int], key: str, value: Any) -> None:
        g = self._groups.get(stamp)
        if g is None:
            g = self._groups[stamp] = FrameParts(stamp)
            while len(self._groups) > self.keep:
                self._groups.popitem(last=False)
        g.parts[key] = value

    def match(self, state_pose: tuple[float, float, float]) -> FrameParts | None:
        """Newest complete group whose ``odom`` (x, y, yaw) equals ``state_pose``."""
        for stamp in sorted(self._groups, reverse=True):
            g = self._groups[stamp]
            if g.has(self.required) and pose_matches(g.parts["odom"], state_pose):
                return g
        return None

    def clear(self) -> None:
        self._groups.clear()

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


class LiveSync:
    """Pairing for live sensors (a real base, or any source with unrelated stamps).

    A real base stands still between discrete actions, so the observation after an action is
    any camera frame that arrives once the action's ``AgentState`` is in (plus ``settle_s``,
    for the last deceleration and the camera's exposure pipeline). Images must share a stamp
    (within ``slop_ns``: the RealSense aligns depth to the colour frame it belongs to); the
    camera pose is the newest received after arming (its stamp comes from odometry, another
    clock). Frames arriving before :meth:`arm` are ignored.
    """

    def __init__(self, images=("depth",), slop_ns: int = 20_000_000, settle_s: float = 0.0, keep: int = 4) -> None:
        self.images = tuple(images)
        self.slop_ns = int(slop_ns)
        self.settle_s = float(settle_s)
        self.keep = keep
        self.armed_at: float | None = None
        self._queues: dict[str, list[tuple[int, Any]]] = {k: [] for k in self.images}
        self._pose: Any = None

    def arm(self, now: float | None) -> None:
        """Collect frames received from ``now + settle_s`` on (``None``: collect nothing)."""
        self.armed_at = now
        self._queues = {k: [] for k in self.images}
        self._pose = None

    def add(self, key: str, stamp_ns: int, value: Any, now: float) -> None:
        if self.armed_at is None or now < self.armed_at + self.settle_s:
            return
        if key == "pose":
            self._pose = value
        elif key in self._queues:
            q = self._queues[key]
            q.append((int(stamp_ns), value))
            del q[: max(0, len(q) - self.keep)]

    def match(self) -> FrameParts | None:
        """Newest image set (one stamp) plus the newest pose, once both arrived after arming."""
        if self._pose is None:
            return None
        first, rest = self.images[0], self.images[1:]
        for stamp, value in reversed(self._queues[first]):
            parts = {first: value, "pose": self._pose}
            for k in rest:
                near = [v for s, v in self._queues[k] if abs(s - stamp) <= self.slop_ns]
                if not near:
                    break
                parts[k] = near[-1]
            else:
                return FrameParts((stamp // 1_000_000_000, stamp % 1_000_000_000), parts)
        return None


class ObservationPairing:
    """The navigation node's pairing: bridge (``FrameSync``, by stamp and odometry) or ``live``
    (``LiveSync``, the first frames after each agent state); each with and without the feature
    image ``feature_key`` (a policy without features must not wait for it)."""

    def __init__(self, live: bool, feature_key: str, slop_ns: int, settle_s: float) -> None:
        self.live = live
        self.plain = LiveSync(("depth",), slop_ns, settle_s) if live else FrameSync(required=("depth", "pose", "odom"))
        self.feat = (LiveSync(("depth", feature_key), slop_ns, settle_s) if live
                     else FrameSync(required=("depth", "pose", "odom", feature_key)))
        # verify before stop reads the colour frame, also under the ORACLE caption encoder (which maps ids)
        self.feature_key = feature_key
        self.verify = (None if live or feature_key == "rgb"
                       else FrameSync(required=("depth", "pose", "odom", feature_key, "rgb")))

    def add(self, key: str, stamp: tuple[int, int], value: Any, now: float) -> None:
        if self.verify is not None:
            self.verify.add(stamp, key, value)
            if key == "rgb" and key != self.feature_key:  # only the verify pairing waits for it
                return
        for sync in (self.plain, self.feat):
            if self.live:
                sync.add(key, stamp[0] * 1_000_000_000 + stamp[1], value, now)
            else:
                sync.add(stamp, key, value)

    def arm(self, now: float | None) -> None:
        """Live: collect from ``now`` (None: stop collecting); bridge pairing needs no arming."""
        if self.live:
            self.plain.arm(now)
            self.feat.arm(now)

    def match(self, needs_features: bool, state_pose: tuple[float, float, float],
              verify: bool = False) -> FrameParts | None:
        """``verify``: the policy checks before it stops, so a bridge observation also waits for colour."""
        sync = self.feat if needs_features else self.plain
        if verify and needs_features and self.verify is not None:
            sync = self.verify
        return sync.match() if self.live else sync.match(state_pose)

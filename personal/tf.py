"""A TF buffer for a pip-only ROS 2 (``tf2_ros`` is not on PyPI): static and dynamic transforms,
time interpolation, lookups along chains of frames and clear errors — tf2's semantics, ROS-free.

Frames form a tree: every child frame has one parent. ``lookup(target, source, stamp_ns)`` returns
the 4x4 ``T_target_source`` (maps points given in ``source`` into ``target``) at ``stamp_ns``;
``stamp_ns = 0`` means the latest time at which every dynamic link of the chain is known (tf2's
``Time()``). Dynamic links are interpolated linearly in translation and by slerp in rotation
between the two samples around ``stamp_ns``; asking outside a link's samples raises
``ExtrapolationError`` (as tf2 does: no extrapolation). Static links hold at every time.

The nodes use this through ``nodes/tf.py`` (``TfLookup``), which prefers ``tf2_ros`` where a full
ROS install has it. ``add_message`` takes ``tf2_msgs/TFMessage``-like objects by duck typing.
"""
from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field

import numpy as np


class TfError(LookupError):
    """A transform that cannot be computed; the message says which frames and why."""


class FrameNotFoundError(TfError):
    pass


class ConnectivityError(TfError):
    pass


class ExtrapolationError(TfError):
    pass


def quat_to_matrix(q: np.ndarray) -> np.ndarray:
    x, y, z, w = q
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])


def slerp(q0: np.ndarray, q1: np.ndarray, a: float) -> np.ndarray:
    d = float(np.dot(q0, q1))
    if d < 0.0:  # the shorter way round
        q1, d = -q1, -d
    if d > 0.9995:
        q = q0 + a * (q1 - q0)
        return q / np.linalg.norm(q)
    theta = math.acos(min(1.0, d))
    s = math.sin(theta)
    return (math.sin((1 - a) * theta) * q0 + math.sin(a * theta) * q1) / s


def matrix(translation, rotation_xyzw) -> np.ndarray:
    T = np.eye(4)
    T[:3, :3] = quat_to_matrix(np.asarray(rotation_xyzw, float))
    T[:3, 3] = translation
    return T


@dataclass
class _Link:
    parent: str
    static: bool
    stamps: list[int] = field(default_factory=list)
    translations: list[np.ndarray] = field(default_factory=list)
    rotations: list[np.ndarray] = field(default_factory=list)

    def at(self, child: str, stamp_ns: int) -> np.ndarray:
        """T_parent_child at ``stamp_ns`` (0 = the newest sample)."""
        if self.static or stamp_ns == 0:
            return matrix(self.translations[-1], self.rotations[-1])
        i = bisect.bisect_left(self.stamps, stamp_ns)
        if i < len(self.stamps) and self.stamps[i] == stamp_ns:
            return matrix(self.translations[i], self.rotations[i])
        if i == 0 or i == len(self.stamps):
            side = "past" if i == 0 else "future"
            raise ExtrapolationError(
                f"lookup would require extrapolation into the {side}: requested {stamp_ns / 1e9:.3f} s, "
                f"but {self.parent} -> {child} is known from {self.stamps[0] / 1e9:.3f} s to {self.stamps[-1] / 1e9:.3f} s")
        t0, t1 = self.stamps[i - 1], self.stamps[i]
        a = (stamp_ns - t0) / (t1 - t0)
        tr = (1 - a) * self.translations[i - 1] + a * self.translations[i]
        return matrix(tr, slerp(self.rotations[i - 1], self.rotations[i], a))


class TransformBuffer:
    """Transforms by child frame; dynamic samples older than ``cache_time_s`` behind the newest are dropped."""

    def __init__(self, cache_time_s: float = 10.0) -> None:
        self.cache_ns = int(cache_time_s * 1e9)
        self._links: dict[str, _Link] = {}

    # -- input -------------------------------------------------------------------------
    def set_transform(self, parent: str, child: str, stamp_ns: int, translation, rotation_xyzw, static: bool = False) -> None:
        parent, child = parent.lstrip("/"), child.lstrip("/")
        if not parent or not child or parent == child:
            raise TfError(f"invalid transform {parent!r} -> {child!r}: frames must be non-empty and differ")
        q = np.asarray(rotation_xyzw, float)
        n = float(np.linalg.norm(q))
        t = np.asarray(translation, float)
        if not (np.all(np.isfinite(t)) and math.isfinite(n) and n > 1e-9):
            raise TfError(f"invalid transform {parent} -> {child}: non-finite translation or zero quaternion")
        link = self._links.get(child)
        if link is None or link.parent != parent or link.static != static:
            link = self._links[child] = _Link(parent, static)  # a re-parented frame starts afresh
        if static:
            link.stamps, link.translations, link.rotations = [stamp_ns], [t], [q / n]
            return
        i = bisect.bisect_left(link.stamps, stamp_ns)
        if i < len(link.stamps) and link.stamps[i] == stamp_ns:
            link.translations[i], link.rotations[i] = t, q / n
        else:
            link.stamps.insert(i, stamp_ns)
            link.translations.insert(i, t)
            link.rotations.insert(i, q / n)
        cut = bisect.bisect_left(link.stamps, link.stamps[-1] - self.cache_ns)
        if cut:
            del link.stamps[:cut], link.translations[:cut], link.rotations[:cut]

    def add_message(self, msg, static: bool = False) -> list[str]:
        """Add every TransformStamped of a TFMessage; returns the errors of the ones rejected."""
        errors = []
        for ts in msg.transforms:
            tr, rot, stamp = ts.transform.translation, ts.transform.rotation, ts.header.stamp
            try:
                self.set_transform(ts.header.frame_id, ts.child_frame_id, stamp.sec * 1_000_000_000 + stamp.nanosec,
                                   (tr.x, tr.y, tr.z), (rot.x, rot.y, rot.z, rot.w), static)
            except TfError as exc:
                errors.append(str(exc))
        return errors

    # -- queries -------------------------------------------------------------------------
    def frames(self) -> set[str]:
        return set(self._links) | {link.parent for link in self._links.values()}

    def _chain(self, frame: str) -> list[str]:
        """frame, its parent, ..., the root."""
        out = [frame]
        while out[-1] in self._links:
            out.append(self._links[out[-1]].parent)
            if len(out) > 1000:
                raise TfError(f"loop in the TF tree at {frame}")
        return out

    def _path(self, target: str, source: str) -> tuple[list[str], list[str]]:
        known = self.frames()
        for f in (target, source):
            if f not in known:
                raise FrameNotFoundError(f'frame "{f}" does not exist (known frames: {", ".join(sorted(known)) or "none"})')
        up_s, up_t = self._chain(source), self._chain(target)
        common = next((f for f in up_s if f in up_t), None)
        if common is None:
            raise ConnectivityError(f"{target} and {source} are not connected: their trees end at "
                                    f"{up_t[-1]} and {up_s[-1]}")
        return up_s[:up_s.index(common)], up_t[:up_t.index(common)]

    def latest_common_time(self, target: str, source: str) -> int:
        """The newest time every dynamic link between the two frames is known at (0 if none is dynamic)."""
        s_side, t_side = self._path(target.lstrip("/"), source.lstrip("/"))
        stamps = [self._links[f].stamps[-1] for f in s_side + t_side if not self._links[f].static]
        return min(stamps) if stamps else 0

    def lookup(self, target: str, source: str, stamp_ns: int = 0) -> np.ndarray:
        """4x4 T_target_source at ``stamp_ns`` (0: the latest common time)."""
        target, source = target.lstrip("/"), source.lstrip("/")
        if target == source:
            return np.eye(4)
        s_side, t_side = self._path(target, source)
        if stamp_ns == 0:
            stamp_ns = self.latest_common_time(target, source)
        T_common_source = np.eye(4)
        for f in s_side:  # source, its parent, ... up to (not including) the common frame
            T_common_source = self._links[f].at(f, stamp_ns) @ T_common_source
        T_common_target = np.eye(4)
        for f in t_side:
            T_common_target = self._links[f].at(f, stamp_ns) @ T_common_target
        return np.linalg.inv(T_common_target) @ T_common_source

    def can_transform(self, target: str, source: str, stamp_ns: int = 0) -> bool:
        try:
            self.lookup(target, source, stamp_ns)
            return True
        except TfError:
            return False

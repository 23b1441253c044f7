"""The mapping node's frame bookkeeping without ROS (nodes/mapping_node.py is its rclpy shell).

Between the timestamp sync and the MapBuilder a frame may have to wait: for its context
(``camera_info``, or the episode naming the scene for ORACLE captions: ``ContextQueue``), or
for its transform (``pose_source:=tf``: ``TfQueue``). Dropped input is counted with a
throttled log (``SkipLog``). ``frame_arrays`` turns a synced group of (duck-typed) messages
into the arrays the builder integrates.
"""
from __future__ import annotations

from collections import deque
from typing import Callable, Iterator

import numpy as np

from personal.mapping.ros_io import (
    FrameError, camera_from_base, depth_from_msg, ids_from_msg, intrinsics_from_info, pose_to_matrix, rgb_from_msg,
)
from personal.tf import ExtrapolationError, TfError

PENDING_FRAMES = 30  # frames held while their context (camera_info, episode) is missing
DEPTH_TOPIC = "camera/aligned_depth_to_color/image_raw"


class SkipLog:
    """Counts skipped input and keeps the newest reasons; says when a warning is due (at most one
    every ``period_s``: a broken stream would flood the log)."""

    def __init__(self, period_s: float = 2.0, keep: int = 50) -> None:
        self.period_s = period_s
        self.total = 0
        self.recent: deque[str] = deque(maxlen=keep)  # reasons, newest last
        self._last_log = 0.0

    def add(self, reason: str, now: float) -> bool:
        """Count ``reason``; True when it should be logged now."""
        self.total += 1
        self.recent.append(reason)
        if now - self._last_log > self.period_s:
            self._last_log = now
            return True
        return False


class ContextQueue:
    """Frames held (not skipped) until their context arrives, oldest first, at most ``limit``:
    whether a frame beat its context would otherwise make maps differ run to run."""

    def __init__(self, limit: int = PENDING_FRAMES) -> None:
        self.limit = limit
        self.frames: deque[dict] = deque()

    def hold(self, g: dict) -> bool:
        """Hold ``g``; True when the oldest frame had to be dropped for it."""
        dropped = len(self.frames) == self.limit
        if dropped:
            self.frames.popleft()
        self.frames.append(g)
        return dropped

    def release(self, ready: Callable[[], bool]) -> Iterator[dict]:
        """The held frames, oldest first, while ``ready()`` says their context is in."""
        while self.frames and ready():
            yield self.frames.popleft()

    def __len__(self) -> int:
        return len(self.frames)

    def clear(self) -> None:
        self.frames.clear()


class TfQueue:
    """``pose_source:=tf``: frames in stamp order waiting for their transform (a frame's TF may come
    after its image). ``lookup(target, source, stamp_ns)`` returns a 4x4 or raises
    ExtrapolationError (not yet) / TfError (never)."""

    def __init__(self, lookup: Callable[[str, str, int], np.ndarray], map_frame: str, max_wait_s: float) -> None:
        self.lookup, self.map_frame, self.max_wait_s = lookup, map_frame, max_wait_s  # as given: the log shows it
        self.waiting: deque[dict] = deque()

    def add(self, g: dict) -> None:
        self.waiting.append(g)

    def drain(self, newest_ns: int) -> Iterator[tuple[dict | None, str]]:
        """(frame with its ``_T``, "") for each frame whose transform is in, in order; (None, reason)
        for one still without a transform ``max_wait_s`` after the newest depth stamp, or whose frames
        are not connected. Stops at the first frame whose transform may still come."""
        while self.waiting:
            g = self.waiting[0]
            frame_id = g["depth"].header.frame_id
            try:
                g["_T"] = self.lookup(self.map_frame, frame_id, int(g["_stamp"]))
            except ExtrapolationError as exc:
                if newest_ns - int(g["_stamp"]) <= int(float(self.max_wait_s) * 1e9):
                    return  # its transform is on its way
                self.waiting.popleft()
                yield None, (f"frame at {g['_stamp'] / 1e9:.3f} s: no transform {self.map_frame} -> {frame_id} "
                             f"within {self.max_wait_s} s ({exc})")
                continue
            except TfError as exc:  # unknown frame, frames not connected
                self.waiting.popleft()
                yield None, f"frame at {g['_stamp'] / 1e9:.3f} s: {exc}"
                continue
            self.waiting.popleft()
            yield g, ""

    def __len__(self) -> int:
        return len(self.waiting)

    def clear(self) -> None:
        self.waiting.clear()


def frame_arrays(g: dict, info, pose_source: str, camera_height: float, camera_pitch: float):
    """(depth, K, T_map_camera, rgb | None, ids | None) of a synced group; FrameError when a part is
    missing or does not fit the others."""
    if info is None:
        raise FrameError("camera/color/camera_info not received yet")
    K, (h, w) = intrinsics_from_info(info)
    depth = depth_from_msg(g["depth"], DEPTH_TOPIC)
    if depth.shape != (h, w):
        raise FrameError(f"depth {depth.shape[1]}x{depth.shape[0]} does not match camera_info {w}x{h}")
    if "_T" in g:  # pose_source:=tf, looked up by TfQueue
        T = g["_T"]
    elif pose_source == "odom":
        T = camera_from_base(pose_to_matrix(g["pose"].pose.pose), float(camera_height), float(camera_pitch))
    else:
        T = pose_to_matrix(g["pose"].pose)
    rgb = ids = None
    if "rgb" in g:
        rgb = rgb_from_msg(g["rgb"], "camera/color/image_raw")
        if rgb.shape[:2] != depth.shape:
            raise FrameError(f"colour {rgb.shape[1]}x{rgb.shape[0]} does not match depth {w}x{h}")
    if "ids" in g:
        ids = ids_from_msg(g["ids"], "camera/semantic/image_raw")
        if ids.shape != depth.shape:
            raise FrameError(f"semantic {ids.shape[1]}x{ids.shape[0]} does not match depth {w}x{h}")
    return depth, K, T, rgb, ids


def same_pose(T: np.ndarray, last: np.ndarray | None, atol: float = 1e-4) -> bool:
    """A re-published frame: the camera pose equals the last integrated one."""
    return last is not None and bool(np.allclose(T, last, atol=atol))


class FrameIntake:
    """From sensor messages to frames ready to integrate, in stamp order: timestamp sync
    (``ApproxTimeSync`` over ``keys``), then — ``lookup`` given (pose_source:=tf) — the wait for
    each frame's transform, then the wait for its context (``missing_context()`` names what is
    missing, '' when nothing). Callbacks: ``integrate(group)`` for each frame ready, ``skip(reason)``
    for dropped input, ``progress(stamp_ns)`` once every frame up to that stamp is handled."""

    def __init__(self, keys: tuple[str, ...], slop_s: float, max_wait_s: float, missing_context: Callable[[], str],
                 integrate: Callable[[dict], None], skip: Callable[[str], None], progress: Callable[[int], None],
                 lookup=None, map_frame: str = "map") -> None:
        from personal.mapping.ros_io import ApproxTimeSync

        self.slop_s = slop_s
        self.sync = ApproxTimeSync(keys, slop_ns=int(slop_s * 1e9), max_wait_ns=int(max_wait_s * 1e9))
        self.tf_queue = TfQueue(lookup, map_frame, max_wait_s) if lookup is not None else None
        self.pending = ContextQueue(PENDING_FRAMES)  # frames waiting for their context
        self.missing_context, self.integrate, self.skip, self.progress = missing_context, integrate, skip, progress
        self.newest_ns = 0  # newest depth stamp seen (message time)
        self.newest_any_ns = 0  # newest stamp seen on any stream

    def add(self, key: str, msg) -> None:
        from personal.mapping.ros_io import stamp_ns

        try:
            groups = self.sync.add(key, stamp_ns(msg.header), msg)
        except Exception as exc:  # a message without a usable header
            self.skip(f"{key}: {exc}")
            return
        if key == "depth":
            self.newest_ns = max(self.newest_ns, stamp_ns(msg.header))
        self.newest_any_ns = max(self.newest_any_ns, stamp_ns(msg.header))
        for g in groups:
            if self.tf_queue is None:
                self.offer(g)
            else:
                self.tf_queue.add(g)
        self.drain_tf()
        if groups:
            self._handled(max(int(g["_stamp"]) for g in groups))

    def _handled(self, stamp: int) -> None:
        if not self.waiting():
            self.progress(stamp)

    def waiting(self) -> int:
        """Frames synced but not yet integrated (waiting for a transform or their context)."""
        return len(self.pending) + (len(self.tf_queue) if self.tf_queue is not None else 0)

    def drain_tf(self) -> None:
        if self.tf_queue is None:
            return
        for g, skipped in self.tf_queue.drain(self.newest_ns):
            if g is None:
                self.skip(skipped)
            else:
                self.offer(g)

    def expire(self) -> None:
        """Periodically: transforms that came late, and unmatched messages past ``max_wait``."""
        self.drain_tf()
        # message time, not wall time: works with bags and /clock alike
        newest = max((q[-1][0] for q in self.sync.queues.values() if q), default=0)
        for stamp, missing in self.sync.expire(newest):
            what = " and ".join("pose (stale or missing)" if k == "pose" else k for k in missing) or "a matching message"
            self.skip(f"frame at {stamp / 1e9:.3f} s: no {what} within {self.slop_s * 1000:.0f} ms")

    def end_of_input(self) -> int:
        """No more input is coming (a bag player has played its bag): skip every frame that cannot
        complete now (no matching message, no transform, no context) and report progress up to the
        newest stamp seen. Message-time expiry never fires at the end of a stream: nothing newer comes
        (a bag whose pose stream stopped a frame before its depth stream kept its player waiting).
        Returns how many frames were skipped."""
        skipped = 0
        past = self.newest_any_ns + 2 * self.sync.max_wait_ns + 1
        self.drain_tf()
        for stamp, missing in self.sync.expire(past):
            self.skip(f"frame at {stamp / 1e9:.3f} s: no {' and '.join(missing) or 'a matching message'} by the end of the input")
            skipped += 1
        if self.tf_queue is not None:
            for g, reason in self.tf_queue.drain(past):
                if g is not None:  # its transform came after all
                    self.offer(g)
                    continue
                self.skip(f"{reason} (end of the input)")
                skipped += 1
        if self.pending:
            missing = self.missing_context()
            skipped += len(self.pending)
            self.skip(f"{len(self.pending)} frames: {missing} never arrived by the end of the input")
            self.pending.clear()
        if self.newest_any_ns:
            self.progress(self.newest_any_ns)
        return skipped

    def offer(self, g: dict) -> None:
        """Integrate ``g`` now, or hold it until its context arrives."""
        missing = self.missing_context()
        if not missing:
            self.integrate(g)
        elif self.pending.hold(g):
            self.skip(f"waited for {missing} with {PENDING_FRAMES} frames; dropped the oldest")

    def context_arrived(self) -> None:
        """Integrate the held frames whose context is now complete."""
        newest = None
        for g in self.pending.release(lambda: not self.missing_context()):
            newest = int(g["_stamp"])
            self.integrate(g)
        if newest is not None:
            self._handled(newest)

    def clear(self) -> None:
        self.sync.clear()
        if self.tf_queue is not None:
            self.tf_queue.clear()
        self.pending.clear()

"""ROS-free helpers for the mapping node: decoding message fields, poses, timestamp sync,
and the feature-map wire format.

Functions take message objects by duck typing (``.encoding``, ``.height``, ``.data`` ...),
so nothing here imports rclpy or message packages.
"""
from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

# optical (x right, y down, z forward) axes expressed in the body frame (x fwd, y left, z up)
R_BODY_OPTICAL = np.array([[0.0, 0.0, 1.0], [-1.0, 0.0, 0.0], [0.0, -1.0, 0.0]])


class FrameError(ValueError):
    """A message that cannot be used; the text names the topic/field and what is wrong."""


_DEPTH_ENCODINGS = {"16UC1": np.uint16, "mono16": np.uint16, "32FC1": np.float32}
_IDS_ENCODINGS = {"32SC1": np.int32, "16UC1": np.uint16, "mono16": np.uint16, "32UC1": np.uint32}
_RGB_ENCODINGS = {"rgb8": 3, "bgr8": 3, "rgba8": 4, "bgra8": 4}


def _array(msg, dtype, channels: int, topic: str) -> np.ndarray:
    h, w, step = int(msg.height), int(msg.width), int(msg.step)
    itemsize = np.dtype(dtype).itemsize
    row = w * channels * itemsize
    data = msg.data
    buf = data if isinstance(data, (bytes, bytearray, memoryview)) else bytes(data)
    if h <= 0 or w <= 0:
        raise FrameError(f"{topic}: empty image {w}x{h}")
    if step < row or len(buf) < step * h:
        raise FrameError(f"{topic}: {len(buf)} bytes, step {step} do not fit {w}x{h} {msg.encoding}")
    arr = np.frombuffer(buf, dtype=np.uint8, count=step * h).reshape(h, step)[:, :row]
    dt = np.dtype(dtype).newbyteorder(">" if getattr(msg, "is_bigendian", 0) else "<")
    out = np.ascontiguousarray(arr).view(dt).reshape(h, w, channels) if channels > 1 else np.ascontiguousarray(arr).view(dt).reshape(h, w)
    return out.astype(np.dtype(dtype).newbyteorder("="), copy=False)


def depth_from_msg(msg, topic: str = "depth") -> np.ndarray:
    """float32 metres, 0 where invalid: 16UC1/mono16 millimetres (RealSense) or 32FC1 metres (NaN invalid)."""
    enc = msg.encoding
    if enc not in _DEPTH_ENCODINGS:
        raise FrameError(f"{topic}: depth encoding {enc!r} unsupported (16UC1 mm or 32FC1 m)")
    raw = _array(msg, _DEPTH_ENCODINGS[enc], 1, topic)
    if raw.dtype == np.uint16:
        return raw.astype(np.float32) * np.float32(0.001)
    d = raw.astype(np.float32, copy=True)
    d[~np.isfinite(d)] = 0.0
    return d


def rgb_from_msg(msg, topic: str = "color") -> np.ndarray:
    enc = msg.encoding
    if enc not in _RGB_ENCODINGS:
        raise FrameError(f"{topic}: colour encoding {enc!r} unsupported ({', '.join(_RGB_ENCODINGS)})")
    arr = _array(msg, np.uint8, _RGB_ENCODINGS[enc], topic)[..., :3]
    return arr[..., ::-1].copy() if enc.startswith("bgr") else arr


def ids_from_msg(msg, topic: str = "semantic") -> np.ndarray:
    enc = msg.encoding
    if enc not in _IDS_ENCODINGS:
        raise FrameError(f"{topic}: instance-id encoding {enc!r} unsupported ({', '.join(_IDS_ENCODINGS)})")
    return _array(msg, _IDS_ENCODINGS[enc], 1, topic).astype(np.int32)


def intrinsics_from_info(info, topic: str = "camera_info") -> tuple[np.ndarray, tuple[int, int]]:
    K = np.asarray(info.k, dtype=np.float64).reshape(3, 3) if len(info.k) == 9 else None
    if K is None or not (K[0, 0] > 0 and K[1, 1] > 0):
        raise FrameError(f"{topic}: K must hold 9 values with positive focal lengths, got {list(info.k)}")
    return K, (int(info.height), int(info.width))


def quat_to_matrix(x: float, y: float, z: float, w: float) -> np.ndarray:
    n = math.sqrt(x * x + y * y + z * z + w * w)
    if not n > 1e-9 or not math.isfinite(n):
        raise FrameError(f"pose: quaternion ({x}, {y}, {z}, {w}) is not a rotation")
    x, y, z, w = x / n, y / n, z / n, w / n
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])


def pose_to_matrix(pose) -> np.ndarray:
    """4x4 from a geometry_msgs/Pose-like object."""
    p, q = pose.position, pose.orientation
    T = np.eye(4)
    T[:3, :3] = quat_to_matrix(q.x, q.y, q.z, q.w)
    T[:3, 3] = (p.x, p.y, p.z)
    if not np.all(np.isfinite(T)):
        raise FrameError("pose: non-finite position")
    return T


def camera_from_base(T_map_base: np.ndarray, height: float, pitch: float = 0.0, forward: float = 0.0) -> np.ndarray:
    """T_map_camera(optical) for a camera ``height`` m above base_link, ``forward`` m ahead,
    pitched by ``pitch`` rad (positive looks up) — a static mount for the odometry pose source."""
    cp, sp = math.cos(-pitch), math.sin(-pitch)
    r_pitch = np.array([[cp, 0.0, sp], [0.0, 1.0, 0.0], [-sp, 0.0, cp]])
    T_base_cam = np.eye(4)
    T_base_cam[:3, :3] = r_pitch @ R_BODY_OPTICAL
    T_base_cam[:3, 3] = (forward, 0.0, height)
    return T_map_base @ T_base_cam


def base_pose_from_camera(T_map_camera: np.ndarray) -> tuple[float, float, float]:
    """(x, y, yaw) of the base under a camera: its position and the heading of the optical axis."""
    z_axis = T_map_camera[:3, 2]
    return float(T_map_camera[0, 3]), float(T_map_camera[1, 3]), float(math.atan2(z_axis[1], z_axis[0]))


def stamp_ns(header) -> int:
    return int(header.stamp.sec) * 1_000_000_000 + int(header.stamp.nanosec)


@dataclass
class ApproxTimeSync:
    """Groups messages of several streams whose stamps lie within ``slop_ns`` of each other.

    ``add`` returns every complete group it can form (oldest first, each message used once);
    messages older than the newest matched group are dropped. ``expire(now_ns)`` drops
    groups that stayed incomplete for longer than ``max_wait_ns`` and reports which keys
    were missing, so the caller can log e.g. a stale pose.
    """

    keys: tuple[str, ...]
    slop_ns: int = 20_000_000
    max_wait_ns: int = 500_000_000
    queue_size: int = 10
    queues: dict[str, list[tuple[int, Any]]] = field(default_factory=dict)
    dropped: list[tuple[int, list[str]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.queues = {k: [] for k in self.keys}

    def add(self, key: str, stamp: int, msg: Any) -> list[dict[str, Any]]:
        if key not in self.queues:
            raise KeyError(f"unknown stream {key!r} (streams: {self.keys})")
        q = self.queues[key]
        q.append((stamp, msg))
        q.sort(key=lambda e: e[0])
        del q[: max(0, len(q) - self.queue_size)]
        out = []
        while True:
            group = self._match()
            if group is None:
                return out
            out.append(group)

    def _match(self) -> dict[str, Any] | None:
        if any(not q for q in self.queues.values()):
            return None
        # try each message of the first stream as pivot, oldest first
        first = self.keys[0]
        for stamp, msg in self.queues[first]:
            picked = {first: (stamp, msg)}
            for k in self.keys[1:]:
                best = min(self.queues[k], key=lambda e: abs(e[0] - stamp))
                if abs(best[0] - stamp) > self.slop_ns:
                    break
                picked[k] = best
            else:
                for s_old, _ in self.queues[first]:  # older frames of the first stream never matched
                    if s_old < stamp:
                        self.dropped.append((s_old, self._missing(s_old)))
                for k, (s, _) in picked.items():  # consume the group and everything older
                    self.queues[k] = [e for e in self.queues[k] if e[0] > s]
                group = {k: m for k, (_, m) in picked.items()}
                group["_stamp"] = stamp
                return group
        return None

    def _missing(self, stamp: int) -> list[str]:
        return [k for k in self.keys[1:] if not any(abs(s - stamp) <= self.slop_ns for s, _ in self.queues[k])]

    def expire(self, now_ns: int) -> list[tuple[int, list[str]]]:
        """Drop incomplete groups older than max_wait. Returns (stamp, missing keys) for every
        frame of the first stream dropped since the last call (here, or skipped by a newer match)."""
        first = self.keys[0]
        keep = []
        for stamp, msg in self.queues[first]:
            if now_ns - stamp > self.max_wait_ns:
                self.dropped.append((stamp, self._missing(stamp)))
            else:
                keep.append((stamp, msg))
        self.queues[first] = keep
        for k in self.keys[1:]:
            self.queues[k] = [e for e in self.queues[k] if now_ns - e[0] <= 2 * self.max_wait_ns]
        dropped, self.dropped = self.dropped, []
        return dropped

    def clear(self) -> None:
        for k in self.keys:
            self.queues[k] = []
        self.dropped = []


def wire_crc32(flat) -> int:
    """zlib.crc32 of a feature_map array's float32 bytes. The descriptor carries it to say which array
    it describes: the two topics arrive in either order, and two scenes' maps of one shape would
    otherwise pair (a query then grounds on the wrong household's map)."""
    return zlib.crc32(np.ascontiguousarray(np.asarray(flat, dtype=np.float32)).reshape(-1).view(np.uint8))


def feature_map_to_wire(fm, scene_id: str = "") -> tuple[np.ndarray, list[tuple[str, int, int]], dict]:
    """(flat float32 [rows, cols, dim+1] array, MultiArray layout [(label, size, stride)], descriptor).

    Channels are the embedding then the confidence — the format ``personal.grounding.map_wire``
    reads; the descriptor is ``FeatureMap.descriptor()`` plus ``channels`` and ``scene_id``.
    """
    h, w = fm.geometry.shape
    e = fm.dim
    arr = np.empty((h, w, e + 1), np.float32)
    arr[..., :e] = fm.embeddings
    arr[..., e] = fm.confidence
    c = e + 1
    layout = [("rows", h, h * w * c), ("cols", w, w * c), ("channels", c, c)]
    desc = {**fm.descriptor(), "channels": "embedding+confidence",
            "layout": "row-major [row=y, col=x, channel]; channels = embedding + confidence", "scene_id": scene_id,
            "data_crc32": wire_crc32(arr)}
    return arr.reshape(-1), layout, desc

"""Test doubles for the PAN tests: a bag-of-words text model (no weights to load), and a navigation node
that loses the first nav/start it is sent."""
from __future__ import annotations

import re
import zlib

import numpy as np


class BagOfWordsModel:
    """Stands in for the MiniLM sentence model: texts sharing words get similar vectors."""

    dim = 384

    def encode(self, texts, batch_size=64, normalize_embeddings=True, **_):
        out = np.zeros((len(texts), self.dim), np.float32)
        for i, t in enumerate(texts):
            for w in re.findall(r"[a-z]+", t.lower()):
                if w in {"the", "a", "an", "in", "on", "of", "find", "owns", "with", "next", "to", "s"}:
                    continue
                out[i, zlib.crc32(w.encode()) % self.dim] += 1.0
            out[i, 0] += 0.05  # never a zero vector
        return out / np.linalg.norm(out, axis=1, keepdims=True)


class NavigationLosingFirstStart:
    """A navigation node double on ``node`` (an rclpy node): the first ``nav/start`` is "lost", as Fast DDS
    can lose a message sent as soon as its publisher sees the subscriber; every later one is answered at
    once with one ``nav/progress`` report (step ``steps``) and the ``nav/result`` that ``run(start)`` makes."""

    def __init__(self, node, run, steps: int = 0) -> None:
        from rclpy.qos import QoSProfile, ReliabilityPolicy
        from std_msgs.msg import String

        from personal.msg import NavigationRun, NavigationStart

        reliable = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
        self._string, self._run, self._steps = String, run, steps
        self.progress = node.create_publisher(String, "nav/progress", reliable)
        self.result = node.create_publisher(NavigationRun, "nav/result", reliable)
        self.starts: list = []
        node.create_subscription(NavigationStart, "nav/start", self._on_start, reliable)

    def _on_start(self, msg) -> None:
        import json

        self.starts.append(msg)
        if len(self.starts) == 1:
            return
        report = {"episode_id": msg.episode_id, "policy": msg.policy, "step": self._steps, "status": "exploring"}
        self.progress.publish(self._string(data=json.dumps(report)))
        self.result.publish(self._run(msg))

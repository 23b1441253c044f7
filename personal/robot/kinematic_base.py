"""A kinematic differential base: integrates (v, w) commands into odometry.

A test double for the real LoCoBot base, named as such: it has optional command
latency, Gaussian velocity noise and a wall (the half-plane x >= wall_x) that blocks
forward motion, so the base driver's closed loop, blocked-move detection and
stale-odometry handling can be exercised without hardware.
"""
from __future__ import annotations

import math
import random
from collections import deque


class KinematicBase:
    def __init__(self, x: float = 0.0, y: float = 0.0, yaw: float = 0.0, latency: float = 0.0,
                 noise: float = 0.0, wall_x: float | None = None, radius: float = 0.18, seed: int = 0):
        self.x, self.y, self.yaw = x, y, yaw
        self.latency, self.noise, self.wall_x, self.radius = latency, noise, wall_x, radius
        self._queue: deque[tuple[float, float, float]] = deque()  # (apply_time, v, w)
        self._cmd = (0.0, 0.0)
        self._rng = random.Random(seed)

    def command(self, v: float, w: float, now: float) -> None:
        self._queue.append((now + self.latency, v, w))

    def step(self, now: float, dt: float) -> None:
        while self._queue and self._queue[0][0] <= now:
            _, v, w = self._queue.popleft()
            self._cmd = (v, w)
        v, w = self._cmd
        if self.noise:
            v *= 1.0 + self._rng.gauss(0.0, self.noise)
            w *= 1.0 + self._rng.gauss(0.0, self.noise)
        self.yaw = (self.yaw + w * dt + math.pi) % (2 * math.pi) - math.pi
        nx = self.x + v * math.cos(self.yaw) * dt
        ny = self.y + v * math.sin(self.yaw) * dt
        if self.wall_x is not None and nx + self.radius > self.wall_x and nx > self.x:
            return  # blocked: the wall stops translation
        self.x, self.y = nx, ny


class TiltServo:
    """The camera's pan-tilt servo of the kinematic base: moves toward the commanded tilt at
    ``rate`` rad/s (positive = camera up), so the camera pose changes while frames are taken."""

    def __init__(self, rate: float = 1.0, limit: float = math.radians(60.0)):
        self.rate, self.limit = rate, limit
        self.tilt = self.target = 0.0

    def command(self, tilt: float) -> None:
        if math.isfinite(tilt):
            self.target = max(-self.limit, min(self.limit, tilt))

    def step(self, dt: float) -> float:
        d = self.target - self.tilt
        self.tilt += max(-self.rate * dt, min(self.rate * dt, d))
        return self.tilt

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
                 noise: float = 0.0, wall_x: float | None = None, radius: float = 0.18, seed: int = 0, free=None):
        self.x, self.y, self.yaw = x, y, yaw
        self.free = free  # optional free(x, y) -> bool: False blocks translation there (a scene's navigable grid)
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
        if self.free is not None and (nx, ny) != (self.x, self.y) and not self.free(nx, ny):
            return  # blocked by the scene
        self.x, self.y = nx, ny


class PanTiltServo:
    """The LoCoBot's pan / tilt servos as the double runs them: each joint moves toward its
    commanded position at ``rate`` rad/s within the URDF's limits (``personal.robot.conventions``;
    positive tilt = down), so the camera pose changes while frames are taken."""

    def __init__(self, rate: float = 1.0):
        from personal.robot import conventions as C

        self.rate = rate
        self._clamp = C.clamp_pan_tilt
        self.pan = self.tilt = 0.0
        self.target = (0.0, 0.0)

    def command(self, pan: float, tilt: float) -> None:
        if math.isfinite(pan) and math.isfinite(tilt):
            self.target = self._clamp(pan, tilt)

    def step(self, dt: float) -> tuple[float, float]:
        d = self.rate * dt
        self.pan += max(-d, min(d, self.target[0] - self.pan))
        self.tilt += max(-d, min(d, self.target[1] - self.tilt))
        return self.pan, self.tilt

"""The interface every simulator backend implements.

A backend owns one scene at a time, an agent with the PersONAL/LoCoBot camera,
and the discrete action space. It is ROS-free: the bridge node wraps it.
"""
from __future__ import annotations

import abc
from dataclasses import dataclass, field
from enum import IntEnum

import numpy as np

from personal.world.model import Episode, Scene


class Action(IntEnum):
    STOP = 0
    MOVE_FORWARD = 1
    TURN_LEFT = 2
    TURN_RIGHT = 3
    LOOK_UP = 4
    LOOK_DOWN = 5


@dataclass
class CameraSpec:
    """LoCoBot RealSense as used by PersONAL."""

    width: int = 640
    height: int = 480
    hfov_deg: float = 79.0
    height_m: float = 0.88  # camera height above the floor
    min_depth: float = 0.5
    max_depth: float = 5.0
    pitch_deg: float = 0.0  # mounting pitch, positive = looking up (added to the agent's tilt)

    def intrinsics(self) -> np.ndarray:
        """3x3 pinhole K (OpenCV convention, square pixels)."""
        fx = (self.width / 2.0) / np.tan(np.deg2rad(self.hfov_deg) / 2.0)
        return np.array(
            [[fx, 0.0, (self.width - 1) / 2.0], [0.0, fx, (self.height - 1) / 2.0], [0.0, 0.0, 1.0]]
        )


@dataclass
class AgentState:
    """Agent pose in the map frame. yaw about +z; pitch positive = looking up."""

    x: float
    y: float
    z: float  # floor height the agent stands on
    yaw: float
    pitch: float = 0.0
    floor: int = 0


@dataclass
class Observation:
    rgb: np.ndarray  # HxWx3 uint8
    depth: np.ndarray  # HxW float32 metres, 0 where invalid / out of range
    instance_ids: np.ndarray  # HxW int32 (0 = structure / nothing)
    state: AgentState
    # 4x4 transform camera optical frame -> map (OpenCV optical: x right, y down, z forward)
    T_map_camera: np.ndarray
    K: np.ndarray
    collided: bool = False
    extras: dict = field(default_factory=dict)


class SimBackend(abc.ABC):
    """Reset to a scene/episode, step discrete actions, render, measure distances."""

    forward_step_m: float = 0.25
    turn_deg: float = 30.0
    tilt_deg: float = 30.0
    agent_radius: float = 0.18

    camera: CameraSpec

    @abc.abstractmethod
    def load_scene(self, scene: Scene) -> None: ...

    @abc.abstractmethod
    def reset(self, episode: Episode | None = None, state: AgentState | None = None) -> Observation:
        """Place the agent at the episode start (or ``state``) and render."""

    @abc.abstractmethod
    def step(self, action: Action) -> Observation: ...

    @abc.abstractmethod
    def render(self) -> Observation: ...

    @property
    @abc.abstractmethod
    def state(self) -> AgentState: ...

    @abc.abstractmethod
    def geodesic_distance(self, start: tuple[float, float], goals: list[tuple[float, float]], floor: int = 0) -> float:
        """Shortest navigable path length from start to the nearest goal (inf if unreachable)."""

    @abc.abstractmethod
    def shortest_path(self, start: tuple[float, float], goal: tuple[float, float], floor: int = 0) -> list[tuple[float, float]]: ...

    @abc.abstractmethod
    def is_navigable(self, x: float, y: float, floor: int = 0) -> bool: ...

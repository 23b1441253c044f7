"""The tabletop backend interface: reset to a layout, step 7-D delta-EEF actions at 20 Hz.

Observations use LIBERO's keys: ``agentview_image`` and ``robot0_eye_in_hand_image``
(128x128x3 uint8, rotated 180 degrees like LIBERO/openpi), ``robot0_eef_pos`` (3),
``robot0_eef_quat`` (4, xyzw), ``robot0_gripper_qpos`` (2).
Action: [dx, dy, dz, droll, dpitch, dyaw, gripper] in [-1, 1]; gripper -1 = open, +1 = close.
"""
from __future__ import annotations

import abc
from dataclasses import dataclass

import numpy as np

from personal.manipulation.layout import Layout

IMAGE_SIZE = 128
ACTION_DIM = 7
CAMERAS = ("agentview", "robot0_eye_in_hand")


@dataclass
class OracleState:
    """Simulator ground truth used to record trajectories and score them (an oracle: never a policy input
    except for policies explicitly named oracle)."""

    eef_pos: np.ndarray
    eef_yaw: float
    gripper: float
    held: str
    objects: dict[str, np.ndarray]


def check_action(action) -> np.ndarray:
    a = np.asarray(action, dtype=np.float64).reshape(-1)
    if a.shape != (ACTION_DIM,):
        raise ValueError(f"action must have {ACTION_DIM} values [dx dy dz droll dpitch dyaw gripper], got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"action has non-finite values: {a.tolist()}")
    return np.clip(a, -1.0, 1.0)


class TabletopBackend(abc.ABC):
    name: str = "abstract"

    @abc.abstractmethod
    def reset(self, layout: Layout, render: bool = True) -> dict:
        """Build/position the layout, home the arm, return the first observation."""

    @abc.abstractmethod
    def step(self, action, render: bool = True) -> dict:
        """Apply one 20 Hz control step; ``render=False`` skips the camera images (faster)."""

    def observe(self, render: bool = True) -> dict:
        """The current observation without stepping (e.g. to render the final frame)."""
        return self._obs(render)

    @abc.abstractmethod
    def _obs(self, render: bool) -> dict: ...

    @abc.abstractmethod
    def oracle_state(self) -> OracleState: ...

    @abc.abstractmethod
    def success(self) -> bool:
        """Task goal: a candidate object rests in/on the target receptacle and is not held."""

    def close(self) -> None:  # noqa: B027 - optional
        pass


def yaw_from_quat_xyzw(q) -> float:
    """Heading of the gripper's x axis about world z."""
    x, y, z, w = (float(v) for v in q)
    r00 = 1 - 2 * (y * y + z * z)
    r10 = 2 * (x * y + z * w)
    return float(np.arctan2(r10, r00))


def quat_xyzw_from_yaw_down(yaw: float) -> np.ndarray:
    """Gripper pointing down (180 deg about x), then ``yaw`` about world z."""
    cz, sz = np.cos(yaw / 2), np.sin(yaw / 2)
    # q = qz(yaw) * qx(pi) ; qx(pi) = (1, 0, 0, 0) in xyzw
    return np.array([cz, sz, 0.0, 0.0])

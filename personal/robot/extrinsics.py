"""Camera extrinsics of a mobile base with a tilting camera (REP 103 / optical frames)."""
from __future__ import annotations

import math

import numpy as np

# optical frame (x right, y down, z forward) expressed in a REP-103 camera_link (x fwd, y left, z up)
R_LINK_OPTICAL = np.array([[0.0, 0.0, 1.0], [-1.0, 0.0, 0.0], [0.0, -1.0, 0.0]])


def T_base_optical(x: float, y: float, z: float, tilt: float) -> np.ndarray:
    """4x4 optical-frame pose in base_link; ``tilt`` > 0 looks up (pitch about -y... i.e. nose up)."""
    c, s = math.cos(-tilt), math.sin(-tilt)  # REP 103 pitch: positive rotates x toward -z (down)
    R_pitch = np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])
    T = np.eye(4)
    T[:3, :3] = R_pitch @ R_LINK_OPTICAL
    T[:3, 3] = (x, y, z)
    return T


def T_map_base(x: float, y: float, yaw: float) -> np.ndarray:
    T = np.eye(4)
    c, s = math.cos(yaw), math.sin(yaw)
    T[:2, :2] = [[c, -s], [s, c]]
    T[:2, 3] = (x, y)
    return T


def quaternion_from_matrix(R: np.ndarray) -> tuple[float, float, float, float]:
    """(x, y, z, w) of a rotation matrix (Shepperd's method via scipy)."""
    from scipy.spatial.transform import Rotation

    return tuple(Rotation.from_matrix(R[:3, :3]).as_quat())

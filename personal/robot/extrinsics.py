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


def _translation(xyz) -> np.ndarray:
    T = np.eye(4)
    T[:3, 3] = xyz
    return T


def _rotation(axis: str, angle: float) -> np.ndarray:
    c, s = math.cos(angle), math.sin(angle)
    T = np.eye(4)
    if axis == "z":
        T[:2, :2] = [[c, -s], [s, c]]
    else:  # y
        T[0, 0], T[0, 2], T[2, 0], T[2, 2] = c, s, -s, c
    return T


def urdf_joint_transforms(base: str, pan: float = 0.0, tilt: float = 0.0) -> list[tuple[str, str, np.ndarray]]:
    """(parent, child, T_parent_child) of the LoCoBot's camera chain, root link -> optical frame, at
    the given pan / tilt joint positions (radians, Interbotix convention: positive tilt = down), from
    the URDF numbers in ``personal.robot.conventions`` (links without the namespace prefix)."""
    from personal.robot import conventions as C

    b = C.BASES[base]
    out = []
    if b.root_link != "base_link":
        out.append((b.root_link, "base_link", _translation(b.root_to_base_link)))
    parent = "base_link"
    for child, xyz, joint in C.urdf_camera_links(base):
        T = _translation(xyz)
        if joint == "pan":
            T = T @ _rotation("z", pan)
        elif joint == "tilt":
            T = T @ _rotation("y", tilt)
        out.append((parent, child, T))
        parent = child
    R = np.eye(4)
    R[:3, :3] = R_LINK_OPTICAL
    out.append((C.COLOR_FRAME, C.COLOR_OPTICAL_FRAME, R))
    return out


def T_root_optical(base: str, pan: float = 0.0, tilt: float = 0.0) -> np.ndarray:
    """The optical frame in the base's root link (the odometry child: base_link on a Create 3,
    base_footprint on a Kobuki), through the URDF chain at these joint positions."""
    T = np.eye(4)
    for _, _, T_joint in urdf_joint_transforms(base, pan, tilt):
        T = T @ T_joint
    return T

"""The one convention between our map frame and habitat-sim's frame.

Every map <-> habitat conversion in the project goes through this module: the PersONAL
episode files (``habitat_format``), the Habitat simulator backend, the synthetic scene
exports for habitat-sim (``habitat_scene``) and the camera poses the bridge publishes
(and bags record).

Frames
------
- **map**: REP 103, x forward, y left, z up, metres (``personal.world.model``).
- **habitat**: y up; an agent looks along its local -z (habitat-sim ``geo.FRONT``).

Points: map (x, y, z) -> habitat (x, z, -y); habitat (hx, hy, hz) -> map (hx, -hz, hy).
This is a rotation of -90° about x, and it is the rotation habitat-sim itself applies to
z-up ("gravity -Z") assets: a ``.glb`` stage without a dataset config gets up = +z,
front = +y (``StageAttributesManager::setDefaultAssetNameBasedAttributes``) and a generic
semantic ``.ply`` is turned by ``Quaternion::rotation(FRONT, GRAVITY)``
(``GenericSemanticMeshData::buildSemanticMeshData``); both map our z-up frame onto
habitat's exactly as above. The PersONAL public files are in habitat's frame.

Headings: the identity agent rotation faces habitat -z = map +y, i.e. map yaw pi/2. A map
yaw (about +z, 0 = +x, counter-clockwise) is an agent rotation about habitat +y by
``yaw - pi/2``, written (x, y, z, w) like the episode files and ``quat_from_coeffs``.

Cameras: habitat sensors use OpenGL camera axes (x right, y up, looking along -z); the
images we publish use the optical frame (x right, y down, z forward): the same camera
turned 180° about its x axis. A positive pitch looks up in both.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.spatial.transform import Rotation

# habitat <- map (proper rotation, det = +1): x -> x, y -> -z, z -> y
R_HAB_MAP = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, -1.0, 0.0]])
R_MAP_HAB = R_HAB_MAP.T
# OpenGL camera (x right, y up, -z forward) <- optical (x right, y down, z forward)
R_GL_OPTICAL = np.diag([1.0, -1.0, -1.0])
# body (x forward, y left, z up) <- optical: columns are the optical axes in the body frame
R_BODY_OPTICAL = np.array([[0.0, 0.0, 1.0], [-1.0, 0.0, 0.0], [0.0, -1.0, 0.0]])
HAB_FRONT = np.array([0.0, 0.0, -1.0])  # an agent's local forward axis in habitat
# the map yaw of the identity habitat rotation (facing habitat -z = map +y)
YAW_OF_IDENTITY = math.pi / 2


# ---------------------------------------------------------------- points
def map_to_habitat(p) -> tuple[float, float, float]:
    """One map point -> habitat (x, z, -y), as Python floats (exact: only a sign flips)."""
    x, y, z = p
    return (float(x), float(z), -float(y))


def habitat_to_map(p) -> tuple[float, float, float]:
    """One habitat point -> map (hx, -hz, hy), as Python floats (exact)."""
    hx, hy, hz = p
    return (float(hx), -float(hz), float(hy))


def map_to_habitat_points(points) -> np.ndarray:
    """(..., 3) map points -> habitat, same dtype."""
    a = np.asarray(points)
    return np.stack([a[..., 0], a[..., 2], -a[..., 1]], axis=-1)


def habitat_to_map_points(points) -> np.ndarray:
    """(..., 3) habitat points -> map, same dtype."""
    a = np.asarray(points)
    return np.stack([a[..., 0], -a[..., 2], a[..., 1]], axis=-1)


# ---------------------------------------------------------------- headings
def wrap_angle(a: float) -> float:
    return math.atan2(math.sin(a), math.cos(a))


def yaw_to_habitat_quat(yaw: float) -> tuple[float, float, float, float]:
    """(x, y, z, w) of the habitat agent rotation whose heading is map ``yaw``."""
    phi = yaw - YAW_OF_IDENTITY
    return (0.0, math.sin(phi / 2), 0.0, math.cos(phi / 2))


def quat_to_matrix(q) -> np.ndarray:
    """3x3 rotation of a quaternion given as (x, y, z, w) (normalised first)."""
    q = np.asarray(q, dtype=np.float64)
    if q.shape != (4,) or not np.linalg.norm(q) > 0:
        raise ValueError(f"quaternion {q.tolist()} is not a rotation")
    return Rotation.from_quat(q).as_matrix()


def habitat_quat_to_yaw(q) -> float:
    """Map heading of a habitat rotation (x, y, z, w): where its -z axis points, seen from above.
    Exact inverse of :func:`yaw_to_habitat_quat` for rotations about habitat +y."""
    fwd_map = R_MAP_HAB @ (quat_to_matrix(q) @ HAB_FRONT)
    return math.atan2(fwd_map[1], fwd_map[0])


def same_rotation(q1, q2, tol: float = 1e-9) -> bool:
    """True when two (x, y, z, w) unit quaternions are the same rotation (q and -q are)."""
    a, b = np.asarray(q1, float), np.asarray(q2, float)
    return abs(abs(float(a @ b)) / (np.linalg.norm(a) * np.linalg.norm(b)) - 1.0) <= tol


# ---------------------------------------------------------------- cameras
def optical_camera_pose(x: float, y: float, z: float, yaw: float, pitch: float) -> np.ndarray:
    """4x4 optical frame -> map for a camera at map (x, y, z) with heading ``yaw`` and tilt
    ``pitch`` (positive looks up)."""
    cy, sy = math.cos(yaw), math.sin(yaw)
    cp, sp = math.cos(-pitch), math.sin(-pitch)  # looking up = rotating the body by -pitch about y
    r_yaw = np.array([[cy, -sy, 0.0], [sy, cy, 0.0], [0.0, 0.0, 1.0]])
    r_pitch = np.array([[cp, 0.0, sp], [0.0, 1.0, 0.0], [-sp, 0.0, cp]])
    T = np.eye(4)
    T[:3, :3] = r_yaw @ r_pitch @ R_BODY_OPTICAL
    T[:3, 3] = (x, y, z)
    return T


def gl_camera_to_map(position_hab, rotation_hab_xyzw) -> np.ndarray:
    """4x4 optical -> map from a habitat sensor pose (position, OpenGL-camera rotation (x, y, z, w))."""
    T = np.eye(4)
    T[:3, :3] = R_MAP_HAB @ quat_to_matrix(rotation_hab_xyzw) @ R_GL_OPTICAL
    T[:3, 3] = habitat_to_map(position_hab)
    return T


def map_camera_to_habitat(T_map_optical) -> np.ndarray:
    """4x4 optical -> habitat for a camera pose given in the map frame (what a renderer working
    in habitat's frame needs)."""
    T = np.asarray(T_map_optical, dtype=np.float64)
    out = np.eye(4)
    out[:3, :3] = R_HAB_MAP @ T[:3, :3]
    out[:3, 3] = R_HAB_MAP @ T[:3, 3]
    return out


def heading_and_pitch(T_map_optical) -> tuple[float, float]:
    """(yaw, pitch) of an optical camera pose in the map frame (optical z = viewing direction)."""
    f = np.asarray(T_map_optical)[:3, 2]
    return math.atan2(f[1], f[0]), math.atan2(f[2], math.hypot(f[0], f[1]))

"""``habitat_sim.utils.common`` (habitat-sim 0.3 ``src_python/habitat_sim/utils/common.py``):
the quaternion helpers the backend and the fake use, same semantics as the real functions
``quat_from_coeffs`` / ``quat_to_coeffs`` (coefficients in [x, y, z, w] order) and
``quat_rotate_vector``."""
from __future__ import annotations

import numpy as np
import quaternion as qt


def quat_from_coeffs(coeffs) -> qt.quaternion:
    """``quat_from_coeffs``: a numpy-quaternion from [b, c, d, a] = [x, y, z, w]
    (real: ``quat.real = coeffs[3]; quat.imag = coeffs[0:3]``; no normalisation)."""
    quat = qt.quaternion(1, 0, 0, 0)
    quat.real = coeffs[3]
    quat.imag = coeffs[0:3]
    return quat


def quat_to_coeffs(quat: qt.quaternion) -> np.ndarray:
    """``quat_to_coeffs``: [x, y, z, w] of a numpy-quaternion."""
    coeffs = np.empty(4)
    coeffs[0:3] = quat.imag
    coeffs[3] = quat.real
    return coeffs


def quat_rotate_vector(q: qt.quaternion, v) -> np.ndarray:
    """``quat_rotate_vector``: v rotated by q."""
    vq = qt.quaternion(0, 0, 0, 0)
    vq.imag = v
    return (q * vq * q.inverse()).imag


def __getattr__(name):
    real = {"quat_to_magnum", "quat_from_magnum", "quat_to_angle_axis", "quat_from_angle_axis",
            "quat_from_two_vectors", "angle_between_quats", "random_quaternion", "download_and_unzip",
            "colorize_ids"}
    if name in real:
        raise NotImplementedError(f"habitat_sim.utils.common.{name} exists but the contract fake does not implement it")
    raise AttributeError(f"habitat-sim 0.3 habitat_sim.utils.common has no attribute {name!r}")

"""Habitat backend: clear error without habitat_sim; frame conversions; factory."""
import math

import numpy as np
import pytest

from sim_bridge.backends import habitat_available, make_backend
from sim_bridge.backends.habitat import (
    R_MAP_HAB, HabitatBackend, gl_camera_to_map, hab_quat_to_yaw, hab_to_map, map_to_hab, yaw_to_hab_quat,
)
from sim_bridge.backends.synthetic import SyntheticBackend

needs_no_habitat = pytest.mark.skipif(habitat_available(), reason="habitat_sim is installed here")


@needs_no_habitat
def test_clear_import_error():
    with pytest.raises(ImportError) as e:
        HabitatBackend()
    msg = str(e.value)
    assert "habitat-sim" in msg and "conda install" in msg
    with pytest.raises(ImportError, match="habitat-sim"):
        make_backend("habitat")


@needs_no_habitat
def test_auto_falls_back_to_synthetic():
    assert isinstance(make_backend("auto"), SyntheticBackend)


def test_factory():
    assert isinstance(make_backend("synthetic", render_threads=1), SyntheticBackend)
    with pytest.raises(ValueError, match="unknown simulator backend 'mujoco'"):
        make_backend("mujoco")


def test_axes_conversion():
    assert np.linalg.det(R_MAP_HAB) == pytest.approx(1.0)
    np.testing.assert_allclose(hab_to_map((0, 0, -1)), (1, 0, 0))  # habitat forward -> map x
    np.testing.assert_allclose(hab_to_map((0, 1, 0)), (0, 0, 1))  # habitat up -> map z
    np.testing.assert_allclose(hab_to_map((1, 0, 0)), (0, -1, 0))  # habitat right -> map -y
    p = np.array([1.5, -2.0, 0.3])
    np.testing.assert_allclose(hab_to_map(map_to_hab(p)), p)


@pytest.mark.parametrize("yaw", [0.0, 0.5, -2.0, math.pi / 2, 3.0])
def test_yaw_round_trip(yaw):
    assert hab_quat_to_yaw(yaw_to_hab_quat(yaw)) == pytest.approx(yaw)


def test_camera_frame():
    # identity GL camera at habitat (1, 0.88, -2): looks along map +x, image "down" is map -z
    T = gl_camera_to_map((1.0, 0.88, -2.0), (0.0, 0.0, 0.0, 1.0))
    np.testing.assert_allclose(T[:3, 3], (2.0, -1.0, 0.88))
    np.testing.assert_allclose(T[:3, 2], (1, 0, 0), atol=1e-12)
    np.testing.assert_allclose(T[:3, 1], (0, 0, -1), atol=1e-12)
    np.testing.assert_allclose(T[:3, 0], (0, -1, 0), atol=1e-12)
    # a camera yawed by 90 deg looks along map +y
    T = gl_camera_to_map((0, 0, 0), yaw_to_hab_quat(math.pi / 2))
    np.testing.assert_allclose(T[:3, 2], (0, 1, 0), atol=1e-12)

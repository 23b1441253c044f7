"""The one map <-> habitat convention (personal.world.frames): axes, headings, cameras, and
the evidence that it is the convention of habitat-sim and of the public PersONAL files."""
import gzip
import json
import math
from pathlib import Path

import numpy as np
import pytest

from personal.world import frames
from personal.world.habitat_format import goal_from_habitat

PUBLIC = Path(__file__).parent / "data" / "personal_public"


def test_points_axes_and_exact_round_trip():
    assert np.linalg.det(frames.R_HAB_MAP) == pytest.approx(1.0)
    assert frames.map_to_habitat((1.0, 2.0, 3.0)) == (1.0, 3.0, -2.0)  # map up -> habitat up (y)
    assert frames.habitat_to_map((0.0, 0.0, -1.0)) == (0.0, 1.0, 0.0)  # habitat front (-z) -> map +y
    p = (1.3884823322296143, -0.5355252027511597, 2.01503849029541)  # a public start position
    assert frames.map_to_habitat(frames.habitat_to_map(p)) == p  # bit-exact: only signs flip
    pts = np.random.default_rng(0).normal(size=(7, 3))
    np.testing.assert_array_equal(frames.habitat_to_map_points(frames.map_to_habitat_points(pts)), pts)
    np.testing.assert_allclose(frames.map_to_habitat_points(pts), pts @ frames.R_HAB_MAP.T)


@pytest.mark.parametrize("yaw", [0.0, 0.5, -2.0, math.pi / 2, 3.0, -math.pi + 1e-9])
def test_yaw_quaternion_round_trip_and_heading(yaw):
    q = frames.yaw_to_habitat_quat(yaw)
    assert frames.habitat_quat_to_yaw(q) == pytest.approx(yaw, abs=1e-12)
    # the rotated habitat forward axis points along the map heading
    fwd = frames.quat_to_matrix(q) @ frames.HAB_FRONT
    np.testing.assert_allclose(fwd, frames.map_to_habitat((math.cos(yaw), math.sin(yaw), 0.0)), atol=1e-12)
    assert frames.same_rotation(q, [-c for c in q])  # q and -q are one rotation


def test_camera_gl_and_optical_agree():
    # identity habitat rotation: the camera looks along map +y, image "down" is map -z
    T = frames.gl_camera_to_map((1.0, 0.88, -2.0), (0.0, 0.0, 0.0, 1.0))
    np.testing.assert_allclose(T[:3, 3], (1.0, 2.0, 0.88))
    np.testing.assert_allclose(T[:3, 2], (0, 1, 0), atol=1e-12)
    np.testing.assert_allclose(T[:3, 1], (0, 0, -1), atol=1e-12)
    # a habitat camera turned to ``yaw`` and tilted up by ``pitch`` (rotation about its local x)
    # is the optical pose the synthetic simulator uses for the same yaw and pitch
    for yaw, pitch in [(0.3, 0.0), (2.5, math.radians(30)), (-1.0, math.radians(-60))]:
        qy = frames.yaw_to_habitat_quat(yaw)
        R = frames.quat_to_matrix(qy) @ frames.quat_to_matrix((math.sin(pitch / 2), 0.0, 0.0, math.cos(pitch / 2)))
        from scipy.spatial.transform import Rotation

        q = Rotation.from_matrix(R).as_quat()
        T_gl = frames.gl_camera_to_map((0.5, 1.0, 0.2), q)
        T_opt = frames.optical_camera_pose(0.5, -0.2, 1.0, yaw, pitch)
        np.testing.assert_allclose(T_gl, T_opt, atol=1e-12)
        assert frames.heading_and_pitch(T_opt) == pytest.approx((yaw, pitch))
        np.testing.assert_allclose(frames.map_camera_to_habitat(T_opt)[:3, 3], (0.5, 1.0, 0.2), atol=1e-12)


def test_habitat_sims_own_z_up_rules_are_this_rotation():
    """habitat-sim turns z-up assets with CoordinateFrame(up=+z, front=+y) (MP3D .glb default,
    StageAttributesManager) and generic semantic PLYs with rotation(FRONT, GRAVITY): both are
    R_HAB_MAP. (frame_to_world follows CoordinateFrame::rotationFrameToWorld in the fake.)"""
    import sys

    sys.path.insert(0, str(Path(__file__).parent / "fakes"))
    try:
        from habitat_sim._scene import R_NEG_Z_GRAVITY, frame_to_world
    finally:
        sys.path.remove(str(Path(__file__).parent / "fakes"))
        for m in [m for m in sys.modules if m.split(".")[0] == "habitat_sim"]:
            del sys.modules[m]
    np.testing.assert_allclose(frame_to_world((0, 0, 1), (0, 1, 0)), frames.R_HAB_MAP, atol=1e-12)
    np.testing.assert_allclose(R_NEG_Z_GRAVITY, frames.R_HAB_MAP)
    np.testing.assert_allclose(frame_to_world((0, 1, 0), (0, 0, -1)), np.eye(3), atol=1e-12)


def test_public_view_points_face_their_goal_under_this_convention():
    """The authors rotate every view point to look at the goal's centre: with positions and
    rotations read by this one convention, all of them face it exactly. The mix issue 18 found
    (positions by the file convention, headings by the old backend's yaw = habitat angle) is
    off by 90 degrees everywhere."""
    errors, old = [], []
    for f in sorted(PUBLIC.glob("*/content/*.json.gz")):
        doc = json.loads(gzip.open(f, "rt").read())
        for key, goals in doc["goals_by_category"].items():
            for k, g in enumerate(goals):
                goal = goal_from_habitat(g, f"{f}:{key}[{k}]")
                for vp, raw in zip(goal.view_points, g["view_points"]):
                    heading = math.atan2(goal.position[1] - vp.position[1], goal.position[0] - vp.position[0])
                    errors.append(abs(frames.wrap_angle(vp.yaw - heading)))
                    x, y, z, w = raw["agent_state"]["rotation"]
                    old.append(abs(frames.wrap_angle(2 * math.atan2(y, w) - heading)))
    assert len(errors) >= 8
    assert max(errors) < 1e-3
    assert min(old) > math.radians(60)

"""The real driver conventions (personal/robot/conventions.py) and what follows from them: the
RealSense topic layout of each way of starting the camera, the TF chain the graph needs, and the
camera mount the URDF numbers give (issue 26: the old fixed pose was 0.3 m off and never tilted)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from personal.robot import conventions as C
from personal.robot.extrinsics import T_root_optical, urdf_joint_transforms


@pytest.mark.parametrize("camera, version, prefix", [
    ("interbotix", "4.55", "camera/camera"),  # namespace <ns>/camera, name camera, private ~/ topics
    ("interbotix", "4.56", "camera/camera"),
    ("interbotix", "4.54", "camera"),  # before 4.55: topics relative to the namespace <ns>/camera
    ("rs_launch", "4.55", "camera"),  # camera_namespace:=<ns> camera_name:=camera -> /<ns>/camera/...
    ("rs_launch", "4.54", "/camera"),  # no camera_namespace before 4.55: /camera/... whatever the launch says
])
def test_realsense_layouts(camera, version, prefix):
    layout = C.camera_layout(camera, version)
    assert layout.prefix == prefix
    assert layout.joined == (camera == "interbotix")  # only Interbotix's base_frame_id joins the URDF
    assert layout.align_flag in layout.command


def test_unknown_profiles_are_refused_by_name():
    with pytest.raises(ValueError, match="camera profile 'kinect' unknown"):
        C.camera_layout("kinect")
    with pytest.raises(ValueError, match="realsense-ros version 'new'"):
        C.camera_layout("interbotix", "new")


@pytest.mark.parametrize("base", sorted(C.BASES))
def test_tf_chain_runs_from_the_namespaced_odom_to_the_optical_frame(base):
    chain = C.camera_chain(base, "locobot")
    assert chain[0][0] == "locobot/odom" and chain[-1][1] == "camera_color_optical_frame"
    assert all(a[1] == b[0] for a, b in zip(chain, chain[1:]))  # one connected chain
    assert ("locobot/tilt_link", "camera_locobot_link") in [(p, c) for p, c, _ in chain]
    assert chain[0][1] == "locobot/" + C.BASES[base].root_link


def test_urdf_mount_is_where_the_xacro_puts_the_camera():
    # create3 + large tower: tower + pan + tilt + camera joint + D435 colour offset
    T = T_root_optical("create3")
    x = -0.048271 + 0.061228 + 0.025034 + 0.05318
    z = 0.10087 + 0.462 + 0.019 + 0.000009
    assert T[:3, 3] == pytest.approx([x, 0.0175 + 0.015, z])
    assert abs(T[2, 3] - 0.88) > 0.25  # the old camera_xyz default was 0.3 m too high
    assert T[:3, 2] == pytest.approx([1.0, 0.0, 0.0])  # the optical axis looks forward at pan = tilt = 0
    kob = T_root_optical("kobuki")
    assert kob[2, 3] == pytest.approx(0.0102 + 0.08823 + 0.44425 + 0.019 + 0.000009)


def test_positive_tilt_looks_down_and_positive_pan_looks_left():
    down = T_root_optical("create3", 0.0, math.radians(30))[:3, 2]
    assert down[2] == pytest.approx(-math.sin(math.radians(30)))  # tilt axis +y: positive = down
    left = T_root_optical("create3", math.radians(30), 0.0)[:3, 2]
    assert left[1] == pytest.approx(math.sin(math.radians(30)))
    assert C.LOOK_UP_SIGN < 0
    assert C.clamp_pan_tilt(3.0, 3.0) == (C.PAN_LIMITS[1], C.TILT_LIMITS[1])
    assert C.TILT_LIMITS[1] == pytest.approx(math.radians(75))


def test_joint_transforms_compose_to_the_mount():
    T = np.eye(4)
    for _, _, Tj in urdf_joint_transforms("kobuki", 0.2, -0.3):
        T = T @ Tj
    assert np.allclose(T, T_root_optical("kobuki", 0.2, -0.3))

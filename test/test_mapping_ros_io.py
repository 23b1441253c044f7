"""ROS-free helpers of the mapping node: image decoding, poses, timestamp sync, wire format."""
import math
from types import SimpleNamespace as NS

import numpy as np
import pytest

from personal.mapping.feature_map import FeatureMap
from personal.mapping.ros_io import (
    ApproxTimeSync, FrameError, base_pose_from_camera, camera_from_base, depth_from_msg, feature_map_to_wire,
    ids_from_msg, intrinsics_from_info, pose_to_matrix, rgb_from_msg,
)


def img(arr, encoding):
    arr = np.ascontiguousarray(arr)
    h, w = arr.shape[:2]
    return NS(height=h, width=w, encoding=encoding, is_bigendian=0, step=arr.nbytes // h, data=arr.tobytes())


def test_depth_encodings():
    mm = np.array([[0, 1500], [2000, 65535]], np.uint16)
    np.testing.assert_allclose(depth_from_msg(img(mm, "16UC1")), [[0, 1.5], [2.0, 65.535]], rtol=1e-6)
    m = np.array([[np.nan, 1.5], [np.inf, 2.0]], np.float32)
    np.testing.assert_allclose(depth_from_msg(img(m, "32FC1")), [[0, 1.5], [0, 2.0]])
    with pytest.raises(FrameError, match="depth encoding 'rgb8'"):
        depth_from_msg(img(np.zeros((2, 2, 3), np.uint8), "rgb8"))
    short = img(mm, "16UC1")
    short.data = short.data[:-2]
    with pytest.raises(FrameError, match="do not fit"):
        depth_from_msg(short)


def test_padded_rows_colour_and_ids():
    rgb = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3)
    padded = np.zeros((2, 12), np.uint8)
    padded[:, :9] = rgb.reshape(2, 9)
    m = NS(height=2, width=3, encoding="bgr8", is_bigendian=0, step=12, data=padded.tobytes())
    np.testing.assert_array_equal(rgb_from_msg(m), rgb[..., ::-1])
    ids = np.array([[0, 7], [70000, 3]], np.int32)
    np.testing.assert_array_equal(ids_from_msg(img(ids, "32SC1")), ids)
    with pytest.raises(FrameError, match="instance-id encoding"):
        ids_from_msg(img(ids.astype(np.float32), "32FC1"))


def test_camera_info_and_poses():
    K, shape = intrinsics_from_info(NS(k=[100.0, 0, 31.5, 0, 100.0, 23.5, 0, 0, 1], height=48, width=64))
    assert shape == (48, 64) and K[0, 2] == 31.5
    with pytest.raises(FrameError, match="K"):
        intrinsics_from_info(NS(k=[0.0] * 9, height=1, width=1))
    yaw = 0.7
    pose = NS(position=NS(x=1.0, y=2.0, z=0.0), orientation=NS(x=0.0, y=0.0, z=math.sin(yaw / 2), w=math.cos(yaw / 2)))
    T = pose_to_matrix(pose)
    np.testing.assert_allclose(T[:2, 0], [math.cos(yaw), math.sin(yaw)], atol=1e-12)
    with pytest.raises(FrameError, match="quaternion"):
        pose_to_matrix(NS(position=NS(x=0, y=0, z=0), orientation=NS(x=0, y=0, z=0, w=0)))
    # the static mount equals the simulator's camera model
    from personal.sim.backends.base import AgentState, CameraSpec
    from personal.sim.backends.synthetic import camera_pose

    Tc = camera_from_base(T, 0.88, pitch=-0.5)
    np.testing.assert_allclose(Tc, camera_pose(AgentState(1.0, 2.0, 0.0, yaw, -0.5), CameraSpec()), atol=1e-9)
    x, y, yaw_back = base_pose_from_camera(Tc)
    assert (x, y) == pytest.approx((1.0, 2.0)) and yaw_back == pytest.approx(yaw)


def test_approximate_time_sync_matches_and_reports_stale_pose():
    sync = ApproxTimeSync(("depth", "pose"), slop_ns=10, max_wait_ns=100)
    assert sync.add("depth", 1000, "d1") == []
    assert sync.add("pose", 995, "p-old") == [{"depth": "d1", "pose": "p-old", "_stamp": 1000}]
    # a depth frame whose pose is far off in time never matches and is reported when expired
    assert sync.add("depth", 2000, "d2") == []
    assert sync.add("pose", 2500, "p-late") == []
    assert sync.expire(2200) == [(2000, ["pose"])]
    # a frame without pose is reported when a newer frame matches
    sync.add("depth", 2600, "d-nopose")
    assert sync.add("depth", 2700, "d5") == [] and sync.add("pose", 2702, "p5")[0]["depth"] == "d5"
    assert sync.expire(2703) == [(2600, ["pose"])]
    # out-of-order arrival still pairs the closest stamps
    sync.add("pose", 3005, "p3")
    sync.add("pose", 3100, "p4")
    out = sync.add("depth", 3101, "d4")
    assert out == [{"depth": "d4", "pose": "p4", "_stamp": 3101}]
    with pytest.raises(KeyError, match="streams"):
        sync.add("rgb", 1, None)


def test_feature_map_wire_is_what_grounding_reads():
    from personal.grounding.map_wire import map_from_wire, parse_descriptor

    rng = np.random.default_rng(0)
    fm = FeatureMap(8, 0.5, encoder="oracle-captions-minilm")
    fm.integrate(rng.uniform(0, 3, (200, 2)), rng.uniform(0.1, 1, 200), rng.normal(size=(3, 8)), rng.integers(0, 3, 200))
    flat, layout, desc = feature_map_to_wire(fm, scene_id="synth_00001")
    import json

    d = parse_descriptor(json.dumps(desc))
    view = map_from_wire(flat, [size for _, size, _ in layout], d)
    np.testing.assert_allclose(view.features, fm.embeddings)
    assert d["scene_id"] == "synth_00001" and d["encoder"]["name"] == fm.encoder
    assert layout[0] == ("rows", fm.geometry.shape[0], flat.size)

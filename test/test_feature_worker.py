"""The explore graph's mapping node encodes features in a child process, one frame behind the geometry
(``personal.mapping.feature_worker``, issue 16): applied in submission order, the maps must be exactly
those of ``MapBuilder.integrate`` frame after frame, with the real learned ``lit`` encoder; a reset
drops the features of frames submitted before it; a bad encoder leaves geometry-only mapping."""
import time

import numpy as np

from personal.mapping.feature_worker import FeatureWorker
from personal.mapping.pipeline import MapBuilder, MapConfig
from personal.models.base import make_encoder
from test_mapping_split import _frames, assert_same_maps


def _worker_builder(cfg, encoder="lit"):
    b = MapBuilder(cfg)  # no feature map until the child process says which encoder it loaded
    logs = []
    w = FeatureWorker(encoder, "", lambda fp, out: b.apply_features(fp.K, fp, out),
                      lambda name, dim: b.enable_features(dim, name), logs.append)
    return b, w, logs


def test_features_in_a_child_process_equal_integrate():
    frames = _frames(10)
    cfg = MapConfig(feature_resolution=0.5)
    enc = make_encoder("lit")
    a = MapBuilder(cfg, feature_dim=enc.dim, encoder_name=enc.name, features=enc.frame_features)
    b, w, logs = _worker_builder(cfg)
    try:
        for o in frames:
            a.integrate(o.depth, o.K, o.T_map_camera, rgb=o.rgb, agent_xy=(o.state.x, o.state.y))
            fp = b.integrate_geometry(o.depth, o.K, o.T_map_camera, agent_xy=(o.state.x, o.state.y))
            assert w.submit(o.depth, o.rgb, None, fp)
        assert w.wait_idle(timeout=300.0), logs
        assert w.pending() == 0 and w.alive, logs
    finally:
        w.close()
    assert b.feature_map.encoder == a.feature_map.encoder == enc.name
    assert a.feature_map.confidence.sum() > 0  # the encoder found objects at all
    assert_same_maps(a, b)


def test_reset_drops_features_of_earlier_frames():
    frames = _frames(6)
    cfg = MapConfig(feature_resolution=0.5)
    b, w, logs = _worker_builder(cfg)
    try:
        for o in frames[:3]:
            w.submit(o.depth, o.rgb, None, b.integrate_geometry(o.depth, o.K, o.T_map_camera))
        with w.lock:  # as the mapping node resets: before any of them can be applied
            w.reset()
            b.reset()
        assert w.wait_idle(timeout=300.0), logs
        assert b.feature_map is None or b.feature_map.confidence.sum() == 0  # nothing of the old frames
        for o in frames[3:]:
            w.submit(o.depth, o.rgb, None, b.integrate_geometry(o.depth, o.K, o.T_map_camera))
        assert w.wait_idle(timeout=300.0), logs
    finally:
        w.close()
    fresh = MapBuilder(cfg, feature_dim=b.feature_map.dim, encoder_name=b.feature_map.encoder,
                       features=make_encoder("lit").frame_features)
    for o in frames[3:]:
        fresh.integrate(o.depth, o.K, o.T_map_camera, rgb=o.rgb)
    assert np.array_equal(fresh.feature_map.confidence, b.feature_map.confidence)


def test_unknown_encoder_leaves_geometry_only():
    b, w, logs = _worker_builder(MapConfig(), encoder="no-such-encoder")
    try:
        deadline = time.monotonic() + 120.0
        while w.alive and time.monotonic() < deadline:  # the child reports the failure, then exits
            time.sleep(0.05)
        assert not w.alive
        o = _frames(1)[0]
        assert not w.submit(o.depth, o.rgb, None, b.integrate_geometry(o.depth, o.K, o.T_map_camera))
    finally:
        w.close()
    assert b.feature_map is None
    assert any("no-such-encoder" in line for line in logs), logs

"""The camera model (personal/sim/sensor_model.py): each noise component against its model,
reproducibility, and `ideal` = the renderer's frames byte for byte."""
from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from personal.sim.backends.base import Action, AgentState, CameraSpec, Observation
from personal.sim.sensor_model import (IDEAL, OVERRIDE_RANGES, PRESETS, SensorModel, SensorSpecError, ir_shadow_mask,
                                     make_sensor_backend, motion_blur, parse_overrides, sensor_spec)

K = CameraSpec(width=320, height=240).intrinsics()


def _obs(depth, rgb=None):
    h, w = depth.shape
    rgb = np.full((h, w, 3), 128, np.uint8) if rgb is None else rgb
    return Observation(rgb=rgb, depth=depth.astype(np.float32), instance_ids=np.zeros((h, w), np.int32),
                       state=AgentState(0.0, 0.0, 0.0, 0.0), T_map_camera=np.eye(4), K=K.copy())


def _only(**kw):
    return SensorModel(replace(IDEAL, name="test", **kw))


@pytest.mark.parametrize("corr", [0.0, 1.0])
def test_depth_noise_std_grows_with_range_squared_as_intels_formula(corr):
    """RMS = Z² · subpixel / (f_px · B) (D435: f_px = 424 / tan(43.5°), B = 50 mm), per pixel,
    independent or spatially correlated."""
    model = _only(subpixel=0.08, noise_corr_px=corr)
    f_px = 0.5 * 848 / math.tan(math.radians(87.0 / 2))
    stds = {}
    for z in (1.0, 2.0, 3.0, 4.0):
        noisy = model.apply(_obs(np.full((240, 320), z))).depth.astype(np.float64)
        stds[z] = float((noisy - z).std())
        expected = z * z * 0.08 / (f_px * 0.050)
        assert stds[z] == pytest.approx(expected, rel=0.05), (z, stds[z], expected)
        assert abs(float((noisy - z).mean())) < 0.2 * expected  # unbiased
    assert stds[4.0] / stds[2.0] == pytest.approx(4.0, rel=0.06)
    assert 1000 * stds[2.0] == pytest.approx(14.3, abs=0.8)  # ~14 mm at 2 m: the D435's published figure


def test_ir_shadow_is_the_band_left_of_a_near_object_of_the_disparity_jump():
    depth = np.full((10, 200), 4.0)
    depth[:, 100:150] = 1.0
    shadow = ir_shadow_mask(depth, float(K[0, 0]), 0.05)
    width = K[0, 0] * 0.05 * (1 / 1.0 - 1 / 4.0)  # disparity difference, px
    cols = np.flatnonzero(shadow[0])
    assert cols.max() == 99 and len(cols) == pytest.approx(width, abs=1.0)
    assert not shadow[:, 100:].any()  # the near object itself and the right side are seen
    model = _only(ir_shadow=True)
    assert (model.apply(_obs(depth)).depth[:, cols] == 0).all()


def test_edge_dark_specular_holes_min_range_and_quantisation():
    depth = np.full((60, 80), 2.0)
    depth[:, 40:] = 3.0
    out = _only(edge_invalid=1.0).apply(_obs(depth)).depth
    assert (out[:, 39:41] == 0).all() and (out[:, :38] == 2.0).all() and (out[:, 42:] == 3.0).all()
    rgb = np.full((60, 80, 3), 128, np.uint8)
    rgb[:30] = 5  # dark top half
    rgb[50:] = 255  # a saturated highlight at the bottom
    out = _only(dark_invalid=1.0, specular_invalid=0.5).apply(_obs(np.full((60, 80), 2.0), rgb)).depth
    assert (out[:30] == 0).all() and (out[30:50] == 2.0).all()
    assert np.mean(out[50:] == 0) == pytest.approx(0.5, abs=0.1)
    near = np.linspace(0.1, 1.0, 80)[None, :].repeat(4, 0)
    out = _only(min_range_m=0.28, quantise=True).apply(_obs(near + 0.00037)).depth
    assert (out[near + 0.00037 < 0.28] == 0).all() and (out[near + 0.00037 >= 0.2805] > 0).all()
    kept = out[out > 0].astype(np.float64)
    np.testing.assert_allclose(kept * 1000, np.round(kept * 1000), atol=1e-3)  # whole millimetres


def test_rgb_noise_gains_and_motion_blur_only_while_turning():
    rgb = np.full((40, 60, 3), 100, np.uint8)
    noisy = _only(rgb_noise=4.0).apply(_obs(np.full((40, 60), 2.0), rgb.copy())).rgb.astype(float)
    assert (noisy - 100).std() == pytest.approx(4.0, rel=0.08)
    m = _only(exposure=0.3, white_balance=0.1)
    out = m.apply(_obs(np.full((40, 60), 2.0), rgb.copy())).rgb.astype(float)
    np.testing.assert_allclose(out[0, 0], np.round(100 * m.gain * m.wb), atol=0.51)
    assert 0.7 <= m.gain <= 1.3 and np.all(np.abs(m.wb - 1) <= 0.1)
    bar = np.zeros((10, 60, 3), np.uint8)
    bar[:, 30] = 255
    blur = _only(exposure_ms=20.0, turn_rate_dps=60.0)
    length = math.radians(60.0) * 0.020 * K[0, 0]
    still = blur.apply(_obs(np.full((10, 60), 2.0), bar.copy()), Action.MOVE_FORWARD).rgb
    turned = blur.apply(_obs(np.full((10, 60), 2.0), bar.copy()), Action.TURN_LEFT).rgb
    assert (still == bar).all()
    assert (turned[0, :, 0] > 0).sum() == pytest.approx(round(length), abs=1)
    np.testing.assert_allclose(motion_blur(bar, 1), bar)


def test_odometry_drift_moves_the_mapping_pose_only():
    m = _only(odom_drift=0.05, odom_yaw_drift_deg=2.0)
    poses = []
    for k in range(20):
        o = _obs(np.full((8, 8), 2.0))
        o.state = AgentState(0.25 * k, 0.0, 0.0, 0.0)
        o.T_map_camera = np.eye(4)
        o.T_map_camera[0, 3] = 0.25 * k
        out = m.apply(o, Action.MOVE_FORWARD)
        poses.append(out.T_map_camera[:2, 3] - out.extras["true_T_map_camera"][:2, 3])
        assert out.state.x == 0.25 * k  # the true state (scoring, planning) is untouched
    err = np.linalg.norm(poses[-1])
    assert 0.0 < err < 1.0  # ~0.05 * sqrt(19) * 0.25 m, random walk


def test_the_same_seed_gives_the_same_frames_and_another_seed_other_ones():
    d = np.full((30, 40), 3.0)
    a = SensorModel(PRESETS["d435"])
    b = SensorModel(PRESETS["d435"])
    c = SensorModel(replace(PRESETS["d435"], seed=1))
    for m in (a, b, c):
        m.reset("ep1")
    fa, fb, fc = (m.apply(_obs(d)).depth for m in (a, b, c))
    np.testing.assert_array_equal(fa, fb)
    assert not np.array_equal(fa, fc)


def test_ideal_backend_is_byte_identical_to_the_plain_renderer():
    from personal.world.generator import generate_scene
    from personal.sim.backends.synthetic import SyntheticBackend
    from personal.sim.sensor_model import SensorBackend

    scene = generate_scene(3)
    plain, ideal = SyntheticBackend(camera=CameraSpec(width=96, height=72)), make_sensor_backend("synthetic", IDEAL, 96, 72)
    assert type(ideal) is SyntheticBackend and ideal.camera == plain.camera
    noisy = make_sensor_backend("synthetic", PRESETS["d435"], 96, 72)
    assert isinstance(noisy, SensorBackend)
    r = scene.rooms[0]
    start = AgentState((r.bounds[0] + r.bounds[2]) / 2, (r.bounds[1] + r.bounds[3]) / 2, scene.floors[0].z, 0.3)
    outs = []
    for be in (plain, ideal, noisy):
        be.load_scene(scene)
        x, y = be.snap_to_navigable(start.x, start.y)
        be.reset(state=AgentState(x, y, start.z, start.yaw))
        outs.append(be.step(Action.TURN_LEFT))
    for k in ("rgb", "depth", "instance_ids"):
        np.testing.assert_array_equal(getattr(outs[0], k), getattr(outs[1], k))
    assert not np.array_equal(outs[0].depth, outs[2].depth)
    seen = outs[0].depth > 0  # d435 also sees 0.28-0.5 m, which the ideal camera's near clip drops
    np.testing.assert_array_equal(outs[2].extras["ideal_depth"][seen], outs[0].depth[seen])


def test_presets_overrides_and_their_errors():
    s = sensor_spec("d435", "hfov_deg=69,height_m=1.25,pitch_deg=-10", seed=3)
    assert (s.hfov_deg, s.height_m, s.pitch_deg, s.seed, s.subpixel) == (69.0, 1.25, -10.0, 3, 0.08)
    cam = s.camera(320, 240)
    assert (cam.hfov_deg, cam.height_m, cam.pitch_deg, cam.min_depth) == (69.0, 1.25, -10.0, 0.28)
    assert not sensor_spec("ideal").noisy and sensor_spec("ideal", "hfov_deg=69").camera().hfov_deg == 69.0
    assert "hfov_deg" in sensor_spec("d435", "hfov_deg=69").describe()
    with pytest.raises(SensorSpecError, match="sensor: 'kinect' unknown"):
        sensor_spec("kinect")
    with pytest.raises(SensorSpecError, match=r"hfov_deg=200 out of range \(valid: 20 .. 150\)"):
        parse_overrides("hfov_deg=200")
    with pytest.raises(SensorSpecError, match="'fov=3' is not NAME=VALUE"):
        parse_overrides("fov=3")
    assert set(OVERRIDE_RANGES) <= set(IDEAL.record())


def test_graph_declares_the_same_presets_and_override_ranges():
    from personal.graphs import SENSOR_OVERRIDES, SENSOR_PRESETS

    assert set(SENSOR_PRESETS) == set(PRESETS)
    assert {k: (r.low, r.high) for k, r in SENSOR_OVERRIDES.ranges.items()} == OVERRIDE_RANGES


def test_graph_arguments_refuse_a_bad_override_before_any_node_starts():
    from personal.graphs import GRAPHS, GraphError

    for graph in ("sim", "explore", "pan_eval", "pog_eval"):
        g = GRAPHS[graph]
        g.check_argument("sensor_overrides", "hfov_deg=69,height_m=1.25")
        with pytest.raises(GraphError, match=r"sensor_overrides: hfov_deg.*out of range"):
            g.check_argument("sensor_overrides", "hfov_deg=200")
        with pytest.raises(GraphError, match="not in one of ideal"):
            g.check_argument("sensor", "kinect")


def test_exploration_takes_the_camera_spec_and_reports_record_the_sensor(tmp_path):
    from personal.navigation.eval.pan_run import generate_pan_set, make_components, run_pan_offline
    from personal.grounding.eval.pog_run import explore_scene_maps

    scenes, eps = generate_pan_set(1, ("easy",), 1, seed=100)
    spec = sensor_spec("d435", "height_m=1.25,hfov_deg=69")
    maps, info = explore_scene_maps(scenes[eps[0].scene_id], ["oracle"], 0.5, eps[0], 64, 48, max_steps=3, sensor=spec)
    assert info["sensor"] == "d435" and maps["oracle"][0].valid.any()
    summary = run_pan_offline(scenes, eps, ["random-frontier"], tmp_path, make_components("oracle"), max_steps=3,
                              sample_plots=0, sensor=spec)
    assert summary["meta"]["sensor"].startswith("d435 (HFOV 69°, 1.25 m")
    assert "- sensor: d435 (HFOV 69°, 1.25 m" in (tmp_path / "report.md").read_text()


def test_a_preset_component_alone_keeps_only_its_fields_and_bad_names_are_refused():
    from dataclasses import fields

    from personal.sim.sensor_model import COMPONENTS, GEOMETRY

    named = [f for comp in COMPONENTS.values() for f in comp]
    # every imperfection of the model belongs to exactly one component, so the components add up to the preset
    assert sorted(named) == sorted(set(named))
    assert set(named) | set(GEOMETRY) | {"name", "seed"} == {f.name for f in fields(IDEAL)}
    gains = sensor_spec("d435[gains]", "hfov_deg=69")
    d435 = PRESETS["d435"]
    assert (gains.exposure, gains.white_balance, gains.jitter) == (d435.exposure, d435.white_balance, d435.jitter)
    assert (gains.subpixel, gains.rgb_noise, gains.exposure_ms, gains.ir_shadow) == (0.0, 0.0, 0.0, False)
    assert gains.noisy and gains.hfov_deg == 69.0 and gains.name == "d435[gains]"
    assert "overrides {'hfov_deg': 69.0}" in gains.describe()  # the component's own fields are not overrides
    both = sensor_spec("d435-harsh[depth+odometry]")
    harsh = PRESETS["d435-harsh"]
    assert (both.subpixel, both.odom_drift, both.rgb_noise, both.exposure) == (harsh.subpixel, harsh.odom_drift, 0.0, 0.0)
    assert not sensor_spec("ideal[gains]").noisy
    for bad in ("d435[]", "d435[gain]", "d435[gains", "d435[gains+]", "kinect[gains]"):
        with pytest.raises(SensorSpecError, match="sensor: "):
            sensor_spec(bad)

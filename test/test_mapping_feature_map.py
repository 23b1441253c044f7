"""Feature map: OneMap fusion rule by hand, per-group vs per-point, growth, persistence."""
import numpy as np
import pytest
import yaml

from personal.mapping.feature_map import EncoderMismatchError, FeatureMap


def test_fusion_rule_matches_hand_computed_values():
    fm = FeatureMap(dim=2, resolution=1.0, encoder="toy", bounds=(0, 0, 2, 2))
    emb = np.array([[1.0, 0.0], [0.0, 1.0]], np.float32)
    # frame 1: two points in cell (0,0) with group 0, confidences 0.5 and 1.5 -> f=[1,0], c=2
    fm.integrate(np.array([[0.2, 0.2], [0.7, 0.4]]), np.array([0.5, 1.5]), emb, np.array([0, 0]))
    np.testing.assert_allclose(fm.embeddings[0, 0], [1.0, 0.0])
    assert fm.confidence[0, 0] == pytest.approx(2.0)
    # frame 2: group 1 with confidence 1 and group 0 with confidence 3 in the same cell:
    # f_new = (0*[1,0]... ) = (3*[1,0] + 1*[0,1]) / 4 = [0.75, 0.25], c_new = 4
    # fused: (f*c + f_new*c_new) / (c + c_new) = ([2,0] + [3,1]) / 6 = [5/6, 1/6]; c = 6
    fm.integrate(np.array([[0.5, 0.5], [0.1, 0.9]]), np.array([1.0, 3.0]), emb, np.array([1, 0]))
    np.testing.assert_allclose(fm.embeddings[0, 0], [5 / 6, 1 / 6], rtol=1e-6)
    assert fm.confidence[0, 0] == pytest.approx(6.0)
    # the other cells were never observed
    assert fm.confidence.sum() == pytest.approx(6.0)
    sim = fm.similarity(np.array([1.0, 0.0]))
    assert sim[0, 0] == pytest.approx((5 / 6) / np.hypot(5 / 6, 1 / 6), rel=1e-6)
    assert np.isnan(sim[1, 1])


def test_per_point_embeddings_equal_the_grouped_path():
    rng = np.random.default_rng(0)
    xy = rng.uniform(0, 5, size=(500, 2))
    conf = rng.uniform(0.1, 1.0, 500)
    groups = rng.integers(-1, 4, 500)  # -1 = no feature
    emb = rng.normal(size=(4, 8)).astype(np.float32)
    a = FeatureMap(8, 1.0, bounds=(0, 0, 5, 5))
    b = FeatureMap(8, 1.0, bounds=(0, 0, 5, 5))
    a.integrate(xy, conf, emb, groups)
    keep = groups >= 0
    b.integrate(xy[keep], conf[keep], emb[groups[keep]])
    np.testing.assert_allclose(a.embeddings, b.embeddings, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(a.confidence, b.confidence, rtol=1e-6)
    # hand check of one cell: confidence-weighted mean of its points
    iy, ix = 2, 3
    m = keep & (np.floor(xy[:, 1]) == iy) & (np.floor(xy[:, 0]) == ix)
    expect = (conf[m, None] * emb[groups[m]]).sum(0) / conf[m].sum()
    np.testing.assert_allclose(a.embeddings[iy, ix], expect, rtol=1e-5)


def test_map_grows_and_keeps_old_cells_in_place():
    fm = FeatureMap(2, 0.5, bounds=(0, 0, 1, 1))
    fm.integrate(np.array([[0.25, 0.25]]), np.array([1.0]), np.array([[1.0, 0.0]]), np.array([0]))
    fm.integrate(np.array([[-3.0, 7.0]]), np.array([1.0]), np.array([[0.0, 1.0]]), np.array([0]))
    geo = fm.geometry
    assert geo.bounds[0] <= -3.0 and geo.bounds[3] > 7.0
    np.testing.assert_allclose(fm.embeddings[geo.cell(0.25, 0.25)], [1.0, 0.0])
    np.testing.assert_allclose(fm.embeddings[geo.cell(-3.0, 7.0)], [0.0, 1.0])
    assert fm.confidence.sum() == pytest.approx(2.0)


def test_resolution_is_configurable_down_to_5_cm():
    FeatureMap(4, 0.05)
    with pytest.raises(ValueError, match="0.05"):
        FeatureMap(4, 0.01)


def test_save_load_round_trip_and_encoder_mismatch(tmp_path):
    rng = np.random.default_rng(1)
    fm = FeatureMap(16, 1.0, encoder="oracle-captions-minilm")
    fm.integrate(rng.uniform(-2, 6, (300, 2)), rng.uniform(0, 1, 300), rng.normal(size=(3, 16)), rng.integers(0, 3, 300))
    path = fm.save(tmp_path / "m")
    meta = yaml.safe_load(path.read_text())
    assert meta["frame"] == "map" and meta["encoder"] == {"name": "oracle-captions-minilm", "dim": 16}
    assert meta["resolution"] == 1.0 and meta["origin"] == list(fm.geometry.origin)
    back = FeatureMap.load(tmp_path / "m", expected_encoder="oracle-captions-minilm", expected_dim=16)
    np.testing.assert_array_equal(back.embeddings, fm.embeddings)
    np.testing.assert_array_equal(back.confidence, fm.confidence)
    assert back.geometry == fm.geometry and back.encoder == fm.encoder
    with pytest.raises(EncoderMismatchError) as err:
        FeatureMap.load(path, expected_encoder="clip:vit-b-32")
    assert "oracle-captions-minilm" in str(err.value) and "clip:vit-b-32" in str(err.value)
    with pytest.raises(EncoderMismatchError, match="dimension"):
        FeatureMap.load(path, expected_dim=384)


def test_bad_inputs_are_named():
    fm = FeatureMap(4, 1.0)
    with pytest.raises(ValueError, match=r"\(G, 4\)"):
        fm.integrate(np.zeros((2, 2)), np.ones(2), np.zeros((2, 3)), np.zeros(2, int))
    with pytest.raises(ValueError, match="dimension"):
        fm.similarity(np.ones(3))

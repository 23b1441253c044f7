"""ORACLE caption encoder: instance ids -> packaged MiniLM caption embeddings, area weighted."""
import numpy as np
import pytest

from personal.mapping.feature_map import FeatureMap
from personal.mapping.projection import backproject
from personal.models.base import make_encoder
from personal.models.oracle import ORACLE_NAME, OracleCaptionEncoder, captions_from_json, load_sentence_model

CAPS = {1: "a red backpack", 2: "a blue ceramic mug", 3: "a wooden chair"}


class CountingModel:
    def __init__(self, model):
        self.model, self.calls, self.sentences = model, 0, 0

    def encode(self, texts, **kw):
        self.calls += 1
        self.sentences += len(texts)
        return self.model.encode(texts, **kw)


@pytest.fixture(scope="module")
def minilm():
    return load_sentence_model()


def test_name_says_oracle_and_text_is_normalised(minilm):
    enc = make_encoder(ORACLE_NAME, captions=CAPS, model=minilm)
    assert "oracle" in enc.name and enc.dim == 384
    t = enc.encode_text(["red backpack", "blue mug"])
    assert t.shape == (2, 384) and t.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(t, axis=1), 1.0, rtol=1e-5)
    with pytest.raises(TypeError, match="oracle"):
        enc.encode_image([np.zeros((4, 4, 3), np.uint8)])


def test_a_text_embeds_the_same_whatever_it_is_embedded_with(minilm):
    """The grounding node embeds whatever queries are waiting; a text's vector must not depend on
    its batch neighbours, or serial and sharded runs score differently in the last bits."""
    long = "a striped backpack with black straps that Lily keeps on the chair in the bedroom"
    alone = OracleCaptionEncoder(CAPS, model=minilm).encode_text(["a red backpack"])[0]
    with_long = OracleCaptionEncoder(CAPS, model=minilm).encode_text([long, "a red backpack"])[1]
    assert np.array_equal(alone, with_long)


def test_captions_are_embedded_once(minilm):
    model = CountingModel(minilm)
    enc = OracleCaptionEncoder(CAPS, model=model)
    ids = np.array([[1, 1, 2, 0], [3, 3, 2, 0]])
    enc.dense_features(None, ids)
    enc.dense_features(None, ids)
    enc.encode_text(["a red backpack"])
    assert model.sentences == 3 and enc.cache_size == 3


def test_area_weighted_cell_embedding(minilm):
    enc = OracleCaptionEncoder(CAPS, model=minilm)
    ids = np.zeros((8, 8), np.int32)
    ids[:, :6] = 1  # 48 pixels backpack
    ids[:, 6:] = 2  # 16 pixels mug ; no structure pixels
    ids[0, 0] = 99  # an id without caption: ignored
    regions, emb = enc.dense_features(None, ids)
    assert emb.shape == (2, 384) and regions[0, 0] == -1
    fm = FeatureMap(384, 20.0, encoder=enc.name, bounds=(0, 0, 1, 1))  # one cell holds every point
    xy = np.full((64, 2), 0.5)
    fm.integrate(xy, np.ones(64), emb, regions.reshape(-1))
    e = enc.encode_text([CAPS[1], CAPS[2]])
    expect = (47 * e[0] + 16 * e[1]) / 63
    np.testing.assert_allclose(fm.embeddings[0, 0], expect, rtol=1e-5, atol=1e-6)
    assert fm.confidence[0, 0] == pytest.approx(63)


def test_frame_features_follow_the_back_projected_pixels(minilm):
    enc = OracleCaptionEncoder(CAPS, model=minilm)
    K = np.array([[10.0, 0, 3.5], [0, 10.0, 3.5], [0, 0, 1]])
    depth = np.full((8, 8), 2.0, np.float32)
    depth[:, 4:] = 0.0  # right half invalid
    ids = np.zeros((8, 8), np.int32)
    ids[:, :2] = 3
    ids[:, 4:] = 1  # only where depth is invalid: must not appear
    fp = backproject(depth, K, np.eye(4))
    groups, emb = enc.frame_features(depth, None, ids, fp)
    assert emb.shape == (1, 384) and np.count_nonzero(groups >= 0) == 16
    np.testing.assert_allclose(emb[0], enc.encode_text([CAPS[3]])[0])


def test_query_finds_the_right_object(minilm):
    enc = OracleCaptionEncoder(CAPS, model=minilm)
    ids = np.array([[1, 1, 0], [2, 2, 3]])
    regions, emb = enc.dense_features(None, ids)
    fm = FeatureMap(384, 1.0, encoder=enc.name)
    xy = np.array([[0.5, 0.5], [0.5, 0.6], [0.0, 0.0], [2.5, 0.5], [2.5, 0.6], [4.5, 0.5]])
    fm.integrate(xy, np.ones(6), emb, regions.reshape(-1))
    sim = fm.similarity(enc.encode_text(["the red backpack"])[0])
    assert np.nanargmax(sim) == np.ravel_multi_index(fm.geometry.cell(0.5, 0.5), sim.shape)


def test_captions_from_scene_json(tmp_path):
    import json

    p = tmp_path / "scene.json"
    p.write_text(json.dumps({"objects": [{"instance_id": 4, "caption": "a lamp"}]}))
    assert captions_from_json(p) == {4: "a lamp"}
    with pytest.raises(FileNotFoundError, match="missing.json"):
        captions_from_json(tmp_path / "missing.json")


def test_captions_for_a_scene_id(tmp_path):
    import json

    from personal.models.oracle import captions_for_scene_id
    from personal.world.generator import generate_scene

    scene = generate_scene(2, scene_id="synth_00002")
    caps = captions_for_scene_id("synth_00002")  # what the sim bridge generates in memory
    assert caps == {o.instance_id: o.caption for o in scene.objects}
    (tmp_path / "scenes").mkdir()
    (tmp_path / "scenes" / "house.scene.json").write_text(json.dumps(scene.to_dict()))
    assert captions_for_scene_id("house", episodes_dir=str(tmp_path)) == caps
    with pytest.raises(ValueError, match="scene_json or episodes_dir"):
        captions_for_scene_id("somewhere_else")

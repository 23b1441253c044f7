"""transformers adapter on tiny randomly initialised CLIP / SigLIP checkpoints built here
(no downloads): local loading, output shapes, L2 normalisation, dense crop features."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from personal.models.base import make_encoder  # noqa: E402
from personal.models.hf_vlm import HFImageTextEncoder  # noqa: E402

WORDS = "a the red blue green backpack mug chair table lamp of on in with".split()


def _tokenizer(max_len: int):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[BOS]", "[EOS]"] + WORDS)}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="[PAD]", unk_token="[UNK]", bos_token="[BOS]",
                                   eos_token="[EOS]", model_max_length=max_len), len(vocab)


def _save_tiny(kind: str, path):
    torch.manual_seed(0)
    tokenizer, vocab = _tokenizer(16)
    common_text = dict(vocab_size=vocab, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                       num_attention_heads=4, max_position_embeddings=16)
    common_vision = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                         image_size=32, patch_size=8)
    if kind == "clip":
        from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel

        cfg = CLIPConfig(text_config={**common_text, "eos_token_id": 3, "pad_token_id": 0, "bos_token_id": 2},
                         vision_config=common_vision, projection_dim=32)
        model = CLIPModel(cfg)
        proc = CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32})
    elif kind == "blip2":
        from transformers import Blip2Config, Blip2ForImageTextRetrieval, BlipImageProcessor

        cfg = Blip2Config(
            vision_config=common_vision,
            qformer_config=dict(vocab_size=vocab, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                num_attention_heads=4, encoder_hidden_size=64, max_position_embeddings=16,
                                use_qformer_text_input=True, pad_token_id=0),
            text_config=dict(model_type="opt", vocab_size=vocab, hidden_size=64, ffn_dim=128, num_hidden_layers=1,
                             num_attention_heads=4, word_embed_proj_dim=64, max_position_embeddings=16),
            num_query_tokens=4, image_text_hidden_size=32)
        model = Blip2ForImageTextRetrieval(cfg)
        proc = BlipImageProcessor(size={"height": 32, "width": 32})
    else:
        from transformers import SiglipConfig, SiglipImageProcessor, SiglipModel

        cfg = SiglipConfig(text_config={**common_text, "eos_token_id": 3, "pad_token_id": 0, "bos_token_id": 2},
                           vision_config=common_vision)
        model = SiglipModel(cfg)
        proc = SiglipImageProcessor(size={"height": 32, "width": 32})
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    proc.save_pretrained(path)
    return path


@pytest.fixture(scope="module", params=["clip", "siglip", "blip2"])
def tiny(request, tmp_path_factory):
    kind = request.param
    return kind, _save_tiny(kind, tmp_path_factory.mktemp(f"tiny_{kind}"))


def test_loads_locally_and_embeds_normalised(tiny):
    kind, path = tiny
    enc = make_encoder(kind, model_path=str(path))
    assert isinstance(enc, HFImageTextEncoder) and enc.kind == kind
    assert enc.name == f"{kind}:{path.name}"
    t = enc.encode_text(["a red backpack", "the blue mug on the table", "lamp"])
    rng = np.random.default_rng(0)
    imgs = [rng.integers(0, 255, (40, 50, 3), dtype=np.uint8) for _ in range(2)]
    i = enc.encode_image(imgs)
    assert t.shape == (3, enc.dim) and i.shape == (2, enc.dim) and t.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(t, axis=1), 1.0, rtol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(i, axis=1), 1.0, rtol=1e-5)
    assert not np.allclose(t[0], t[1])  # different texts, different embeddings
    # deterministic
    np.testing.assert_allclose(enc.encode_text(["a red backpack"])[0], t[0], atol=1e-5)


def test_dense_features_one_region_per_patch_or_crop(tiny):
    kind, path = tiny
    enc = make_encoder(kind, model_path=str(path), crop_grid=(2, 2))
    rgb = np.zeros((48, 64, 3), np.uint8)
    rgb[:24, :32] = (255, 0, 0)
    regions, emb = enc.dense_features(rgb)
    assert regions.shape == (48, 64)
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-4)
    if kind == "blip2":  # no patch-level projection: a grid of crops
        assert emb.shape == (4, enc.dim)
        assert regions[0, 0] == 0 and regions[0, 63] == 1 and regions[47, 0] == 2 and regions[47, 63] == 3
        np.testing.assert_allclose(emb[1], emb[3], rtol=1e-4, atol=1e-5)
        assert not np.allclose(emb[0], emb[1], atol=1e-4)
        return
    # CLIP / SigLIP: a feature for every 8 x 8 patch of the frame resized to shorter side 32 (32 x 40)
    h, w = enc.dense_input_size(48, 64)
    assert (h, w) == (32, 40)
    assert emb.shape == ((h // 8) * (w // 8), enc.dim)
    assert regions[0, 0] == 0 and regions[47, 63] == emb.shape[0] - 1
    assert len(np.unique(regions)) == emb.shape[0]
    # the red patch (top left) and a black one (bottom right) get different features
    assert float(emb[regions[0, 0]] @ emb[regions[47, 63]]) < 0.999


def test_dense_features_are_patch_tokens_through_the_projection(tiny):
    """MaskCLIP for CLIP: the value path of the last layer; our function must agree with a
    hand-written forward through transformers' modules."""
    kind, path = tiny
    if kind != "clip":
        pytest.skip("checked on CLIP")
    from personal.models.hf_vlm import _maskclip_clip

    enc = make_encoder(kind, model_path=str(path))
    m = enc.model
    x = torch.randn(1, 3, 32, 40)
    with torch.no_grad():
        got = _maskclip_clip(m, x)
        vm = m.vision_model
        h = vm.pre_layrnorm(vm.embeddings(x, interpolate_pos_encoding=True))
        h = vm.encoder.layers[0](h, None)
        h = h[0] if isinstance(h, tuple) else h
        last = vm.encoder.layers[1]
        v = last.self_attn.out_proj(last.self_attn.v_proj(last.layer_norm1(h)))
        want = m.visual_projection(vm.post_layernorm(v[:, 1:])).reshape(1, 4, 5, -1)
    assert got.shape == (1, 4, 5, 32)
    torch.testing.assert_close(got, want)


def test_dense_features_feed_the_map_builder(tiny):
    from personal.mapping.pipeline import MapBuilder, MapConfig

    kind, path = tiny
    enc = make_encoder(kind, model_path=str(path), crop_grid=(1, 2))
    mb = MapBuilder(MapConfig(feature_resolution=0.5, stride=4), feature_dim=enc.dim, encoder_name=enc.name,
                    features=enc.frame_features)
    depth = np.full((48, 64), 2.0, np.float32)  # a wall 2 m ahead of a camera looking along +x
    T = np.eye(4)
    T[:3, :3] = [[0.0, 0.0, 1.0], [-1.0, 0.0, 0.0], [0.0, -1.0, 0.0]]
    T[2, 3] = 0.88
    K = np.array([[40.0, 0, 31.5], [0, 40.0, 23.5], [0, 0, 1]])
    rgb = np.random.default_rng(0).integers(0, 255, (48, 64, 3), dtype=np.uint8)
    mb.integrate(depth, K, T, rgb=rgb)
    fm = mb.feature_map
    seen = fm.confidence > 0
    assert fm.encoder == enc.name and seen.sum() >= 2
    regions, emb = enc.dense_features(rgb)
    left = fm.embeddings[fm.geometry.cell(2.1, 0.5)]
    left = left / np.linalg.norm(left)
    if kind == "blip2":
        # left half of the image (crop 0) lands at y > 0, the right half (crop 1) at y < 0
        np.testing.assert_allclose(left, emb[0], atol=1e-5)
    else:  # the cell holds a confidence-weighted mix of the left patches' features
        left_patches = emb[np.unique(regions[:, : regions.shape[1] // 3])]
        assert float(left @ (left_patches.mean(0) / np.linalg.norm(left_patches.mean(0)))) > 0.9


def test_missing_path_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        make_encoder("clip", model_path=str(tmp_path / "no_such_model"))
    with pytest.raises(ValueError, match="unknown encoder"):
        make_encoder("nope")


def test_embedding_from_4x_tensor_and_5x_output_object():
    from types import SimpleNamespace

    from personal.models.hf_vlm import _embedding

    t = torch.ones(2, 3)
    assert _embedding(t) is t  # transformers 4.x: get_*_features returned the tensor
    assert _embedding(SimpleNamespace(pooler_output=t, last_hidden_state=None)) is t  # 5.x output object
    with pytest.raises(TypeError, match="embedding"):
        _embedding(SimpleNamespace(last_hidden_state=t))

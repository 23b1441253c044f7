"""Learned perception: dataset writing, a short training run that lowers the loss, the shipped
checkpoint through the HF adapter, clear errors for bad checkpoints, and the map path that
reads RGB only."""
import json
import shutil

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from personal.models.base import make_encoder  # noqa: E402
from personal.models.hf_vlm import CheckpointError  # noqa: E402
from personal.models.lit import SHIPPED_NAME, shipped_checkpoint  # noqa: E402
from personal.perception.dataset import DatasetError, load_dataset, write_dataset  # noqa: E402
from personal.perception.tower import CropTowerEncoder  # noqa: E402


@pytest.fixture(scope="module")
def tiny_dataset(tmp_path_factory):
    out = tmp_path_factory.mktemp("views")
    write_dataset(out, [10_000], views_per_scene=6, width=80, height=64, progress=lambda m: None)
    return out


def test_dataset_writes_views_labels_captions_and_proposals(tiny_dataset):
    index, shards = load_dataset(tiny_dataset)
    assert index["seeds"] == [10_000] and index["width"] == 80 and index["height"] == 64
    assert index["K"].shape == (3, 3)
    s = shards[0]
    assert s["rgb"].shape == (6, 64, 80, 3) and s["rgb"].dtype == np.uint8
    assert s["depth"].shape == (6, 64, 80) and s["ids"].shape == (6, 64, 80) and s["structure"].shape == (6, 64, 80)
    assert s["poses"].shape == (6, 4, 4)
    captions = {o["instance_id"]: o["caption"] for o in s["objects"]}
    visible = set(np.unique(s["ids"])) - {0}
    assert visible and visible <= set(captions)  # every visible instance has its caption
    # structure labels: object pixels are class 0, walls and floor appear
    assert (s["structure"][s["ids"] > 0] == 0).all()
    assert {1, 2} <= set(np.unique(s["structure"]))
    assert (s["depth"] > 0).mean() > 0.5
    # the segmenter's proposals, cropped, with what each covers (instances > 0, structure < 0)
    n = len(s["crops"])
    assert n >= 6 and s["crops"].shape[1:] == (48, 48, 3) and s["crop_masks"].shape == (n, 48, 48)
    assert s["crop_masks"].dtype == bool and s["crop_masks"].any(axis=(1, 2)).all()
    assert s["crop_labels"].shape == (n, 4) and s["crop_counts"].shape == (n, 4)
    assert (s["crop_labels"][:, 0] != 0).all() and (s["crop_counts"][:, 0] > 0).all()
    assert set(s["crop_labels"][s["crop_labels"] > 0].tolist()) <= set(captions)
    assert (s["crop_labels"] > 0).any() and set(s["crop_view"].tolist()) <= set(range(6))


def test_dataset_refuses_evaluation_households(tmp_path):
    with pytest.raises(ValueError, match="evaluation households"):
        write_dataset(tmp_path, [0], views_per_scene=1)
    with pytest.raises(DatasetError, match="dataset.json"):
        load_dataset(tmp_path / "nothing")


def test_short_training_run_lowers_the_loss(tiny_dataset, tmp_path):
    from personal.perception.train import TrainConfig, Trainer, save_checkpoint

    index, shards = load_dataset(tiny_dataset)
    cfg = TrainConfig(max_steps=12, batch=6, lr=3e-3, warmup=2, layers=1, hidden=64, eval_every_s=1e9, minutes=10)
    tr = Trainer(shards, shards, cfg, log=lambda m: None)
    info = tr.fit()
    losses = [h["caption"] for h in tr.history]
    assert info["steps"] == 12
    assert np.mean(losses[-3:]) < np.mean(losses[:3]) - 0.2, losses
    out = save_checkpoint(tr, tmp_path / "ckpt", info, index, index)
    for name in ("config.json", "model.safetensors", "preprocessor_config.json", "training_log.json", "loss.png"):
        assert (out / name).exists(), name
    enc = make_encoder("lit", model_path=str(out))
    assert enc.dim == 384 and enc.name == "lit:ckpt"


def test_conv_tower_trains_saves_and_loads_through_the_hf_adapter(tiny_dataset, tmp_path):
    """The ResNet crop tower (model type personal_lit_conv) on a tiny config: the loss falls, the
    checkpoint reloads through AutoModel and the same HF adapter as the ViT, in the same text
    space, and embeds a rendered frame's proposals."""
    from transformers import AutoConfig, AutoModel

    from personal.models.lit import CONV_MODEL_TYPE, LitConvModel
    from personal.perception.train import TrainConfig, Trainer, save_checkpoint

    index, shards = load_dataset(tiny_dataset)
    cfg = TrainConfig(max_steps=12, batch=6, lr=3e-3, warmup=2, arch="cnn", widths=(8, 16), eval_every_s=1e9, minutes=10)
    tr = Trainer(shards, shards, cfg, log=lambda m: None)
    info = tr.fit()
    losses = [h["caption"] for h in tr.history]
    assert info["steps"] == 12 and np.mean(losses[-3:]) < np.mean(losses[:3]) - 0.2, losses
    out = save_checkpoint(tr, tmp_path / "conv", info, index, index)
    assert AutoConfig.from_pretrained(out).model_type == CONV_MODEL_TYPE
    assert isinstance(AutoModel.from_pretrained(out), LitConvModel)
    enc = make_encoder("lit", model_path=str(out))
    assert enc.kind == "lit" and enc.crop_model and enc.dim == 384
    s = shards[0]
    emb, obj = enc.embed_crops(s["crops"][:5], s["crop_masks"][:5])
    assert emb.shape == (5, 384) and obj.shape == (5,)
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-3)
    K = index["K"]
    regions, e2, w = enc.dense_regions(s["rgb"][0], s["depth"][0].astype(np.float32), K, s["poses"][0].astype(np.float64))
    assert regions.shape == s["rgb"].shape[1:3] and len(e2) == len(w) and regions.max() < len(e2)


def test_anchor_loss_pulls_crops_towards_their_caption_texts(tiny_dataset):
    """With anchor_weight the loss adds 1 - cos(crop, its target texts); training lowers it, and with
    weight 0 it is neither computed nor logged."""
    from personal.perception.train import TrainConfig, Trainer

    _, shards = load_dataset(tiny_dataset)
    base = dict(max_steps=10, batch=6, lr=3e-3, warmup=2, arch="cnn", widths=(8, 16), eval_every_s=1e9, minutes=10)
    tr = Trainer(shards, shards, TrainConfig(**base, anchor_weight=1.0), log=lambda m: None)
    tr.fit()
    anchor = [h["anchor"] for h in tr.history]
    assert all(0.0 <= a <= 2.0 for a in anchor) and np.mean(anchor[-3:]) < np.mean(anchor[:3]) - 0.05, anchor
    total_minus_parts = [h["loss"] - h["caption"] - 0.5 * h["category"] - 0.5 * h["objectness"] for h in tr.history]
    np.testing.assert_allclose(total_minus_parts, anchor, atol=2e-3)  # the anchor term, weight 1, is in the loss
    plain = Trainer(shards, shards, TrainConfig(**{**base, "max_steps": 2}), log=lambda m: None)
    plain.fit()
    assert "anchor" not in plain.history[-1]


def test_sensor_colour_crops_follow_the_presets_gains_and_noise():
    """--sensor-colour: a share of the crops gets one episode's exposure x white-balance gains and the
    read noise of the preset (the camera model's own functions), the rest stay as they were."""
    from personal.perception.train import sensor_colour
    from personal.sim.sensor_model import sensor_spec

    rng = np.random.default_rng(0)
    crops = np.full((400, 8, 8, 3), 100, np.uint8)
    spec = sensor_spec("d435")
    out = sensor_colour(crops, spec, 0.5, rng)
    changed = (out != crops).any(axis=(1, 2, 3))
    assert 0.4 < changed.mean() < 0.6 and (out[~changed] == 100).all()
    means = out[changed].reshape(changed.sum(), -1, 3).mean(1) / 100.0  # the gains (noise averages out)
    lo, hi = (1 - spec.exposure) * (1 - spec.white_balance), (1 + spec.exposure) * (1 + spec.white_balance)
    assert means.min() > lo - 0.08 and means.max() < hi + 0.08 and means.std() > 0.05
    pixel_noise = out[changed].astype(float) - means[:, None, None, :] * 100  # within a crop: the read noise
    assert abs(pixel_noise.std() - spec.rgb_noise) < 0.5
    assert (sensor_colour(crops, sensor_spec("ideal"), 1.0, rng) == crops).all()  # no colour imperfection: unchanged


def test_distillation_keeps_the_initial_towers_embeddings(tiny_dataset, tmp_path):
    """distill_weight: the loss adds 1 - cos(tower(crop as trained), initial tower(clean crop)); it starts
    at 0 for clean crops (student = teacher) and stays small while the sensor colour is learned."""
    from personal.perception.train import TrainConfig, Trainer, save_checkpoint

    index, shards = load_dataset(tiny_dataset)
    base = dict(batch=6, lr=3e-3, warmup=2, arch="cnn", widths=(8, 16), eval_every_s=1e9, minutes=10)
    first = Trainer(shards, shards, TrainConfig(**base, max_steps=2), log=lambda m: None)
    first.fit()
    init = save_checkpoint(first, tmp_path / "init", {}, index, index)
    tr = Trainer(shards, shards, TrainConfig(**base, max_steps=8, init_from=str(init), sensor_colour="d435",
                                             sensor_colour_p=0.0, distill_weight=1.0), log=lambda m: None)
    with pytest.raises(ValueError, match="distill_weight needs init_from"):
        Trainer(shards, shards, TrainConfig(**base, distill_weight=1.0), log=lambda m: None)
    _, parts = tr._losses(np.arange(6))
    assert float(parts["distill"]) < 1e-2  # the student is the teacher, the crops are clean
    tr.cfg.sensor_colour_p = 1.0
    tr.fit()
    distill = [h["distill"] for h in tr.history]
    assert all(0.0 <= d <= 2.0 for d in distill)
    total_minus_parts = [h["loss"] - h["caption"] - 0.5 * h["category"] - 0.5 * h["objectness"] for h in tr.history]
    np.testing.assert_allclose(total_minus_parts, distill, atol=2e-3)  # the term, weight 1, is in the loss


def test_distillation_on_some_camera_presets_only(tiny_dataset, tmp_path):
    """distill_presets: the term is the mean over the crops whose view went through those presets only
    (a randomised dataset's cam_preset per crop; a plain dataset's crops are all "ideal")."""
    from personal.perception.cropset import crop_presets
    from personal.perception.train import TrainConfig, Trainer, save_checkpoint

    index, shards = load_dataset(tiny_dataset)
    assert set(crop_presets(shards[0])) == {"ideal"}
    views = {"crop_view": np.array([0, 1, 1, 2]), "cam_preset": np.array([1, 0, 1]), "preset_names": ["ideal", "d435"]}
    assert list(crop_presets(views)) == ["d435", "ideal", "ideal", "d435"]
    base = dict(batch=6, lr=3e-2, warmup=1, arch="cnn", widths=(8, 16), eval_every_s=1e9, minutes=10)
    first = Trainer(shards, shards, TrainConfig(**base, max_steps=2), log=lambda m: None)
    first.fit()
    init = save_checkpoint(first, tmp_path / "init", {}, index, index)
    tr = Trainer(shards, shards, TrainConfig(**base, max_steps=6, init_from=str(init), distill_weight=0.01),
                 log=lambda m: None)
    tr.fit()  # the student drifts from its teacher

    def distill(presets: str) -> float:
        tr.cfg.distill_presets, tr.rng = presets, np.random.default_rng(0)
        return float(tr._losses(np.arange(6))[1]["distill"])

    every = distill("")
    assert every > 1e-4 and distill("ideal") == pytest.approx(every, rel=1e-5)
    assert distill("d435") == 0.0  # no crop went through it


@pytest.fixture(scope="module")
def shipped():
    if not (shipped_checkpoint() / "config.json").exists():
        pytest.fail(f"the trained checkpoint is missing from the repository: {shipped_checkpoint()}")
    return make_encoder("lit")


def test_shipped_checkpoint_loads_through_the_hf_adapter(shipped):
    enc = shipped
    assert isinstance(enc, CropTowerEncoder) and enc.kind == "lit"
    assert enc.name == f"lit:{SHIPPED_NAME}" and "oracle" not in enc.name.lower()
    size = sum(p.stat().st_size for p in shipped_checkpoint().iterdir())
    assert size <= 30 * 2**20
    card = (shipped_checkpoint() / "README.md").read_text()
    for needed in ("seed", "steps", "loss", "top-1"):
        assert needed in card.lower()
    # the text tower is the packaged MiniLM: same vectors the oracle encoder uses
    from personal.models.oracle import load_sentence_model

    t = enc.encode_text(["the red backpack under the desk"])
    ref = load_sentence_model().encode(["the red backpack under the desk"], normalize_embeddings=True)
    np.testing.assert_allclose(t, ref, atol=1e-5)


def test_shipped_model_sees_objects_in_a_rendered_frame(shipped):
    """From RGB-D alone: a view of a household object gives a proposal over it whose nearest
    caption among the household's objects is often one of the right category."""
    from personal.world.generator import generate_scene
    from personal.world.mesh import scene_mesh
    from personal.sim.backends.base import AgentState, CameraSpec
    from personal.sim.backends.synthetic import camera_pose
    from personal.sim.render import Renderer

    scene = generate_scene(5)
    cam = CameraSpec(width=320, height=240)
    r = Renderer(scene_mesh(scene), cam, nthreads=1)
    caps = shipped.encode_text([o.caption for o in scene.objects])
    hits, tried = 0, 0
    furniture = [o for o in scene.objects if o.is_furniture][:12]
    for o in furniture:
        x, y = o.box.center[0] - 1.8, o.box.center[1]
        T = camera_pose(AgentState(x, y, 0.0, 0.0, -0.3), cam)
        rgb, depth, ids = r.render(T)
        if (ids == o.instance_id).mean() < 0.05:
            continue
        regions, emb, weights = shipped.dense_regions(rgb, depth, cam.intrinsics(), T)
        assert regions.shape == (240, 320) and weights is not None and len(weights) == len(emb)
        assert regions.max() < len(emb) and (regions == -1).any()  # floor / walls get no proposal
        mine = regions[(ids == o.instance_id) & (regions >= 0)]
        tried += 1
        if len(mine) == 0:
            continue
        best = int(np.argmax(caps @ emb[np.bincount(mine).argmax()]))
        hits += scene.objects[best].category == o.category
    assert tried >= 3
    assert hits / tried >= 0.3, f"{hits}/{tried} categories right"


def _copy(tmp_path, **config):
    """The shipped checkpoint copied under ``tmp_path``, with ``config`` written into its config.json."""
    dst = tmp_path / "ckpt"
    shutil.copytree(shipped_checkpoint(), dst)
    if config:
        cfg = json.loads((dst / "config.json").read_text())
        (dst / "config.json").write_text(json.dumps({**cfg, **config}))
    return dst


def test_bad_checkpoints_are_clear_errors(tmp_path):
    if not (shipped_checkpoint() / "config.json").exists():
        pytest.fail("the trained checkpoint is missing from the repository")
    with pytest.raises(FileNotFoundError, match="no_such_dir"):
        make_encoder("lit", model_path=str(tmp_path / "no_such_dir"))
    bad = _copy(tmp_path / "a")
    (bad / "config.json").write_text("{not json")
    with pytest.raises(CheckpointError, match=r"config\.json"):
        make_encoder("lit", model_path=str(bad))
    other = _copy(tmp_path / "b", text_tower="openai/clip-vit-base-patch32")
    with pytest.raises(CheckpointError, match=r"text_tower .*clip"):
        make_encoder("lit", model_path=str(other))
    dim = _copy(tmp_path / "c", projection_dim=512)
    with pytest.raises(CheckpointError, match="projection_dim 512"):
        make_encoder("lit", model_path=str(dim))
    torn = _copy(tmp_path / "d")
    (torn / "model.safetensors").write_bytes(b"\x00" * 64)
    with pytest.raises(CheckpointError, match="cannot load the model weights"):
        make_encoder("lit", model_path=str(torn))


def _perturbed(tmp_path):
    """A second crop tower: the shipped weights with noise added (another tower in the same space)."""
    from safetensors.torch import load_file, save_file

    dst = _copy(tmp_path)
    weights = load_file(str(dst / "model.safetensors"))
    gen = torch.Generator().manual_seed(0)
    noisy = {k: (v * (1 + 0.1 * torch.randn(v.shape, generator=gen)) if v.is_floating_point() and "running" not in k else v)
             for k, v in weights.items()}  # batch-norm statistics kept: a negative variance is NaN
    save_file(noisy, str(dst / "model.safetensors"), metadata={"format": "pt"})
    return dst


def test_an_ensemble_averages_two_towers_unit_embeddings(shipped, tmp_path):
    from typer.testing import CliRunner

    from personal.perception.cli import app
    from personal.perception.tower import write_ensemble

    second = _perturbed(tmp_path / "second")
    out = write_ensemble(shipped_checkpoint(), second, tmp_path / "E")
    assert json.loads((out / "config.json").read_text())["ensemble_with"] == "../second/ckpt"
    assert "## Ensemble" in (out / "README.md").read_text()
    ens, other = make_encoder("lit", model_path=str(out)), make_encoder("lit", model_path=str(second))
    assert ens.name == "lit:E" and ens.dim == 384 and ens.text_space == shipped.text_space
    rng = np.random.default_rng(0)
    crops, masks = rng.integers(0, 255, (5, 48, 48, 3), dtype=np.uint8), np.ones((5, 48, 48), bool)
    (e1, o1), (e2, o2), (e, o) = (enc.embed_crops(crops, masks) for enc in (shipped, other, ens))
    assert np.abs(e1 - e2).max() > 1e-3, "the two towers differ"
    mean = (e1 + e2) / np.linalg.norm(e1 + e2, axis=1, keepdims=True)
    np.testing.assert_allclose(e, mean, atol=1e-5)
    np.testing.assert_allclose(o, (o1 + o2) / 2, atol=1e-6)
    assert ens.embed_crops(crops[:0], masks[:0])[0].shape == (0, 384)
    # a folder that exists is never overwritten; the CLI says so by name
    res = CliRunner().invoke(app, ["ensemble", "--first", str(shipped_checkpoint()), "--second", str(second), "--out", str(out)])
    assert res.exit_code == 2 and "exists" in res.output


def test_an_ensemble_with_a_missing_or_foreign_second_tower_is_a_clear_error(tmp_path):
    from personal.perception.tower import write_ensemble

    bad = _copy(tmp_path / "a", ensemble_with="../gone")
    with pytest.raises(CheckpointError, match=r"config\.json: ensemble_with '\.\./gone': no checkpoint folder"):
        make_encoder("lit", model_path=str(bad))
    foreign = _copy(tmp_path / "b", text_tower="openai/clip-vit-base-patch32")
    with pytest.raises(CheckpointError, match="text_tower"):
        write_ensemble(shipped_checkpoint(), foreign, tmp_path / "E")
    assert not (tmp_path / "E").exists(), "a failed ensemble leaves no folder behind"


def test_lit_map_reads_rgb_only(shipped):
    """The mapping path of the learned encoder never looks at instance ids."""
    from personal.mapping.pipeline import MapBuilder, MapConfig
    from personal.world.generator import generate_scene
    from personal.sim.backends.base import CameraSpec
    from personal.sim.backends.synthetic import SyntheticBackend

    scene = generate_scene(4)
    b = SyntheticBackend(camera=CameraSpec(width=160, height=120))
    b.load_scene(scene)
    from personal.sim.backends.base import AgentState

    r = scene.rooms[0]
    x, y = b.snap_to_navigable((r.bounds[0] + r.bounds[2]) / 2, (r.bounds[1] + r.bounds[3]) / 2)
    obs = b.reset(state=AgentState(x, y, 0.0, 0.0))
    maps = []
    for ids in (obs.instance_ids, None, np.zeros_like(obs.instance_ids)):
        mb = MapBuilder(MapConfig(feature_resolution=0.5, stride=2), feature_dim=shipped.dim, encoder_name=shipped.name,
                        features=shipped.frame_features)
        mb.integrate(obs.depth, obs.K, obs.T_map_camera, rgb=obs.rgb, instance_ids=ids)
        maps.append(mb.feature_map.embeddings.copy())
    np.testing.assert_allclose(maps[0], maps[1], atol=1e-6)
    np.testing.assert_allclose(maps[0], maps[2], atol=1e-6)
    assert np.abs(maps[0]).sum() > 0


def test_short_non_oracle_pog_run_leads_the_report(shipped, tmp_path):
    """POG with the learned encoder (maps from RGB) beside the ORACLE upper bound, same frames."""
    from personal.grounding.eval.pog_run import COMPARE_METHODS, compare_offline

    summaries = compare_offline(tmp_path, encoder="lit", upper_bound="oracle", scenes=1, episodes_per_split=1, seed=2,
                                max_steps=40)
    learned, oracle = summaries["learned"], summaries["upper_bound"]
    assert learned["meta"]["encoder"] == f"lit:{SHIPPED_NAME}" and not learned["meta"]["encoder_is_oracle"]
    assert oracle["meta"]["encoder_is_oracle"]
    results = json.loads((tmp_path / "learned" / "results.json").read_text())
    assert len(results) == 3 * len(COMPARE_METHODS)
    assert all(r["failure"] is None for r in results if r["method"] in ("qs", "rpg", "rpg-scene"))
    report = (tmp_path / "report.md").read_text().splitlines()
    first_table = next(i for i, line in enumerate(report) if line.startswith("## "))
    assert "Learned encoder" in report[first_table] and "ORACLE" not in report[first_table]
    assert any("ORACLE upper bound" in line for line in report[first_table + 1:])
    # the learned / ORACLE table is computed from the two summaries
    ratio = report.index("## Learned / ORACLE, SR@top-1 (%)")
    row = next(line for line in report[ratio:] if line.startswith("| Region-Gated (RPG) |")).split("|")
    lt, ut = learned["methods"]["rpg"]["total"]["sr_top1"], oracle["methods"]["rpg"]["total"]["sr_top1"]
    assert float(row[2]) == pytest.approx(lt, abs=0.05) and float(row[3]) == pytest.approx(ut, abs=0.05)
    assert row[4].strip() == (f"{100 * lt / ut:.0f} %" if ut else "–")


def test_pan_value_map_explorer_maps_from_rgb_with_the_learned_encoder(shipped):
    """PAN's online mapper takes the colour frame and the objectness weights of the learned
    encoder; its feature map is the same whether the instance ids are real or zeroed."""
    from personal.navigation.eval.pan_run import PanComponents, build_loop, generate_pan_set
    from personal.grounding.extract import make_extractor
    from personal.grounding.pipeline import TextEmbedder
    from personal.navigation.loop import frame_from_observation
    from personal.sim.backends.base import CameraSpec
    from personal.sim.backends.synthetic import SyntheticBackend

    scenes, eps = generate_pan_set(1, ("easy",), 1, seed=100)
    comps = PanComponents(shipped, TextEmbedder(shipped), make_extractor("builtin"))
    sim = SyntheticBackend(camera=CameraSpec(width=160, height=120))
    sim.load_scene(scenes[eps[0].scene_id])
    from personal.sim.backends.base import Action

    obs = [sim.reset(eps[0])]
    obs += [sim.step(Action.TURN_LEFT) for _ in range(3)]  # a quarter turn: some objects come into view
    frames = [frame_from_observation(o, with_features=True) for o in obs]
    assert all(f.rgb is not None for f in frames)
    maps = []
    for zero_ids in (False, True):
        loop = build_loop("value-map-rpg", comps)
        for f in frames:
            ids = np.zeros_like(f.instance_ids) if zero_ids else f.instance_ids
            loop.mapper.integrate(f.depth, f.K, f.T_map_camera, f.pose[:2], f.rgb, ids)
        maps.append(loop.mapper.feature_map.embeddings.copy())
    assert np.abs(maps[0]).sum() > 0
    np.testing.assert_allclose(maps[0], maps[1], atol=1e-6)

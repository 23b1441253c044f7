"""Domain randomisation of the crop tower's training: the camera varies per view (height, field of
view, pitch, sensor preset, recorded in the manifest and the shards), captions are paraphrased
without the evaluation's unseen colour words, and a short randomised training run swaps targets
for paraphrases and lowers the loss."""
import json
import random

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from personal.perception.dataset import CameraRandomisation, load_dataset, write_dataset  # noqa: E402
from personal.world import paraphrase as P  # noqa: E402
from personal.world.catalog import COLORS  # noqa: E402
from personal.world.generator import generate_scene  # noqa: E402


@pytest.fixture(scope="module")
def randomised(tmp_path_factory):
    out = tmp_path_factory.mktemp("randomised")
    write_dataset(out, [10_000], views_per_scene=10, width=80, height=64, progress=lambda m: None,
                  randomise=CameraRandomisation())
    return out


def test_randomised_views_vary_the_camera_and_record_it(randomised):
    manifest = json.loads((randomised / "dataset.json").read_text())
    rand = manifest["randomise"]
    assert rand["height_m"] == [0.6, 1.4] and rand["hfov_deg"] == [60.0, 90.0] and rand["rigs"] == 3
    with np.load(randomised / "synth_10000.npz") as d:
        h, fov, pitch, preset, K, depth, poses = (d[k] for k in ("cam_height", "cam_hfov", "cam_pitch", "cam_preset",
                                                                 "view_K", "depth", "poses"))
    assert len(h) == 10 and ((0.6 <= h) & (h <= 1.4)).all() and np.ptp(h) > 0.2
    assert ((60 <= fov) & (fov <= 90)).all() and len(np.unique(fov)) >= 2
    assert ((-10 <= pitch) & (pitch <= 5)).all()
    assert len(np.unique(preset)) >= 2  # ideal and noisy views
    # the rendered properties follow: focal length of each view's field of view, camera height in its pose
    np.testing.assert_allclose(K[:, 0, 0], 40.0 / np.tan(np.radians(fov) / 2), rtol=1e-6)
    np.testing.assert_allclose(poses[:, 2, 3], h, atol=1e-4)  # floor 0 at z = 0
    names = [n for n, _ in CameraRandomisation().presets]
    ideal, noisy = preset == names.index("ideal"), preset != names.index("ideal")
    assert ideal.any() and noisy.any()
    holes = (depth == 0).mean(axis=(1, 2))
    assert holes[noisy].mean() > holes[ideal].mean()  # the sensor model's missing returns


def test_paraphrases_keep_the_style_and_never_use_the_evaluation_words():
    eval_words = set(P.EVAL_COLOUR_WORDS.values())
    train_words = {w for ws in P.TRAIN_COLOUR_WORDS.values() for w in ws}
    assert not eval_words & train_words and not (eval_words | train_words) & set(COLORS)
    scene = generate_scene(10_000)
    changed = 0
    for o in scene.objects:
        alts = P.paraphrases(o.caption, o.category, 3, seed=0)
        assert alts == P.paraphrases(o.caption, o.category, 3, seed=0)  # deterministic
        for t in alts:
            assert t.startswith("the ") and t != o.caption
            nouns = (o.category,) + P.CATEGORY_SYNONYMS.get(o.category, ())
            assert any(n in t for n in nouns), t
            assert not any(f" {w} " in f" {t} " for w in eval_words), t
        changed += bool(alts)
    assert changed >= 0.9 * len(scene.objects)
    rng = random.Random(0)
    many = {P.paraphrase("the striped dark green sofa with a navy backrest next to the ottoman", "sofa", rng, p=0.9)
            for _ in range(60)}
    assert any("couch" in t or "settee" in t for t in many)  # synonyms
    assert any("forest green" in t for t in many)  # off-catalog colour words
    assert any("striped" not in t for t in many) and any("backrest" not in t for t in many)  # dropped
    assert any(t.endswith("backrest") for t in many)  # re-ordered: the part after the relation
    assert P.recolour("the red mug with an orange lid on the desk") == "the crimson mug with an amber lid on the desk"
    assert P.recolour("the white vase with a navy base") == "the ivory vase with an indigo base"


def test_short_randomised_training_run_uses_paraphrases_and_lowers_the_loss(randomised, tmp_path):
    from personal.perception.evaluate import evaluate_checkpoint
    from personal.perception.train import TrainConfig, Trainer, save_checkpoint

    _, shards = load_dataset(randomised)
    cfg = TrainConfig(max_steps=12, batch=8, lr=3e-3, warmup=2, arch="cnn", widths=(8, 16), eval_every_s=1e9,
                      minutes=10, paraphrases=2, paraphrase_p=0.5)
    tr = Trainer(shards, shards, cfg, log=lambda m: None)
    n_captions = len({o["caption"] for o in shards[0]["objects"]})
    assert len(tr.vocab.texts) > n_captions + 1.5 * n_captions  # the paraphrases are embedded too
    idx = np.arange(min(len(tr.train), 64))
    text, allowed = tr._reword(tr.train.text[idx], tr.allowed[torch.from_numpy(tr.train.hh[idx])])
    swapped = text != tr.train.text[idx]
    assert swapped.any() and (tr.train.text[idx][swapped] >= 0).all()
    i, j = np.nonzero(swapped)
    assert allowed[i, text[i, j]].all() and not allowed[i, tr.train.text[idx][i, j]].any()
    info = tr.fit()
    assert info["precision"] in ("bfloat16", "float32")  # "auto": bf16 only where the CPU has it natively
    losses = [h["caption"] for h in tr.history]
    assert info["steps"] == 12 and np.mean(losses[-3:]) < np.mean(losses[:3]) - 0.2, losses
    index, _ = load_dataset(randomised)
    res = evaluate_checkpoint(save_checkpoint(tr, tmp_path / "ck", info, index, index), randomised, tmp_path / "e.json",
                              log=lambda m: None)
    unseen = res["unseen_colour"]
    assert unseen["proposals"] == res["proposals"] > 0 and 0 <= unseen["top1"] <= 1 and unseen["captions_changed"] > 0.5
    assert set(unseen["colour_lexicon"]) == {"top1", "top5", "category_acc"}  # what grounding ranks with, beside it
    assert unseen["colour_lexicon"]["top5"] >= unseen["colour_lexicon"]["top1"]
    assert res["instances"] > 0 and res["views"] == 10


def test_camera_overrides_fix_the_camera_and_bad_values_name_the_option(tmp_path):
    rand = CameraRandomisation.from_options(heights="1.25", hfovs="69", pitches="0", presets="ideal")
    assert rand.height_m == (1.25, 1.25) and rand.hfov_deg == (69.0, 69.0) and rand.presets == (("ideal", 1.0),)
    write_dataset(tmp_path, [10_000], views_per_scene=4, width=80, height=64, progress=lambda m: None, randomise=rand)
    with np.load(tmp_path / "synth_10000.npz") as d:
        np.testing.assert_allclose(d["cam_height"], 1.25)
        np.testing.assert_allclose(d["cam_hfov"], 69.0)
        assert (d["cam_preset"] == 0).all()
    assert json.loads((tmp_path / "dataset.json").read_text())["randomise"]["height_m"] == [1.25, 1.25]
    assert CameraRandomisation.from_options(pitches="-10:5").pitch_deg == (-10.0, 5.0)
    for kwargs, words in (({"heights": "tall"}, "--heights"), ({"hfovs": "90:60"}, "--hfovs"),
                          ({"presets": "kinect:1"}, "'kinect' unknown"), ({"presets": "d435:0"}, "must be > 0")):
        with pytest.raises(ValueError, match=words):
            CameraRandomisation.from_options(**kwargs)


def test_parallel_workers_write_the_same_shards(tmp_path):
    rand = CameraRandomisation.from_options(presets="ideal:0.5,d435:0.5")
    for name, workers in (("one", 1), ("two", 2)):
        write_dataset(tmp_path / name, [10_000, 10_001], views_per_scene=2, width=80, height=64,
                      progress=lambda m: None, randomise=rand, workers=workers)
    a, b = (json.loads((tmp_path / n / "dataset.json").read_text()) for n in ("one", "two"))
    assert a == b and [s["seed"] for s in a["scenes"]] == [10_000, 10_001]
    for s in a["scenes"]:
        with np.load(tmp_path / "one" / s["file"]) as x, np.load(tmp_path / "two" / s["file"]) as y:
            assert x.files == y.files and all(np.array_equal(x[k], y[k]) for k in x.files)


def test_training_precision_is_chosen_by_the_cpu_or_forced():
    import torch

    from personal.perception.train import resolve_precision

    assert resolve_precision("float32") == "float32" and resolve_precision("bfloat16") == "bfloat16"
    native = torch.ops.mkldnn._is_mkldnn_bf16_supported()
    assert resolve_precision("auto") == ("bfloat16" if native else "float32")
    with pytest.raises(ValueError, match="precision must be"):
        resolve_precision("fp16")


def test_train_refuses_an_unknown_precision_before_loading_data(tmp_path):
    from typer.testing import CliRunner

    from personal.perception.cli import app

    res = CliRunner().invoke(app, ["train", "--data", str(tmp_path / "none"), "--val", str(tmp_path / "none"),
                                   "--out", str(tmp_path / "ck"), "--precision", "fp16"])
    assert res.exit_code == 2 and "--precision" in res.output and "precision must be" in res.output, res.output

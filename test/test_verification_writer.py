"""Synthetic PInVerify writer: layout, determinism, balanced pairs, then an offline evaluation."""
import json

import pytest

from personal.verification.agent import AgentConfig
from personal.verification.attributes import BuiltinAttributeParser
from personal.verification.evaluate import evaluate, standard_configs
from personal.verification.reader import load_descriptions, load_index
from personal.verification.schema import mask_threshold
from personal.verification.writer import write_dataset


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    root = tmp_path_factory.mktemp("pv")
    summary = write_dataset(root / "a", n_targets=3, seed=5)
    return root, summary


def test_layout_and_balance(dataset):
    root, summary = dataset
    assert summary["targets"] == 3 and summary["pairs"] == 9
    pairs = load_index(root / "a" / "val" / "pv_index_all.jsonl")  # strict reader accepts what we write
    assert sorted(p.pair_type for p in pairs) == ["neg_diff"] * 3 + ["neg_same"] * 3 + ["positive"] * 3
    descs = load_descriptions(root / "a")
    for p in pairs:
        cap = p.capture
        assert len(cap.viewpoints) == 12  # 6 sectors x near/far, unreachable attempts included
        assert set(p.valid_start_sectors) == set(cap.visible_sectors()) and p.valid_start_sectors
        for v in cap.viewpoints:
            if v.navigable:
                lo, hi = (0.9, 1.2) if v.view_type == "near" else (1.4, 1.7)
                assert v.mask_meets_threshold == (v.mask_area >= mask_threshold(cap.object_category))
                assert (cap.root / v.rgb).is_file() and (cap.root / v.mask).is_file()
                g, c = cap.goal_position_nominal, v.camera_position  # habitat frame: y up, ground plane (x, z)
                horizontal = ((c[0] - g[0]) ** 2 + (c[2] - g[2]) ** 2) ** 0.5
                assert lo - 1e-3 <= horizontal <= hi + 1e-3
        assert p.query_object_id in descs and len(descs[p.query_object_id]) == 3


def test_neg_same_differs_in_a_described_colour(dataset):
    root, _ = dataset
    parser = BuiltinAttributeParser()
    for p in load_index(root / "a" / "val" / "pv_index_all.jsonl"):
        if p.pair_type != "neg_same":
            continue
        target = {a.name: a.value for a in parser.decompose(p.target_descriptions) if a.type == "color"}
        query = {a.name: a.value for a in parser.decompose(p.query_descriptions) if a.type == "color"}
        assert any(target.get(k) != v for k, v in query.items()), (p.target_descriptions, p.query_descriptions)


def test_public_layout_rows_and_captures(dataset):
    """What the public evaluator reads (scripts/evaluate.py, pver/envs/env.py): the query from
    query_descriptions / text_pos, the target from target_descriptions / text_neg, the captures
    from meta_path's meta.json with habitat-frame camera_position around goal_position_nominal."""
    import math

    root, _ = dataset
    base = root / "a"
    descs = load_descriptions(base)
    rows = [json.loads(line) for line in (base / "val" / "pv_index_all.jsonl").read_text().splitlines()]
    for row in rows:
        assert "captures_meta" not in row  # the public env would prefer it to meta.json and find no coordinates
        assert row["query_descriptions"] == row["text_pos"] == descs[row["query_object_id"]]
        assert row["target_descriptions"] == descs[row["target_object_id"]]
        if row["pair_type"] != "positive":
            assert row["text_neg"] == row["target_descriptions"] != row["text_pos"]  # negatives ask about the query
        meta = json.loads((base / row["meta_path"]).read_text())
        assert row["n_navigable"] == len(row["navigable_sectors"]) and row["n_mask_visible"] == len(row["valid_start_sectors"])
        gx, _, gz = meta["goal_position_nominal"]
        by_tag = {v["tag"]: v for v in meta["viewpoints"]}
        virtual = set()
        caps = sorted(meta["captures"], key=lambda c: c["sector_index"])
        assert len(caps) == sum(v["navigable"] for v in meta["viewpoints"])
        ref = math.atan2(caps[0]["camera_position"][2] - gz, caps[0]["camera_position"][0] - gx)
        for c in caps:
            assert (base / row["episode_path"] / c["rgb_filename"]).is_file()
            angle = math.atan2(c["camera_position"][2] - gz, c["camera_position"][0] - gx)  # the public env's angle
            # the same direction as our map-frame azimuth (habitat z = -map y)
            assert abs(math.remainder(math.degrees(-angle) - by_tag[c["tag"]]["azimuth_deg"], 360)) < 0.01
            virtual.add(round(((angle - ref) % (2 * math.pi)) / (math.pi / 3)) % 6)
        assert len(virtual) >= len(row["navigable_sectors"]) - 1  # 6 sectors, 60 degrees apart (jitter may merge two)


def test_deterministic_per_episode(dataset, tmp_path):
    root, _ = dataset
    write_dataset(tmp_path / "b", n_targets=1, seed=5)
    ep = next((tmp_path / "b" / "pin_capture").rglob("meta.json"))
    twin = root / "a" / ep.relative_to(tmp_path / "b")
    assert json.loads(ep.read_text()) == json.loads(twin.read_text())


def test_offline_evaluation_runs_all_configs(dataset, tmp_path):
    root, _ = dataset
    # three episodes through every configuration: what is checked is the pipeline and its records,
    # not accuracy (9 episodes x 5 configurations made this the suite's slowest unit test)
    runs = evaluate(root / "a" / "val" / "pv_index_all.jsonl", tmp_path / "out",
                    standard_configs(AgentConfig(), with_llm=False), limit=3, log=lambda *_: None)
    assert set(runs) == {"SV", "MV-random", "MV-fps", "MV-random-cov1", "MV-fps-cov1"}
    assert runs["SV"]["metrics"]["asd"] == 1.0
    rec = json.loads((tmp_path / "out" / "results_MV-fps.jsonl").read_text().splitlines()[0])
    public = ("episode_id", "scene_id", "object_id", "target_object_id", "target_object_category", "query_object_category",
              "prediction", "label", "pair_type", "query_descriptions", "target_descriptions", "steps", "is_correct",
              "transcript", "nav_failures", "nav_fail_unreachable", "nav_fail_trap", "effective_views",
              "first_view_prediction", "prediction_flips", "flip_direction")
    assert set(public) <= set(rec)
    assert rec["object_id"] == rec["query_object_id"]  # the public evaluator's object_id is the query
    assert {"observation", "action", "info"} <= set(rec["transcript"][0])
    # round trip: the records written, scored again (as `personal verify score` does), give the run's metrics
    from personal.verification.metrics import compute_metrics, load_records

    records = load_records(tmp_path / "out" / "results_MV-fps.jsonl")
    assert compute_metrics(records) == runs["MV-fps"]["metrics"]
    # and counted from the public-shaped transcripts alone, the navigation failures are the same
    stripped = [{k: v for k, v in r.items() if not k.startswith("nav_")} for r in records]
    assert compute_metrics(stripped)["navigation"] == runs["MV-fps"]["metrics"]["navigation"]
    assert {"name", "expected", "observed", "accumulated_status"} <= set(rec["transcript"][0]["attributes"][0])
    assert (tmp_path / "out" / "report.md").is_file() and (tmp_path / "out" / "accuracy_vs_asd.png").is_file()


def test_unreadable_capture_is_a_flagged_failure(dataset, tmp_path):
    import shutil

    root, _ = dataset
    shutil.copytree(root / "a", tmp_path / "c")
    index = tmp_path / "c" / "val" / "pv_index_all.jsonl"
    broken = json.loads(index.read_text().splitlines()[0])["episode_path"]
    for png in (tmp_path / "c" / broken / "rgb").glob("*.png"):
        png.write_bytes(b"not a png")
    runs = evaluate(index, tmp_path / "out", {"SV": AgentConfig(mode="single", nbv="none")}, log=lambda *_: None)
    assert runs["SV"]["metrics"]["errors"] == 3 and runs["SV"]["metrics"]["n"] == 9


def test_sets_written_before_the_public_layout_keep_their_meaning(dataset, tmp_path):
    """Our earlier writer put the target's texts in text_pos and the query's in text_neg."""
    import shutil

    root, _ = dataset
    shutil.copytree(root / "a", tmp_path / "old")
    index = tmp_path / "old" / "val" / "pv_index_all.jsonl"
    rows = [json.loads(line) for line in index.read_text().splitlines()]
    old_rows = []
    for r in rows:
        q, t = r["query_descriptions"], r["target_descriptions"]
        keep = {k: v for k, v in r.items() if k in ("scene_key", "episode_id", "object_id", "object_category", "episode_path",
                                                      "query_object_id", "neg_object_id", "pair_type", "label",
                                                      "valid_start_sectors", "navigable_sectors")}
        old_rows.append({**keep, "text_pos": t, "text_neg": q if r["pair_type"] != "positive" else r["text_neg"]})
    index.write_text("".join(json.dumps(r) + "\n" for r in old_rows))
    for meta_path in (tmp_path / "old" / "pin_capture").rglob("meta.json"):
        meta = json.loads(meta_path.read_text())
        meta.pop("format_version")
        meta_path.write_text(json.dumps(meta))
    for new, old in zip(load_index(root / "a" / "val" / "pv_index_all.jsonl"), load_index(index)):
        assert old.query_texts == new.query_texts and old.target_descriptions == new.target_descriptions

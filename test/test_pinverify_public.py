"""The public PInVerify layout (github.com/Avalon-S/PInVerify), read verbatim: its example index
row, the rows its index builder writes, and result records as its evaluator writes them, scored
by `personal verify score` against hand-computed metrics."""
import json

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from personal.verification.cli import app
from personal.verification.metrics import RecordError, compute_metrics
from personal.verification.reader import load_index

# data/examples/index.jsonl of the public repository, verbatim
EXAMPLE_ROW = '{"scene_key": "00800-TEEsavR23oF", "episode_id": "0", "object_id": "3f5948f7f47343acb868072a7fe92ada", "object_category": "backpack", "episode_path": "pin_capture/val/00800-TEEsavR23oF/0", "captures_meta": [{"tag": "s0_far", "sector_index": 0, "view_type": "far", "rgb_filename": "rgb/rgb_s0_far.png"}, {"tag": "s2_far", "sector_index": 2, "view_type": "far", "rgb_filename": "rgb/rgb_s2_far.png"}, {"tag": "s2_near", "sector_index": 2, "view_type": "near", "rgb_filename": "rgb/rgb_s2_near.png"}, {"tag": "s4_far", "sector_index": 4, "view_type": "far", "rgb_filename": "rgb/rgb_s4_far.png"}, {"tag": "s4_near", "sector_index": 4, "view_type": "near", "rgb_filename": "rgb/rgb_s4_near.png"}, {"tag": "s6_far", "sector_index": 6, "view_type": "far", "rgb_filename": "rgb/rgb_s6_far.png"}, {"tag": "s6_near", "sector_index": 6, "view_type": "near", "rgb_filename": "rgb/rgb_s6_near.png"}, {"tag": "s8_far", "sector_index": 8, "view_type": "far", "rgb_filename": "rgb/rgb_s8_far.png"}, {"tag": "s10_far", "sector_index": 10, "view_type": "far", "rgb_filename": "rgb/rgb_s10_far.png"}], "query_object_id": "3f5948f7f47343acb868072a7fe92ada", "text_pos": ["a grey herschel backpack with brown straps and buckles on the front", "a grey backpack with brown straps", "a grey backpack with brown straps"], "text_neg": ["a pink kanken with rainbow straps on the top", "a salmon-pink kanken backpack with colorful straps", "a backpack with a rainbow handle and a red patch on it"], "neg_object_id": "942d8c56ceeb43b585df40702875a9d8"}'  # noqa: E501
GOAL = [2.0, 0.4, -3.0]  # habitat frame


def _capture_episode(ep_dir, tags, trap=()):
    """A v1 meta.json as the public environment reads it: captures with habitat-frame
    camera_position around goal_position_nominal."""
    caps = []
    for tag in tags:
        sector, view = tag[1:].split("_")
        az = np.radians(int(sector) * 30 + 15)
        r = 1.05 if view == "near" else 1.55
        rgb = f"rgb/rgb_{tag}.png"
        (ep_dir / "rgb").mkdir(parents=True, exist_ok=True)
        Image.fromarray(np.full((36, 64, 3), 100, np.uint8)).save(ep_dir / rgb)
        caps.append({"tag": tag, "rgb": rgb, "navigable": True, "mask_meets_threshold": tag not in trap,
                     "camera_position": [GOAL[0] + r * np.cos(az), 0.88, GOAL[2] + r * np.sin(az)]})
    meta = {"scene_key": ep_dir.parent.name, "episode_id": ep_dir.name, "object_id": "obj", "object_category": "backpack",
            "goal_position_nominal": GOAL, "captures": caps}
    (ep_dir / "meta.json").write_text(json.dumps(meta))


def test_example_row_verbatim(tmp_path):
    row = json.loads(EXAMPLE_ROW)
    _capture_episode(tmp_path / row["episode_path"], [c["tag"] for c in row["captures_meta"]], trap=("s8_far",))
    index = tmp_path / "val" / "pv_index_example.jsonl"
    index.parent.mkdir()
    index.write_text(EXAMPLE_ROW + "\n")
    [pair] = load_index(index)  # strict
    assert (pair.pair_type, pair.label) == ("positive", 1)  # no pair_type / label: a positive, as the public evaluator defaults
    assert pair.query_texts == row["text_pos"] and pair.object_id == row["object_id"]
    assert pair.valid_start_sectors == [0, 2, 4, 6, 10] and pair.navigable_sectors == [0, 2, 4, 6, 8, 10]
    az = {v.tag: v.azimuth_deg for v in pair.capture.viewpoints}
    # habitat (x, z) angle +15 deg is map azimuth -15 deg (habitat z = -map y)
    assert az["s0_far"] == pytest.approx(-15.0) and az["s2_near"] == pytest.approx(-75.0)
    res = CliRunner().invoke(app, ["check", str(index)])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["episodes"] == 1


def test_builder_rows_take_texts_from_the_description_file(tmp_path):
    """Rows as pver/data/builder.py + NegativeSampler write them: no texts, no captures_meta."""
    ep = "pin_capture/val/00831-yr17PDCnDDW/43"
    _capture_episode(tmp_path / ep, ["s0_far", "s0_near", "s2_far", "s4_far", "s6_far"], trap=("s2_far",))
    base = {"episode_path": ep, "scene": "00831-yr17PDCnDDW", "episode": "43", "meta_path": ep + "/meta.json",
            "rgb_dir": ep + "/rgb", "depth_dir": ep + "/depth", "target_object_id": "wal_1", "target_object_category": "wallet",
            "valid_start_sectors": [0, 4, 6], "navigable_sectors": [0, 2, 4, 6], "n_navigable": 4, "n_mask_visible": 3}
    rows = [dict(base, query_object_id="wal_1", query_object_category="wallet", label=1, pair_type="positive"),
            dict(base, query_object_id="wal_2", query_object_category="wallet", label=0, pair_type="neg_same")]
    (tmp_path / "val").mkdir()
    index = tmp_path / "val" / "pv_index_sectors6_50.jsonl"
    index.write_text("".join(json.dumps(r) + "\n" for r in rows))
    texts = {"wal_1": ["a grey wallet", "a grey zip wallet", "a small grey wallet"],
             "wal_2": ["a black leather wallet", "a worn black wallet", "a dark wallet"]}
    (tmp_path / "object_descriptions_with_category.json").write_text(json.dumps(
        {k: {"descriptions": v, "object_category": "wallet"} for k, v in texts.items()}))
    pos, neg = load_index(index)
    assert pos.query_texts == texts["wal_1"] and neg.query_texts == texts["wal_2"]
    assert neg.target_descriptions == texts["wal_1"] and (neg.scene_key, neg.episode_id) == ("00831-yr17PDCnDDW", "43")


# ---------------------------------------------------------------- results, as scripts/evaluate.py writes them
def _record(ep, pt, label, pred, steps, correct, cat, unreach, trap, first, transcript=None):
    r = {"episode_id": ep, "scene_id": "00853-5cdEh9F2hJL", "object_id": f"q{ep}", "target_object_id": f"t{ep}",
         "target_object_category": cat, "query_object_category": cat, "prediction": pred, "label": label,
         "pair_type": pt, "query_descriptions": ["a"], "target_descriptions": ["b"], "steps": steps,
         "is_correct": correct, "transcript": transcript or [{"step": 1, "observation": {"rgb_path": "x.png"},
                                                             "action": {"decision": pred}, "info": {"decision": pred}}],
         "first_view_prediction": first, "prediction_flips": 0, "flip_direction": "stable_correct"}
    if unreach is not None:
        r.update(nav_failures=unreach + trap, nav_fail_unreachable=unreach, nav_fail_trap=trap, effective_views=steps - unreach - trap)
    return r


def _step(k, decision, **info):
    return {"step": k, "observation": {"rgb_path": f"rgb/{k}.png"}, "action": {"decision": decision, "nav_rel": "back"},
            "info": {"decision": decision, "tracker_state": {}, **info}}


PUBLIC_RESULTS = [
    _record("1", "positive", 1, "Yes", 1, True, "backpack", 0, 0, "Yes"),
    _record("2", "positive", 1, "No", 4, False, "backpack", 1, 1, "Yes"),
    # navigation failures only in the transcript (no record-level counts)
    _record("3", "neg_same", 0, "No", 3, True, "wallet", None, None, "No",
            transcript=[_step(1, "Unsure", trap_view=True), _step(2, "Unsure", navigation_failed=True), _step(3, "No")]),
    _record("4", "neg_same", "No", "Yes", 2, False, "wallet", 0, 0, "Yes"),  # label as Yes/No text
    _record("5", "neg_diff", 0, "Unsure", 6, False, "backpack", 2, 0, "Unsure"),  # forced stop
    _record("6", "neg_diff", 0, 0, 1, True, "wallet", 0, 0, "No"),  # prediction as 1/0
]


def test_score_reproduces_hand_computed_metrics(tmp_path):
    path = tmp_path / "results.json"  # the public evaluator's results.json: a JSON list
    path.write_text(json.dumps(PUBLIC_RESULTS, indent=1))
    res = CliRunner().invoke(app, ["score", str(path), "--json"])
    assert res.exit_code == 0, res.output
    m = json.loads(res.output)
    assert m["n"] == 6 and m["accuracy"] == 0.5
    assert {pt: v["accuracy"] for pt, v in m["per_pair_type"].items()} == {"positive": 0.5, "neg_same": 0.5, "neg_diff": 0.5}
    assert m["per_category"]["backpack"]["accuracy"] == round(1 / 3, 4) and m["per_category"]["wallet"]["accuracy"] == round(2 / 3, 4)
    assert m["asd"] == round(17 / 6, 4)
    nav = m["navigation"]
    assert (nav["moves"], nav["nav_fail_unreachable"], nav["nav_fail_trap"], nav["nav_failures"]) == (11, 4, 2, 6)
    assert nav["failure_rate_per_move"] == round(6 / 11, 4) and nav["failure_rate_per_step"] == round(6 / 17, 4)
    assert m["per_pair_type"]["neg_same"]["nav_fail_unreachable"] == 1 and m["per_pair_type"]["neg_same"]["nav_fail_trap"] == 1
    assert m["first_view_accuracy"] == 0.8  # 4 of the 5 episodes whose first view said Yes or No
    assert m["unsure_predictions"] == 1 and m["predicted_yes_rate"] == round(2 / 6, 4)
    text = CliRunner().invoke(app, ["score", str(path)]).output
    for line in ("accuracy            0.5000", "nav_fail_unreachable 4", "nav_fail_trap       2", "moves               11"):
        assert line in text, text
    # the same records one per line (our results_*.jsonl) score the same
    lines = tmp_path / "results.jsonl"
    lines.write_text("".join(json.dumps(r) + "\n" for r in PUBLIC_RESULTS))
    assert json.loads(CliRunner().invoke(app, ["score", str(lines), "--json"]).output) == m


def test_missing_fields_are_errors_never_zeros(tmp_path):
    no_cat = [{k: v for k, v in PUBLIC_RESULTS[0].items() if k != "target_object_category"}]
    with pytest.raises(RecordError, match="record 0: missing field 'target_object_category'"):
        compute_metrics(no_cat)
    no_nav = [{k: v for k, v in PUBLIC_RESULTS[1].items() if not k.startswith("nav_") and k != "transcript"}]
    with pytest.raises(RecordError, match="record 0: missing field 'nav_fail_unreachable' and no transcript"):
        compute_metrics(no_nav)
    silent = dict(PUBLIC_RESULTS[2], transcript=[{"step": 1}])
    with pytest.raises(RecordError, match=r"transcript\[0\] says nothing about navigation"):
        compute_metrics([silent])
    with pytest.raises(RecordError, match="is_correct True contradicts"):
        compute_metrics([dict(PUBLIC_RESULTS[1], is_correct=True)])
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(no_cat[0]) + "\n")
    res = CliRunner().invoke(app, ["score", str(bad)])
    assert res.exit_code == 1 and "target_object_category" in res.output

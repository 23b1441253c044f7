"""Reader for the public PInVerify layout, on a hand-made folder built in the test."""
import json

import numpy as np
import pytest
from PIL import Image

from personal.verification.reader import DatasetError, load_descriptions, load_index, load_meta

TEXTS = ["a red mug with a black handle", "a ceramic mug", "the mug is mostly red"]
NEG = ["a blue mug", "a blue ceramic mug", "the mug is mostly blue"]


def write_png(path, value=128, mask=False):
    path.parent.mkdir(parents=True, exist_ok=True)
    arr = np.zeros((36, 64), np.uint8) if mask else np.full((36, 64, 3), value, np.uint8)
    if mask:
        arr[10:20, 20:40] = 255
    Image.fromarray(arr).save(path)


def build(root, *, extra_line_field=None, drop_line_field=None, drop_image=None, meta_extra=None, bad_line=False):
    ep = root / "pin_capture" / "val" / "sceneA" / "ep1"
    vps = []
    for k, nav, vis in [(0, True, True), (2, True, False), (4, False, False)]:
        for vt in ("near", "far"):
            vp = {"sector_index": k, "navigable": nav, "mask_meets_threshold": vis,
                  "rgb": f"rgb/rgb_s{k}_{vt}.png" if nav else None, "mask_bbox_xyxy": [20, 10, 40, 20] if nav else None}
            if nav:
                vp["mask"] = f"mask/mask_s{k}_{vt}.png"
                if drop_image != f"rgb_s{k}_{vt}.png":
                    write_png(ep / vp["rgb"])
                write_png(ep / vp["mask"], mask=True)
            vps.append(vp)
    meta = {"scene_key": "sceneA", "episode_id": "ep1", "object_id": "mug_1", "object_category": "mug",
            "goal_position_nominal": [1.0, 2.0, 0.8], "viewpoints": vps, **(meta_extra or {})}
    ep.mkdir(parents=True, exist_ok=True)
    (ep / "meta.json").write_text(json.dumps(meta))
    line = {
        "scene_key": "sceneA", "episode_id": "ep1", "object_id": "mug_1", "object_category": "mug",
        "episode_path": "pin_capture/val/sceneA/ep1",
        "captures_meta": [{"tag": "s0_near", "sector_index": 0, "view_type": "near", "rgb_filename": "rgb/rgb_s0_near.png"}],
        "query_object_id": "mug_1", "text_pos": TEXTS, "text_neg": NEG, "neg_object_id": None,
        "pair_type": "positive", "label": 1, "valid_start_sectors": [0], "navigable_sectors": [0, 2],
    }
    # public semantics: text_pos holds what the agent is asked about (the query), text_neg the target
    neg = dict(line, query_object_id="mug_2", neg_object_id="mug_2", pair_type="neg_same", label=0, text_pos=NEG, text_neg=TEXTS)
    if extra_line_field:
        neg[extra_line_field] = 1
    if drop_line_field:
        del neg[drop_line_field]
    (root / "val").mkdir(parents=True, exist_ok=True)
    index = root / "val" / "pv_index_all.jsonl"
    body = json.dumps(line) + "\n" + ("{not json\n" if bad_line else json.dumps(neg) + "\n")
    index.write_text(body)
    (root / "object_descriptions.json").write_text(json.dumps({"mug_1": TEXTS, "mug_2": {"descriptions": NEG}}))
    return index


def test_reads_public_layout(tmp_path):
    pairs = load_index(build(tmp_path))
    assert [p.pair_type for p in pairs] == ["positive", "neg_same"]
    pos, neg = pairs
    assert pos.query_texts == TEXTS and neg.query_texts == NEG  # negatives are queried with the distractor's text
    assert neg.target_descriptions == TEXTS and pos.target_descriptions == TEXTS
    assert pos.capture is neg.capture  # one meta.json read per episode
    cap = pos.capture
    assert cap.navigable_sectors() == [0, 2] and cap.visible_sectors() == [0] and cap.trap_sectors() == [2]
    assert {v.tag for v in cap.viewpoints} == {"s0_near", "s0_far", "s2_near", "s2_far", "s4_unknown"}
    s0 = [v for v in cap.viewpoints if v.tag == "s0_near"][0]
    assert s0.view_type == "near" and s0.mask == "mask/mask_s0_near.png" and s0.mask_bbox_xyxy == [20, 10, 40, 20]
    assert load_descriptions(tmp_path) == {"mug_1": TEXTS, "mug_2": NEG}


def test_unknown_field_names_file_and_line(tmp_path):
    index = build(tmp_path, extra_line_field="surprise")
    with pytest.raises(DatasetError, match=r"pv_index_all.jsonl:2: unknown field\(s\) \['surprise'\]"):
        load_index(index)
    assert len(load_index(index, strict=False)) == 2  # lenient mode for releases with extra fields


def test_missing_field_names_file_and_line(tmp_path):
    with pytest.raises(DatasetError, match=r"pv_index_all.jsonl:2: missing field 'episode_path' \(or 'meta_path'\)"):
        load_index(build(tmp_path, drop_line_field="episode_path"))


def test_malformed_line(tmp_path):
    with pytest.raises(DatasetError, match=r"pv_index_all.jsonl:2: malformed JSON"):
        load_index(build(tmp_path, bad_line=True))


def test_missing_image_names_the_file(tmp_path):
    with pytest.raises(DatasetError, match=r"meta.json: viewpoints\[3\]: missing image .*rgb_s2_far.png"):
        load_index(build(tmp_path, drop_image="rgb_s2_far.png"))


def test_unknown_meta_field_and_bad_values(tmp_path):
    build(tmp_path, meta_extra={"weird": 1})
    with pytest.raises(DatasetError, match=r"meta.json: unknown field\(s\) \['weird'\]"):
        load_meta(tmp_path / "pin_capture/val/sceneA/ep1/meta.json")
    index = build(tmp_path / "b")
    lines = index.read_text().splitlines()
    bad = json.loads(lines[1])
    bad["label"] = 1  # contradicts neg_same
    index.write_text(lines[0] + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(DatasetError, match=r":2: label 1 contradicts pair_type 'neg_same'"):
        load_index(index)


def test_missing_index_and_meta(tmp_path):
    with pytest.raises(DatasetError, match="index file not found"):
        load_index(tmp_path / "nope.jsonl")
    index = build(tmp_path)
    (tmp_path / "pin_capture/val/sceneA/ep1/meta.json").unlink()
    with pytest.raises(DatasetError, match=r"pv_index_all.jsonl:1: episode_path .*meta.json not found"):
        load_index(index)


def test_azimuth_from_positions_in_either_frame(tmp_path):
    from personal.verification.reader import _fill_azimuths
    from personal.verification.schema import Viewpoint

    def vps(positions):
        return [Viewpoint(f"s{i}_near", i, "near", True, True, "x.png", position=p) for i, p in enumerate(positions)]

    zup = vps([[2.0, 1.0, 0.0], [1.0, 2.0, 0.0], [0.0, 1.0, 0.0]])  # map frame, goal (1, 1, 0.5)
    _fill_azimuths(zup, [1.0, 1.0, 0.5])
    assert [round(v.azimuth_deg) for v in zup] == [0, 90, 180]
    yup = vps([[2.0, 0.1, 1.0], [1.0, 0.1, 2.0], [1.0, 0.1, 0.0]])  # habitat y-up, goal (1, 0.6, 1)
    _fill_azimuths(yup, [1.0, 0.6, 1.0])
    assert [round(v.azimuth_deg) for v in yup] == [0, -90, 90]  # habitat +z is map -y
    cams = [Viewpoint(f"s{i}_far", i, "far", True, True, "x.png", camera_position=p)
            for i, p in enumerate([[2.0, 0.9, 1.0], [1.0, 0.9, 2.0], [1.0, 0.9, 0.0]])]
    _fill_azimuths(cams, [1.0, 0.4, 1.0])  # public camera_position around goal_position_nominal
    assert [round(v.azimuth_deg) for v in cams] == [0, -90, 90]


def test_cli_check_and_eval_report_errors(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from personal.verification.cli import app

    runner = CliRunner()
    index = build(tmp_path, extra_line_field="surprise")
    res = runner.invoke(app, ["check", str(index)])
    assert res.exit_code == 1 and "unknown field(s) ['surprise']" in res.output
    res = runner.invoke(app, ["check", str(index), "--lenient"])
    assert res.exit_code == 0 and '"episodes": 2' in res.output
    monkeypatch.delenv("PERSONAL_LLM_BASE_URL", raising=False)
    monkeypatch.delenv("PERSONAL_LLM_MODEL", raising=False)
    res = runner.invoke(app, ["eval", str(index), "--out", str(tmp_path / "o"), "--runs", "llm", "--lenient"])
    assert res.exit_code == 1 and "PERSONAL_LLM_BASE_URL" in res.output

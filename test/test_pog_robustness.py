"""`personal pog robustness`: the same episodes grounded under each camera preset, learned beside
ORACLE, in one table whose rows come from each preset's own reports."""
from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.timeout(300)


def test_robustness_table_per_preset(tmp_path):
    from personal.grounding.eval.pog_run import robustness_offline

    res = robustness_offline(tmp_path, presets=("ideal", "d435", "d435[gains]"), scenes=1, splits=("easy",),
                             episodes_per_split=2, methods=("qs", "rpg-scene"), max_steps=12, width=96, height=72)
    assert set(res) == {"ideal", "d435", "d435[gains]"}
    folders = {"ideal": "ideal", "d435": "d435", "d435[gains]": "d435-gains"}  # one component of d435 alone
    ids = {p: sorted(r["episode_id"] for r in json.loads((tmp_path / folders[p] / "learned" / "results.json").read_text()))
           for p in res}
    assert ids["ideal"] == ids["d435"] == ids["d435[gains]"] and len(ids["ideal"]) == 2 * 2  # same episodes, two methods each
    table = (tmp_path / "robustness.md").read_text().splitlines()
    assert table[0] == "# POG robustness to the camera: learned lit beside the ORACLE oracle"
    for preset in ("ideal", "d435", "d435[gains]"):
        learned = res[preset]["learned"]["methods"]["rpg-scene"]["total"]["sr_top1"]
        oracle = res[preset]["upper_bound"]["methods"]["rpg-scene"]["total"]["sr_top1"]
        row = next(line for line in table if line.startswith(f"| {preset} |") and "scene" in line.lower()).split("|")
        assert float(row[3]) == pytest.approx(learned, abs=0.05) and float(row[4]) == pytest.approx(oracle, abs=0.05)
    assert "- d435: d435 (HFOV 79°" in "\n".join(table) and "- d435[gains]: d435[gains] (HFOV 79°" in "\n".join(table)
    assert "Camera: d435" in (tmp_path / "d435" / "report.md").read_text()


def test_robustness_maps_with_the_named_checkpoint(tmp_path):
    """--model-path: the learned maps come from that checkpoint (its folder name is the encoder's),
    and the table says which."""
    from personal.grounding.eval.pog_run import robustness_offline
    from personal.models.lit import shipped_checkpoint

    ck = tmp_path / "other-tower"
    ck.mkdir()
    for f in shipped_checkpoint().iterdir():
        (ck / f.name).write_bytes(f.read_bytes())
    res = robustness_offline(tmp_path / "run", presets=("ideal",), scenes=1, splits=("easy",), episodes_per_split=1,
                             methods=("rpg-scene",), max_steps=8, width=96, height=72, model_path=str(ck))
    assert res["ideal"]["learned"]["meta"]["encoder"] == "lit:other-tower"
    assert f"checkpoint: `{ck}`" in (tmp_path / "run" / "robustness.md").read_text()


def test_pog_compare_passes_the_checkpoint_through(tmp_path, monkeypatch):
    """`personal pog compare --model-path` reaches compare_offline (which maps with it, as robustness does)."""
    from typer.testing import CliRunner

    from personal.grounding.eval import pog_cli, pog_run

    seen = {}
    monkeypatch.setattr(pog_run, "compare_offline", lambda run, **kw: seen.update(kw))
    result = CliRunner().invoke(pog_cli.app, ["compare", "--model-path", "some/checkpoint", "--out-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert seen["model_path"] == "some/checkpoint" and seen["encoder"] == "lit"

"""PAN's honest default: the learned `lit` encoder leads, the ORACLE encoder's explorers on the
same episodes sit beside it labelled as an upper bound, and the headline names the encoder."""
from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.timeout(240)


def test_pan_defaults_are_the_learned_encoder_with_the_oracle_bound():
    from personal.graphs import GRAPHS
    from personal.navigation.cli import eval_cmd  # noqa: F401  (the CLI module imports)

    args = GRAPHS["pan_eval"].arguments
    assert args["encoder"][0] == "lit" and args["upper_bound"][0] == "oracle-encoder"
    evaluator = next(n for n in GRAPHS["pan_eval"].nodes if n.name == "pan_evaluator")
    assert {"encoder", "upper_bound", "extractor"} <= set(evaluator.parameters)


def test_learned_run_reports_the_oracle_encoder_upper_bound_beside_it(tmp_path):
    from personal.navigation.eval.pan_run import generate_pan_set, make_components, run_pan_offline

    scenes, eps = generate_pan_set(1, ("easy",), 1, seed=100)
    methods = ["random-frontier", "value-map-qs"]
    summary = run_pan_offline(scenes, eps, methods, tmp_path, make_components("lit"), max_steps=6, sample_plots=0)
    assert summary["meta"]["encoder"] == "lit:lit-minilm-household" and not summary["meta"]["encoder_is_oracle"]
    ub = summary["upper_bound"]
    assert not ub["error"] and list(ub["methods"]) == ["value-map-qs"]  # random frontier reads no features
    bound_rows = json.loads((tmp_path / "upper_bound" / "results.json").read_text())
    assert [(r["episode_id"], r["method"]) for r in bound_rows] == [(eps[0].episode_id, "value-map-qs")]
    assert bound_rows[0]["is_oracle"]
    report = (tmp_path / "report.md").read_text().splitlines()
    assert report[0] == "# PersONAL PAN evaluation — encoder lit:lit-minilm-household, learned encoder (no ground truth)"
    i = report.index("## ORACLE upper bound — not a method")
    assert "ORACLE encoder (oracle-captions-minilm" in report[i + 2]
    ratio = next(line for line in report[i:] if line.startswith("| Value-map explorer (QS) |"))
    learned_sr, oracle_sr = summary["methods"]["value-map-qs"]["total"]["sr"], ub["methods"]["value-map-qs"]["total"]["sr"]
    assert ratio.split("|")[2].strip() == f"{learned_sr:.1f}" and ratio.split("|")[3].strip() == f"{oracle_sr:.1f}"


def test_oracle_run_has_no_upper_bound_and_says_oracle_in_its_headline(tmp_path):
    from personal.navigation.eval.pan_run import generate_pan_set, make_components, run_pan_offline

    scenes, eps = generate_pan_set(1, ("easy",), 1, seed=100)
    summary = run_pan_offline(scenes, eps, ["value-map-qs"], tmp_path, make_components("oracle"), max_steps=4, sample_plots=0)
    assert "upper_bound" not in summary and not (tmp_path / "upper_bound").exists()
    head = (tmp_path / "report.md").read_text().splitlines()[0]
    assert head == "# PersONAL PAN evaluation — encoder oracle-captions-minilm, ORACLE encoder (reads simulator ground truth)"


def test_sharded_pan_report_computes_the_bound_once_for_the_whole_set(tmp_path):
    """workers:=N: shards run without the bound (child_fixed), the merged report adds it for all episodes."""
    from personal.navigation.eval.pan_shard import PanKind
    from personal.graphs import GRAPHS

    values = {k: spec[0] for k, spec in GRAPHS["pan_eval"].arguments.items()}
    values.update(scenes=1, split="easy", episodes_per_scene=1, seed=100, methods="random-frontier,value-map-qs", max_steps=4)
    kind = PanKind()
    assert kind.child_fixed == {"upper_bound": "none"}
    _, episodes = kind.load(values)
    records = [{"episode_id": e.episode_id, "scene_id": e.scene_id, "split": e.split, "method": m, "success": False,
                "spl": 0.0, "dtg": 1.0, "steps": 4, "stopped": False, "path_length": 0.0, "geodesic_distance": 1.0, "stop_distance": 1.0,
                "collisions": 0} for e in episodes for m in ("random-frontier", "value-map-qs")]
    meta = {"encoder": "lit", "encoder_is_oracle": False}
    kind.write(tmp_path, records, meta, values)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert list(summary["upper_bound"]["methods"]) == ["value-map-qs"]
    assert summary["upper_bound"]["methods"]["value-map-qs"]["total"]["n"] == len(episodes)

"""The main job's report puts an ORACLE upper bound beside a non-oracle run (issue 12, point 7):
the same episodes grounded on ORACLE top-down caption maps, labelled as a bound, with the run /
bound ratios computed from both summaries; a failed bound is said, not hidden; sharded runs
compute it once, in the merged report."""
from __future__ import annotations

import json

import pytest

from personal.grounding.eval.pog import UpperBound, write_report
from personal.grounding.eval.pog_run import generate_episode_set, oracle_upper_bound
from personal.benchmarks import KINDS
from personal.runs.shard import child_arguments

METHODS = ["random", "qs", "rpg-scene"]


@pytest.fixture(scope="module")
def small_set():
    return generate_episode_set(1, ["easy", "hard"], 1, 5)


@pytest.fixture(scope="module")
def bound(small_set):
    scenes, episodes = small_set
    return oracle_upper_bound(scenes, episodes, METHODS, 0.5)


def _shifted(results, shift_m: float):
    """The bound's records with every prediction moved ``shift_m`` along x: a worse 'run'."""
    from personal.grounding.eval.pog import EpisodeResult

    out = []
    for r in results:
        d = r.to_dict()
        d["distances_m"] = [x + shift_m if x is not None else None for x in d["distances_m"]]
        d["success_top1"] = bool(d["distances_m"]) and d["distances_m"][0] is not None and d["distances_m"][0] <= 1.0
        out.append(EpisodeResult.from_dict(d))
    return out


def test_bound_grounds_every_episode_with_every_method_on_oracle_maps(small_set, bound):
    _, episodes = small_set
    assert "ORACLE" in bound.label and not bound.error
    assert sorted((r.episode_id, r.method) for r in bound.results) == sorted((e.episode_id, m) for e in episodes for m in METHODS)
    assert all(r.failure is None for r in bound.results if r.method != "random")
    assert any(r.success_top1 for r in bound.results if r.method == "rpg-scene")  # ORACLE maps hold the answer


def test_report_leads_with_the_run_and_puts_the_labelled_bound_beside_it(tmp_path, bound):
    run = _shifted(bound.results, 1.5)
    summary = write_report(tmp_path, run, {"encoder": "lit:test", "encoder_is_oracle": False}, METHODS, upper_bound=bound)
    lines = (tmp_path / "report.md").read_text().splitlines()
    heads = [line for line in lines if line.startswith("## ")]
    assert heads[1].startswith("## SR@top-1") and heads[2].startswith("## ORACLE upper bound: ORACLE top-down")
    assert summary["upper_bound"]["methods"]["rpg-scene"]["total"]["sr_top1"] is not None
    stored = json.loads((tmp_path / "upper_bound" / "results.json").read_text())
    assert len(stored) == len(bound.results)
    on_disk = json.loads((tmp_path / "summary.json").read_text())
    assert on_disk["upper_bound"]["label"] == bound.label
    ours, orc = summary["methods"]["rpg-scene"]["total"]["sr_top1"], summary["upper_bound"]["methods"]["rpg-scene"]["total"]["sr_top1"]
    at = lines.index("### This run / ORACLE upper bound, SR@top-1 (%)")
    r = next(line for line in lines[at:] if line.startswith("| RPG scene-relative")).split("|")
    assert float(r[2]) == pytest.approx(ours, abs=0.05) and float(r[3]) == pytest.approx(orc, abs=0.05)
    assert r[4].strip() == (f"{100 * ours / orc:.0f} %" if orc else "–")
    assert ours < orc  # moving every prediction 1.5 m away loses successes


def test_a_failed_bound_is_reported_as_not_computed(tmp_path, bound):
    write_report(tmp_path, bound.results, {"encoder": "lit:test", "encoder_is_oracle": False}, METHODS,
                 upper_bound=UpperBound("ORACLE top-down caption maps", error="RuntimeError: no MiniLM"))
    text = (tmp_path / "report.md").read_text()
    assert "Not computed: RuntimeError: no MiniLM." in text
    assert not (tmp_path / "upper_bound" / "results.json").read_text().strip("[]\n ")


def test_no_bound_without_one(tmp_path, bound):
    write_report(tmp_path, bound.results, {"encoder": "oracle", "encoder_is_oracle": True}, METHODS)
    assert "ORACLE upper bound" not in (tmp_path / "report.md").read_text()
    assert "upper_bound" not in json.loads((tmp_path / "summary.json").read_text())


def test_llm_extractor_bound_is_skipped_with_a_reason(small_set):
    scenes, episodes = small_set
    ub = oracle_upper_bound(scenes, episodes, METHODS, 0.5, extractor="llm")
    assert not ub.results and "llm" in ub.error


def test_sharded_run_computes_the_bound_once_in_the_merged_report(tmp_path, small_set, bound):
    kind = KINDS["pog_eval"]
    assert child_arguments(kind, {}, {"upper_bound": "oracle-topdown", "workers": "2"})["upper_bound"] == "none"
    values = {"episodes_dir": "", "scenes": 1, "episodes_per_split": 1, "splits": "easy,hard", "seed": 5,
              "methods": ",".join(METHODS), "upper_bound": "oracle-topdown", "resolution": 0.5, "extractor": "builtin"}
    records = [r.to_dict() for r in _shifted(bound.results, 1.5)]
    kind.write(tmp_path / "a", records, {"encoder": "lit:test", "encoder_is_oracle": False}, values)
    merged = json.loads((tmp_path / "a" / "summary.json").read_text())["upper_bound"]["methods"]
    ref = bound.summary(METHODS)["methods"]
    sr = lambda per: {c: (v["n"], v["sr_top1"], v["sr_top3"]) for c, v in per.items()}  # noqa: E731 (latency differs per run)
    assert {m: sr(per) for m, per in merged.items()} == {m: sr(per) for m, per in ref.items()}
    kind.write(tmp_path / "b", records, {"encoder": "oracle", "encoder_is_oracle": True}, values)
    assert "upper_bound" not in json.loads((tmp_path / "b" / "summary.json").read_text())


def test_evaluator_refuses_an_unknown_upper_bound_naming_the_parameter(tmp_path):
    """The graph's Choice checks it before start; the node itself, run alone, says what is wrong."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from personal.runner import node_command

    cmd = node_command("nodes.pog_evaluator_node", "pog_evaluator_bad_bound", parameters={
        "map_source": "oracle", "scenes": 1, "episodes_per_split": 1, "upper_bound": "oracle-everything",
        "out_dir": str(tmp_path / "runs")})
    proc = subprocess.run(cmd, cwd=Path(__file__).resolve().parents[1], env=dict(os.environ), capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode != 0
    assert "parameter upper_bound: expected oracle-topdown | none, got 'oracle-everything'" in proc.stdout + proc.stderr

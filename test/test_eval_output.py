"""Evaluators check their output folder before any work and keep results as they come
(issue 15, finding 6: an unwritable out_dir was found only after all the work, and the results were lost)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from personal.runs.output import RESULTS_LOG, OutputDirError, ResultLog, new_run_dir, writable_dir

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def blocked(tmp_path) -> Path:
    """An out_dir that cannot be created: a file sits where its parent folder should be."""
    (tmp_path / "a_file").write_text("not a folder")
    return tmp_path / "a_file" / "runs"


def test_writable_dir_names_the_folder_and_the_reason(tmp_path, blocked):
    assert writable_dir(tmp_path / "new" / "deep").is_dir()
    with pytest.raises(OutputDirError, match=r"out_dir .*a_file/runs: a parent of it is a file"):
        writable_dir(blocked)
    with pytest.raises(OutputDirError, match="exists and is not a folder"):
        writable_dir(tmp_path / "a_file", "out_dir")
    if Path("/sys/kernel").is_dir():  # not writable even for root
        with pytest.raises(OutputDirError, match="cannot write there"):
            writable_dir("/sys/kernel/personal_runs", "--out")


def test_new_run_dir_is_unique(tmp_path):
    now = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    first, second = new_run_dir(tmp_path, now=now), new_run_dir(tmp_path, now=now)
    assert first.name == "20260102-030405" and second.name == "20260102-030405-2"


def test_result_log_survives_a_torn_last_line(tmp_path):
    log = ResultLog(tmp_path / RESULTS_LOG)
    log.append({"episode": 1, "value": float("nan")})
    log.append({"episode": 2, "path": tmp_path})
    with open(log.path, "a") as fh:  # a crash in the middle of a write
        fh.write('{"episode": 3, "val')
    records = ResultLog.read(log.path)
    assert [r["episode"] for r in records] == [1, 2] and records[1]["path"] == str(tmp_path)
    log.close()


def _cli(*args, timeout=120):
    t0 = time.monotonic()
    out = subprocess.run([sys.executable, "-m", "personal", *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    return out, time.monotonic() - t0


@pytest.mark.parametrize("args", [
    ["pog", "eval", "--map-source", "oracle", "--scenes", "1", "--episodes-per-split", "2", "--out-dir", "{out}"],
    ["pan", "eval", "--scenes", "1", "--per-split", "1", "--out", "{out}"],
    ["perm", "eval", "--backend", "kinematic", "--policy", "scripted", "--seeds", "0", "--out", "{out}"],
])
def test_offline_evaluators_refuse_an_unwritable_folder_first(blocked, args):
    out, seconds = _cli(*[a.format(out=blocked) for a in args])
    assert out.returncode == 2, out
    assert "a_file/runs" in out.stderr and "a parent of it is a file" in out.stderr, out.stderr
    assert "episodes done" not in out.stdout and "[1/" not in out.stdout  # refused before any episode


def test_verification_and_home_evaluators_refuse_an_unwritable_folder_first(blocked, tmp_path):
    from personal.smarthome.evaluate import EvalConfig, run_home_eval
    from personal.verification.agent import AgentConfig
    from personal.verification.evaluate import evaluate

    with pytest.raises(OutputDirError, match="a_file/runs"):  # before the (missing) index is even read
        evaluate(tmp_path / "no_index.jsonl", blocked, {"SV": AgentConfig(mode="single", nbv="none")})
    with pytest.raises(OutputDirError, match="a_file/runs"):
        run_home_eval(EvalConfig(out_dir=str(blocked), households=1))


@pytest.mark.parametrize("module, name, params", [
    ("nodes.pog_evaluator_node", "pog_evaluator", {"map_source": "oracle", "scenes": 1, "episodes_per_split": 1}),
    ("nodes.pan_evaluator_node", "pan_evaluator", {"scenes": 1}),
    ("nodes.view_planner_node", "aiv_view_planner", {}),
    ("nodes.perm_evaluator_node", "perm_evaluator", {}),
])
def test_evaluator_nodes_refuse_an_unwritable_folder_at_start(blocked, run_node, module, name, params):
    node = run_node(module, name, {**params, "out_dir": str(blocked)})
    node.proc.wait(60)
    log = node.log()
    assert node.proc.returncode == 2, log
    assert "a_file/runs" in log and "a parent of it is a file" in log


def test_offline_pog_keeps_every_finished_episode_when_it_crashes(tmp_path, monkeypatch):
    """A crash in the middle of an offline POG run leaves the finished episodes' records in results.jsonl."""
    from personal.grounding.eval import pog_run
    from personal.grounding import pipeline

    inputs = pog_run.build_eval_inputs(scenes=1, splits=["easy"], episodes_per_split=4, resolution=1.0, seed=0,
                                       encoder="oracle", extractor="builtin", methods=["centre", "qs"],
                                       episodes_dir="", maps_dir="", build_maps=True, explore=False)
    real, calls = pipeline.score_grounding, []

    def crash_on_third(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("simulated crash")
        return real(*args, **kwargs)

    monkeypatch.setattr(pipeline, "score_grounding", crash_on_third)
    with pytest.raises(RuntimeError, match="simulated crash"):
        pog_run.run_offline(inputs, tmp_path / "run")
    records = ResultLog.read(tmp_path / "run" / RESULTS_LOG)
    assert len(records) == 2 * 2  # two finished episodes x two methods
    assert {r["method"] for r in records} == {"centre", "qs"} and all("episode_id" in r for r in records)

"""Two runs into one out_dir never mix; a re-run of home_eval resumes (issue 28, items 6 and 9).

Every evaluator takes its out_dir's run lock (personal.runs.output.RunLock) before any work: a
second run is refused naming the folder and the run holding it, with the exit-code table's 2 —
the same code as an unwritable out_dir, whichever evaluator met it."""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from personal import exit_codes
from personal.runs.output import RESULTS_LOG, OutputDirBusy, OutputDirError, ResultLog, resume_log, run_folder

EVALUATOR_NODES = [
    ("nodes.pog_evaluator_node", "pog_evaluator", {"map_source": "oracle", "scenes": 1, "episodes_per_split": 1}),
    ("nodes.pan_evaluator_node", "pan_evaluator", {"scenes": 1}),
    ("nodes.view_planner_node", "aiv_view_planner", {}),
    ("nodes.perm_evaluator_node", "perm_evaluator", {}),
    ("nodes.home_eval_node", "home_eval", {"households": 1}),
]


@pytest.fixture
def held(tmp_path):
    """An out_dir whose run lock another live process holds (a run in progress)."""
    folder = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-c", "import sys, time; from personal.runs.output import run_folder; "
                             f"run_folder({str(folder)!r}); print('locked', flush=True); time.sleep(120)"],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "locked"
    yield folder
    proc.kill()
    proc.wait()


def test_a_second_run_is_refused_naming_the_other_one(held):
    with pytest.raises(OutputDirBusy, match=r"another run is writing there \(pid \d+ on .*started .*\)"):
        run_folder(held)


def test_the_lock_dies_with_its_holder_even_on_sigkill(tmp_path):
    folder = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-c", "import time; from personal.runs.output import run_folder; "
                             f"run_folder({str(folder)!r}); print('locked', flush=True); time.sleep(120)"],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "locked"
    proc.kill()
    proc.wait()
    assert run_folder(folder) == folder  # no stale lock to clean up by hand


@pytest.mark.parametrize("module, name, params", EVALUATOR_NODES, ids=[n for _, n, _ in EVALUATOR_NODES])
def test_every_evaluator_refuses_an_out_dir_in_use_with_code_2(held, run_node, module, name, params):
    node = run_node(module, name, {**params, "out_dir": str(held)})
    node.proc.wait(90)
    log = node.log()
    assert node.proc.returncode == exit_codes.BAD_INPUT, log
    assert str(held) in log and "another run is writing there" in log, log
    assert not (held / RESULTS_LOG).exists() or not (held / RESULTS_LOG).read_text()


def test_home_eval_unwritable_out_dir_gives_the_same_code_as_pog(tmp_path, run_node):
    """Read-only / blocked out_dir: 2 everywhere (before: 1 in home_eval, 2 in pog_eval)."""
    (tmp_path / "a_file").write_text("x")
    node = run_node("nodes.home_eval_node", "home_eval", {"households": 1, "out_dir": str(tmp_path / "a_file" / "runs")})
    node.proc.wait(90)
    assert node.proc.returncode == exit_codes.BAD_INPUT, node.log()
    assert "a_file/runs" in node.log()


def _cfg(out, **kw):
    from personal.smarthome.evaluate import EvalConfig

    return EvalConfig(out_dir=str(out), households=2, seed=30, max_items=3, **kw)


def test_home_eval_rerun_resumes_the_partial_rows_instead_of_truncating(tmp_path):
    from personal.smarthome.evaluate import run_home_eval

    full = run_home_eval(_cfg(tmp_path / "full"))
    rows = ResultLog.read(tmp_path / "full" / RESULTS_LOG)
    part = tmp_path / "part"
    run_home_eval(_cfg(part))
    # a run killed after 5 rows, in the middle of the 6th line
    lines = (part / RESULTS_LOG).read_text().splitlines(keepends=True)
    (part / RESULTS_LOG).write_text("".join(lines[:5]) + lines[5][: len(lines[5]) // 2])
    (part / "summary.json").unlink()
    kept = [json.loads(line) for line in lines[:5]]
    calls = []
    import personal.smarthome.evaluate as ev

    real = ev.score_task
    ev.score_task = lambda task, *a, **k: (calls.append(task.task_id), real(task, *a, **k))[1]
    try:
        again = run_home_eval(_cfg(part))
    finally:
        ev.score_task = real
    assert ResultLog.read(part / RESULTS_LOG) == rows  # same rows as one uninterrupted run, none twice
    assert ResultLog.read(part / RESULTS_LOG)[:5] == kept
    assert len(calls) == len(rows) - 5  # only the missing tasks were run again
    assert {k: v for k, v in again.items() if k != "seconds"} == {k: v for k, v in full.items() if k != "seconds"}
    transcripts = ResultLog.read(part / "transcripts.jsonl")
    assert [t["task"]["task_id"] for t in transcripts] == [r["task_id"] for r in rows]


def test_home_eval_rerun_with_another_configuration_is_refused_and_keeps_the_rows(tmp_path):
    from personal.smarthome.evaluate import run_home_eval

    run_home_eval(_cfg(tmp_path))
    before = (tmp_path / RESULTS_LOG).read_text()
    with pytest.raises(OutputDirError, match=r"results.jsonl holds results of another run \(its run differs in seed\)"):
        run_home_eval(_cfg(tmp_path).__class__(**{**_cfg(tmp_path).__dict__, "seed": 31}))
    assert (tmp_path / RESULTS_LOG).read_text() == before


def test_resume_log_refuses_a_log_without_its_identity(tmp_path):
    (tmp_path / RESULTS_LOG).write_text('{"a": 1}\n')
    with pytest.raises(OutputDirError, match="results.run.json is missing"):
        resume_log(tmp_path / RESULTS_LOG, {"seed": 0})

"""The `pan_eval` graph end to end through the runner: sim bridge + navigation node +
evaluator over topics, a short budget, two policies; report with the success definition."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import only_run

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.timeout(240)


def test_pan_eval_graph_runs_to_a_report(tmp_path):
    out = tmp_path / "runs"
    cmd = [sys.executable, "-m", "personal", "launch", "pan_eval", "scenes:=1", "episodes_per_scene:=1", "split:=easy",
           "seed:=0", "methods:=random-frontier,oracle", "max_steps:=30", f"out_dir:={out}"]
    proc = subprocess.run(cmd, cwd=ROOT, env=dict(os.environ), capture_output=True, text=True, timeout=220)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-4000:]
    run_dir = only_run(out)
    results = {r["method"]: r for r in json.loads((run_dir / "results.json").read_text())}
    assert set(results) == {"random-frontier", "oracle"}
    rnd, orc = results["random-frontier"], results["oracle"]
    assert rnd["steps"] == 30 and rnd["stopped"]  # the random baseline stops when its budget ends
    assert rnd["path_length"] > 0.5  # it really drove through the bridge
    assert orc["is_oracle"] and orc["success"] and orc["stopped"] and orc["steps"] < 30, orc
    report = (run_dir / "report.md").read_text()
    assert "within 1 m of the target object's extent" in report and "ORACLE" in report
    assert "| Easy SR↑ |" in report.replace("Method | Easy", "| Easy")
    from report_browser import check_report

    check_report(run_dir, ["paper (HM3D)", "easy SPL", "PAN: trajectories on the map", "Full report"], "pan_eval_report")

"""The `aiv_eval` graph end to end through the project runner: report, exit code 0, and
episodes whose captures are unreadable recorded as failures instead of stalling the graph."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from personal.graphs import get_graph
from personal.verification.writer import write_dataset

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.timeout(200)


def test_graph_declaration():
    g = get_graph("aiv_eval")
    nodes = {n.spec.name: n for n in g.resolve({"nbv": "random", "index": "/x.jsonl"})}
    assert set(nodes) == {"aiv_replayer", "aiv_verifier", "aiv_view_planner"}
    assert nodes["aiv_view_planner"].spec.required and nodes["aiv_view_planner"].parameters["nbv"] == "random"
    assert nodes["aiv_replayer"].parameters["index"] == "/x.jsonl"
    assert (ROOT / "launch" / "aiv_eval.launch.py").is_file()


def test_aiv_eval_graph_runs_to_a_report(tmp_path):
    index = write_dataset(tmp_path / "data", n_targets=2, seed=21)["index"]
    # make one target's captures unreadable: its three episodes must become recorded failures
    lines = [json.loads(x) for x in Path(index).read_text().splitlines()]
    broken_ep = lines[0]["episode_path"]
    for png in (tmp_path / "data" / broken_ep / "rgb").glob("*.png"):
        png.write_bytes(b"not a png")
    out = tmp_path / "report"
    cmd = [sys.executable, "-m", "personal", "launch", "aiv_eval", f"index:={index}", f"out_dir:={out}", "nbv:=random"]
    proc = subprocess.run(cmd, cwd=ROOT, env=dict(os.environ), capture_output=True, text=True, timeout=180)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-4000:]
    assert "aiv_eval done" in log
    records = [json.loads(x) for x in (out / "results_MV-random.jsonl").read_text().splitlines()]
    assert len(records) == 6
    broken = [r for r in records if r["episode_key"].split("/")[1] == Path(broken_ep).name]
    assert len(broken) == 3 and all(r["prediction"] == "No" and r["error"] for r in broken)
    assert all(not r["error"] for r in records if r not in broken)
    assert json.loads((out / "metrics.json").read_text())["MV-random"]["metrics"]["errors"] == 3
    assert (out / "report.md").is_file() and (out / "metrics.json").is_file()
    from report_browser import check_report

    # the good episodes' views are shown (the broken episode's steps say "no image"): the page still loads whole
    check_report(out, ["paper accuracy (best training-free)", "AIV: chosen views and verdicts", "(no image)"],
                 "aiv_eval_report", min_images=3)

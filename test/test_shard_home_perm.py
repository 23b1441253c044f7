"""Sharded home_eval and perm_eval (issue 16) through the same layer as POG / PAN / AIV
(personal/eval/shard.py): household windows (home) and layout-seed chunks (PeRM) as child graphs
(workers:=2) merge to the serial run's per-task rows in the serial order, and the merged summary is
the serial one. Small sets: 3 households with 2 IG items each; PeRM on the kinematic stand-in with
the scripted policy, 2 layout seeds, a short step budget."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from personal.eval.shard import KINDS

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.timeout(900)
HOME = ["households:=3", "seed:=7", "max_items:=2"]
PERM = ["backend:=kinematic", "policy:=scripted", "missions:=bin", "prefs:=speed_up,prefer_red", "seeds:=0,1",
        "suites:=none,single", "max_steps:=120", "strips:=1"]


def _launch(graph: str, args: list[str], out: Path, *extra: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "personal", "launch", graph, *args, f"out_dir:={out}", *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=ROOT)


def _rows(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def test_plans():
    home = KINDS["home_eval"]
    _, ids, shards = home.plan({"first_household": 2, "households": 5}, 2)
    assert ids == ["2", "3", "4", "5", "6"] and [s.episode_ids for s in shards] == [("2", "3"), ("4", "5", "6")]
    assert home.payload(None, ids, shards[1]) == {"first_household": 4, "households": 3}
    perm = KINDS["perm_eval"]
    values = {"missions": "bin,mat", "prefs": "speed_up", "seeds": "4,5,6", "suites": "none,single"}
    _, tasks, shards = perm.plan(values, 2)
    assert [s.scene_ids for s in shards] == [("4", "5"), ("6",)]
    assert sorted(t for s in shards for t in s.episode_ids) == sorted(t.task_id for t in tasks)
    assert perm.payload(None, tasks, shards[1]) == {"seeds": "6"}


def test_sharded_home_eval_is_the_serial_run(tmp_path):
    serial = _launch("home_eval", HOME, tmp_path / "serial")
    assert serial.returncode == 0, serial.stdout[-3000:] + serial.stderr[-2000:]
    sharded = _launch("home_eval", HOME, tmp_path / "sharded", "workers:=2")
    assert sharded.returncode == 0, sharded.stdout[-3000:] + sharded.stderr[-2000:]
    assert "2 shard(s) (households0-1, households2-2)" in sharded.stdout and "households done 3/3" in sharded.stdout
    rows = _rows(tmp_path / "serial" / "results.jsonl")
    assert len(rows) > 6 and _rows(tmp_path / "sharded" / "results.jsonl") == rows
    a, b = (json.loads((tmp_path / d / "summary.json").read_text()) for d in ("serial", "sharded"))
    assert {k: v for k, v in b.items() if k not in ("seconds", "sharding")} == {k: v for k, v in a.items() if k != "seconds"}
    assert b["sharding"]["shards"] == 2
    assert _rows(tmp_path / "sharded" / "transcripts.jsonl") == _rows(tmp_path / "serial" / "transcripts.jsonl")
    assert (tmp_path / "sharded" / "report.md").is_file()


def test_sharded_perm_eval_is_the_serial_run(tmp_path):
    serial = _launch("perm_eval", PERM, tmp_path / "serial")
    assert serial.returncode == 0, serial.stdout[-3000:] + serial.stderr[-2000:]
    sharded = _launch("perm_eval", PERM, tmp_path / "sharded", "workers:=2")
    assert sharded.returncode == 0, sharded.stdout[-3000:] + sharded.stderr[-2000:]
    rows = _rows(tmp_path / "serial" / "results.jsonl")
    assert len(rows) == 8 and "2 shard(s) (seeds0-0, seeds1-1)" in sharded.stdout and "tasks done 8/8" in sharded.stdout
    assert _rows(tmp_path / "sharded" / "results.jsonl") == rows  # same rollouts, scores and order
    report = (tmp_path / "sharded" / "report.md").read_text()
    shown = sorted(line.split("](")[1].rstrip(")") for line in report.splitlines() if "](strip_" in line)
    assert shown == sorted(p.name for p in (tmp_path / "sharded").glob("strip_*.png"))  # each shard's sample strips
    assert any(n.endswith("_s0.png") for n in shown) and any(n.endswith("_s1.png") for n in shown)

"""Sharded home_eval (issue 16) through the same layer as POG / PAN / AIV (personal/runs/shard.py):
household windows as child graphs (workers:=2) merge to the serial run's per-task rows in the serial
order, and the merged summary and transcripts are the serial ones. Small: 3 households, 2 IG items each."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from personal.benchmarks import KINDS

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.timeout(900)
HOME = ["households:=3", "seed:=7", "max_items:=2"]


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

"""Killed processes in the real main job, `pog_eval` (issue 15, findings 8 and 9).

- A mapping node killed inside the explore child graph: the child graph stops at once (before:
  exploration stepped on blind for 180 s), the scene's episodes are recorded as explore_failed,
  the report says the run is incomplete and the run exits 3 (before: 0 with 100 % empty_map).
- A grounding node killed in the top graph: the runner stops the graph with a failure (before: 0).
- The launcher SIGKILLed during exploration: no process of the graph or of its child graph is
  left (before: 5 processes ran on for about a minute).
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from personal.graphs.pog_eval import METHODS
from conftest import only_run

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.timeout(400)


def _launch(tmp_path: Path, *args: str) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "personal", "launch", "pog_eval", "scenes:=1", "splits:=easy", "episodes_per_split:=2",
           f"out_dir:={tmp_path / 'runs'}", f"maps_dir:={tmp_path / 'maps'}", *args]
    return subprocess.Popen(cmd, cwd=ROOT, env=dict(os.environ), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)


def _read_until(proc: subprocess.Popen, text: str, lines: list[str], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        if text in line:
            return
    raise AssertionError(f"{text!r} not seen; output:\n{''.join(lines)[-4000:]}")


def _node_process(root_pid: int, module: str) -> psutil.Process:
    for proc in psutil.Process(root_pid).children(recursive=True):
        try:
            if module in " ".join(proc.cmdline()):
                return proc
        except psutil.NoSuchProcess:
            continue
    raise AssertionError(f"no {module} process under {root_pid}")


def _kill_tree(proc: subprocess.Popen) -> None:
    try:
        family = psutil.Process(proc.pid).children(recursive=True) + [psutil.Process(proc.pid)]
    except psutil.NoSuchProcess:
        return
    for p in family:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass


EXPLORE = ("map_source:=explore_graph", "reuse_maps:=false", "explore_steps:=2000")


def test_dead_mapping_node_in_the_explore_graph_fails_the_run_fast(tmp_path):
    proc = _launch(tmp_path, *EXPLORE)
    lines: list[str] = []
    try:
        _read_until(proc, "exploration step", lines, timeout=240)  # the child graph is exploring
        _node_process(proc.pid, "nodes.mapping_node").kill()
        t_kill = time.monotonic()
        rest, _ = proc.communicate(timeout=240)
    finally:
        _kill_tree(proc)
    log = "".join(lines) + rest
    assert proc.returncode == 3, log[-5000:]
    assert time.monotonic() - t_kill < 120, "the run went on long after the mapping node died"
    assert "node mapping died (killed by SIGKILL)" in log and "explore_failed" in log and "run incomplete" in log
    run = only_run(tmp_path / "runs")
    results = json.loads((run / "results.json").read_text())
    assert len(results) == 2 * len(METHODS.split(",")) and all(r["failure"]["code"] == "explore_failed" for r in results)
    assert [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()] == results
    assert "INCOMPLETE RUN" in json.loads((run / "summary.json").read_text())["meta"]


def test_dead_grounding_node_fails_the_run(tmp_path):
    proc = _launch(tmp_path, "map_source:=oracle", "episodes_per_split:=3")
    lines: list[str] = []
    try:
        _read_until(proc, "grounding ready", lines, timeout=240)
        _node_process(proc.pid, "nodes.grounding_node").kill()
        rest, _ = proc.communicate(timeout=120)
    finally:
        _kill_tree(proc)
    log = "".join(lines) + rest
    assert proc.returncode != 0, log[-4000:]
    assert "node grounding died (killed by SIGKILL)" in log and "this run failed" in log


def test_sigkilled_launcher_leaves_no_process_behind(tmp_path):
    proc = _launch(tmp_path, *EXPLORE)
    lines: list[str] = []
    try:
        _read_until(proc, "exploration step", lines, timeout=240)
        family = psutil.Process(proc.pid).children(recursive=True)
        names = " ".join(" ".join(p.cmdline()) for p in family)
        # evaluator, grounding, the child runner and its bridge, mapping and explore nodes
        assert all(m in names for m in ("nodes.pog_evaluator_node", "nodes.grounding_node", "launch explore",
                                        "sim_bridge.bridge_node", "nodes.mapping_node", "nodes.explore_node")), names
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        deadline = time.monotonic() + 30
        alive = family
        while alive and time.monotonic() < deadline:
            alive = [p for p in family if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
            time.sleep(0.2)
        assert not alive, f"still running {time.monotonic() - deadline + 30:.0f} s after the kill: " \
                          f"{[' '.join(p.cmdline()[2:4]) for p in alive]}"
    finally:
        _kill_tree(proc)

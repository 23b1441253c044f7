"""Killed processes (issue 15, findings 8 and 10): child graphs die with their parent whatever kills
it, and the Fast DDS shared memory that killed processes leave in /dev/shm is reclaimed."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from conftest import wait_for
from personal.runner import reclaim_shared_memory

ROOT = Path(__file__).resolve().parents[1]
SHM = Path("/dev/shm")

# a runner (the child graph) of two nodes that sleep; SIGINT (KeyboardInterrupt) ends them
CHILD_GRAPH = textwrap.dedent("""
    import sys
    from personal.graphs import Graph, NodeSpec
    from personal.runner import run_graph
    g = Graph("child", "", [NodeSpec("a", "a", "sleeper_node"), NodeSpec("b", "b", "sleeper_node", required=True)])
    sys.exit(run_graph(g, colour=False, sigint_timeout=2.0))
""")
# the parent: waits on the child graph with run_child, the way the POG evaluator waits on its explore graph
PARENT = textwrap.dedent("""
    import signal, sys
    from personal.runner import run_child

    class Terminated(Exception):
        pass

    def on_term(signum, frame):
        raise Terminated()

    signal.signal(signal.SIGTERM, on_term)
    print("parent up", flush=True)
    try:
        code, tail = run_child([sys.executable, sys.argv[1]], None, 600, log=lambda l: print(l, flush=True),
                               keep=lambda l: True)
    except Terminated:
        print("parent terminated", flush=True)
        sys.exit(143)
""")


@pytest.fixture
def family(tmp_path):
    (tmp_path / "sleeper_node.py").write_text("import time\nprint('up', flush=True)\ntime.sleep(600)\n")
    (tmp_path / "child_graph.py").write_text(CHILD_GRAPH)
    (tmp_path / "parent.py").write_text(PARENT)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    parent = subprocess.Popen([sys.executable, str(tmp_path / "parent.py"), str(tmp_path / "child_graph.py")],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, start_new_session=True)
    lines: list[str] = []
    deadline = time.monotonic() + 60
    while sum("] up" in line for line in lines) < 2 and time.monotonic() < deadline:
        line = parent.stdout.readline()
        if not line:
            break
        lines.append(line)
    descendants = psutil.Process(parent.pid).children(recursive=True)
    yield parent, descendants, lines
    for proc in [*descendants, psutil.Process(parent.pid)] if parent.poll() is None else descendants:
        try:
            proc.kill()
        except psutil.NoSuchProcess:
            pass


def _all_gone(procs, timeout: float) -> list:
    deadline = time.monotonic() + timeout
    alive = procs
    while alive and time.monotonic() < deadline:
        alive = [p for p in procs if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
        time.sleep(0.1)
    return alive


@pytest.mark.parametrize("how", ["SIGKILL", "SIGTERM"])
def test_child_graph_dies_with_its_parent(family, how):
    """The evaluator pattern: a parent waits (blocked) on a child graph. Whatever ends the parent, the
    child runner and its nodes go too (before: they ran on for about a minute after a SIGKILL)."""
    parent, descendants, lines = family
    assert len(descendants) == 3, (descendants, lines)  # child runner + two nodes
    os.kill(parent.pid, getattr(signal, how))
    alive = _all_gone(descendants, timeout=15)
    assert not alive, f"{[p.cmdline()[-1] for p in alive]} outlived their {how}ed parent"
    parent.wait(10)
    if how == "SIGTERM":  # the parent's own handler ran: it was not stuck in the wait
        assert parent.returncode == 143


def _fastdds_files() -> set[str]:
    return {p.name for p in SHM.iterdir() if p.name.startswith("fastdds_")}


NODE = textwrap.dedent("""
    import time, rclpy
    from std_msgs.msg import String
    rclpy.init()
    node = rclpy.create_node("shm_user")
    node.create_publisher(String, "chatter", 10)
    print("ready", flush=True)
    time.sleep(600)
""")


def _locks() -> dict[int, set[int]]:
    """inode -> pids holding a flock on it (``/proc/locks``)."""
    held: dict[int, set[int]] = {}
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        if len(fields) > 5 and fields[1] == "FLOCK":
            held.setdefault(int(fields[5].rsplit(":", 1)[-1]), set()).add(int(fields[4]))
    return held


def _lock_holders() -> dict[str, set[int]]:
    """Fast DDS lock-file name -> pids holding it."""
    held, names = _locks(), {}
    for f in SHM.iterdir():
        if f.name.startswith("fastdds_") and f.name.endswith(("_el", "_sl")):
            try:
                names[f.name] = held.get(f.stat().st_ino, set())
            except OSError:  # removed meanwhile
                pass
    return names


def _owned_fastdds_files(pid: int) -> set[str]:
    """The Fast DDS files in /dev/shm that process ``pid`` owns: each segment or port it created has
    a lock file it holds (``/proc/locks``) — the test ``fastdds shm clean`` applies. Other files
    appear meanwhile (other graphs on a shared machine), and a process also maps its peers' files."""
    owned = set()
    for name, pids in _lock_holders().items():
        if pid in pids:
            owned |= {name, name[:-3]}
    return owned


def _left_behind(files: set[str], dead_pid: int) -> set[str]:
    """Those of a dead process's ``files`` that are still in /dev/shm with nobody alive holding
    them. Segment names are random per process, but a port's name is shared machine-wide (e.g.
    ``fastdds_port7000``, whichever participant opens it first holds it): on a shared machine a
    live process of another graph may take a port over right after its holder dies; that port is
    in use, not left behind."""
    in_use = set()
    for name, pids in _lock_holders().items():
        if pids - {dead_pid}:
            in_use |= {name, name[:-3]}
    return (files & _fastdds_files()) - in_use


def _start_shm_user() -> tuple[subprocess.Popen, set[str]]:
    proc = subprocess.Popen([sys.executable, "-c", NODE], stdout=subprocess.PIPE, text=True, env=os.environ)
    assert proc.stdout.readline().strip() == "ready"
    try:  # the participant creates and locks its segment and ports: wait for the locks, not for a time
        return proc, wait_for(lambda: _owned_fastdds_files(proc.pid), timeout=30)
    except TimeoutError:
        return proc, set()


@pytest.mark.skipif(not SHM.is_dir(), reason="no /dev/shm")
def test_reclaim_removes_the_shared_memory_of_killed_processes_only():
    """Each kill -9 left its segments (about 34 MB with the shipped profile) in /dev/shm; the runner
    now reclaims them at start and exit. Segments of live processes stay."""
    doomed, doomed_files = _start_shm_user()
    alive, alive_files = _start_shm_user()
    try:
        assert doomed_files and alive_files, "no Fast DDS shared-memory files (is the shm transport on?)"
        doomed.kill()
        doomed.wait()
        freed = reclaim_shared_memory()
        assert "skipped" not in freed, freed
        left = _left_behind(doomed_files, doomed.pid)
        assert not left, f"still there: {sorted(left)}"
        assert alive_files <= _fastdds_files(), "a live process's segments were removed"
    finally:
        alive.kill()
        alive.wait()
    reclaim_shared_memory()
    left = _left_behind(alive_files, alive.pid)
    assert not left, f"still there: {sorted(left)}"

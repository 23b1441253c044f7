"""A node process prints its Python stacks on SIGUSR1 and runs on; a process that does not catch
SIGUSR1 is never sent it (personal/stacks.py)."""
import os
import subprocess
import sys
import time
from pathlib import Path

from personal.stacks import catches, dump_stacks

ROOT = Path(__file__).resolve().parents[1]


def _child(code: str) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    assert proc.stdout.readline().strip() == "ready"
    return proc


def test_importing_nodes_makes_a_process_dump_its_stacks_on_sigusr1():
    # "ready" comes from inside waiting_here, so the signal finds that frame on the stack (a loaded machine
    # could otherwise deliver it between the print and the call)
    proc = _child("import nodes, time\ndef waiting_here():\n    print('ready', flush=True)\n    time.sleep(30)\nwaiting_here()")
    try:
        assert catches(proc.pid)
        assert dump_stacks([proc.pid]) == [proc.pid]
        time.sleep(1.0)
        assert proc.poll() is None  # it runs on
    finally:
        proc.kill()
        _, err = proc.communicate(timeout=10)
    assert "most recent call first" in err and "waiting_here" in err


def test_a_process_without_the_handler_is_not_signalled():
    proc = _child("import time\nprint('ready', flush=True)\ntime.sleep(30)")
    try:
        assert not catches(proc.pid)
        assert dump_stacks([proc.pid]) == []
        time.sleep(0.3)
        assert proc.poll() is None  # SIGUSR1 would have killed it
    finally:
        proc.kill()
        proc.communicate(timeout=10)
    assert not catches(os.getpid() + 10_000_000)  # no such process: False, no error

"""Python stacks of a hung process, on request: ``kill -USR1 <pid>`` prints every thread's stack.

A node that stops logging (stuck in a callback, a lock or the middleware) is otherwise a black box:
nothing in its log says where it is. ``enable_stack_dumps()`` (called by the ``nodes`` and
``sim_bridge`` packages, so every node process has it) registers the standard library's
``faulthandler`` for SIGUSR1: the stacks go to stderr, which the graph runner prefixes with the node's
name in the graph's log, and the process runs on. The graph runner forwards a SIGUSR1 it receives to
its nodes, and asks a node for its stacks itself before it escalates from SIGINT to SIGTERM.

``dump_stacks(pids)`` signals only processes that catch SIGUSR1 (``catches``, from
``/proc/<pid>/status``): to a process that does not, SIGUSR1 would be fatal (its default action).
"""
from __future__ import annotations

import faulthandler
import os
import signal
import sys
import threading

STACK_SIGNAL = signal.SIGUSR1


def enable_stack_dumps() -> bool:
    """Print every thread's stack to stderr on SIGUSR1; False where that is unavailable (not on the
    main thread, no SIGUSR1, or stderr without a file descriptor)."""
    if threading.current_thread() is not threading.main_thread():
        return False
    try:
        faulthandler.register(STACK_SIGNAL, file=sys.stderr, all_threads=True)
    except (AttributeError, ValueError, OSError, RuntimeError):  # e.g. stderr replaced by an object without fileno()
        return False
    return True


def catches(pid: int, sig: int = STACK_SIGNAL) -> bool:
    """Whether process ``pid`` has a handler for ``sig`` (Linux: the SigCgt mask of /proc/<pid>/status)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("SigCgt:"):
                    return bool(int(line.split()[1], 16) >> (int(sig) - 1) & 1)
    except (OSError, ValueError):
        pass
    return False


def dump_stacks(pids) -> list[int]:
    """SIGUSR1 to each of ``pids`` that catches it; returns the ones signalled."""
    sent = []
    for pid in pids:
        if catches(pid):
            try:
                os.kill(pid, STACK_SIGNAL)
                sent.append(pid)
            except ProcessLookupError:
                pass
    return sent

"""ONE table of exit codes for every evaluator and graph run (docs/reliability.md, "Exit codes"), and
``exit_process``, how a node's own process ends with one.

A script or CI job can tell the cases apart without reading logs; the same fault gives the same
code whichever evaluator met it (issue 28: a read-only out_dir gave 1 in home_eval, 2 in pog_eval).
"""
from __future__ import annotations

OK = 0  # done: every unit scored, report complete
FAILED = 1  # a node or the evaluator failed while running (a crash, a dead required node, a bug)
BAD_INPUT = 2  # refused before any work: bad arguments or input files, out_dir unwritable or in use by another run
INCOMPLETE = 3  # a report is written, but some units failed or a child graph made no progress (INCOMPLETE RUN)
INTERRUPTED = 130  # SIGINT (Ctrl-C); SIGTERM / SIGHUP give 128 + the signal number (143 / 129)

TABLE = {
    OK: "done: every unit scored, report complete",
    FAILED: "a node or the evaluator failed while running",
    BAD_INPUT: "refused before any work: bad arguments or input files, out_dir unwritable or used by another run",
    INCOMPLETE: "report written, but some units failed or a child graph made no progress (INCOMPLETE RUN)",
    INTERRUPTED: "interrupted by SIGINT (128 + N for signal N: 143 SIGTERM, 129 SIGHUP)",
}


def exit_process(code: int) -> None:
    """End the node's process once its node is destroyed and rclpy is shut down: what a normal exit
    does that matters (non-daemon threads joined, atexit handlers — multiprocessing children, logging —
    run, output flushed), without the interpreter's teardown of every module, which with torch and
    transformers loaded took about 2 s (0.8 CPU-s) per process — on the path of every graph's end."""
    import atexit
    import os
    import sys
    import threading

    for thread in threading.enumerate():
        if thread is not threading.current_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)

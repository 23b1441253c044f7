"""ONE table of exit codes for every evaluator and graph run (docs/reliability.md, "Exit codes").

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

"""A bigger fuzz run against every node family (issue 15): the campaigns of
test/test_fuzz_nodes.py with ``--scale`` times the messages per topic (the unit tests use 1), then
the figures — per node: topics fuzzed, messages tried, raw garbage frames, messages the guard
dropped (a callback raised; the node went on), crashes — as a table.

Each campaign throws random messages of every subscribed topic's type (NaN / inf, integer
extremes, empty / 200 kB strings, mis-sized arrays), mutations of a good message and raw garbage
frames at the running node, then requires a good answer from it.
Usage: .venv/bin/python bench/bench_fuzz.py [--scale 10] [--json figures.json] [-k grounding]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=10.0, help="messages per topic, times the unit tests' (default 10)")
    ap.add_argument("--json", default="", help="also write the figures here")
    ap.add_argument("-k", default="", help="only the campaigns whose test name matches (pytest -k)")
    args = ap.parse_args()
    figures_path = Path(args.json or tempfile.mkstemp(suffix=".json", prefix="fuzz_figures_")[1]).resolve()
    env = {**os.environ, "PERSONAL_FUZZ_SCALE": str(args.scale), "PERSONAL_FUZZ_FIGURES": str(figures_path)}
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test/test_fuzz_nodes.py"]
    if args.k:
        cmd += ["-k", args.k]
    t0 = time.monotonic()
    print(f"fuzzing every node family at {args.scale:g}x the unit tests' messages ...", flush=True)
    rc = subprocess.run(cmd, cwd=ROOT, env=env).returncode
    if not figures_path.is_file() or not figures_path.read_text().strip():
        print(f"no figures (pytest exit code {rc})", file=sys.stderr)
        return rc or 1
    sys.path.insert(0, str(ROOT / "test"))
    from fuzz_support import figures_table

    figures = json.loads(figures_path.read_text())
    print(f"\nfuzz figures, scale {args.scale:g}, {time.monotonic() - t0:.0f} s (pytest exit code {rc}):")
    for line in figures_table(figures):
        print(line)
    if not args.json:
        figures_path.unlink()
    return rc


if __name__ == "__main__":
    sys.exit(main())

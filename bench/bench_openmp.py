"""Idle OpenMP threads: the same work with OMP_WAIT_POLICY=ACTIVE (spin, the OpenMP default) and
PASSIVE (sleep, what every `personal` process and node now gets), alternated in one run so both
see the same machine load.

Work: (1) MiniLM, 200 sentences one at a time (what the grounding node and the evaluator do per
query; torch's own thread count); (2) the `explore` graph, 300 steps at 320 x 240 with the learned
`lit` encoder (renderer in numba, crop tower in torch, several processes). Prints a table: wall
seconds and CPU seconds per policy (median of the repeats) and PASSIVE / ACTIVE.

    .venv/bin/python bench/bench_openmp.py [--repeats 2] [--steps 300]
"""
from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MINILM = ("import time\n"
          "from personal.models.oracle import load_sentence_model, encode_sentences\n"
          "m = load_sentence_model(); encode_sentences(m, ['warm up'])\n"
          "s = [f'the {i} red mug with a black handle on the desk in the kitchen' for i in range(200)]\n"
          "t = time.perf_counter(); encode_sentences(m, s); print('minilm', time.perf_counter() - t)\n")


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _run(cmd: list[str], policy: str) -> tuple[float, float, str]:
    env = {**os.environ, "OMP_WAIT_POLICY": policy}
    t0, c0 = time.perf_counter(), _children_cpu()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env, timeout=1800)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:5])} failed with OMP_WAIT_POLICY={policy}:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return time.perf_counter() - t0, _children_cpu() - c0, proc.stdout + proc.stderr


def minilm(policy: str) -> tuple[float, float]:
    _, cpu, out = _run([sys.executable, "-c", MINILM], policy)
    return float(re.search(r"minilm ([\d.]+)", out).group(1)), cpu


def explore(policy: str, steps: int, tmp: Path) -> tuple[float, float]:
    wall, cpu, _ = _run([sys.executable, "-m", "personal", "launch", "explore", "seed:=0", f"max_steps:={steps}",
                         f"maps_dir:={tmp / policy}", "width:=320", "height:=240", "encoder:=lit"], policy)
    return wall, cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--steps", type=int, default=300)
    a = ap.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.1f} (2 cores)", flush=True)
    res: dict[tuple[str, str], list[tuple[float, float]]] = {}
    with tempfile.TemporaryDirectory(prefix="bench_openmp_") as tmp:
        for i in range(a.repeats):
            for policy in ("ACTIVE", "PASSIVE") if i % 2 == 0 else ("PASSIVE", "ACTIVE"):
                res.setdefault(("MiniLM, 200 sentences one at a time (s of encoding)", policy), []).append(minilm(policy))
                res.setdefault((f"explore graph, {a.steps} steps, 320x240, lit (s, whole launch)", policy), []).append(
                    explore(policy, a.steps, Path(tmp)))
                print(f"repeat {i + 1}/{a.repeats} {policy} done (load {os.getloadavg()[0]:.1f})", flush=True)
    print(f"load average after: {os.getloadavg()[0]:.1f}\n")
    print("| work | ACTIVE wall / CPU s | PASSIVE wall / CPU s | PASSIVE / ACTIVE wall | PASSIVE / ACTIVE CPU |")
    print("|---|---|---|---|---|")
    for work in dict.fromkeys(k[0] for k in res):
        aw, ac = (statistics.median(x[j] for x in res[(work, "ACTIVE")]) for j in (0, 1))
        pw, pc = (statistics.median(x[j] for x in res[(work, "PASSIVE")]) for j in (0, 1))
        print(f"| {work} | {aw:.2f} / {ac:.1f} | {pw:.2f} / {pc:.1f} | {pw / aw:.2f} | {pc / ac:.2f} |")


if __name__ == "__main__":
    main()

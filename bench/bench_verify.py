"""Built-in PInVerify verifier: decisions per second and time per step.

Generates a small synthetic PInVerify set (or uses --index), then times
(a) the built-in image verifier alone on every visible capture (attribute
decisions per second, ms per view) and (b) whole agent steps (image loading,
verification, tracker, NBV) over multi-view episodes.

    .venv/bin/python bench/bench_verify.py [--index PATH] [--targets 6] [--repeat 3]
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time

from personal.verification.agent import AgentConfig, VerificationAgent, run_episode, view_input
from personal.verification.attributes import BuiltinAttributeParser, predict_category
from personal.verification.nbv import FarthestPointNBV
from personal.verification.reader import load_index
from personal.verification.verifier import BuiltinImageVerifier
from personal.verification.writer import write_dataset


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--index", default="", help="PInVerify index; empty = generate a small set")
    ap.add_argument("--targets", type=int, default=6, help="targets to generate when no --index")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    index = args.index
    if not index:
        tmp = tempfile.mkdtemp(prefix="bench_verify_")
        index = write_dataset(tmp, args.targets, seed=1)["index"]
    pairs = load_index(index)
    parser, verifier = BuiltinAttributeParser(), BuiltinImageVerifier()

    views = []
    for p in pairs:
        attrs = parser.decompose(p.query_texts)
        cat = predict_category(p.query_texts) or "object"
        for vp in p.capture.viewpoints:
            if vp.navigable:
                views.append((view_input(p.capture, vp), attrs, cat))
    per_view, decisions = [], 0
    for _ in range(args.repeat):
        for vi, attrs, cat in views:
            t = time.perf_counter()
            verdict = verifier.verify(vi, attrs, cat)
            per_view.append(time.perf_counter() - t)
            decisions += len(verdict.judgements)
    total = sum(per_view)
    print(f"built-in verifier: {len(views)} views x {args.repeat} repeats")
    print(f"  attribute decisions/s : {decisions / total:,.0f}")
    print(f"  views/s               : {len(per_view) / total:,.1f}")
    print(f"  ms per view           : median {1e3 * statistics.median(per_view):.2f}, "
          f"p90 {1e3 * sorted(per_view)[int(0.9 * len(per_view))]:.2f}")

    agent = VerificationAgent(parser, verifier, AgentConfig(mode="multi", nbv="fps", min_coverage=1.0))
    t = time.perf_counter()
    steps = episodes = 0
    for p in pairs:
        rec = run_episode(p, agent, FarthestPointNBV())
        steps += rec["steps"]
        episodes += 1
    dt = time.perf_counter() - t
    print(f"agent (multi-view, FPS, coverage 1.0; PNG loading included): {episodes} episodes, {steps} steps")
    print(f"  ms per step           : {1e3 * dt / steps:.2f}")
    print(f"  episode decisions/s   : {episodes / dt:.1f}")


if __name__ == "__main__":
    main()

"""POG grounding benchmark: method latency on one core, and episodes/s of the evaluation.

    .venv/bin/python bench/bench_grounding.py            # latency + episodes/s
    .venv/bin/python bench/bench_grounding.py --quick    # fewer repeats, skip the 500×500 map

Latency (targets: RPG ≤ 5 ms on 50×50×768, one core): random maps with 80 % observed
cells, K = 6 phrases. numpy runs on OpenBLAS limited to one thread (OPENBLAS_NUM_THREADS /
OMP_NUM_THREADS = 1 are set below before numpy is imported); torch uses
torch.set_num_threads(1). "cold" includes computing the per-cell norms of the map,
"warm" reuses them (the grounding node and the evaluation compute them once per map).

Episodes/s (target ≥ 100 once the map exists): the full offline evaluation —
extraction, text encoding (cached per distinct string), all five methods, scoring
against ground truth — on generated episodes over a map built for each scene.
"""
from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402


def _time(fn, repeats: int) -> tuple[float, float]:
    fn()  # warm-up (imports, allocations)
    ts = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t) * 1e3)
    return statistics.median(ts), min(ts)


def bench_latency(h: int, w: int, e: int, k: int, repeats: int) -> list[tuple[str, float, float]]:
    from personal.grounding.methods import GroundingInputs, make_method

    rng = np.random.default_rng(0)
    f = rng.standard_normal((h, w, e), dtype=np.float32)
    valid = rng.random((h, w)) < 0.8
    d = rng.standard_normal((k, e), dtype=np.float32)
    q = rng.standard_normal(e, dtype=np.float32)
    rows = []
    for name in ("qs", "rpg"):
        for backend in ("numpy", "torch"):
            m = make_method(name, backend=backend)
            warm = GroundingInputs(f, valid, (0.0, 0.0), 1.0, d, ["A"] * k, q, "A")
            warm.norms()

            def cold_run():
                m.ground(GroundingInputs(f, valid, (0.0, 0.0), 1.0, d, ["A"] * k, q, "A"))

            rows.append((f"{name.upper():3s} {backend:5s} warm", *_time(lambda: m.ground(warm), repeats)))
            rows.append((f"{name.upper():3s} {backend:5s} cold", *_time(cold_run, max(1, repeats // 2))))
    return rows


def bench_episodes(scenes: int, per_split: int, resolution: float) -> None:
    """Episodes/s of the offline evaluation with the project's real pieces."""
    try:
        from personal.grounding.eval.pog_run import build_eval_inputs
    except ImportError as exc:
        print(f"episodes/s: skipped ({exc})")
        return
    from personal.grounding.pipeline import evaluate_offline

    t0 = time.perf_counter()
    inputs = build_eval_inputs(scenes=scenes, splits=("easy", "medium", "hard"), episodes_per_split=per_split,
                               resolution=resolution, seed=0)
    build_s = time.perf_counter() - t0
    n = len(inputs.episodes)
    passes = []
    for label in ("cold: text encoding included", "warm: phrase/query embeddings cached by the encoder"):
        t1 = time.perf_counter()
        results = evaluate_offline(inputs.episodes, inputs.scenes, inputs.maps, inputs.extractor, inputs.encoder, inputs.methods)
        passes.append((label, time.perf_counter() - t1))
    print(f"\nEpisodes/s ({scenes} scene(s) x 3 splits x {per_split} = {n} episodes, {len(inputs.methods)} methods, "
          f"{resolution} m cells, encoder {inputs.encoder_name}, extractor {inputs.extractor_name}; "
          f"maps: {inputs.map_source}, built in {build_s:.1f} s, not counted)")
    for label, dt in passes:
        print(f"  {label}: {len(results)} groundings in {dt:.2f} s -> {n / dt:.1f} episodes/s "
              f"({len(results) / dt:.0f} groundings/s)")
    print("  target: >= 100 episodes/s once the map exists")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats; skip the 500x500x512 map")
    ap.add_argument("--scenes", type=int, default=3)
    ap.add_argument("--per-split", type=int, default=10, help="episodes per split and scene")
    ap.add_argument("--resolution", type=float, default=0.5)
    ap.add_argument("--no-episodes", action="store_true")
    args = ap.parse_args(argv)

    import torch

    torch.set_num_threads(1)
    print(f"numpy {np.__version__} (OpenBLAS threads forced to 1 via env), torch {torch.__version__} "
          f"(threads={torch.get_num_threads()}), CPU cores on the machine: {os.cpu_count()}")
    sizes = [(50, 50, 768, 20 if args.quick else 100)]
    if not args.quick:
        sizes.append((500, 500, 512, 3))
    for h, w, e, reps in sizes:
        print(f"\nGrounding latency on a {h}x{w}x{e} map, K=6 phrases, one core (median / min of {reps} runs, ms):")
        for label, med, best in bench_latency(h, w, e, 6, reps):
            print(f"  {label}: {med:9.2f} / {best:9.2f}")
        if (h, w, e) == (50, 50, 768):
            print("  target: RPG <= 5 ms")
    if not args.no_episodes:
        bench_episodes(args.scenes, args.per_split, args.resolution)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Cost of the learned manipulation policy's pipeline on this CPU (prints figures; no assertions).

1. Demonstration recording: robosuite frames per second per worker process (oracle rollouts, no
   cameras), wall and CPU time, and the projected time of the default ``personal perm demos`` plan
   with 2 workers (one per core).
2. Training: seconds per optimiser step of the default ``TrainConfig`` (one torch thread) on a
   synthetic batch, and the projected time of the default step count.

On a machine shared with other jobs, wall time exceeds CPU time; both are printed.
Usage: python bench/bench_perm_learning.py [--episodes 6] [--steps 200]
"""
from __future__ import annotations

import argparse
import time

import numpy as np


def bench_demos(episodes: int) -> None:
    from personal.manipulation.backends import make_backend
    from personal.manipulation.learned.demos import plan_demos, record
    from personal.manipulation.suite import MISSIONS

    full = plan_demos(list(MISSIONS), _all_prefs(), per_task=16)
    rng = np.random.default_rng(0)
    sample = [full[i] for i in sorted(rng.choice(len(full), episodes, replace=False))]
    backend = make_backend("robosuite")
    record(backend, sample[0])  # build the environment once
    wall0, cpu0, frames = time.perf_counter(), time.process_time(), 0
    for spec in sample:
        ep, _ = record(backend, spec)
        frames += len(ep)
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    per_frame = cpu / frames
    est_frames = frames / len(sample) * len(full)
    print(f"demonstrations: {len(sample)} sampled episodes, {frames} frames: {frames / wall:.0f} frames/s wall, "
          f"{frames / cpu:.0f} frames/s CPU (one worker)")
    print(f"  default plan: {len(full)} episodes, ~{est_frames:.0f} frames -> ~{est_frames * per_frame / 2 / 60:.1f} min "
          f"with 2 workers on 2 free cores (+ ~15 s start-up)")
    backend.close()


def bench_training(steps: int) -> None:
    import torch

    from personal.manipulation.learned.model import ChunkPolicyNet
    from personal.manipulation.learned.train import TrainConfig, masked_l1

    cfg = TrainConfig()
    torch.set_num_threads(cfg.threads)
    net = ChunkPolicyNet(cfg.horizon, cfg.width, cfg.depth, cfg.lang_width)
    opt = torch.optim.AdamW(net.parameters(), lr=cfg.lr)
    B = cfg.batch
    x, t, p = torch.randn(B, net.config["feature_dim"]), torch.randn(B, 384), torch.randn(B, 384)
    y, v = torch.randn(B, cfg.horizon, 7), torch.ones(B, cfg.horizon)
    for k in range(steps + 20):
        if k == 20:
            wall0, cpu0 = time.perf_counter(), time.process_time()
        loss = masked_l1(net(x, t, p), y, v)
        opt.zero_grad()
        loss.backward()
        opt.step()
    wall, cpu = (time.perf_counter() - wall0) / steps, (time.process_time() - cpu0) / steps
    print(f"training: batch {B}, width {cfg.width}, {sum(q.numel() for q in net.parameters()) / 1e6:.2f} M parameters, "
          f"{cfg.threads} thread(s): {wall * 1e3:.1f} ms/step wall, {cpu * 1e3:.1f} ms/step CPU")
    print(f"  default {cfg.steps} steps -> ~{cfg.steps * cpu / 60:.1f} min on a free core "
          f"({cfg.steps * wall / 60:.1f} min at this wall rate)")


def _all_prefs() -> list[str]:
    from personal.manipulation import preferences as P

    return list(P.PREFERENCES)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--episodes", type=int, default=6)
    ap.add_argument("--steps", type=int, default=200)
    args = ap.parse_args()
    bench_training(args.steps)
    bench_demos(args.episodes)


if __name__ == "__main__":
    main()

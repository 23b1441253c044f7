"""Steps per second of the whole PAN navigation loop.

1. Over topics (the product): the sim bridge and the navigation node run as separate
   processes (Fast DDS shared-memory profile); the node builds its maps from the bridge's
   depth / instance ids / camera pose, runs the policy and sends each action back; the rate
   is the navigation node's own count (actions per second of one episode, wall clock).
2. In process, no ROS (same loop, same library code), with the time per stage: render
   (simulator), mapping, policy — to show where a step's time goes.

Target: ≥ 20 steps/s, so a 500-step episode takes under 30 s. The render is 640×480 ray
casting on the CPU (PersONAL camera); on this shared 2-core machine it alone is ~25-50 ms.

    .venv/bin/python bench/bench_pan.py [--policy value-map-rpg-owner] [--steps 120] [--skip-ros]
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def over_topics(policy: str, steps: int, seed: int, timeout: float = 600.0) -> dict:
    from personal.ros_env import ros_environment
    from personal.runner import node_command

    env = ros_environment({**os.environ, "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST",
                           "ROS_DOMAIN_ID": os.environ.get("ROS_DOMAIN_ID", str(40 + os.getpid() % 50))})
    common = {"split": "easy", "scenes": 1, "seed": seed}
    bridge = subprocess.Popen(node_command("sim_bridge.bridge_node", "sim_bridge",
                                           parameters={**common, "episodes_per_scene": 1, "rate": 2.0, "log_every": 0.0}),
                              cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, start_new_session=True)
    nav = subprocess.Popen(node_command("nodes.navigation_node", "navigation",
                                        parameters={**common, "policy": policy, "autostart": True, "max_steps": steps}),
                           cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    out = {"policy": policy}
    t0 = time.monotonic()
    try:
        for line in nav.stdout:
            m = re.search(r"(\d+) steps, stopped=(\w+), ([\d.]+) steps/s \(([\d.]+|None) steps/s first to last action\), "
                          r"ms/step (\{.*?\})", line)
            if m:
                out.update(steps=int(m.group(1)), stopped=m.group(2), steps_per_s=float(m.group(3)),
                           loop_steps_per_s=float(m.group(4)) if m.group(4) != "None" else float("nan"), node_ms=m.group(5))
                break
            if time.monotonic() - t0 > timeout:
                break
    finally:
        for p in (nav, bridge):
            p.terminate()
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
    return out


def in_process(policy: str, steps: int, seed: int) -> dict:
    from personal.navigation.eval.pan_run import build_loop, make_components
    from personal.models.oracle import captions_from_scene
    from personal.navigation.loop import run_episode
    from personal.sim.backends import make_backend
    from personal.sim.bridge_logic import generate_episodes
    from personal.sim.navgrid import NavGrid

    scenes, eps = generate_episodes("easy", 1, seed, 1)
    scene, ep = next(iter(scenes.values())), eps[0]
    sim = make_backend("synthetic")
    sim.load_scene(scene)
    comps = make_components()
    comps.encoder.set_captions(captions_from_scene(scene))
    comps.encoder.encode_text([o.caption for o in scene.objects])
    loop = build_loop(policy, comps, max_steps=steps)
    if loop.policy.is_oracle:
        loop.policy.set_ground_truth(NavGrid(scene, 0), [scene.object(o).box for o in ep.target_object_ids])
    traj = run_episode(sim, ep, loop)
    per_step = sum(v for k, v in traj.timing_ms.items() if k != "wall_s")
    return {"policy": policy, "steps": traj.steps, "steps_per_s": 1e3 / per_step,
            "ms_per_step": {k: round(v, 1) for k, v in traj.timing_ms.items() if k != "wall_s"}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--policy", default="value-map-rpg-owner")
    ap.add_argument("--steps", type=int, default=120, help="step budget of the measured episode")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--skip-ros", action="store_true")
    a = ap.parse_args()
    print(f"PAN navigation loop, policy {a.policy}, up to {a.steps} steps, machine load {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} cores")
    if not a.skip_ros:
        r = over_topics(a.policy, a.steps, a.seed)
        print(f"over topics (sim bridge + navigation node [maps + policy], 2 processes): "
              f"{r.get('loop_steps_per_s', float('nan')):.1f} steps/s first to last action "
              f"({r.get('steps_per_s', float('nan')):.1f} incl. episode setup) over {r.get('steps')} steps; "
              f"node ms/step {r.get('node_ms')}")
    r = in_process(a.policy, a.steps, a.seed)
    print(f"in process (no ROS): {r['steps_per_s']:.1f} steps/s (sum of per-step stages) over {r['steps']} steps; "
          f"ms/step {r['ms_per_step']}")
    print("target: >= 20 steps/s (500-step episode < 30 s)")


if __name__ == "__main__":
    main()

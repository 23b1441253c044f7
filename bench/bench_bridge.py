"""Sim bridge throughput on loopback: publish rate and delivery to a subscriber.

For each Fast DDS setting (the shipped 32 MiB shared-memory profile, and Fast DDS
defaults) this starts the bridge (synthetic backend, one generated household) and a
subscriber in separate processes and prints, per sensor topic, the received rate,
the loss against the frames the bridge stamped, and the RGB latency; then the rate of
discrete actions answered with a fresh observation (render-bound).

    .venv/bin/python bench/bench_bridge.py [--seconds 5] [--rate 30] [--profiles shm,default]
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TOPICS = {
    "rgb": "camera/color/image_raw",
    "depth": "camera/aligned_depth_to_color/image_raw",
    "ids": "camera/semantic/image_raw",
    "info": "camera/color/camera_info",
    "odom": "odom",
}


def measure(seconds: float, rate: float, n_actions: int) -> dict:
    """Runs inside a child process whose environment selects the Fast DDS profile."""
    import numpy as np
    import rclpy
    from nav_msgs.msg import Odometry
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import qos_profile_sensor_data
    from sensor_msgs.msg import CameraInfo, Image
    from personal.msg import AgentState, DiscreteAction
    from personal.runner import node_command
    from sim_bridge.bridge_node import STATE_QOS

    cmd = node_command("sim_bridge.bridge_node", "sim_bridge", parameters={
        "split": "easy", "scenes": 1, "episodes_per_scene": 1, "rate": rate, "log_every": 0.0})
    bridge = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, start_new_session=True)
    rclpy.init()
    node = rclpy.create_node("bench_bridge_listener")
    ex = SingleThreadedExecutor()
    ex.add_node(node)
    stamps: dict[str, list] = {k: [] for k in TOPICS}
    latency: list[float] = []
    states: dict[str, float] = {}
    kinds = {"rgb": Image, "depth": Image, "ids": Image, "info": CameraInfo, "odom": Odometry}

    def cb(key):
        def f(msg):
            t = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
            stamps[key].append(t)
            if key == "rgb":
                latency.append(time.time() - t)
        return f

    for key, topic in TOPICS.items():
        node.create_subscription(kinds[key], topic, cb(key), qos_profile_sensor_data)
    node.create_subscription(AgentState, "agent_state", lambda m: states.setdefault(m.request_id, time.monotonic()), STATE_QOS)
    pub = node.create_publisher(DiscreteAction, "action", 10)
    try:
        deadline = time.monotonic() + 90
        while not stamps["rgb"] and time.monotonic() < deadline:
            ex.spin_once(timeout_sec=0.1)
        if not stamps["rgb"]:
            return {"error": "no image within 90 s"}
        for v in stamps.values():
            v.clear()
        latency.clear()
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            ex.spin_once(timeout_sec=0.05)
        result = {}
        ref = stamps["odom"] or stamps["rgb"]  # small messages: odom stamps show what the bridge sent
        published = round((max(ref) - min(ref)) * rate) + 1 if ref else 0
        for key, ts in stamps.items():
            result[key] = {"hz": len(ts) / seconds, "received": len(ts),
                           "loss": max(0.0, 1 - len(set(ts)) / published) if published else 1.0}
        result["published_hz"] = published / seconds
        result["rgb_latency_ms_p50"] = float(np.median(latency) * 1e3) if latency else float("nan")
        # action -> fresh observation round trips
        while pub.get_subscription_count() == 0:
            ex.spin_once(timeout_sec=0.05)
        t0 = time.monotonic()
        for k in range(n_actions):
            rid = f"a{k}"
            pub.publish(DiscreteAction(action=2 + k % 2, request_id=rid))
            t_end = time.monotonic() + 10
            while rid not in states and time.monotonic() < t_end:
                ex.spin_once(timeout_sec=0.01)
        result["actions_per_s"] = n_actions / (time.monotonic() - t0)
        return result
    finally:
        os.killpg(bridge.pid, signal.SIGINT)
        try:
            bridge.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(bridge.pid, signal.SIGKILL)
        ex.shutdown()
        node.destroy_node()
        rclpy.try_shutdown()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--rate", type=float, default=30.0, help="bridge publish rate (Hz)")
    ap.add_argument("--actions", type=int, default=20)
    ap.add_argument("--profiles", default="shm,default", help="comma list of: shm, default")
    ap.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.measure:
        print(json.dumps(measure(args.seconds, args.rate, args.actions)))
        return

    from personal.ros_env import ros_environment

    print(f"sim bridge on loopback: {args.rate:.0f} Hz requested, {args.seconds:.0f} s per setting, 640x480")
    for k, profile in enumerate(args.profiles.split(",")):
        env = ros_environment({**os.environ, "ROS_DOMAIN_ID": str(150 + os.getpid() % 50 + k)})
        if profile == "default":
            env.pop("FASTDDS_DEFAULT_PROFILES_FILE", None)
        out = subprocess.run([sys.executable, __file__, "--measure", "--seconds", str(args.seconds), "--rate",
                              str(args.rate), "--actions", str(args.actions)], env=env, capture_output=True, text=True)
        lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
        if not lines:
            print(f"[{profile}] failed:\n{out.stdout[-2000:]}{out.stderr[-2000:]}")
            continue
        r = json.loads(lines[-1])
        if "error" in r:
            print(f"[{profile}] {r['error']}")
            continue
        print(f"[{profile:7s}] bridge stamped {r['published_hz']:.1f} frames/s; RGB latency p50 {r['rgb_latency_ms_p50']:.1f} ms; "
              f"{r['actions_per_s']:.1f} actions/s answered with a new frame")
        for key in TOPICS:
            t = r[key]
            print(f"    {key:6s} {t['hz']:6.1f} Hz received, loss {100 * t['loss']:5.1f} %")


if __name__ == "__main__":
    main()

"""Real time on the robot's computer: the LoCoBot double streams RGB-D into the ``locobot`` graph's
mapping node (started exactly as the graph starts it, with ``encoder`` as given; default ``lit``, the
shipped crop tower — the graph's own default ``clip`` needs local weights) while its base turns in
place, so every frame has a new pose from TF.

For each camera rate it prints: frames published by the double, frames mapped per second, frames
dropped (published, never integrated: lost by the best-effort sensor subscription behind a busy
node — the queue is bounded by DDS depth — or skipped), frame-to-map latency (image stamp to the
``map/status`` of that frame, median and p95), and the mapping process's CPU time per mapped frame
(its whole process tree). The load average is printed too: the machine may be shared.

The double renders 640x480 in ~75 ms on this CPU, too slow for 30 Hz, so it reuses the render of the
nearest pose on a 5° / 1 cm grid (``render_cache_deg``): the images are the scene seen from within
2.5° of the true pose; stamps, TF and topic layout are the real stack's.

Usage: .venv/bin/python bench/bench_locobot_realtime.py [--rates 15,30] [--seconds 20] [--size 640x480]
       [--encoder lit] [--base create3]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def cpu_seconds(proc) -> float:
    """User + system CPU of a process and its children (psutil), 0 once it has gone."""
    import psutil

    total = 0.0
    try:
        p = psutil.Process(proc.pid)
        for q in [p, *p.children(recursive=True)]:
            t = q.cpu_times()
            total += t.user + t.system
    except psutil.Error:
        pass
    return total


def run_rate(rate: float, args, env: dict) -> dict:
    import rclpy
    from geometry_msgs.msg import Twist
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import CameraInfo

    from personal.graphs import get_graph, parse_assignments
    from personal.msg import MapStatus
    from personal.robot import conventions as C
    from personal.runner import node_command

    w, h = (int(v) for v in args.size.split("x"))
    nodes = {n.name: n for n in get_graph("locobot").resolve(parse_assignments(
        [f"encoder:={args.encoder}", f"base:={args.base}"]))}
    m = nodes["mapping"]
    import tempfile

    logs = [tempfile.TemporaryFile("w+"), tempfile.TemporaryFile("w+")]
    double = subprocess.Popen(node_command("sim_bridge.locobot_double", "locobot_double", namespace="locobot", parameters={
        "base": args.base, "width": w, "height": h, "camera_rate": rate, "render_cache_deg": 5.0}), cwd=ROOT, env=env,
        stdout=logs[0], stderr=subprocess.STDOUT)
    mapping = subprocess.Popen(node_command(m.spec.module, m.name, m.namespace, m.parameters, m.remappings), cwd=ROOT,
                               env=env, stdout=logs[1], stderr=subprocess.STDOUT)
    ctx = rclpy.Context()
    rclpy.init(args=[], context=ctx)
    node = rclpy.create_node("bench_realtime", context=ctx)
    ex = SingleThreadedExecutor(context=ctx)
    ex.add_node(node)
    published: list[int] = []
    mapped: dict[int, int] = {}  # frame stamp -> receipt time (ns)

    def stamp(msg) -> int:
        return msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec

    latched = QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    node.create_subscription(MapStatus, "/locobot/map/status", lambda s: mapped.setdefault(stamp(s), time.time_ns()), latched)
    prefix = C.camera_layout("interbotix", "4.55").prefix
    node.create_subscription(CameraInfo, f"/locobot/{prefix}/color/camera_info", lambda i: published.append(stamp(i)),
                             QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE))
    cmd = node.create_publisher(Twist, f"/locobot/{C.BASES[args.base].cmd_vel_topic}", 10)
    turn = Twist()
    turn.angular.z = 0.4
    node.create_timer(0.1, lambda: cmd.publish(turn))
    try:
        t_end = time.monotonic() + 240
        while not mapped and time.monotonic() < t_end:  # start-up: processes, discovery, the encoder's load
            ex.spin_once(timeout_sec=0.05)
        if not mapped:
            raise RuntimeError("no frame mapped within 240 s of start")
        t0_ns, cpu0 = time.time_ns(), cpu_seconds(mapping)
        end = time.monotonic() + args.seconds
        while time.monotonic() < end:
            ex.spin_once(timeout_sec=0.02)
        t1_ns, cpu1 = time.time_ns(), cpu_seconds(mapping)
        settle = time.monotonic() + 3.0  # frames of the window still being integrated
        while time.monotonic() < settle:
            ex.spin_once(timeout_sec=0.02)
    finally:
        for p in (double, mapping):
            p.terminate()
        for p in (double, mapping):
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
        node.destroy_node()
        rclpy.shutdown(context=ctx)
    logs[1].seek(0)
    ready = next((line.strip() for line in logs[1] if "mapping ready" in line), "mapping ready: (not logged)")
    window = [s for s in published if t0_ns <= s < t1_ns]
    done = [s for s in window if s in mapped]
    lat = sorted((mapped[s] - s) / 1e6 for s in done)
    secs = (t1_ns - t0_ns) / 1e9
    return {"rate": rate, "published": len(window), "mapped": len(done), "mapped_per_s": len(done) / secs,
            "dropped": len(window) - len(done), "lat_median": statistics.median(lat) if lat else float("nan"),
            "lat_p95": lat[min(len(lat) - 1, int(0.95 * len(lat)))] if lat else float("nan"),
            "cpu_ms": 1000 * (cpu1 - cpu0) / max(1, len(done)), "secs": secs, "ready": ready[ready.find("mapping ready"):]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rates", default="15,30", help="camera rates to stream, Hz (comma-separated)")
    ap.add_argument("--seconds", type=float, default=20.0, help="measurement window per rate")
    ap.add_argument("--size", default="640x480", help="image size WxH")
    ap.add_argument("--encoder", default="lit", help="the mapping node's encoder (graph argument)")
    ap.add_argument("--base", default="create3", choices=("create3", "kobuki"))
    args = ap.parse_args()
    from personal.ros_env import claim_domain_id, ros_environment

    domain, lock = claim_domain_id()
    env = {**ros_environment(), "ROS_DOMAIN_ID": str(domain), "ROS_LOCALHOST_ONLY": "1", "PYTHONPATH": str(ROOT)}
    os.environ.update(env)
    print(f"load average before: {' '.join(f'{v:.2f}' for v in os.getloadavg())} ({os.cpu_count()} CPUs); "
          f"{args.size}, encoder {args.encoder}, base {args.base}, {args.seconds:.0f} s per rate")
    print("rate Hz | published | mapped/s | dropped | latency median ms | p95 ms | mapping CPU ms/frame")
    for rate in (float(r) for r in args.rates.split(",")):
        r = run_rate(rate, args, env)
        print(f"{r['rate']:7.0f} | {r['published']:9d} | {r['mapped_per_s']:8.2f} | {r['dropped']:7d} | "
              f"{r['lat_median']:17.0f} | {r['lat_p95']:6.0f} | {r['cpu_ms']:6.0f}   ({r['ready']})", flush=True)
    print(f"load average after: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    lock.close()


if __name__ == "__main__":
    main()

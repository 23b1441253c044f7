"""Live view (viz:=foxglove) throughput and what it costs the main job.

(1) Rate: the viz node as a process, fed over ROS as fast as this process publishes 320x240
    colour (rgb8) + depth (32FC1), a point cloud (``--points``), an occupancy grid and grounding
    results; a Foxglove protocol client in another process subscribes to everything and counts
    the decoded frames. Prints frames/s and MB/s received per topic and the viz node's CPU.
(2) Cost: ``personal launch pog_eval`` (small: ``--scenes`` scenes, ``--episodes`` per split,
    explore graph, maps not reused) with and without ``viz:=foxglove`` + a connected client;
    prints wall time of each and the difference.
Usage: .venv/bin/python bench/bench_viz.py [--seconds 10] [--skip-cost]
Figures on this 2-core machine are measured while other jobs run: say so when quoting them.
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from personal.ros_env import claim_domain_id, ros_environment  # noqa: E402

DOMAIN, _LOCK = claim_domain_id()
os.environ.update(ros_environment({**os.environ, "ROS_DOMAIN_ID": str(DOMAIN)}))

PROBE = """
import json, sys
from personal.viz.client import probe
p = probe(sys.argv[1], None, count=0, duration=float(sys.argv[2]), keep=1)
print(json.dumps({t: [len(f), sum(x.size for x in f)] for t, f in p.frames.items()} | {"_seconds": p.seconds}))
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_probe(port: int, seconds: float) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", PROBE, f"ws://127.0.0.1:{port}", str(seconds)], cwd=ROOT,
                            stdout=subprocess.PIPE, text=True, env=dict(os.environ))


def rate(seconds: float, points: int) -> None:
    import psutil
    import rclpy
    from geometry_msgs.msg import Point
    from nav_msgs.msg import OccupancyGrid
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
    from sensor_msgs.msg import Image, PointCloud2, PointField

    from personal.msg import GroundingResult
    from personal.runner import node_command

    port = free_port()
    viz = subprocess.Popen(node_command("nodes.viz_node", "viz", parameters={"port": port, "image_rate_hz": 0.0, "stats_period_s": 0.0}),
                           cwd=ROOT, env=dict(os.environ), stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    rclpy.init()
    node = rclpy.create_node("viz_bench_feeder")
    rng = np.random.default_rng(0)
    rgb = Image(height=240, width=320, encoding="rgb8", step=960, data=rng.integers(0, 255, 240 * 320 * 3, dtype=np.uint8).tobytes())
    depth = Image(height=240, width=320, encoding="32FC1", step=1280, data=rng.uniform(0.3, 5, 240 * 320).astype(np.float32).tobytes())
    cloud = PointCloud2(height=1, width=points, point_step=16, row_step=16 * points, is_dense=True,
                        fields=[PointField(name=n, offset=4 * i, datatype=7, count=1) for i, n in enumerate("xyz")]
                        + [PointField(name="rgb", offset=12, datatype=7, count=1)],
                        data=rng.uniform(-5, 5, points * 4).astype(np.float32).tobytes())
    for m in (rgb, depth, cloud):
        m.header.frame_id = "map"
    grid = OccupancyGrid()
    grid.header.frame_id = "map"
    grid.info.width, grid.info.height, grid.info.resolution = 200, 200, 0.05
    grid.data = rng.integers(-1, 101, 200 * 200).astype(np.int8).tolist()
    latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    pubs = [(node.create_publisher(Image, "camera/color/image_raw", qos_profile_sensor_data), rgb),
            (node.create_publisher(Image, "camera/aligned_depth_to_color/image_raw", qos_profile_sensor_data), depth),
            (node.create_publisher(PointCloud2, "map/cloud", 1), cloud),
            (node.create_publisher(OccupancyGrid, "map", latched), grid)]
    res_pub = node.create_publisher(GroundingResult, "grounding/result", QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE))
    results = [GroundingResult(request_id="", episode_id="ep", method=m, ok=True, index=i, count=5, scores=[0.9, 0.5, 0.1],
                               points=[Point(x=float(k), y=1.0) for k in range(3)])
               for i, m in enumerate(("random", "centre", "qs", "rpg", "rpg-owner"))]
    time.sleep(4.0)  # viz node up, discovery done
    probe = start_probe(port, seconds + 3)
    time.sleep(2.0)
    proc = psutil.Process(viz.pid)
    proc.cpu_percent()
    sent, t0 = 0, time.monotonic()
    while time.monotonic() - t0 < seconds:
        for pub, msg in pubs:
            pub.publish(msg)
        for r in results:
            r.request_id = str(sent)
            res_pub.publish(r)
        sent += 1
        time.sleep(0.001)
    elapsed = time.monotonic() - t0
    cpu = proc.cpu_percent()
    got = json.loads(probe.communicate(timeout=60)[0])
    viz.terminate()
    viz.wait(10)
    node.destroy_node()
    rclpy.shutdown()
    print(f"(1) viz node rate, {seconds:.0f} s, published {sent / elapsed:.1f} sets/s (320x240 rgb8 + 32FC1 depth, "
          f"{points} point cloud, 200x200 grid, 5 grounding results); viz node CPU {cpu:.0f} % of one core")
    print(f"{'Foxglove topic':28s} {'frames/s':>9s} {'MB/s':>7s}")
    for topic, (n, size) in sorted((k, v) for k, v in got.items() if not k.startswith("_")):
        print(f"{topic:28s} {n / seconds:9.1f} {size / seconds / 1e6:7.2f}")


def run_pog(out: Path, scenes: int, episodes: int, viz: bool) -> tuple[float, float, float | None]:
    """(wall s, CPU s of the whole graph and its child graphs, CPU s of the viz node)."""
    import re
    import resource
    args = [sys.executable, "-m", "personal", "launch", "pog_eval", "--domain-id", "auto", f"scenes:={scenes}",
            f"episodes_per_split:={episodes}", f"maps_dir:={out / 'maps'}", "reuse_maps:=false", f"out_dir:={out / 'runs'}"]
    probe = None
    if viz:
        port = free_port()
        args += ["viz:=foxglove", f"viz_port:={port}"]
    t0, cpu0 = time.monotonic(), resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.Popen(args, cwd=ROOT, env=dict(os.environ), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if viz:
        probe = start_probe(port, 3600)
    log = proc.communicate()[0]
    wall = time.monotonic() - t0
    cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    viz_cpu = re.search(r"\[viz\] forwarded (\d+) messages on (\d+) topics, CPU ([\d.]+) s", log)
    if proc.returncode != 0:
        raise SystemExit(f"pog_eval failed ({proc.returncode}):\n{log[-3000:]}")
    if probe is not None:  # it ends when the server closes with the graph, and prints what it received
        try:
            out_text = probe.communicate(timeout=30)[0]
        except subprocess.TimeoutExpired:
            probe.terminate()
            out_text = probe.communicate(timeout=30)[0]
        print(f"    viz client received: {out_text.strip() or '(killed before printing)'}")
    if viz_cpu:
        print(f"    viz node: forwarded {viz_cpu.group(1)} messages on {viz_cpu.group(2)} topics, CPU {viz_cpu.group(3)} s")
    return wall, cpu, float(viz_cpu.group(3)) if viz_cpu else None


def cost(scenes: int, episodes: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base, base_cpu, _ = run_pog(Path(tmp) / "plain", scenes, episodes, viz=False)
        print(f"(2) pog_eval scenes:={scenes} episodes_per_split:={episodes} (explore graph, maps rebuilt): "
              f"{base:.1f} s wall, {base_cpu:.1f} s CPU (all processes) without viz")
        wall, cpu, viz_cpu = run_pog(Path(tmp) / "viz", scenes, episodes, viz=True)
        print(f"    with viz:=foxglove and a client subscribed to every topic: {wall:.1f} s wall ({wall - base:+.1f} s, "
              f"{100 * (wall - base) / base:+.0f} %), {cpu:.1f} s CPU ({cpu - base_cpu:+.1f} s, {100 * (cpu - base_cpu) / base_cpu:+.0f} %)"
              + (f"; the viz node itself {viz_cpu:.1f} s CPU = {100 * viz_cpu / base_cpu:.0f} % of the job's CPU" if viz_cpu else ""))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--points", type=int, default=20000)
    ap.add_argument("--scenes", type=int, default=1)
    ap.add_argument("--episodes", type=int, default=3)
    ap.add_argument("--skip-cost", action="store_true")
    args = ap.parse_args()
    rate(args.seconds, args.points)
    if not args.skip_cost:
        cost(args.scenes, args.episodes)


if __name__ == "__main__":
    main()

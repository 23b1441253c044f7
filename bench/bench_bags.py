"""Bag record/play throughput for 640x480 colour (rgb8) + aligned depth (16UC1) at 30 Hz.

Prints: (1) the file layer alone — write and read MB/s and messages/s, and what `bag info`'s checks
cost on a zstd-compressed bag (summary only / every chunk decompressed and CRC-checked, the
default / every message read, --full); (2) live recording
over Fast DDS (the recorder node as a subprocess, shm profile on) — messages kept of those
published at 30 Hz; (3) live playback as fast as possible — messages/s delivered.
Usage: .venv/bin/python bench/bench_bags.py [--seconds 4]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from personal.ros_env import ros_environment  # noqa: E402

os.environ.update(ros_environment())
os.environ.setdefault("ROS_DOMAIN_ID", str(150 + os.getpid() % 80))

import rclpy  # noqa: E402
from rclpy.qos import qos_profile_sensor_data  # noqa: E402
from rclpy.serialization import serialize_message  # noqa: E402
from sensor_msgs.msg import Image  # noqa: E402

from personal.bags import BagReader, BagWriter  # noqa: E402
from personal.runner import node_command  # noqa: E402

W, H = 640, 480


def frames(seed=0):
    rng = np.random.default_rng(seed)
    rgb = Image(height=H, width=W, encoding="rgb8", step=W * 3)
    rgb.data = rng.integers(0, 255, (H, W, 3), dtype=np.uint8).tobytes()
    depth = Image(height=H, width=W, encoding="16UC1", step=W * 2)
    depth.data = rng.integers(500, 5000, (H, W), dtype=np.uint16).tobytes()
    return rgb, depth


def file_layer(n: int, tmp: Path) -> None:
    rgb, depth = frames()
    blobs = [serialize_message(rgb), serialize_message(depth)]
    size = sum(len(b) for b in blobs) * n
    t = time.perf_counter()
    with BagWriter(tmp / "file_bag", compress=False) as w:
        w.add_topic("/camera/color/image_raw", "sensor_msgs/msg/Image")
        w.add_topic("/camera/aligned_depth_to_color/image_raw", "sensor_msgs/msg/Image")
        for i in range(n):
            w.write("/camera/color/image_raw", blobs[0], i * 33_333_333)
            w.write("/camera/aligned_depth_to_color/image_raw", blobs[1], i * 33_333_333 + 1)
    tw = time.perf_counter() - t
    t = time.perf_counter()
    read = sum(len(m.data) for m in BagReader(tmp / "file_bag").messages())
    tr = time.perf_counter() - t
    assert read == size
    print(f"| file write (uncompressed) | {size / tw / 1e6:8.1f} MB/s | {2 * n / tw:8.0f} msg/s |")
    print(f"| file read                 | {size / tr / 1e6:8.1f} MB/s | {2 * n / tr:8.0f} msg/s |")
    info_checks(blobs, n, size, tmp)


def info_checks(blobs: list[bytes], n: int, size: int, tmp: Path) -> None:
    with BagWriter(tmp / "zstd_bag") as w:  # the recorder's default: zstd chunks
        w.add_topic("/camera/color/image_raw", "sensor_msgs/msg/Image")
        w.add_topic("/camera/aligned_depth_to_color/image_raw", "sensor_msgs/msg/Image")
        for i in range(n):
            w.write("/camera/color/image_raw", blobs[0], i * 33_333_333)
            w.write("/camera/aligned_depth_to_color/image_raw", blobs[1], i * 33_333_333 + 1)
    reader = BagReader(tmp / "zstd_bag")
    on_disk = sum(f.stat().st_size for f in reader.files) / 1e6
    t = time.perf_counter()
    reader._summary_counts(reader.files[0])
    t_summary = time.perf_counter() - t
    t = time.perf_counter()
    reader.verify()
    t_chunks = time.perf_counter() - t
    t = time.perf_counter()
    reader.verify(full=True)
    t_full = time.perf_counter() - t
    print(f"| bag info, {on_disk:.0f} MB zstd ({size / 1e6:.0f} MB raw) | summary only {t_summary * 1e3:.0f} ms | "
          f"chunks checked (default) {t_chunks * 1e3:.0f} ms | --full {t_full * 1e3:.0f} ms |")


def live(seconds: float, tmp: Path) -> None:
    rclpy.init()
    node = rclpy.create_node("bench_camera")
    pubs = [node.create_publisher(Image, t, qos_profile_sensor_data)
            for t in ("/camera/color/image_raw", "/camera/aligned_depth_to_color/image_raw")]
    msgs = frames()
    out = tmp / "live_bag"
    rec = subprocess.Popen(node_command("nodes.bag_recorder_node", "bag_recorder", parameters={
        "output": str(out), "topics": ["/camera/color/image_raw", "/camera/aligned_depth_to_color/image_raw"]}),
        env=os.environ.copy(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 15
    while any(p.get_subscription_count() == 0 for p in pubs) and time.monotonic() < deadline:
        rclpy.spin_once(node, timeout_sec=0.05)
    sent = 0
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        for p, m in zip(pubs, msgs):
            p.publish(m)
            sent += 1
        time.sleep(max(0.0, t0 + sent / 2 / 30.0 - time.monotonic()))
    time.sleep(0.5)
    rec.send_signal(2)
    rec.wait(20)
    reader = BagReader(out)
    kept = reader.message_count
    mb = sum(f.stat().st_size for f in reader.files) / 1e6
    print(f"| live record @30 Hz        | {mb / seconds:8.1f} MB/s | {kept / seconds:8.0f} msg/s | kept {kept}/{sent} |")

    stamps: list[float] = []
    sink = rclpy.create_node("bench_sink")
    for t in ("/camera/color/image_raw", "/camera/aligned_depth_to_color/image_raw"):
        sink.create_subscription(Image, t, lambda m: stamps.append(time.monotonic()), qos_profile_sensor_data)
    play = subprocess.Popen(node_command("nodes.bag_player_node", "bag_player", parameters={
        "bag": str(out), "rate": 0.0, "wait_subscribers": 10.0}), env=os.environ.copy(),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while play.poll() is None:
        rclpy.spin_once(sink, timeout_sec=0.01)
    for _ in range(50):
        rclpy.spin_once(sink, timeout_sec=0.01)
    dt = max(stamps[-1] - stamps[0], 1e-6) if len(stamps) > 1 else float("nan")
    print(f"| live play (rate 0)        | {mb / dt:8.1f} MB/s | {len(stamps) / dt:8.0f} msg/s | delivered {len(stamps)}/{kept}, first to last message |")
    sink.destroy_node()
    node.destroy_node()
    rclpy.try_shutdown()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=4.0)
    args = ap.parse_args()
    print("| stage | throughput | messages | notes |\n|---|---|---|---|")
    with tempfile.TemporaryDirectory() as d:
        file_layer(int(args.seconds * 30), Path(d))
        live(args.seconds, Path(d))


if __name__ == "__main__":
    main()

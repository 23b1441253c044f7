"""PInVerify capture server (dataset replayer) for the ``aiv_eval`` graph.

Serves a PInVerify-format folder (``index``) or, when ``index`` is empty, one it
generates from the synthetic simulator into ``data_dir`` (``targets`` × 3 pairs).
Environment semantics (relative directions, ±30° resolution, unreachable / trap
steps, start sector, horizon) are ``personal.verification.env``'s.

Subscribes ``aiv/command`` (``personal/msg/AivCommand``)
Publishes  ``aiv/observation`` (``AivObservation``), ``aiv/capture/rgb`` (rgb8),
           ``aiv/capture/mask`` (mono8, 255 = target) and ``aiv/capture/depth`` (32FC1, metres,
           when the dataset has depth) with header.frame_id = request id,
           ``aiv/dataset`` (``AivDataset``, transient local) once the data is ready.
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import Image

from personal.interfaces.convert import from_dict, packed, to_dict
from personal.msg import AivCommand, AivDataset, AivObservation
from personal.verification.reader import DatasetError, load_index
from personal.verification.session import CaptureServer
from nodes.lifecycle import run_node, subscribe

RELIABLE = QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE)
LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)


def image_msg(array: np.ndarray, encoding: str, frame_id: str, stamp) -> Image:
    msg = Image()
    msg.header.frame_id, msg.header.stamp = frame_id, stamp
    msg.height, msg.width = int(array.shape[0]), int(array.shape[1])
    msg.encoding = encoding
    dtype, channels = {"rgb8": (np.uint8, 3), "mono8": (np.uint8, 1), "32FC1": (np.float32, 1)}[encoding]
    msg.step = msg.width * channels * np.dtype(dtype).itemsize
    msg.data = packed("B", np.ascontiguousarray(array, dtype=dtype))
    return msg


class AivReplayerNode(Node):
    def __init__(self, **kwargs) -> None:
        super().__init__("aiv_replayer", **kwargs)
        p = self._declare
        index = p("index", "", "PInVerify index .jsonl; empty = generate a dataset into data_dir")
        data_dir = p("data_dir", "runs/aiv_data", "where a generated dataset is written (reused if present)")
        targets = p("targets", 30, "generated target objects (3 pairs each)")
        data_seed = p("data_seed", 0, "generator base seed")
        seed = p("seed", 0, "start-sector seed")
        horizon = p("horizon", 6, "steps per episode")
        lenient = p("lenient", False, "accept unknown index/meta fields")
        self.obs_pub = self.create_publisher(AivObservation, "aiv/observation", RELIABLE)
        self.rgb_pub = self.create_publisher(Image, "aiv/capture/rgb", RELIABLE)
        self.mask_pub = self.create_publisher(Image, "aiv/capture/mask", RELIABLE)
        self.depth_pub = self.create_publisher(Image, "aiv/capture/depth", RELIABLE)
        self.dataset_pub = self.create_publisher(AivDataset, "aiv/dataset", LATCHED)
        self.server: CaptureServer | None = None
        try:
            if not index:
                index = self._generate(Path(data_dir), targets, data_seed)
            pairs = load_index(index, strict=not lenient)
        except (DatasetError, OSError, ValueError) as exc:
            self.get_logger().error(f"dataset unusable: {exc}")
            self.dataset_pub.publish(AivDataset(index=str(index), episodes=0, error=str(exc)))
            return
        self.server = CaptureServer(pairs, seed=seed, horizon=horizon)
        subscribe(self, AivCommand, "aiv/command", self._on_command, RELIABLE)
        self._announcement = {"index": str(index), "episodes": len(pairs)}
        self._t_ready = time.monotonic()
        self._announce_timer = self.create_timer(0.2, self._announce)

    def _announce(self) -> None:
        """Announce the dataset once the verifier and the planner are matched on our topics,
        so the first observation cannot be lost to discovery (or after 15 s regardless)."""
        matched = (self.obs_pub.get_subscription_count() >= 2 and self.rgb_pub.get_subscription_count() >= 1
                   and self.mask_pub.get_subscription_count() >= 1 and self.depth_pub.get_subscription_count() >= 1)
        waited = time.monotonic() - self._t_ready
        if not matched and waited < 15.0:
            return
        if not matched:
            self.get_logger().warning("announcing the dataset before every subscriber is matched (15 s passed)")
        self._announce_timer.cancel()
        self.dataset_pub.publish(from_dict(AivDataset, self._announcement))
        self.get_logger().info(f"serving {self._announcement['episodes']} PInVerify episodes from {self._announcement['index']}")

    def _declare(self, name, default, description):
        from rcl_interfaces.msg import ParameterDescriptor

        return self.declare_parameter(name, default, ParameterDescriptor(description=description)).value

    def _generate(self, data_dir: Path, targets: int, seed: int) -> str:
        index = data_dir / "val" / "pv_index_all.jsonl"
        if index.exists():
            self.get_logger().info(f"reusing generated dataset {index}")
            return str(index)
        from personal.verification.writer import write_dataset

        self.get_logger().info(f"generating {targets} targets ({3 * targets} episodes) into {data_dir} ...")
        return write_dataset(data_dir, targets, seed)["index"]

    def _on_command(self, msg: AivCommand) -> None:
        cmd = to_dict(msg)
        try:
            obs, rgb, mask, depth = self.server.handle(cmd)
        except Exception as exc:  # a broken capture must cost one step, not the node
            obs = {"request_id": cmd["request_id"], "episode_index": cmd["episode_index"], "episode_key": "",
                   "step": 0, "status": "error", "sector_index": -1, "azimuth_deg": 0.0, "new_view": False,
                   "bbox_xyxy": [], "descriptions": [], "error": f"{type(exc).__name__}: {exc}"}
            rgb = mask = depth = None
        if obs.get("error"):
            self.get_logger().warning(f"command {cmd['command']} episode {cmd['episode_index']}: {obs['error']}")
        stamp = self.get_clock().now().to_msg()
        if rgb is not None:
            self.rgb_pub.publish(image_msg(rgb, "rgb8", cmd["request_id"], stamp))
            if mask is not None:
                self.mask_pub.publish(image_msg(mask.astype(np.uint8) * 255, "mono8", cmd["request_id"], stamp))
            if depth is not None:
                self.depth_pub.publish(image_msg(depth, "32FC1", cmd["request_id"], stamp))
        self.obs_pub.publish(from_dict(AivObservation, obs))


def main(args=None) -> None:
    run_node(AivReplayerNode, args)


if __name__ == "__main__":
    main()

"""Record live topics into a rosbag2-compatible MCAP bag directory.

Parameters: ``output`` (bag directory, must not exist), ``topics`` (names; empty =
every topic but /rosout and /parameter_events), ``max_messages`` (0 = unlimited;
the node exits after that many, useful in tests and benches).
Subscriptions are raw (CDR bytes are written as received) and use the QoS the
publishers offer, which is also what the bag records as ``offered_qos_profiles``.

Stopping (SIGINT / SIGTERM, as the runner stops a graph) drains first: the signal only sets a
flag, so it never lands inside the MCAP writer, and the node goes on writing what it was already
sent until no message has arrived for ``DRAIN_QUIET_S`` (at most ``DRAIN_MAX_S``; a second signal
ends the drain). Found in CI: a graph's end SIGINTed the recorder with a backlog of frames; the
KeyboardInterrupt struck mid-chunk and the bag's file held 76 messages per topic of the 85 its
metadata counted.
"""
from __future__ import annotations

import signal
import time

import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from personal.bags import BagWriter
from personal.bags.rosbag2_layout import qos_profile
from personal.bags.remap import import_message_class
from nodes.lifecycle import subscribe

IGNORED = {"/rosout", "/parameter_events"}
DRAIN_QUIET_S = 0.5  # a stop ends once nothing has arrived for this long ...
DRAIN_MAX_S = 3.0  # ... or after this long: inside the runner's 5 s between SIGINT and SIGTERM


class BagRecorder(Node):
    def __init__(self) -> None:
        super().__init__("bag_recorder")
        self.declare_parameter("output", "bag")
        self.declare_parameter("topics", [""])
        self.declare_parameter("max_messages", 0)
        self.wanted = {t if t.startswith("/") else "/" + t for t in self.get_parameter("topics").value if t}
        self.max_messages = int(self.get_parameter("max_messages").value)
        self.writer = BagWriter(self.get_parameter("output").value)
        self.count = 0
        self.done = False
        self.last_message_s = time.monotonic()
        self._subs = {}
        self.create_timer(0.2, self._discover)
        self.get_logger().info(f"recording {sorted(self.wanted) or 'all topics'} into {self.writer.directory}")

    def _discover(self) -> None:
        for name, types in self.get_topic_names_and_types():
            if name in self._subs or name in IGNORED or (self.wanted and name not in self.wanted):
                continue
            try:
                cls = import_message_class(types[0])
            except ImportError as e:
                self.get_logger().warning(f"not recording {name}: {e}")
                self._subs[name] = None
                continue
            if not self.get_publishers_info_by_topic(name):
                continue  # seen through a subscriber only: wait for a publisher to learn its QoS (latched or not)
            qos, offered = self._qos_for(name)
            self.writer.add_topic(name, types[0], offered)
            self._subs[name] = subscribe(self, cls, name, lambda data, n=name: self._on(n, data), qos, raw=True)
            self.get_logger().info(f"recording {name} [{types[0]}]")

    def _qos_for(self, topic: str) -> tuple[QoSProfile, list[dict]]:
        infos = self.get_publishers_info_by_topic(topic)
        reliable = bool(infos) and all(i.qos_profile.reliability == ReliabilityPolicy.RELIABLE for i in infos)
        latched = bool(infos) and all(i.qos_profile.durability == DurabilityPolicy.TRANSIENT_LOCAL for i in infos)
        qos = QoSProfile(
            depth=100,
            reliability=ReliabilityPolicy.RELIABLE if reliable else ReliabilityPolicy.BEST_EFFORT,
            durability=DurabilityPolicy.TRANSIENT_LOCAL if latched else DurabilityPolicy.VOLATILE,
        )
        return qos, [qos_profile(reliable=reliable, transient_local=latched, depth=10)]

    def _on(self, topic: str, data: bytes) -> None:
        if self.done:
            return
        self.writer.write(topic, data, self.get_clock().now().nanoseconds)
        self.count += 1
        self.last_message_s = time.monotonic()
        if self.max_messages and self.count >= self.max_messages:
            self.done = True

    def drain(self, executor: SingleThreadedExecutor, stop: "_StopRequests") -> None:
        """Write what is still queued after a stop request (see the module docstring)."""
        start, before = time.monotonic(), self.count
        while not self.done and stop.count < 2:
            now = time.monotonic()
            if now - start > DRAIN_MAX_S or now - max(self.last_message_s, start) > DRAIN_QUIET_S:
                break
            executor.spin_once(timeout_sec=0.05)
        self.get_logger().info(f"stop requested: wrote {self.count - before} queued messages in "
                               f"{time.monotonic() - start:.2f} s before closing the bag")

    def close(self) -> None:
        path = self.writer.close()
        self.get_logger().info(f"wrote {self.count} messages to {path}")


class _StopRequests:
    """SIGINT / SIGTERM handler that only counts: nothing is raised inside a callback."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, signum, frame) -> None:
        self.count += 1


def main(args=None) -> None:
    stop = _StopRequests()
    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    # rclpy's handlers would raise KeyboardInterrupt anywhere (and shut the context down before a drain)
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    node = BagRecorder()
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    try:
        while rclpy.ok() and not node.done and not stop.count:
            executor.spin_once(timeout_sec=0.1)
        if stop.count:
            node.drain(executor, stop)
    finally:
        node.close()
        executor.remove_node(node)
        node.destroy_node()
        rclpy.try_shutdown()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


if __name__ == "__main__":
    main()

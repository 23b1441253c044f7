"""Record live topics into a rosbag2-compatible MCAP bag directory.

Parameters: ``output`` (bag directory, must not exist), ``topics`` (names; empty =
every topic but /rosout and /parameter_events), ``max_messages`` (0 = unlimited;
the node exits after that many, useful in tests and benches).
Subscriptions are raw (CDR bytes are written as received) and use the QoS the
publishers offer, which is also what the bag records as ``offered_qos_profiles``.
"""
from __future__ import annotations

import rclpy
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from personal.bags import BagWriter
from personal.bags.rosbag2_layout import qos_profile
from personal.bags.remap import import_message_class
from nodes.lifecycle import subscribe

IGNORED = {"/rosout", "/parameter_events"}


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
        if self.max_messages and self.count >= self.max_messages:
            self.done = True

    def close(self) -> None:
        path = self.writer.close()
        self.get_logger().info(f"wrote {self.count} messages to {path}")


def main(args=None) -> None:
    rclpy.init(args=args)
    node = BagRecorder()
    try:
        while rclpy.ok() and not node.done:
            rclpy.spin_once(node, timeout_sec=0.1)
    except KeyboardInterrupt:
        pass
    finally:
        node.close()
        node.destroy_node()
        rclpy.try_shutdown()


if __name__ == "__main__":
    main()

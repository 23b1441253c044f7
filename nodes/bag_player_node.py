"""Play a rosbag2 MCAP bag directory onto live topics with its original timing.

Parameters: ``bag`` (directory), ``rate`` (1.0 = real time; 0 = as fast as possible),
``clock`` (publish /clock from the bag's log times), ``topics`` (subset; empty = all),
``remap`` (["from:=to", ...]), ``wait_subscribers`` (seconds to wait for at least one
subscriber on every played topic before starting), ``validate`` (deserialise each
message first and skip, with a count, those that do not decode).
The node exits when the bag is played, so a graph can mark it required.
"""
from __future__ import annotations

import time

import rclpy
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rclpy.serialization import deserialize_message
from rosgraph_msgs.msg import Clock

from personal.bags import BagError, BagReader
from personal.bags.remap import import_message_class, parse_remaps


class BagPlayer(Node):
    def __init__(self) -> None:
        super().__init__("bag_player")
        self.declare_parameter("bag", "")
        self.declare_parameter("rate", 1.0)
        self.declare_parameter("clock", False)
        self.declare_parameter("topics", [""])
        self.declare_parameter("remap", [""])
        self.declare_parameter("wait_subscribers", 0.0)
        self.declare_parameter("validate", True)
        self.reader = BagReader(self.get_parameter("bag").value)
        self.rate = float(self.get_parameter("rate").value)
        self.validate = bool(self.get_parameter("validate").value)
        remaps = parse_remaps([r for r in self.get_parameter("remap").value if r])
        wanted = [t for t in self.get_parameter("topics").value if t]
        self.topics = wanted or list(self.reader.topics)
        self.clock_pub = self.create_publisher(Clock, "/clock", 10) if self.get_parameter("clock").value else None
        self.publishers_ = {}
        self.classes = {}
        self.skipped = 0
        for name in self.topics:
            info = self.reader.topics.get(name)
            if info is None:
                raise BagError(f"{self.reader.directory}: no topic {name} in the bag (has {sorted(self.reader.topics)})")
            try:
                self.classes[name] = import_message_class(info.type)
            except ImportError as e:
                self.get_logger().error(f"skipping {name}: unknown message type {info.type} ({e})")
                continue
            self.publishers_[name] = self.create_publisher(self.classes[name], remaps.get(name, name), self._qos(info))

    @staticmethod
    def _qos(info) -> QoSProfile:
        p = info.qos_profiles[0] if info.qos_profiles else {}
        return QoSProfile(
            depth=max(int(p.get("depth", 10) or 10), 10),
            reliability=ReliabilityPolicy.BEST_EFFORT if p.get("reliability") == 2 else ReliabilityPolicy.RELIABLE,
            durability=DurabilityPolicy.TRANSIENT_LOCAL if p.get("durability") == 1 else DurabilityPolicy.VOLATILE,
        )

    def wait_for_subscribers(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if all(p.get_subscription_count() > 0 for p in self.publishers_.values()):
                return
            rclpy.spin_once(self, timeout_sec=0.05)
        self.get_logger().warn("starting playback before every topic has a subscriber")

    def play(self) -> int:
        t0 = wall0 = None
        played = 0
        for msg in self.reader.messages(list(self.publishers_)):
            if t0 is None:
                t0, wall0 = msg.log_time_ns, time.monotonic()
            if self.rate > 0:
                delay = wall0 + (msg.log_time_ns - t0) / 1e9 / self.rate - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
            if self.validate:
                try:
                    deserialize_message(msg.data, self.classes[msg.topic])
                except Exception as e:  # noqa: BLE001 - any decoding failure means skip
                    self.skipped += 1
                    self.get_logger().warn(f"skipping undecodable message on {msg.topic}: {e}", throttle_duration_sec=2.0)
                    continue
            if self.clock_pub is not None:
                clock = Clock()
                clock.clock.sec, clock.clock.nanosec = divmod(msg.log_time_ns, 1_000_000_000)
                self.clock_pub.publish(clock)
            self.publishers_[msg.topic].publish(msg.data)
            played += 1
        self.get_logger().info(f"played {played} messages, skipped {self.skipped} undecodable")
        return played


def main(args=None) -> None:
    rclpy.init(args=args)
    node = None
    code = 0
    try:
        node = BagPlayer()
        node.wait_for_subscribers(float(node.get_parameter("wait_subscribers").value))
        node.play()
        time.sleep(0.5)  # let reliable subscribers drain the last messages
    except BagError as e:
        print(f"[bag_player] error: {e}", flush=True)
        code = 2
    except KeyboardInterrupt:
        pass
    finally:
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
    raise SystemExit(code)


if __name__ == "__main__":
    main()

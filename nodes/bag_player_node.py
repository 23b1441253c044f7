"""Play a rosbag2 MCAP bag directory onto live topics with its original timing.

Parameters: ``personal.bags.playback.PARAMETERS`` (docs/bags.md). Exact replays (``bag_map`` graph)
use ``reliable``, ``latched_first`` (the ``episode`` first), ``subscribed_only``, ``flush_service``
(e.g. ``map/flush``: no more input, so the consumer gives up frames that cannot complete) and
``done_service`` (e.g. ``map/save``), called once every reliable message is acknowledged, the flush
answered, ``progress_topic`` at the newest played stamp and ``drain_s`` passed. A log-time gap over
``max_gap_s`` is shortened to it. SIGINT / SIGTERM stop the playback within 0.1 s (exit code 130);
the node exits when the bag is played (code 2 on a broken bag or a failed done service).
"""
from __future__ import annotations

import time

import rclpy
from rclpy.duration import Duration
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rclpy.serialization import deserialize_message
from rosgraph_msgs.msg import Clock
from std_msgs.msg import Header
from std_srvs.srv import Trigger

from personal.bags import BagError, BagReader
from personal.bags.remap import import_message_class, parse_remaps
from personal.bags.playback import PARAMETERS, PlaybackClock, SubscriberSettle, absolute, played_topics, replay_qos
from nodes.lifecycle import subscribe
from nodes.parameters import declare_parameters

LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
RELIABLE = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)


class Interrupted(Exception):
    """SIGINT / SIGTERM during playback."""


class BagPlayer(Node):
    def __init__(self) -> None:
        super().__init__("bag_player")
        self.p = p = declare_parameters(self, PARAMETERS)
        self.reader = BagReader(p["bag"])
        self.clock = PlaybackClock(float(p["rate"]), float(p["max_gap_s"]))
        self.validate, self.reliable = bool(p["validate"]), bool(p["reliable"])
        remaps = parse_remaps([r for r in p["remap"] if r])
        self.topics = played_topics(list(p["topics"]), list(self.reader.topics), remaps, p["idle_topic"])
        self.clock_pub = self.create_publisher(Clock, "/clock", 10) if self.p["clock"] else None
        self.publishers_, self.classes, self.latched = {}, {}, set()
        self.skipped = 0
        self.played_by_topic: dict[str, int] = {}
        self.last_activity = time.monotonic()
        self.newest_played_ns = 0  # newest header stamp among the played messages
        self.progress_ns = -1  # newest stamp the consumer reported handled (progress_topic)
        if p["progress_topic"]:
            subscribe(self, Header, p["progress_topic"], self._on_progress, LATCHED)
        if p["idle_topic"]:  # only arrival times matter
            subscribe(self, import_message_class(p["idle_type"]), absolute(p["idle_topic"]), self._on_activity, RELIABLE,
                      raw=True)
        for name in self.topics:
            info = self.reader.topics.get(name)
            if info is None:
                raise BagError(f"{self.reader.directory}: no topic {name} in the bag (has {sorted(self.reader.topics)})")
            try:
                self.classes[name] = import_message_class(info.type)
            except ImportError as e:
                self.get_logger().error(f"skipping {name}: unknown message type {info.type} ({e})")
                continue
            qos = self._qos(info)
            if qos.durability == DurabilityPolicy.TRANSIENT_LOCAL:
                self.latched.add(name)
            self.publishers_[name] = self.create_publisher(self.classes[name], remaps.get(name, name), qos)

    def _on_activity(self, _data: bytes) -> None:
        self.last_activity = time.monotonic()

    def _on_progress(self, msg: Header) -> None:
        self.progress_ns = max(self.progress_ns, msg.stamp.sec * 1_000_000_000 + msg.stamp.nanosec)

    def _qos(self, info) -> QoSProfile:
        depth, reliable, latched = replay_qos(info.qos_profiles[0] if info.qos_profiles else {}, self.reliable)
        return QoSProfile(depth=depth, reliability=ReliabilityPolicy.RELIABLE if reliable else ReliabilityPolicy.BEST_EFFORT,
                          durability=DurabilityPolicy.TRANSIENT_LOCAL if latched else DurabilityPolicy.VOLATILE)

    def wait_for_subscribers(self, timeout: float) -> None:
        if self.p["subscribed_only"]:
            self._keep_subscribed(timeout)
            return
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if all(p.get_subscription_count() > 0 for p in self.publishers_.values()):
                return
            rclpy.spin_once(self, timeout_sec=0.05)
        self.get_logger().warning("starting playback before every topic has a subscriber")

    def _keep_subscribed(self, timeout: float, settle: float = 1.5) -> None:
        """Wait for a first subscriber and until the set of subscribed topics has not changed
        for ``settle`` s (discovery shows a consumer's subscriptions one by one), then drop the
        topics nobody subscribes to."""
        deadline = time.monotonic() + timeout
        watch = SubscriberSettle(settle, time.monotonic())
        while time.monotonic() < deadline:
            seen = frozenset(t for t, p in self.publishers_.items() if p.get_subscription_count() > 0)
            if watch.settled(seen, time.monotonic()):
                break
            rclpy.spin_once(self, timeout_sec=0.05)
        unused = [t for t in self.publishers_ if t not in watch.seen]
        for topic in unused:
            self.destroy_publisher(self.publishers_.pop(topic))
        if not self.publishers_:
            raise BagError(f"{self.reader.directory}: no subscriber for any of its topics after {timeout:.0f} s")
        self.get_logger().info(f"playing {sorted(self.publishers_)}; not played (no subscriber): {sorted(unused) or 'none'}")

    def _publish(self, msg) -> bool:
        if self.validate:
            try:
                decoded = deserialize_message(msg.data, self.classes[msg.topic])
            except Exception as e:  # noqa: BLE001 - any decoding failure means skip
                self.skipped += 1
                self.get_logger().warning(f"skipping undecodable message on {msg.topic}: {e}", throttle_duration_sec=2.0)
                return False
            header = getattr(decoded, "header", None)
            if header is not None:
                self.newest_played_ns = max(self.newest_played_ns, header.stamp.sec * 1_000_000_000 + header.stamp.nanosec)
        if self.clock_pub is not None:
            self.clock_pub.publish(Clock(clock=rclpy.time.Time(nanoseconds=msg.log_time_ns).to_msg()))
        self.publishers_[msg.topic].publish(msg.data)
        self.played_by_topic[msg.topic] = self.played_by_topic.get(msg.topic, 0) + 1
        return True

    def _publish_latched_first(self) -> set[tuple[str, int]]:
        """First message of each transient-local topic, now; returns what was sent."""
        sent = set()
        for topic in sorted(self.latched & set(self.publishers_)):
            first = next(self.reader.messages([topic]), None)
            if first is not None and self._publish(first):
                sent.add((topic, first.log_time_ns))
        if sent:
            # delivered before the first timed message; a consumer that needs it first holds early
            # frames until it is handled (the mapping node does) instead of relying on a pause here
            self._wait_acked(5.0)
        return sent

    def _wait_acked(self, timeout: float) -> None:
        """Block until every reliable subscriber acknowledged every message (a reader that matched
        late gets the ones it missed resent meanwhile); best-effort topics have nothing to wait for."""
        for topic, pub in self.publishers_.items():
            if pub.qos_profile.reliability != ReliabilityPolicy.RELIABLE:
                continue
            if not pub.wait_for_all_acked(Duration(seconds=timeout)):
                self.get_logger().warning(f"{topic}: not every message acknowledged within {timeout:.0f} s")

    def play(self) -> int:
        early = self._publish_latched_first() if self.p["latched_first"] else set()
        clock, wall0 = self.clock, time.monotonic()
        played = len(early)
        for msg in self.reader.messages(list(self.publishers_)):
            if (msg.topic, msg.log_time_ns) in early:
                continue
            if clock.t0 is None:
                wall0 = time.monotonic()
            gap = clock.advance(msg.log_time_ns)
            if gap:  # a recording paused for hours (or a damaged stamp) is not waited out
                self.get_logger().warning(f"log-time gap of {gap:.1f} s before "
                                          f"{msg.topic}: shortened to max_gap_s = {clock.max_gap_s:g} s")
            due = clock.due_s(msg.log_time_ns)
            if due is not None:
                self._sleep_until(wall0 + due)
            played += self._publish(msg)
        self.get_logger().info(f"played {played} messages, skipped {self.skipped} undecodable "
                               f"({', '.join(f'{t}: {n}' for t, n in sorted(self.played_by_topic.items()))})")
        return played

    def _sleep_until(self, deadline: float) -> None:
        """Wait in short slices so that SIGINT / SIGTERM (rclpy's handlers shut the context down
        and do not interrupt a sleep) stop the playback within 0.1 s."""
        while True:
            if not self.context.ok():
                raise Interrupted()
            delay = deadline - time.monotonic()
            if delay <= 0:
                return
            time.sleep(min(delay, 0.1))

    def _wait_progress(self) -> None:
        """Until the consumer reports the newest played stamp handled (progress_topic), bounded."""
        if not self.p["progress_topic"] or not self.newest_played_ns:
            return
        deadline = time.monotonic() + float(self.p["progress_timeout_s"])
        while self.progress_ns < self.newest_played_ns and time.monotonic() < deadline:
            rclpy.spin_once(self, timeout_sec=0.05)
        if self.progress_ns < self.newest_played_ns:
            self.get_logger().warning(f"the consumer reported input handled up to {self.progress_ns / 1e9:.3f} s, "
                                      f"not the last played {self.newest_played_ns / 1e9:.3f} s; finishing anyway")

    def finish(self) -> bool:
        """Drain, then call ``done_service`` if set; False when it fails."""
        self._wait_acked(10.0)
        self._call_trigger(self.p["flush_service"], required=False)  # without it, progress is waited out
        self._wait_progress()
        self.last_activity = max(self.last_activity, time.monotonic())
        while time.monotonic() - self.last_activity < float(self.p["drain_s"]):  # idle_topic messages push this on
            rclpy.spin_once(self, timeout_sec=0.05)
        return self._call_trigger(self.p["done_service"])

    def _call_trigger(self, name: str, required: bool = True) -> bool:
        """Call the Trigger service ``name`` (none: True); False on failure, logged (a warning where not ``required``)."""
        if not name:
            return True
        client, res = self.create_client(Trigger, name), None
        if client.wait_for_service(timeout_sec=10.0):
            future = client.call_async(Trigger.Request())
            rclpy.spin_until_future_complete(self, future, timeout_sec=60.0)
            res = future.result()
        self.destroy_client(client)
        if res is None or not res.success:
            why = res.message if res else "not available, or no answer within 60 s"
            (self.get_logger().error if required else self.get_logger().warning)(f"service {name!r} failed: {why}")
            return False
        self.get_logger().info(f"service {name!r}: {res.message}")
        return True


def main(args=None) -> None:
    rclpy.init(args=args)
    node = None
    code = 0
    try:
        node = BagPlayer()
        node.wait_for_subscribers(float(node.p["wait_subscribers"]))
        node.play()
        if node.p["done_service"]:
            code = 0 if node.finish() else 2
        else:
            node._wait_acked(10.0)  # the last messages reach reliable subscribers before the writers go
    except BagError as e:
        print(f"[bag_player] error: {e}", flush=True)
        code = 2
    except (KeyboardInterrupt, Interrupted):
        print("[bag_player] interrupted", flush=True)
        code = 130
    finally:
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
    raise SystemExit(code)


if __name__ == "__main__":
    main()

"""The probe behind ``personal robot check``: watches a live system (a robot or the LoCoBot double)
for a few seconds and fills ``personal.robot.check.Observation`` — topics and types, every
endpoint's type hash and QoS, message rates, the first messages' encodings, each topic's clock offset, joint names,
and which links of the camera's TF chain exist. ``personal.robot.check.diagnose`` judges it.
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from personal.robot import conventions as C
from personal.robot.check import Endpoint, Observation, expected_interfaces, stamp_offset
from personal.tf import TfError
from nodes.lifecycle import subscribe
from nodes.tf import TfLookup

PROBE_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.BEST_EFFORT)  # hears reliable and best effort


def _message_class(type_name: str):
    pkg, _, name = type_name.split("/")
    return getattr(__import__(f"{pkg}.msg", fromlist=[name]), name)


def local_type_hash(type_name: str) -> str:
    """Our RIHS01 hash of a type, from rosidl's share/<pkg>/msg/<Name>.json ('' if not found)."""
    pkg, _, name = type_name.split("/")
    prefixes = [sys.prefix, *os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep)]
    for prefix in filter(None, prefixes):
        path = Path(prefix) / "share" / pkg / "msg" / f"{name}.json"
        if path.is_file():
            for h in json.loads(path.read_text()).get("type_hashes", []):
                if h.get("type_name") == type_name:
                    return h.get("hash_string", "")
    return ""


def _endpoint(info) -> Endpoint:
    h = str(getattr(info, "topic_type_hash", "") or "")
    q = info.qos_profile
    return Endpoint(type=info.topic_type, type_hash=h if h.startswith("RIHS01_") and not h.endswith("0" * 32) else "",
                    reliable=q.reliability == ReliabilityPolicy.RELIABLE,
                    transient_local=q.durability == DurabilityPolicy.TRANSIENT_LOCAL,
                    node=f"{info.node_namespace.rstrip('/')}/{info.node_name}")


class RobotCheckProbe(Node):
    def __init__(self, values: dict, **kwargs) -> None:
        super().__init__("robot_check", **kwargs)
        self.values = values
        self.interfaces = expected_interfaces(values)
        self.tf = TfLookup(self)
        self.counts: dict[str, int] = {}
        self.first: dict[str, float] = {}  # topic -> receipt time of its first and newest message
        self.last: dict[str, float] = {}
        self.obs = Observation()
        # subscribed at once with the expected types (a topic of another type simply never matches):
        # discovery of publishers and of these subscriptions then runs while the probe waits
        for itf in self.interfaces:
            if itf.direction == "in":
                self.counts[itf.topic] = 0
                subscribe(self, _message_class(itf.type), itf.topic, lambda m, t=itf.topic: self._on(t, m), PROBE_QOS)

    def _on(self, topic: str, msg) -> None:
        now = time.monotonic()
        self.counts[topic] += 1
        self.first.setdefault(topic, now)
        self.last[topic] = now
        stamp = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
        self.obs.stamp_offsets[topic] = stamp_offset(self.obs.stamp_offsets.get(topic), stamp,
                                                     self.get_clock().now().nanoseconds * 1e-9)
        if self.counts[topic] > 1:  # encoding and joint names: from the first message
            return
        if hasattr(msg, "encoding"):
            self.obs.encodings[topic] = msg.encoding
        if hasattr(msg, "name") and hasattr(msg, "position"):
            self.obs.joint_names = list(msg.name)

    def observation(self) -> Observation:
        obs = self.obs
        obs.topics = {n: list(t) for n, t in self.get_topic_names_and_types()}
        me = self.get_name()
        for itf in self.interfaces:
            pubs = [_endpoint(i) for i in self.get_publishers_info_by_topic(itf.topic) if i.node_name != me]
            subs = [_endpoint(i) for i in self.get_subscriptions_info_by_topic(itf.topic) if i.node_name != me]
            obs.publishers[itf.topic], obs.subscribers[itf.topic] = pubs, subs
            obs.local_hashes[itf.type] = local_type_hash(itf.type)
            n, span = self.counts.get(itf.topic, 0), self.last.get(itf.topic, 0.0) - self.first.get(itf.topic, 0.0)
            if n >= 2 and span > 0:
                obs.rates[itf.topic] = (n - 1) / span
            elif n == 1:
                obs.rates[itf.topic] = 0.1  # one message in the window: far too slow
        if self.tf.backend == "personal.tf":
            obs.tf_frames = set(self.tf.buffer.frames())
        for parent, child, _ in C.camera_chain(self.values.get("base", "create3"), self.values.get("ns", C.ROBOT_NAME)):
            try:
                self.tf.lookup_matrix(parent, child, 0)
                obs.tf_links[(parent, child)] = True
            except TfError:
                obs.tf_links[(parent, child)] = False
        return obs


def run_check(values: dict, duration: float = 3.0) -> Observation:
    """Own context: init, watch for ``duration`` seconds, shut down."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor

    ctx = rclpy.Context()
    rclpy.init(args=[], context=ctx)  # not the CLI's own argv (name:=value would read as remaps)
    try:
        probe = RobotCheckProbe(values, context=ctx)
        ex = SingleThreadedExecutor(context=ctx)
        ex.add_node(probe)
        end = time.monotonic() + duration
        while time.monotonic() < end:
            ex.spin_once(timeout_sec=0.05)
        obs = probe.observation()
        probe.destroy_node()
        return obs
    finally:
        rclpy.shutdown(context=ctx)


def main(argv=None) -> None:
    """``python -m nodes.robot_check '<graph values as JSON>' <seconds>``: the observation as JSON on
    stdout (``personal robot check`` runs this, as ``personal launch`` runs nodes, by module name)."""
    from personal.robot.check import observation_to_json

    argv = sys.argv[1:] if argv is None else argv
    values, duration = json.loads(argv[0]), float(argv[1])
    print(json.dumps(observation_to_json(run_check(values, duration))))


if __name__ == "__main__":
    main()

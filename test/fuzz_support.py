"""Malformed and extreme ROS messages for the node fuzz tests (test/test_fuzz_nodes.py).

``Fuzzer.message(cls)`` builds a message of any generated type with random field values that
still fit the typed schema (the generated classes check types and ranges with
ROS_PYTHON_CHECK_FIELDS=1): NaN / inf / extreme floats, the ends of every integer range, empty,
huge and odd strings, empty / huge / mis-sized sequences (image data that does not match its
height, width and step), nested messages filled the same way. ``Fuzzer.mutate(good)`` changes
one to three leaves of a well-formed message to such values, so the faults reach past the
first check of a callback. ``Fuzzer.garbage()`` is random bytes for a topic's raw publisher
(what a broken or hostile peer could put on the wire).
"""
from __future__ import annotations

import array
import copy
import importlib
import math
import os
import random
from typing import Any

from rosidl_parser.definition import (AbstractNestedType, AbstractString, Array, BasicType, BoundedSequence,
                                      NamespacedType)

INT_RANGES = {"int8": (-2**7, 2**7 - 1), "uint8": (0, 2**8 - 1), "int16": (-2**15, 2**15 - 1), "uint16": (0, 2**16 - 1),
              "int32": (-2**31, 2**31 - 1), "uint32": (0, 2**32 - 1), "int64": (-2**63, 2**63 - 1),
              "uint64": (0, 2**64 - 1), "octet": (0, 255), "char": (0, 255)}
FLOAT32_MAX = 3.4e38  # below float32 max once rounded to float32 (the field check compares exactly)
STRINGS = ("", " ", "x" * 200_000, "\x00nul", "\U0001F916 r\u00f6b\u00f6t \u202eRTL", '{"json": [1, 2, {"a": null}]}',
           "../../etc/passwd", "NaN", "-1", "1e400", "Robert'); DROP TABLE students;--", "\n" * 1000)


class Fuzzer:
    def __init__(self, seed: int = 0, max_bytes: int = 1 << 20) -> None:
        self.rng = random.Random(seed)
        self.max_bytes = max_bytes

    # -- whole messages ------------------------------------------------------------------------
    def message(self, cls, depth: int = 0):
        msg = cls()
        for name, slot in zip(msg.__slots__, cls.SLOT_TYPES):
            setattr(msg, name.lstrip("_"), self._value(slot, depth))
        return msg

    def mutate(self, good):
        """A copy of ``good`` with one to three leaves set to extreme or random values."""
        msg = copy.deepcopy(good)
        for _ in range(self.rng.randint(1, 3)):
            self._mutate_one(msg, 0)
        return msg

    def garbage(self) -> bytes:
        n = self.rng.choice([0, 1, 3, 4, 8, 64, 1000, 100_000])
        head = self.rng.choice([b"", b"\x00\x01\x00\x00", b"\x00\x00\x00\x00"])  # sometimes a valid CDR header
        return head + bytes(self.rng.getrandbits(8) for _ in range(n))

    # -- values --------------------------------------------------------------------------------
    def _value(self, slot, depth: int):
        rng = self.rng
        if isinstance(slot, BasicType):
            return self._basic(slot.typename)
        if isinstance(slot, AbstractString):
            text = rng.choice(STRINGS)
            limit = getattr(slot, "maximum_size", None)
            return text[:limit] if limit else text
        if isinstance(slot, NamespacedType):
            cls = _message_class(slot)
            return self.message(cls, depth + 1) if depth < 3 else cls()
        if isinstance(slot, Array):
            return [self._value(slot.value_type, depth + 1) for _ in range(slot.size)]
        if isinstance(slot, AbstractNestedType):  # sequences
            vt = slot.value_type
            if isinstance(vt, BasicType) and vt.typename in ("uint8", "char"):  # image data and the like
                n = rng.choice([0, 1, 7, 300, 4096, self.max_bytes])
                return array.array("B", rng.randbytes(min(n, 4096)) * max(1, n // 4096) if n else b"")
            if isinstance(vt, BasicType) and vt.typename == "octet":
                return [bytes([rng.getrandbits(8)]) for _ in range(rng.choice([0, 1, 64]))]
            n = rng.choice([0, 1, 3, 40] + ([10_000] if isinstance(vt, BasicType) else []))
            if isinstance(slot, BoundedSequence):
                n = min(n, slot.maximum_size)
            if isinstance(vt, BasicType) and n > 100:
                v = self._basic(vt.typename)
                return [v] * n
            return [self._value(vt, depth + 1) for _ in range(n if depth < 2 else min(n, 3))]
        raise TypeError(f"unsupported slot type {slot!r}")

    def _basic(self, typename: str) -> Any:
        rng = self.rng
        if typename in ("float", "double"):
            big = FLOAT32_MAX if typename == "float" else 1.7e308
            return rng.choice([0.0, -0.0, 1.0, -1.0, math.nan, math.inf, -math.inf, big, -big, 1e-30,
                               rng.gauss(0.0, 10.0 ** rng.randint(0, 6))])
        if typename == "boolean":
            return rng.random() < 0.5
        if typename in INT_RANGES:
            lo, hi = INT_RANGES[typename]
            value = rng.choice([lo, hi, 0, 1, rng.randint(lo, hi)] + ([-1] if lo < 0 else []))
            return bytes([value]) if typename == "octet" else value
        if typename in ("wstring",):
            return rng.choice(STRINGS)
        raise TypeError(f"unsupported basic type {typename}")

    # -- mutation ------------------------------------------------------------------------------
    def _mutate_one(self, msg, depth: int) -> None:
        slots = list(zip(msg.__slots__, type(msg).SLOT_TYPES))
        if not slots:
            return
        name, slot = self.rng.choice(slots)
        name = name.lstrip("_")
        if isinstance(slot, NamespacedType) and depth < 4 and self.rng.random() < 0.7:
            self._mutate_one(getattr(msg, name), depth + 1)
            return
        if isinstance(slot, (Array,)) or (isinstance(slot, AbstractNestedType) and self.rng.random() < 0.5):
            current = list(getattr(msg, name))
            vt = slot.value_type
            if current and isinstance(vt, BasicType) and self.rng.random() < 0.5:  # poison one element
                k = self.rng.randrange(len(current))
                current[k] = self._basic(vt.typename)
                if isinstance(slot, Array) or vt.typename not in ("uint8", "octet", "char"):
                    setattr(msg, name, current)
                    return
        setattr(msg, name, self._value(slot, depth))


def _message_class(slot: NamespacedType):
    module = importlib.import_module(".".join(slot.namespaces))
    return getattr(module, slot.name)


# -- campaigns against running nodes -----------------------------------------------------------

FIGURES: dict[str, dict] = {}  # node -> {"family", "topics", "messages", "garbage", "dropped", "crashes"}; printed by conftest
# bench/bench_fuzz.py sets this to run the same campaigns with more messages per topic
SCALE = float(os.environ.get("PERSONAL_FUZZ_SCALE", "1"))


def _absolute(topic: str) -> str:
    return "/" + topic.lstrip("/")


class Campaign:
    """Throws fuzz at the topics of nodes spinning in a test's ``ros_context``.

    ``fuzz_node(node)`` takes the topics from the node's own subscriptions, so a topic a node
    listens to cannot be forgotten (nor one it does not listen to be counted). Publishers are
    reliable + transient local (compatible with every subscription QoS the nodes use); messages go
    out in bursts with short pauses so reliable queues are not simply overwritten. ``record``
    stores, per node, the messages tried on its topics, the garbage frames, what its guard dropped
    (``nodes.lifecycle.dropped_messages``) and whether it crashed (its executor thread died)."""

    def __init__(self, ctx, family: str, seed: int = 0) -> None:
        from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

        self.ctx, self.family = ctx, family
        self.io = ctx.make_node("fuzz_" + "".join(c if c.isalnum() else "_" for c in family))
        self.fuzzer = Fuzzer(seed)
        self.qos = QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.sent: dict[str, int] = {}
        self.garbage_sent: dict[str, int] = {}
        self.topics_of: dict[str, list[str]] = {}
        self._pubs: dict[str, Any] = {}

    def publisher(self, topic: str, cls):
        topic = _absolute(topic)
        if topic not in self._pubs:
            self._pubs[topic] = self.io.create_publisher(cls, topic, self.qos)
        return self._pubs[topic]

    def fuzz_node(self, node, good: dict | None = None, n: int = 60, counts: dict | None = None) -> list[str]:
        """Fuzz every topic ``node`` subscribes to: ``counts[topic]`` (else ``n``) messages, half of
        them mutations of ``good[topic]()`` where given (topics as the node names them, without the
        leading slash). A topic already fuzzed by this campaign (a second node on it) is not sent
        again, but counts for this node too."""
        good = {_absolute(k): v for k, v in (good or {}).items()}
        counts = {_absolute(k): v for k, v in (counts or {}).items()}
        topics = sorted({sub.topic_name: sub.msg_type for sub in node.subscriptions}.items())
        for topic, cls in topics:
            if topic not in self.sent:
                self.fuzz(topic, cls, good.get(topic), n=counts.get(topic, n))
        self.topics_of[node.get_name()] = [t for t, _ in topics]
        return self.topics_of[node.get_name()]

    def fuzz(self, topic: str, cls, good=None, n: int = 100, garbage: int = 10, burst: int = 10, pause: float = 0.03) -> None:
        """``n`` messages on ``topic`` (half mutations of ``good()`` when given), then ``garbage`` raw frames."""
        import time

        from conftest import wait_for

        topic = _absolute(topic)
        n, garbage = int(n * SCALE), int(garbage * SCALE)
        pub = self.publisher(topic, cls)
        wait_for(lambda: pub.get_subscription_count() > 0, timeout=20)
        for k in range(n):
            msg = self.fuzzer.mutate(good()) if good is not None and k % 2 else self.fuzzer.message(cls)
            pub.publish(msg)
            if k % burst == burst - 1:
                time.sleep(pause)
        sent_garbage = 0
        for _ in range(garbage):
            try:  # Fast DDS refuses some frames at the sender already (e.g. an empty one): not counted
                pub.publish(self.fuzzer.garbage())
                sent_garbage += 1
            except Exception:  # noqa: BLE001 - rclpy's RCLError
                pass
        time.sleep(pause)
        self.sent[topic] = self.sent.get(topic, 0) + n
        self.garbage_sent[topic] = self.garbage_sent.get(topic, 0) + sent_garbage

    def record(self, node, topics: list[str] | None = None) -> dict:
        """The figures of ``node`` (over ``topics``, default: those ``fuzz_node`` found for it)."""
        from nodes.lifecycle import dropped_messages

        topics = [_absolute(t) for t in (topics if topics is not None else self.topics_of[node.get_name()])]
        figures = {"family": self.family, "topics": len(topics), "messages": sum(self.sent.get(t, 0) for t in topics),
                   "garbage": sum(self.garbage_sent.get(t, 0) for t in topics),
                   "dropped": sum(dropped_messages(node).values()),
                   "crashes": 0 if self.ctx._thread.is_alive() else 1}
        FIGURES[node.get_name()] = figures
        return figures


COLUMNS = ("topics", "messages", "garbage", "dropped", "crashes")


def figures_table(figures: dict[str, dict]) -> list[str]:
    """The figures as a plain-text table, one row per node and a total."""
    rows = [f"{'node':22s} {'family':15s} " + " ".join(f"{c:>8s}" for c in COLUMNS)]
    for node, f in sorted(figures.items(), key=lambda kv: (kv[1]["family"], kv[0])):
        rows.append(f"{node:22s} {f['family']:15s} " + " ".join(f"{f[c]:8d}" for c in COLUMNS))
    total = {c: sum(f[c] for f in figures.values()) for c in COLUMNS}
    rows.append(f"{'total (' + str(len(figures)) + ' nodes)':22s} {'':15s} " + " ".join(f"{total[c]:8d}" for c in COLUMNS))
    return rows

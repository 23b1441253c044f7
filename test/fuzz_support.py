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

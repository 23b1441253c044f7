"""JSON codec for the project's `.msg` interfaces.

Custom interfaces cannot be compiled on a pip-only ROS, so project messages travel as
JSON inside ``std_msgs/String``:

    {"type": "personal/msg/EpisodeDescriptor", "data": {...}}

The ``.msg`` files (the single source of truth) are parsed with ``rosidl_adapter``.
``encode`` / ``decode`` validate a payload against the definition — primitive types
and ranges, string bounds, nested messages (including standard ones such as
``geometry_msgs/Point``), fixed / bounded / unbounded arrays, required fields and
unknown fields — fill the defaults the ``.msg`` declares, and raise ``CodecError``
naming the field path, e.g.
``EpisodeDescriptor.target_positions[2].x: expected float64, got 'abc'``.

A field is required unless the ``.msg`` gives it a default. Floats may be NaN/inf
(Python's json writes them as NaN/Infinity). ROS-free: no rclpy import.
"""
from __future__ import annotations

import json
import math
import os
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable

from rosidl_adapter.parser import MessageSpecification, parse_message_string

PACKAGE = "personal"

_INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "uint8": (0, 2**8 - 1),
    "byte": (0, 2**8 - 1),
    "char": (0, 2**8 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint64": (0, 2**64 - 1),
}
_FLOAT_MAX = {"float32": 3.4028234663852886e38, "float64": sys.float_info.max}
# legacy primitive aliases of ROS 1 style .msg files
_ALIASES = {"time": ("builtin_interfaces", "Time"), "duration": ("builtin_interfaces", "Duration")}


class CodecError(ValueError):
    """A payload or wire message does not match its ``.msg`` definition."""


def canonical_type(name: str, default_pkg: str = PACKAGE) -> str:
    """``EpisodeDescriptor`` / ``personal/EpisodeDescriptor`` / ``personal/msg/EpisodeDescriptor`` -> the last."""
    parts = name.strip().split("/")
    if len(parts) == 1 and parts[0]:
        return f"{default_pkg}/msg/{parts[0]}"
    if len(parts) == 2 and all(parts):
        return f"{parts[0]}/msg/{parts[1]}"
    if len(parts) == 3 and parts[1] == "msg" and parts[0] and parts[2]:
        return name.strip()
    raise CodecError(f"malformed message type name {name!r} (expected pkg/msg/Name)")


def _share_dirs() -> list[Path]:
    prefixes = [p for p in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p]
    prefixes.append(sys.prefix)
    return [Path(p) / "share" for p in dict.fromkeys(prefixes)]


def find_msg_dir() -> Path:
    """The project's msg/ folder: the source tree first, then an installed share/personal/msg."""
    source = Path(__file__).resolve().parents[2] / "msg"
    candidates = [source] + [share / PACKAGE / "msg" for share in _share_dirs()]
    for cand in candidates:
        if cand.is_dir() and any(cand.glob("*.msg")):
            return cand
    raise FileNotFoundError(f"no {PACKAGE} msg/ folder found (looked in: {', '.join(map(str, candidates))})")


class MessageRegistry:
    """Parsed ``.msg`` definitions by canonical type name, loaded on demand."""

    def __init__(self, search: dict[str, list[Path]] | None = None) -> None:
        # package -> folders holding its .msg files (falls back to <share>/<pkg>/msg)
        self._search = {k: list(v) for k, v in (search or {}).items()}
        self._specs: dict[str, MessageSpecification] = {}

    @classmethod
    def from_dir(cls, msg_dir: str | Path | None = None, package: str = PACKAGE) -> "MessageRegistry":
        return cls({package: [Path(msg_dir) if msg_dir is not None else find_msg_dir()]})

    # -- definitions ------------------------------------------------------------
    def _msg_file(self, pkg: str, name: str) -> Path:
        folders = self._search.get(pkg, []) + [share / pkg / "msg" for share in _share_dirs()]
        for folder in folders:
            path = folder / f"{name}.msg"
            if path.is_file():
                return path
        raise CodecError(f"unknown message type {pkg}/msg/{name} (no {name}.msg in {', '.join(map(str, folders))})")

    def spec(self, type_name: str) -> MessageSpecification:
        key = canonical_type(type_name)
        if key not in self._specs:
            pkg, _, name = key.split("/")
            path = self._msg_file(pkg, name)
            try:
                self._specs[key] = parse_message_string(pkg, name, path.read_text())
            except Exception as exc:  # rosidl_adapter raises several exception types
                raise CodecError(f"{path}: cannot parse: {exc}") from exc
        return self._specs[key]

    def types(self, package: str = PACKAGE) -> list[str]:
        names = set()
        for folder in self._search.get(package, []):
            names.update(p.stem for p in folder.glob("*.msg"))
        return sorted(f"{package}/msg/{n}" for n in names)

    def constants(self, type_name: str) -> dict[str, Any]:
        return {c.name: c.value for c in self.spec(type_name).constants}

    def fields(self, type_name: str) -> list[str]:
        return [f.name for f in self.spec(type_name).fields]

    def _nested_type(self, ftype, context_pkg: str) -> str:
        if ftype.type in _ALIASES and ftype.pkg_name is None:
            return "{}/msg/{}".format(*_ALIASES[ftype.type])
        pkg = ftype.pkg_name or context_pkg
        if ftype.type == "Header" and pkg == context_pkg:
            try:
                self._msg_file(pkg, "Header")
            except CodecError:
                pkg = "std_msgs"
        return f"{pkg}/msg/{ftype.type}"

    # -- validation ---------------------------------------------------------------
    def validate(self, type_name: str, data: Any, path: str | None = None) -> dict:
        """A validated copy of ``data`` with the ``.msg`` defaults filled in."""
        key = canonical_type(type_name)
        spec = self.spec(key)
        path = path or key.split("/")[-1]
        if not isinstance(data, dict):
            raise CodecError(f"{path}: expected an object for {key}, got {_show(data)}")
        known = {f.name for f in spec.fields}
        for name in data:
            if name not in known:
                consts = self.constants(key)
                why = f"is a constant (={consts[name]}), not a field" if name in consts else "unknown field"
                raise CodecError(f"{path}.{name}: {why} of {key} (fields: {', '.join(sorted(known)) or 'none'})")
        out: dict[str, Any] = {}
        for field in spec.fields:
            fpath = f"{path}.{field.name}"
            if field.name in data:
                value = data[field.name]
            elif field.default_value is not None:
                value = field.default_value
            else:
                raise CodecError(f"{fpath}: missing required field ({field.type})")
            out[field.name] = self._value(field.type, value, fpath, spec.base_type.pkg_name)
        return out

    def _value(self, ftype, value: Any, path: str, context_pkg: str) -> Any:
        if ftype.is_array:
            if not isinstance(value, (list, tuple)):
                raise CodecError(f"{path}: expected an array of {_element_name(ftype)}, got {_show(value)}")
            n = len(value)
            if ftype.array_size is not None:
                if ftype.is_upper_bound and n > ftype.array_size:
                    raise CodecError(f"{path}: array has {n} elements, more than the bound {ftype.array_size}")
                if not ftype.is_upper_bound and n != ftype.array_size:
                    raise CodecError(f"{path}: fixed-size array needs exactly {ftype.array_size} elements, got {n}")
            return [self._element(ftype, v, f"{path}[{i}]", context_pkg) for i, v in enumerate(value)]
        return self._element(ftype, value, path, context_pkg)

    def _element(self, ftype, value: Any, path: str, context_pkg: str) -> Any:
        if not ftype.is_primitive_type() or ftype.type in _ALIASES:
            return self.validate(self._nested_type(ftype, context_pkg), value, path)
        return _primitive(ftype.type, ftype.string_upper_bound, value, path)

    # -- wire form ------------------------------------------------------------------
    def encode(self, type_name: str, data: dict) -> str:
        key = canonical_type(type_name)
        return json.dumps({"type": key, "data": self.validate(key, data)}, separators=(",", ":"))

    def decode(self, text: str | bytes, expected_type: str | None = None) -> tuple[str, dict]:
        try:
            doc = json.loads(text)
        except (TypeError, ValueError) as exc:
            raise CodecError(f"not valid JSON: {exc}") from None
        if not isinstance(doc, dict) or set(doc) != {"type", "data"}:
            got = sorted(doc) if isinstance(doc, dict) else type(doc).__name__
            raise CodecError(f'expected {{"type": ..., "data": {{...}}}}, got {got}')
        if not isinstance(doc["type"], str):
            raise CodecError(f"type: expected a string, got {_show(doc['type'])}")
        key = canonical_type(doc["type"])
        if expected_type is not None and key != canonical_type(expected_type):
            raise CodecError(f"expected a {canonical_type(expected_type)} message, got {key}")
        return key, self.validate(key, doc["data"])


def _element_name(ftype) -> str:
    return str(ftype).split("[")[0]


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _primitive(kind: str, string_bound: int | None, value: Any, path: str) -> Any:
    if kind == "bool":
        if not isinstance(value, bool):
            raise CodecError(f"{path}: expected bool, got {_show(value)}")
        return value
    if kind in _INT_RANGES:
        if isinstance(value, bool) or not isinstance(value, int):
            raise CodecError(f"{path}: expected {kind}, got {_show(value)}")
        lo, hi = _INT_RANGES[kind]
        if not lo <= value <= hi:
            raise CodecError(f"{path}: {value} is out of range for {kind} [{lo}, {hi}]")
        return value
    if kind in _FLOAT_MAX:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise CodecError(f"{path}: expected {kind}, got {_show(value)}")
        value = float(value)
        if math.isfinite(value) and abs(value) > _FLOAT_MAX[kind]:
            raise CodecError(f"{path}: {value} is out of range for {kind}")
        return value
    if kind in ("string", "wstring"):
        if not isinstance(value, str):
            raise CodecError(f"{path}: expected {kind}, got {_show(value)}")
        if string_bound is not None and len(value) > string_bound:
            raise CodecError(f"{path}: string of length {len(value)} exceeds the bound {string_bound}")
        return value
    raise CodecError(f"{path}: unsupported primitive type {kind}")


@lru_cache(maxsize=1)
def default_registry() -> MessageRegistry:
    """Registry over the project's msg/ folder (source tree or installed share)."""
    return MessageRegistry.from_dir()


def encode(type_name: str, data: dict) -> str:
    return default_registry().encode(type_name, data)


def decode(text: str | bytes, expected_type: str | None = None) -> tuple[str, dict]:
    return default_registry().decode(text, expected_type)


__all__: Iterable[str] = [
    "CodecError", "MessageRegistry", "canonical_type", "decode", "default_registry", "encode", "find_msg_dir",
]

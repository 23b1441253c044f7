"""ros2msg schema text for a message type: the .msg, then every dependency.

rosbag2's MCAP storage writes each dependency after a line of 80 '=' and a line
``MSG: pkg/msg/Type``; readers (Foxglove, mcap-ros2-support, ros2 bag) rely on it.
"""
from __future__ import annotations

import os
import re
import sys
from functools import lru_cache
from pathlib import Path

PRIMITIVES = {
    "bool", "byte", "char", "float32", "float64", "int8", "uint8", "int16", "uint16",
    "int32", "uint32", "int64", "uint64", "string", "wstring",
}
SEPARATOR = "=" * 80
_CONSTANT = re.compile(r"^\S+\s+[A-Za-z_][A-Za-z0-9_]*\s*=")


def _share_dirs() -> list[Path]:
    dirs = [Path(sys.prefix) / "share"]
    for prefix in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep):
        if prefix:
            dirs.append(Path(prefix) / "share")
    return dirs


def _normalise(type_name: str) -> tuple[str, str]:
    """'sensor_msgs/msg/Image' or 'sensor_msgs/Image' -> ('sensor_msgs', 'Image')."""
    parts = type_name.split("/")
    if len(parts) == 3 and parts[1] == "msg":
        return parts[0], parts[2]
    if len(parts) == 2:
        return parts[0], parts[1]
    raise ValueError(f"not a ROS message type name: {type_name!r} (expected pkg/msg/Type)")


@lru_cache(maxsize=None)
def msg_text(type_name: str) -> str:
    pkg, name = _normalise(type_name)
    for share in _share_dirs():
        path = share / pkg / "msg" / f"{name}.msg"
        if path.is_file():
            return path.read_text()
    raise LookupError(f"unknown message type {pkg}/msg/{name}: no {pkg}/msg/{name}.msg under {[str(d) for d in _share_dirs()]}")


def _field_types(text: str, pkg: str) -> list[str]:
    """Complex field types referenced by a .msg text, as pkg/msg/Type."""
    found = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line or _CONSTANT.match(line):
            continue  # blank, comment or constant definition
        base = line.split()[0].split("[")[0].split("<=")[0]
        if base in PRIMITIVES:
            continue
        if base == "Header":
            base = "std_msgs/Header"
        dep_pkg, dep_name = base.split("/")[0], base.split("/")[-1]
        if "/" not in base:
            dep_pkg = pkg
        found.append(f"{dep_pkg}/msg/{dep_name}")
    return found


@lru_cache(maxsize=None)
def type_hash(type_name: str) -> str:
    """The type's RIHS01 hash from the type description rosidl installs beside the .msg
    (``share/<pkg>/msg/<Type>.json``), or "" when there is none (as rosbag2 writes it then)."""
    import json

    pkg, name = _normalise(type_name)
    for share in _share_dirs():
        path = share / pkg / "msg" / f"{name}.json"
        if path.is_file():
            try:
                hashes = json.loads(path.read_text()).get("type_hashes", [])
            except ValueError:
                return ""
            return next((h["hash_string"] for h in hashes if h.get("type_name") == f"{pkg}/msg/{name}"), "")
    return ""


@lru_cache(maxsize=None)
def message_definition(type_name: str) -> str:
    """Full ros2msg schema (the type's .msg then each dependency, breadth first)."""
    pkg, name = _normalise(type_name)
    root = f"{pkg}/msg/{name}"
    parts = [msg_text(root).rstrip("\n")]
    seen, queue = {root}, _field_types(msg_text(root), pkg)
    while queue:
        dep = queue.pop(0)
        if dep in seen:
            continue
        seen.add(dep)
        text = msg_text(dep)
        parts.append(f"{SEPARATOR}\nMSG: {dep.replace('/msg/', '/')}\n{text.rstrip()}")
        queue.extend(_field_types(text, dep.split("/")[0]))
    return "\n".join(parts) + "\n"

"""Helpers shared by the bag CLI and nodes (ROS-free)."""
from __future__ import annotations


def parse_remaps(items: list[str]) -> dict[str, str]:
    """['a:=b', ...] -> {'a': 'b'}; names are made absolute."""
    out = {}
    for item in items:
        if ":=" not in item:
            raise ValueError(f"remap {item!r} is not of the form from:=to")
        src, dst = item.split(":=", 1)
        out[_absolute(src)] = _absolute(dst)
    return out


def _absolute(name: str) -> str:
    name = name.strip()
    return name if name.startswith("/") else "/" + name


def import_message_class(type_name: str):
    """'sensor_msgs/msg/Image' -> the Python message class (ImportError if unknown)."""
    import importlib

    parts = type_name.split("/")
    if len(parts) != 3 or parts[1] != "msg":
        raise ImportError(f"message type {type_name!r} is not of the form pkg/msg/Type")
    module = importlib.import_module(f"{parts[0]}.msg")
    try:
        return getattr(module, parts[2])
    except AttributeError as e:
        raise ImportError(f"package {parts[0]} has no message {parts[2]}") from e

"""Helpers shared by the bag CLI and nodes (ROS-free)."""
from __future__ import annotations

import importlib
import re


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


_PACKAGE = re.compile(r"^[a-z][a-z0-9_]*$")  # REP 144 package names
_TYPE = re.compile(r"^[A-Z][A-Za-z0-9]*$")  # rosidl message names


def import_message_class(type_name: str):
    """'sensor_msgs/msg/Image' -> the Python message class (ImportError if unknown).

    A type name comes from files (a bag's metadata) or the graph, so it is never imported as an
    arbitrary module: the package and type must be well-formed names of an installed interface
    package (its ``share/<pkg>/msg/<Type>.msg``, as rosidl installs it), and the class found must
    be a rosidl message. ``this/msg/X`` is refused without importing ``this``."""
    from personal.bags.schema import msg_text

    parts = type_name.split("/") if isinstance(type_name, str) else []
    if len(parts) != 3 or parts[1] != "msg" or not _PACKAGE.match(parts[0]) or not _TYPE.match(parts[2]):
        raise ImportError(f"message type {type_name!r} is not of the form pkg/msg/Type")
    try:
        msg_text(type_name)
    except LookupError as e:
        raise ImportError(f"{type_name} is not an installed interface ({e})") from None
    module = importlib.import_module(f"{parts[0]}.msg")
    cls = getattr(module, parts[2], None)
    if cls is None or not hasattr(type(cls), "_TYPE_SUPPORT"):  # rosidl classes have a metaclass holding it
        raise ImportError(f"package {parts[0]} has no rosidl message {parts[2]}")
    return cls

"""Typed ROS 2 messages <-> plain dicts, for the places where the library works on dicts.

The project's interfaces are rosidl-generated classes (``personal.msg``, built from ``msg/*.msg``;
see docs/interfaces.md). Nodes read and fill them field by field where that is clearer; these
two helpers cover payloads that the ROS-free library builds or consumes as dicts (episode
descriptors, verification observations, run records).

``from_dict`` names the offending field (``EpisodeDescriptor.target_positions[1].x: ...``) for an
unknown field or a value the generated class rejects. Type and range checks of the generated
setters run only with ``ROS_PYTHON_CHECK_FIELDS=1`` (set for the tests); without it a wrong type
still fails when the message is published. Works on message classes passed in, so this module
imports neither rclpy nor any message package.
"""
from __future__ import annotations

import array
import importlib
from typing import Any

import numpy as np


class MessageFieldError(ValueError):
    """A dict does not fit a message type; the text names the field path."""


def _nested_class(slot_type) -> type | None:
    """The message class of a rosidl slot type (a NamespacedType, or a sequence/array of one)."""
    t = getattr(slot_type, "value_type", slot_type)
    namespaces = getattr(t, "namespaces", None)
    if not namespaces:
        return None
    module = importlib.import_module(".".join(namespaces))
    return getattr(module, t.name)


def _is_sequence(slot_type) -> bool:
    return hasattr(slot_type, "value_type")


def from_dict(cls: type, data: dict, path: str | None = None):
    """An instance of message class ``cls`` filled from ``data`` (fields not given keep their
    ``.msg`` defaults). Nested messages may be dicts or instances."""
    path = path or cls.__name__
    if isinstance(data, cls):
        return data
    if not isinstance(data, dict):
        raise MessageFieldError(f"{path}: expected an object for {cls.__name__}, got {type(data).__name__}")
    fields = cls.get_fields_and_field_types()
    slots = dict(zip(fields, cls.SLOT_TYPES))
    msg = cls()
    for name, value in data.items():
        if name not in fields:
            raise MessageFieldError(f"{path}.{name}: unknown field of {cls.__name__} (fields: {', '.join(fields)})")
        slot = slots[name]
        nested = _nested_class(slot)
        try:
            if nested is not None and _is_sequence(slot):
                value = [from_dict(nested, v, f"{path}.{name}[{i}]") for i, v in enumerate(value)]
            elif nested is not None:
                value = from_dict(nested, value, f"{path}.{name}")
            elif isinstance(value, np.ndarray):
                value = value.tolist()
            setattr(msg, name, value)
        except MessageFieldError:
            raise
        except (AssertionError, TypeError, ValueError, OverflowError) as exc:
            raise MessageFieldError(f"{path}.{name}: {fields[name]} cannot hold {_show(value)} ({exc or 'rejected'})") from None
    return msg


def to_dict(msg) -> dict:
    """A plain dict (lists, str, numbers, nested dicts) of a message instance."""
    out: dict[str, Any] = {}
    for name in msg.get_fields_and_field_types():
        out[name] = _plain(getattr(msg, name))
    return out


def to_yaml(msg) -> str:
    """The message as ``ros2 topic echo`` prints it (YAML, fields in .msg order, then ``---``)."""
    import yaml

    return yaml.safe_dump(to_dict(msg), sort_keys=False, default_flow_style=False, allow_unicode=True) + "---\n"


def _plain(value: Any) -> Any:
    if hasattr(value, "get_fields_and_field_types"):
        return to_dict(value)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (array.array, np.ndarray)):
        return value.tolist()
    return value


def packed(typecode: str, values) -> array.array:
    """``values`` (ndarray or bytes) as an ``array.array`` for a numeric array field: the fast way to
    fill ``Image.data`` / ``PointCloud2.data`` ('B') or ``Float32MultiArray.data`` ('f').
    Assigning an ndarray or a list is ~100x slower, and so is bytes when
    ROS_PYTHON_CHECK_FIELDS=1 checks every element."""
    out = array.array(typecode)
    out.frombytes(values if isinstance(values, (bytes, bytearray, memoryview)) else np.ascontiguousarray(values).tobytes())
    return out


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


__all__ = ["MessageFieldError", "from_dict", "packed", "to_dict", "to_yaml"]

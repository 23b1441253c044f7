"""Refusal machinery of the contract fake.

Every fake class declares the attributes the real habitat-sim 0.3 class has (read from its
pybind11 bindings or attrs classes). Setting or reading anything else raises
``AttributeError`` naming the real class, so a backend typo or a call into an API habitat-sim
does not have fails here instead of silently doing nothing. Names the real class has but the
fake does not implement raise ``NotImplementedError`` instead, so the two cases stay apart.

Note: the real ``SensorSpec`` family is bound with ``py::dynamic_attr()`` and would accept a
misspelt attribute (and ignore it); the fake refuses it, because an attribute habitat-sim
ignores is a bug in the caller either way.
"""
from __future__ import annotations

import copy


class Strict:
    """Base for fake value classes: ``_fields`` maps attribute -> default (copied per
    instance); ``_real_only`` lists real attributes the fake leaves unimplemented."""

    _fields: dict = {}
    _real_only: tuple = ()
    _real_name = ""

    def __init__(self, **kwargs) -> None:
        for name, default in self._fields.items():
            object.__setattr__(self, name, copy.deepcopy(default))
        for name, value in kwargs.items():
            setattr(self, name, value)

    def __setattr__(self, name: str, value) -> None:
        if name.startswith("_") or name in self._fields:
            object.__setattr__(self, name, value)
            return
        refuse(self, name)

    def __getattr__(self, name: str):  # only called for missing attributes
        if name.startswith("__"):
            raise AttributeError(name)
        refuse(self, name)

    def __eq__(self, other) -> bool:
        return type(self) is type(other) and all(
            _same(getattr(self, n), getattr(other, n)) for n in self._fields)

    def __repr__(self) -> str:
        inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in self._fields)
        return f"{type(self).__name__}({inner})"


def _same(a, b) -> bool:
    try:
        import numpy as np

        return bool(np.all(np.asarray(a) == np.asarray(b))) if not isinstance(a, Strict) else a == b
    except Exception:
        return a == b


def refuse(obj, name: str):
    real = getattr(obj, "_real_name", "") or type(obj).__name__
    if name in getattr(obj, "_real_only", ()):
        raise NotImplementedError(f"habitat-sim's {real}.{name} exists but the contract fake does not implement it")
    raise AttributeError(f"habitat-sim 0.3 {real} has no attribute {name!r}")

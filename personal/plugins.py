"""Implementations found by name: a registry is a table of ``name -> "module:attr"`` strings,
resolved with importlib on first use (habitat-lab's registry, nav2's plugins by name).

The registry module imports none of its implementations, so an implementation may live above the
registry's package (the ``lit`` crop tower's proposal pipeline in ``personal.perception`` is named
by ``personal.models.base``) without an import circle, and naming one backend never loads another's
dependencies (torch, websockets ...)."""
from __future__ import annotations

import importlib
from typing import Any, Mapping


def load(spec: str) -> Any:
    """The object ``"package.module:attr"`` names."""
    module, sep, attr = spec.partition(":")
    if not sep or not module or not attr:
        raise ValueError(f"plugin spec {spec!r} is not 'module:attr'")
    return getattr(importlib.import_module(module), attr)


def lookup(table: Mapping[str, str], name: str, what: str) -> Any:
    """The implementation registered as ``name`` in ``table``; ValueError naming the known ones."""
    if name not in table:
        raise ValueError(f"unknown {what} {name!r} (known: {', '.join(sorted(table))})")
    return load(table[name])

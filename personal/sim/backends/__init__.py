"""Simulator backends behind one interface (see ``base.SimBackend``)."""
from __future__ import annotations

import importlib.util

from personal.sim.backends.base import SimBackend

BACKENDS = ("synthetic", "habitat", "auto")


def habitat_available() -> bool:
    return importlib.util.find_spec("habitat_sim") is not None


def make_backend(name: str = "auto", **kw) -> SimBackend:
    """``synthetic`` (embedded CPU simulator), ``habitat`` (needs habitat-sim) or
    ``auto`` (habitat when ``habitat_sim`` is importable, else synthetic)."""
    if name not in BACKENDS:
        raise ValueError(f"unknown simulator backend {name!r}; choose one of {BACKENDS}")
    if name == "habitat" or (name == "auto" and habitat_available()):
        from personal.sim.backends.habitat import HabitatBackend

        return HabitatBackend(**kw)
    from personal.sim.backends.synthetic import SyntheticBackend

    return SyntheticBackend(**kw)

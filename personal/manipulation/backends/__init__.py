"""Tabletop simulator backends behind one interface (``base.TabletopBackend``)."""
from __future__ import annotations

from personal.manipulation.backends.base import TabletopBackend


def make_backend(name: str, **kwargs) -> TabletopBackend:
    """``robosuite`` (the evaluation simulator) or ``kinematic`` (a cheap stand-in for tests)."""
    if name == "robosuite":
        from personal.manipulation.backends.robosuite_backend import RobosuiteTabletop

        return RobosuiteTabletop(**kwargs)
    if name == "kinematic":
        from personal.manipulation.backends.kinematic import KinematicStandIn

        return KinematicStandIn(**kwargs)
    raise ValueError(f"unknown tabletop backend {name!r} (known: robosuite, kinematic)")

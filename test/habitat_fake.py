"""Putting the ``habitat_sim`` contract fake (test/fakes/habitat_sim) on the import path.

In-process tests use :func:`fake_habitat_sim`, which removes the fake and every module it
imported afterwards, so later tests still see that habitat-sim is absent. Launched nodes get
it through ``PYTHONPATH`` (:func:`env_with_fake`). The project never ships the fake.
"""
from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

FAKES = Path(__file__).resolve().parent / "fakes"


def _ours(name: str) -> bool:
    return name.split(".")[0] == "habitat_sim"


@contextlib.contextmanager
def fake_habitat_sim():
    """Yields the fake ``habitat_sim`` module, importable as ``habitat_sim`` meanwhile."""
    assert not any(_ours(m) for m in sys.modules), "a habitat_sim module is already imported"
    sys.path.insert(0, str(FAKES))
    try:
        import habitat_sim

        assert habitat_sim.IS_CONTRACT_FAKE
        yield habitat_sim
    finally:
        sys.path.remove(str(FAKES))
        for name in [m for m in sys.modules if _ours(m)]:
            del sys.modules[name]


def env_with_fake(env: dict | None = None) -> dict:
    """An environment whose Python processes import the fake as ``habitat_sim``."""
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(FAKES), env.get("PYTHONPATH", "")) if p)
    return env

"""The ROS environment every `personal` process runs with (runner, tests, benches).

ROS-free: only builds an environment dict.
"""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Mapping

FASTDDS_PROFILE = Path(__file__).resolve().parent / "config" / "fastdds_shm.xml"


def _prepend_path(value: str | None, entry: str) -> str:
    parts = [p for p in (value or "").split(os.pathsep) if p]
    if entry in parts:
        return os.pathsep.join(parts)
    return os.pathsep.join([entry, *parts])


def ros_environment(base_env: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base_env`` (default: os.environ) plus the settings `personal` relies on.

    - FASTDDS_DEFAULT_PROFILES_FILE: the shipped 32 MiB shared-memory profile, so large
      best-effort images are not dropped (kept if the caller already set one).
    - ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST unless set: graphs are single-host by default.
    - AMENT_PREFIX_PATH includes the interpreter prefix (the venv), so ament_index finds
      the pip-installed message packages and ``share/personal``.
    - PATH includes the interpreter's bin (for ``fastdds``), PYTHONUNBUFFERED=1 for live logs.
    - OMP_WAIT_POLICY=PASSIVE unless set (:func:`passive_openmp`).
    """
    env = dict(os.environ if base_env is None else base_env)
    for name, value in graph_defaults().items():
        env.setdefault(name, value)
    env["AMENT_PREFIX_PATH"] = _prepend_path(env.get("AMENT_PREFIX_PATH"), sys.prefix)
    env["PATH"] = _prepend_path(env.get("PATH"), str(Path(sys.executable).parent))
    return env


def graph_defaults() -> dict[str, str]:
    """The variables every graph's nodes get unless the user set them: the runner applies them
    (:func:`ros_environment`) and so do the launch files (``SetEnvironmentVariable`` in
    ``personal.launch_support``), so ``ros2 launch`` runs the nodes as ``personal launch`` does."""
    return {
        "FASTDDS_DEFAULT_PROFILES_FILE": str(FASTDDS_PROFILE),
        "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST",
        "PYTHONUNBUFFERED": "1",
        "OMP_WAIT_POLICY": OMP_WAIT_POLICY,
    }


# Idle OpenMP threads sleep instead of spinning. torch (MiniLM, the crop tower) and numba (the
# renderer, the explorer) each keep an OpenMP pool; with the default policy a pool's idle threads
# spin after every parallel region, so on a busy 2-core machine they steal the cores the work
# needs: MiniLM one sentence at a time took 170 ms instead of 13 at load 12, a learned PAN step
# 0.37 CPU-s instead of 0.07 (docs/scaling.md). Scheduling only: results are unchanged.
OMP_WAIT_POLICY = "PASSIVE"


def passive_openmp() -> None:
    """Set OMP_WAIT_POLICY=PASSIVE in this process unless the caller chose a policy; it acts only
    if set before torch or numba start their thread pools (call it first thing)."""
    os.environ.setdefault("OMP_WAIT_POLICY", OMP_WAIT_POLICY)


def apply_ros_environment() -> None:
    """Update this process's environment in place (call before importing rclpy)."""
    os.environ.update(ros_environment())


DOMAIN_LOCK_DIR = Path(tempfile.gettempdir()) / "personal_ros_domains"


def claim_domain_id(exclude: tuple[int, ...] = ()):
    """A free ROS_DOMAIN_ID in 1..101 (the range safe on Linux) for a child graph, and the
    lock that keeps it ours: ``(domain_id, handle)``; close ``handle`` when the child has
    ended. Ids are claimed with ``flock`` on ``<tmp>/personal_ros_domains/<id>.lock`` — the
    files test/conftest.py uses too — so concurrent graphs and test sessions never share a
    domain (and so never cross-talk). The caller's own ROS_DOMAIN_ID is never handed out."""
    import fcntl

    own = {int(os.environ.get("ROS_DOMAIN_ID", "0") or 0), *exclude}
    DOMAIN_LOCK_DIR.mkdir(exist_ok=True)
    for k in range(101):
        candidate = 1 + (os.getpid() * 7 + k) % 101
        if candidate in own:
            continue
        handle = open(DOMAIN_LOCK_DIR / f"{candidate}.lock", "w")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            continue
        return candidate, handle
    raise RuntimeError(f"no free ROS_DOMAIN_ID in 1..101 (all locked under {DOMAIN_LOCK_DIR})")

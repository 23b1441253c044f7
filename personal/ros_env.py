"""The ROS environment every `personal` process runs with (runner, tests, benches).

ROS-free: only builds an environment dict.
"""
from __future__ import annotations

import os
import sys
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
    """
    env = dict(os.environ if base_env is None else base_env)
    env.setdefault("FASTDDS_DEFAULT_PROFILES_FILE", str(FASTDDS_PROFILE))
    env.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    env["AMENT_PREFIX_PATH"] = _prepend_path(env.get("AMENT_PREFIX_PATH"), sys.prefix)
    env["PATH"] = _prepend_path(env.get("PATH"), str(Path(sys.executable).parent))
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def apply_ros_environment() -> None:
    """Update this process's environment in place (call before importing rclpy)."""
    os.environ.update(ros_environment())

"""Identifiers that become file names: ONE check for every one of them (issue 28, item 2).

Scene, episode, household and run ids come from files and arguments we do not control (episode
sets, graph arguments, messages). Wherever one becomes a path (``maps_dir/<scene_id>/``,
``record_dir/<scene_id>/``, ``<run>/trajectories/<episode_id>.png``, ``results_<run_name>.jsonl``)
it goes through :func:`path_component` (the id, checked) or :func:`child_path` (``root / id``,
checked, and proven to stay under ``root``). A separator, ``..``, an absolute path, an empty id,
a NUL or another control character is refused with :class:`UnsafeIdError` naming the field (and
the file it came from, when the caller says), before anything is written.
"""
from __future__ import annotations

import os
from pathlib import Path

MAX_COMPONENT = 200  # bytes; file systems allow 255, leaving room for suffixes such as ".scene.json"


class UnsafeIdError(ValueError):
    """An identifier that cannot be used as a single file or folder name."""


def path_component(value: object, what: str = "identifier") -> str:
    """``value`` as one safe path component (the same text), or UnsafeIdError naming ``what``."""
    text = str(value)
    reason = _unsafe(text)
    if reason:
        raise UnsafeIdError(f"{what} {text!r} cannot be a file name: {reason}")
    return text


def _unsafe(text: str) -> str | None:
    if not text:
        return "it is empty"
    if text in (".", ".."):
        return f"it is {text!r}"
    if "/" in text or "\\" in text or (os.sep in text) or (os.altsep and os.altsep in text):
        return "it contains a path separator"
    if any(ord(c) < 32 or ord(c) == 127 for c in text):
        return "it contains a NUL or control character"
    if len(text.encode("utf-8", "surrogatepass")) > MAX_COMPONENT:
        return f"it is longer than {MAX_COMPONENT} bytes"
    return None


def child_path(root: str | Path, value: object, what: str = "identifier", suffix: str = "") -> Path:
    """``root / (value + suffix)`` where ``value`` is a checked component; the result is proven to
    be inside ``root`` (symlinks resolved), else UnsafeIdError."""
    root = Path(root)
    path = root / (path_component(value, what) + suffix)
    base = root.resolve()
    if base not in (resolved := path.resolve()).parents:
        raise UnsafeIdError(f"{what} {str(value)!r}: {resolved} is not inside {base}")
    return path

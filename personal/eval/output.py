"""Where an evaluation writes: checked before any work, and results kept as they come.

Every evaluator (POG, PAN, PInVerify, PeRM, PersonalHomeBench; nodes and offline CLIs) does:

    run_dir = new_run_dir(out_dir)            # or writable_dir(out_dir): fails first, by name
    log = ResultLog(run_dir / "results.jsonl")
    ...
    log.append(record)                        # after each episode: one line, flushed and fsynced

so an unwritable ``out_dir`` (a file in the way, no permission, a read-only disk) stops the run
before any episode is spent, and a crash or kill loses at most the episode in progress:
``ResultLog.read`` gives back every finished record (a torn last line is skipped).
"""
from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable

RESULTS_LOG = "results.jsonl"


class OutputDirError(RuntimeError):
    """An output folder that cannot be written; the message names it and says why."""


def writable_dir(path: str | Path, what: str = "out_dir") -> Path:
    """Create ``path`` (with parents) and prove it writable by writing, syncing and removing a
    probe file; OutputDirError naming ``what`` and the path otherwise."""
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / f".write_probe_{os.getpid()}"
        with open(probe, "wb") as fh:
            fh.write(b"ok")
            fh.flush()
            os.fsync(fh.fileno())
        probe.unlink()
    except FileExistsError:
        raise OutputDirError(f"{what} {path}: exists and is not a folder") from None
    except NotADirectoryError:
        raise OutputDirError(f"{what} {path}: a parent of it is a file, not a folder") from None
    except OSError as exc:
        raise OutputDirError(f"{what} {path}: cannot write there ({exc.strerror or exc})") from None
    return path


def new_run_dir(out_root: str | Path, what: str = "out_dir", now: datetime | None = None) -> Path:
    """A new, writable run folder ``<out_root>/<UTC time>`` (``-2``, ``-3`` … when taken)."""
    root = writable_dir(out_root, what)
    stamp = (now or datetime.now(timezone.utc)).strftime("%Y%m%d-%H%M%S")
    for k in range(1, 1000):
        run = root / (stamp if k == 1 else f"{stamp}-{k}")
        try:
            run.mkdir()
        except FileExistsError:
            continue
        except OSError as exc:
            raise OutputDirError(f"{what} {run}: cannot create the run folder ({exc.strerror or exc})") from None
        return writable_dir(run, what)
    raise OutputDirError(f"{what} {root}: no free run folder name for {stamp}")


class ResultLog:
    """Append-only JSON-lines file of finished records; each line is flushed (and, with ``sync``,
    fsynced) as it is written. ``fresh`` truncates an existing file (a new run); otherwise records
    are appended."""

    def __init__(self, path: str | Path, fresh: bool = True, sync: bool = True) -> None:
        self.path = Path(path)
        self.count = 0
        self.sync = sync
        try:
            self._fh = open(self.path, "w" if fresh else "a", encoding="utf-8")
        except OSError as exc:
            raise OutputDirError(f"{self.path}: cannot open the results log ({exc.strerror or exc})") from None

    def append(self, record: dict[str, Any]) -> None:
        self._fh.write(json.dumps(record, allow_nan=True, default=_plain) + "\n")
        self._fh.flush()
        if self.sync:
            os.fsync(self._fh.fileno())
        self.count += 1

    def extend(self, records: Iterable[dict[str, Any]]) -> None:
        for record in records:
            self.append(record)

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.close()

    def __enter__(self) -> "ResultLog":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @staticmethod
    def read(path: str | Path) -> list[dict]:
        """Every complete record of a (possibly interrupted) log; a torn last line is skipped."""
        out = []
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
        return out


def _plain(value: Any) -> Any:
    """NumPy scalars and arrays as lists; anything else JSON cannot hold (paths, enums, sets) as text."""
    if hasattr(value, "tolist"):
        return value.tolist()
    return str(value)

"""Where an evaluation writes: checked before any work, and results kept as they come.

Every evaluator (POG, PAN, PInVerify, PeRM, PersonalHomeBench; nodes and offline CLIs) does:

    run_dir = new_run_dir(out_dir)            # or run_folder(out_dir): fails first, by name, and
                                              # holds out_dir's run lock until the process ends
    log = ResultLog(run_dir / "results.jsonl")
    ...
    log.append(record)                        # after each episode: one line, flushed and fsynced

so an unwritable ``out_dir`` (a file in the way, no permission, a read-only disk) stops the run
before any episode is spent, and a crash or kill loses at most the episode in progress:
``ResultLog.read`` gives back every finished record (a torn last line is skipped).

Two runs into one ``out_dir`` never mix: the evaluator takes ``out_dir``'s run lock
(:class:`RunLock`, an ``flock`` on ``<out_dir>/.run.lock``, released by the kernel whatever
ends the process, SIGKILL included), and a second run is refused with :class:`OutputDirBusy`
naming the folder and the run holding it (exit code 2, ``personal.exit_codes.BAD_INPUT``).
"""
from __future__ import annotations

import fcntl
import json
import os
import socket
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable

RESULTS_LOG = "results.jsonl"


class OutputDirError(RuntimeError):
    """An output folder that cannot be written; the message names it and says why."""


class OutputDirBusy(OutputDirError):
    """Another run (alive) is writing into the same output folder."""


LOCK_FILE = ".run.lock"
_HELD: dict[Path, "RunLock"] = {}  # this process's locks, by folder: taken once, held until exit


class RunLock:
    """An exclusive ``flock`` on ``<folder>/.run.lock``; the file says who holds it (pid, host, start,
    command) so the refusal can name the other run. The kernel drops the lock when the holder's
    process ends, however it ends, so a killed run never leaves a stale lock."""

    def __init__(self, folder: str | Path, what: str = "out_dir") -> None:
        self.folder, self.what = Path(folder), what
        self.path = self.folder / LOCK_FILE
        self._fd: int | None = None

    def acquire(self) -> "RunLock":
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise OutputDirError(f"{self.what} {self.folder}: cannot create the run lock {self.path} "
                                 f"({exc.strerror or exc})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 4096, 0).decode("utf-8", "replace").strip() or "unknown"
            os.close(fd)
            raise OutputDirBusy(f"{self.what} {self.folder}: another run is writing there ({holder}); "
                                "wait for it to end or choose another out_dir") from None
        os.ftruncate(fd, 0)
        started = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
        os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()}, started {started}: "
                      f"{' '.join(sys.argv)[:300]}\n".encode(), 0)
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor releases the flock
            self._fd = None
            _HELD.pop(self.folder.resolve(), None)


def lock_folder(folder: str | Path, what: str = "out_dir") -> RunLock:
    """This process's run lock on ``folder`` (taken on the first call, the same one afterwards)."""
    key = Path(folder).resolve()
    if key not in _HELD:
        _HELD[key] = RunLock(folder, what).acquire()
    return _HELD[key]


def run_folder(path: str | Path, what: str = "out_dir") -> Path:
    """:func:`writable_dir` and its run lock: the folder an evaluator writes its results into."""
    path = writable_dir(path, what)
    lock_folder(path, what)
    return path


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
    """A new, writable run folder ``<out_root>/<UTC time>`` (``-2``, ``-3`` … when taken); the run
    holds ``out_root``'s run lock (one run at a time writes under it)."""
    root = run_folder(out_root, what)
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
        line = json.dumps(record, allow_nan=True, default=_plain) + "\n"
        try:
            self._fh.write(line)
            self._fh.flush()
            if self.sync:
                os.fsync(self._fh.fileno())
        except OSError as exc:  # a full disk (ENOSPC) says nothing of the file: name it
            raise OutputDirError(f"{self.path}: cannot write the results log ({exc.strerror or exc}); "
                                 f"the {self.count} records before this one are kept") from None
        self.count += 1

    def extend(self, records: Iterable[dict[str, Any]]) -> None:
        for record in records:
            self.append(record)

    def close(self) -> None:
        if not self._fh.closed:
            try:
                self._fh.close()
            except OSError as exc:
                raise OutputDirError(f"{self.path}: cannot write the results log ({exc.strerror or exc})") from None

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


def resume_log(path: str | Path, identity: dict[str, Any], what: str = "out_dir") -> list[dict]:
    """The records a previous run with the same ``identity`` (its configuration) left in ``path``,
    so a re-run continues instead of truncating them; ``[]`` for a new log.

    The identity is kept next to the log (``<name>.run.json``). A torn last line (a killed run) is
    dropped from the file before appending resumes. A log left by a different configuration (or
    one without an identity file) is never overwritten: OutputDirError naming the files."""
    path = Path(path)
    ident = path.with_name(path.stem + ".run.json")
    wanted = json.loads(json.dumps(identity, default=_plain))
    if not path.exists():
        write_file(ident, json.dumps(wanted, indent=1, sort_keys=True))
        return []
    try:
        previous = json.loads(ident.read_text(encoding="utf-8"))
    except FileNotFoundError:
        previous = None
    except (OSError, ValueError) as exc:
        raise OutputDirError(f"{what} {path.parent}: cannot read {ident} ({exc})") from None
    if previous != wanted:
        differs = sorted(k for k in set(wanted) | set(previous or {}) if (previous or {}).get(k) != wanted.get(k))
        why = f"its run differs in {', '.join(differs)}" if previous is not None else f"{ident.name} is missing"
        raise OutputDirError(f"{what} {path.parent}: {path.name} holds results of another run ({why}); "
                             "nothing was overwritten: choose another out_dir, or remove those files to start over")
    try:
        records = ResultLog.read(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise OutputDirError(f"{what} {path.parent}: cannot read {path} ({exc})") from None
    write_file(path, "".join(json.dumps(r, allow_nan=True) + "\n" for r in records))
    return records


def write_file(path: str | Path, data: str | bytes) -> Path:
    """Write a report file (report.md, summary.json, a plot) whole or not at all: into a temporary
    file beside it, fsynced, then renamed over it. A full disk mid-write (ENOSPC, which names no
    file) raises OutputDirError naming ``path`` and leaves the file as it was before, so a re-run's
    failure never truncates the report an earlier run left."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as fh:
            fh.write(data.encode("utf-8") if isinstance(data, str) else data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise OutputDirError(f"{path}: cannot write ({exc.strerror or exc}); an earlier version, if any, is kept") from None
    return path


def save_figure(fig, path: str | Path, **savefig_kw) -> Path:
    """``fig.savefig`` through :func:`write_file` (rendered in memory first, same guarantees)."""
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format=Path(path).suffix.lstrip(".") or "png", **savefig_kw)
    return write_file(path, buf.getvalue())


def _plain(value: Any) -> Any:
    """NumPy scalars and arrays as lists; anything else JSON cannot hold (paths, enums, sets) as text."""
    if hasattr(value, "tolist"):
        return value.tolist()
    return str(value)

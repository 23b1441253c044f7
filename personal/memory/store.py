"""A household's memory in one SQLite file: people, object instances, where each was last seen,
who owns what (with provenance, confidence and history) and per-person preferences.

Why SQLite: a robot is killed, rebooted and upgraded, and what it learned must survive all
three. The stdlib ``sqlite3`` gives transactions, a journal that survives ``kill -9`` (WAL mode,
``synchronous=FULL``: a committed fact is on disk before the call returns) and a file a person
can open with any SQLite browser. One file per household keeps homes apart.

Nothing is overwritten: a change of owner closes the old relation (``valid_to``) and opens a new
one, a discarded object keeps its rows with ``gone_t`` set, so "who owned the lamp last week?"
stays answerable and a wrong correction can be traced to the statement that made it.

A file that is not a memory (corrupt, another program's database, a newer schema) is refused
with :class:`MemoryFileError` naming it; it is never replaced by an empty memory.
"""
from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

APPLICATION_ID = 0x50524D45  # "PRME": PRAGMA application_id, marks the file as ours
SCHEMA_VERSION = 1
PROVENANCES = ("summary", "statement", "correction", "verification", "perception", "user")

_SCHEMA = """
CREATE TABLE people (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE COLLATE NOCASE,
    created_t REAL NOT NULL
);
CREATE TABLE objects (
    id INTEGER PRIMARY KEY,
    description TEXT NOT NULL,
    category TEXT,
    embedding BLOB,
    created_t REAL NOT NULL,
    gone_t REAL,
    gone_why TEXT
);
CREATE TABLE sightings (
    object_id INTEGER NOT NULL REFERENCES objects(id),
    x REAL NOT NULL, y REAL NOT NULL, z REAL NOT NULL,
    frame TEXT NOT NULL,
    t REAL NOT NULL,
    source TEXT NOT NULL
);
CREATE INDEX sightings_by_object ON sightings(object_id, t);
CREATE TABLE ownership (
    id INTEGER PRIMARY KEY,
    person_id INTEGER NOT NULL REFERENCES people(id),
    object_id INTEGER NOT NULL REFERENCES objects(id),
    valid_from REAL NOT NULL,
    valid_to REAL,
    provenance TEXT NOT NULL,
    confidence REAL NOT NULL,
    note TEXT NOT NULL DEFAULT ''
);
CREATE INDEX ownership_by_object ON ownership(object_id);
CREATE TABLE verdicts (
    object_id INTEGER NOT NULL REFERENCES objects(id),
    query TEXT NOT NULL,
    verdict TEXT NOT NULL CHECK (verdict IN ('yes', 'no', 'unsure')),
    confidence REAL NOT NULL,
    t REAL NOT NULL
);
CREATE TABLE preferences (
    id INTEGER PRIMARY KEY,
    person_id INTEGER NOT NULL REFERENCES people(id),
    domain TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    valid_from REAL NOT NULL,
    valid_to REAL,
    provenance TEXT NOT NULL
);
CREATE TABLE statements (
    id INTEGER PRIMARY KEY,
    t REAL NOT NULL,
    speaker TEXT,
    text TEXT NOT NULL,
    effect TEXT NOT NULL
);
"""


class MemoryFileError(RuntimeError):
    """The memory file cannot be used as it is; the message names it and says why."""


@dataclass(frozen=True)
class ObjectRecord:
    id: int
    description: str
    category: str | None
    created_t: float
    gone_t: float | None


@dataclass(frozen=True)
class Ownership:
    person: str
    object_id: int
    valid_from: float
    valid_to: float | None
    provenance: str
    confidence: float
    note: str


@dataclass(frozen=True)
class Sighting:
    object_id: int
    x: float
    y: float
    z: float
    frame: str
    t: float
    source: str


class HouseholdMemory:
    """One household's memory. Every write is one transaction, committed before it returns."""

    def __init__(self, path: str | Path, create: bool = True):
        self.path = Path(path)
        fresh = not self.path.exists() or self.path.stat().st_size == 0
        if fresh and not create:
            raise MemoryFileError(f"{self.path}: no household memory here (create=False)")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = sqlite3.connect(str(self.path), isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA foreign_keys = ON")
            if fresh:
                self._create()
            else:
                self._check()
            self._db.execute("PRAGMA journal_mode = WAL")
            self._db.execute("PRAGMA synchronous = FULL")
        except sqlite3.DatabaseError as exc:
            raise MemoryFileError(f"{self.path}: not a readable household memory ({exc}); the file was left as it is — "
                                  "move it away to start an empty memory") from None

    # ------------------------------------------------------------ file
    def _create(self) -> None:
        # one script, one transaction: a half-made memory is never left behind
        self._db.executescript(f"BEGIN IMMEDIATE; {_SCHEMA} PRAGMA application_id = {APPLICATION_ID}; "
                               f"PRAGMA user_version = {SCHEMA_VERSION}; COMMIT;")

    def _check(self) -> None:
        app = self._db.execute("PRAGMA application_id").fetchone()[0]
        if app != APPLICATION_ID:
            raise MemoryFileError(f"{self.path}: an SQLite file, but not a household memory (application_id {app:#x}); "
                                  "left as it is")
        version = self._db.execute("PRAGMA user_version").fetchone()[0]
        if version != SCHEMA_VERSION:
            raise MemoryFileError(f"{self.path}: memory schema version {version}, this code reads {SCHEMA_VERSION}")
        problems = [row[0] for row in self._db.execute("PRAGMA quick_check")]
        if problems != ["ok"]:
            raise MemoryFileError(f"{self.path}: the database is damaged ({'; '.join(problems[:3])}); left as it is")

    def _tx(self):
        return _Transaction(self._db)

    def close(self) -> None:
        self._db.close()

    def data_version(self) -> int:
        """Changes whenever another connection (another process: the assistant) committed to the
        file; this connection's own writes leave it as it is (SQLite ``PRAGMA data_version``)."""
        return int(self._db.execute("PRAGMA data_version").fetchone()[0])

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ------------------------------------------------------------ people
    def person_id(self, name: str, create: bool = True) -> int | None:
        name = " ".join(str(name).split())
        if not name:
            raise ValueError("a person needs a name")
        row = self._db.execute("SELECT id FROM people WHERE name = ?", (name,)).fetchone()
        if row or not create:
            return row[0] if row else None
        with self._tx():
            return self._db.execute("INSERT INTO people(name, created_t) VALUES (?, ?)", (name, time.time())).lastrowid

    def people(self) -> list[str]:
        return [r[0] for r in self._db.execute("SELECT name FROM people ORDER BY id")]

    # ------------------------------------------------------------ objects
    def add_object(self, description: str, category: str | None = None, embedding: Sequence[float] | None = None,
                   t: float | None = None) -> int:
        description = " ".join(str(description).split())
        if not description:
            raise ValueError("an object needs a description")
        blob = None if embedding is None else np.asarray(embedding, np.float32).tobytes()
        with self._tx():
            return self._db.execute("INSERT INTO objects(description, category, embedding, created_t) VALUES (?, ?, ?, ?)",
                                    (description, category, blob, _now(t))).lastrowid

    def object(self, object_id: int) -> ObjectRecord:
        row = self._db.execute("SELECT id, description, category, created_t, gone_t FROM objects WHERE id = ?",
                               (object_id,)).fetchone()
        if row is None:
            raise KeyError(f"no object {object_id} in {self.path}")
        return ObjectRecord(*row)

    def objects(self, at: float | None = None, include_gone: bool = False) -> list[ObjectRecord]:
        rows = self._db.execute("SELECT id, description, category, created_t, gone_t FROM objects ORDER BY id")
        out = [ObjectRecord(*r) for r in rows]
        if include_gone:
            return out
        return [o for o in out if _alive(o, at)]

    def embedding(self, object_id: int) -> np.ndarray | None:
        row = self._db.execute("SELECT embedding FROM objects WHERE id = ?", (object_id,)).fetchone()
        return None if row is None or row[0] is None else np.frombuffer(row[0], np.float32).copy()

    def discard(self, object_id: int, why: str, t: float | None = None) -> None:
        """The object left the home: its open ownerships end, its rows stay as history."""
        t = _now(t)
        self.object(object_id)
        with self._tx():
            self._db.execute("UPDATE objects SET gone_t = ?, gone_why = ? WHERE id = ? AND gone_t IS NULL", (t, why, object_id))
            self._db.execute("UPDATE ownership SET valid_to = ? WHERE object_id = ? AND valid_to IS NULL", (t, object_id))

    # ------------------------------------------------------------ where
    def saw(self, object_id: int, xyz: Iterable[float], frame: str = "map", t: float | None = None,
            source: str = "perception") -> None:
        x, y, z = (float(v) for v in (list(xyz) + [0.0])[:3])
        if not all(np.isfinite([x, y, z])):
            raise ValueError(f"sighting of object {object_id}: position must be finite, got {(x, y, z)}")
        with self._tx():
            self._db.execute("INSERT INTO sightings VALUES (?, ?, ?, ?, ?, ?, ?)", (object_id, x, y, z, frame, _now(t), source))

    def last_seen(self, object_id: int) -> Sighting | None:
        row = self._db.execute("SELECT * FROM sightings WHERE object_id = ? ORDER BY t DESC, rowid DESC LIMIT 1",
                               (object_id,)).fetchone()
        return Sighting(*row) if row else None

    # ------------------------------------------------------------ who owns what
    def assert_owner(self, person: str, object_id: int, provenance: str, confidence: float = 1.0,
                     t: float | None = None, exclusive: bool = False, note: str = "") -> None:
        """``person`` owns the object from ``t`` on. ``exclusive`` ends everyone else's claim
        (a gift, a correction); otherwise owners accumulate (shared objects)."""
        _check_provenance(provenance)
        if not 0.0 <= confidence <= 1.0:
            raise ValueError(f"confidence must be in [0, 1], got {confidence}")
        t = _now(t)
        pid = self.person_id(person)
        self.object(object_id)
        with self._tx():
            if exclusive:
                self._db.execute("UPDATE ownership SET valid_to = ? WHERE object_id = ? AND person_id != ? AND valid_to IS NULL",
                                 (t, object_id, pid))
            if self._db.execute("SELECT 1 FROM ownership WHERE object_id = ? AND person_id = ? AND valid_to IS NULL",
                                (object_id, pid)).fetchone():
                return
            self._db.execute("INSERT INTO ownership(person_id, object_id, valid_from, provenance, confidence, note) "
                             "VALUES (?, ?, ?, ?, ?, ?)", (pid, object_id, t, provenance, confidence, note))

    def end_owner(self, person: str, object_id: int, t: float | None = None) -> bool:
        pid = self.person_id(person, create=False)
        if pid is None:
            return False
        with self._tx():
            cur = self._db.execute("UPDATE ownership SET valid_to = ? WHERE object_id = ? AND person_id = ? AND valid_to IS NULL",
                                   (_now(t), object_id, pid))
        return cur.rowcount > 0

    def owners(self, object_id: int, at: float | None = None) -> list[Ownership]:
        return [o for o in self.ownership_history(object_id) if _valid(o.valid_from, o.valid_to, at)]

    def ownership_history(self, object_id: int) -> list[Ownership]:
        rows = self._db.execute(
            "SELECT p.name, o.object_id, o.valid_from, o.valid_to, o.provenance, o.confidence, o.note "
            "FROM ownership o JOIN people p ON p.id = o.person_id WHERE o.object_id = ? ORDER BY o.valid_from, o.id",
            (object_id,))
        return [Ownership(*r) for r in rows]

    def objects_of(self, person: str, at: float | None = None) -> list[ObjectRecord]:
        pid = self.person_id(person, create=False)
        if pid is None:
            return []
        rows = self._db.execute("SELECT DISTINCT object_id, valid_from, valid_to FROM ownership WHERE person_id = ?", (pid,))
        ids = sorted({oid for oid, a, b in rows if _valid(a, b, at)})
        return [o for o in (self.object(i) for i in ids) if _alive(o, at)]

    # ------------------------------------------------------------ verification outcomes
    def record_verdict(self, object_id: int, query: str, verdict: str, confidence: float, t: float | None = None) -> None:
        """What the active verifier said of this object for this query ("Lily's mug")."""
        with self._tx():
            self._db.execute("INSERT INTO verdicts VALUES (?, ?, ?, ?, ?)", (object_id, query, verdict, float(confidence), _now(t)))

    def verdicts(self, query: str) -> dict[int, str]:
        """Each object's latest verdict for ``query``: "yes", "no" or "unsure"."""
        latest: dict[int, str] = {}
        for oid, verdict in self._db.execute("SELECT object_id, verdict FROM verdicts WHERE query = ? ORDER BY t, rowid", (query,)):
            latest[oid] = verdict
        return latest

    def rejected_for(self, query: str) -> set[int]:
        """Objects whose latest verdict for ``query`` is "no" (a search should not stop there again)."""
        return {oid for oid, v in self.verdicts(query).items() if v == "no"}

    # ------------------------------------------------------------ preferences
    def set_preference(self, person: str, domain: str, key: str, value: str, provenance: str = "user",
                       t: float | None = None) -> None:
        _check_provenance(provenance)
        t = _now(t)
        pid = self.person_id(person)
        with self._tx():
            self._db.execute("UPDATE preferences SET valid_to = ? WHERE person_id = ? AND domain = ? AND key = ? "
                             "AND valid_to IS NULL", (t, pid, domain, key))
            self._db.execute("INSERT INTO preferences(person_id, domain, key, value, valid_from, provenance) "
                             "VALUES (?, ?, ?, ?, ?, ?)", (pid, domain, key, str(value), t, provenance))

    def preferences(self, person: str, domain: str | None = None) -> dict[str, str]:
        pid = self.person_id(person, create=False)
        if pid is None:
            return {}
        sql = "SELECT domain, key, value FROM preferences WHERE person_id = ? AND valid_to IS NULL"
        rows = self._db.execute(sql + (" AND domain = ?" if domain else "") + " ORDER BY id",
                                (pid, domain) if domain else (pid,))
        return {(k if domain else f"{d}.{k}"): v for d, k, v in rows}

    # ------------------------------------------------------------ statements
    def log_statement(self, text: str, effect: str, speaker: str | None = None, t: float | None = None) -> None:
        with self._tx():
            self._db.execute("INSERT INTO statements(t, speaker, text, effect) VALUES (?, ?, ?, ?)", (_now(t), speaker, text, effect))

    def statements(self) -> list[tuple[float, str | None, str, str]]:
        return list(self._db.execute("SELECT t, speaker, text, effect FROM statements ORDER BY id"))

    # ------------------------------------------------------------ views
    def summary(self, at: float | None = None) -> str:
        """The household as a PersONAL-style summary ("The blue mug belongs to Tom."), current at
        ``at``: what a grounding method reads after the household changed."""
        lines = []
        for o in self.objects(at):
            names = sorted({w.person for w in self.owners(o.id, at)}, key=str.lower)
            if names:
                lines.append(f"The {o.description} belongs to {_join(names)}.")
        return " ".join(lines)


class _Transaction:
    """BEGIN IMMEDIATE ... COMMIT (or ROLLBACK on an exception); nests by doing nothing inside."""

    def __init__(self, db: sqlite3.Connection):
        self.db, self.outer = db, not db.in_transaction

    def __enter__(self):
        if self.outer:
            self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind, *_):
        if self.outer:
            self.db.execute("ROLLBACK" if kind else "COMMIT")


def _now(t: float | None) -> float:
    return time.time() if t is None else float(t)


def _valid(start: float, end: float | None, at: float | None) -> bool:
    if at is None:
        return end is None
    return start <= at and (end is None or at < end)


def _alive(o: ObjectRecord, at: float | None) -> bool:
    if at is None:
        return o.gone_t is None
    return o.created_t <= at and (o.gone_t is None or at < o.gone_t)


def _check_provenance(provenance: str) -> None:
    if provenance not in PROVENANCES:
        raise ValueError(f"provenance must be one of {PROVENANCES}, got {provenance!r}")


def _join(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]

"""What the memory node does, without rclpy: tell it a statement, ask it about objects, read a
snapshot. Answers are plain dicts shaped like the ROS interfaces (``msg/MemoryObject.msg``,
``srv/MemoryTell.srv``, ``srv/MemoryQuery.srv``, ``msg/MemorySummary.msg``)."""
from __future__ import annotations

import time
from typing import Callable

from personal.memory.events import apply_events, make_statement_reader, matches, seed_from_summary
from personal.memory.store import HouseholdMemory, ObjectRecord

MAX_STATEMENT_CHARS = 2000  # one spoken sentence or a short paragraph; longer text is refused, not read


class MemoryDesk:
    def __init__(self, memory: HouseholdMemory, household: str, reader: str = "builtin",
                 clock: Callable[[], float] = time.time, **reader_kwargs):
        self.memory, self.household, self.clock = memory, household, clock
        self.reader = make_statement_reader(reader, **reader_kwargs)

    def seed(self, summary: str) -> int:
        """Learn the summary's ownership once: only a memory that holds no object yet is seeded
        (a restart must not add every object a second time)."""
        if not summary.strip() or self.memory.objects(include_gone=True):
            return 0
        return seed_from_summary(self.memory, summary, t=self.clock())

    def tell(self, statement: str, speaker: str = "") -> dict:
        statement = " ".join(str(statement).split())
        if not statement:
            return {"success": False, "message": "empty statement", "effects": [], "unresolved": []}
        if len(statement) > MAX_STATEMENT_CHARS:
            return {"success": False, "message": f"statement of {len(statement)} characters (at most {MAX_STATEMENT_CHARS})",
                    "effects": [], "unresolved": []}
        events = self.reader.read(statement, speaker or None)
        applied = apply_events(self.memory, events, self.clock(), statement, speaker or None)
        done = [o.effect for o in applied.outcomes if o.ok]
        left = [o.effect for o in applied.unresolved]
        message = "understood" if done and not left else ("nothing understood" if not events else
                                                         "some events matched no object" if left else "no change")
        return {"success": bool(done) and not left, "message": message, "effects": done, "unresolved": left}

    def query(self, person: str = "", description: str = "", at: float = 0.0) -> list[dict]:
        when = at or None
        if description:
            found = matches(self.memory, description, owner=person or None, at=when)
            if person:
                theirs = {o.id for o in self.memory.objects_of(person, when)}
                found = [o for o in found if o.id in theirs]
        elif person:
            found = self.memory.objects_of(person, when)
        else:
            found = self.memory.objects(when)
        return [self.describe(o, when) for o in found]

    def describe(self, o: ObjectRecord, at: float | None = None) -> dict:
        owners = self.memory.owners(o.id, at)
        seen = self.memory.last_seen(o.id)
        return {"id": o.id, "description": o.description, "category": o.category or "",
                "owners": [w.person for w in owners], "provenance": [w.provenance for w in owners],
                "confidence": [w.confidence for w in owners], "seen": seen is not None,
                "last_seen": None if seen is None else {"x": seen.x, "y": seen.y, "z": seen.z, "frame": seen.frame, "t": seen.t}}

    def snapshot(self) -> dict:
        return {"household": self.household, "people": self.memory.people(),
                "objects": [self.describe(o) for o in self.memory.objects()],
                "summary": self.memory.summary(), "statements": len(self.memory.statements())}


def open_household(memory_dir: str, household: str) -> HouseholdMemory:
    """``<memory_dir>/<household>.sqlite``; the household id must be a plain file name (personal.paths)."""
    from personal.paths import child_path

    return HouseholdMemory(child_path(memory_dir, household, "household id", suffix=".sqlite"))

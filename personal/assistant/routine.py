"""A person's routine as a sequence of one-step plans for the appliance node (``home/plan``), so an
action can report each step and stop between steps when cancelled. The appliance node's plan
executor and its safety layer judge each step; this module only orders them and counts."""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from personal.memory.store import HouseholdMemory

ROUTINE_DOMAIN = "routine"  # preferences(person, "routine", name) = JSON list of PG steps


class RoutineError(ValueError):
    """The routine cannot be run as asked; the message says which field or name."""


def routine_steps(memory: HouseholdMemory | None, person: str, name: str, steps_json: str = "") -> list[dict]:
    """The steps of ``person``'s routine ``name`` (from the memory), or the ``steps_json`` given."""
    if steps_json:
        source, text = "steps_json", steps_json
    else:
        if memory is None:
            raise RoutineError("no memory to read routines from; give steps_json")
        stored = memory.preferences(person, ROUTINE_DOMAIN)
        if name not in stored:
            raise RoutineError(f"{person or '(nobody)'} has no routine {name!r} in the memory "
                               f"(known: {', '.join(sorted(stored)) or 'none'})")
        source, text = f"routine {name!r} of {person}", stored[name]
    try:
        steps = json.loads(text)
    except ValueError as exc:
        raise RoutineError(f"{source}: not JSON ({exc})") from None
    if not isinstance(steps, list) or not steps or not all(isinstance(s, dict) for s in steps):
        raise RoutineError(f"{source}: expected a non-empty JSON list of step objects")
    return steps


def one_step_plan(routine: str, index: int, step: dict) -> str:
    """The PG program list holding only this step (the appliance node's ``home/plan`` format)."""
    return json.dumps([{"program_id": routine or "routine", "steps": [{**step, "step_id": str(index + 1)}]}])


@dataclass
class RoutineTally:
    total: int
    outcomes: list[dict] = field(default_factory=list)

    def add(self, index: int, step: dict, report: dict) -> str:
        """Count one step from the appliance node's plan report; returns ok | refused | failed."""
        rows = report.get("steps") or []
        status = rows[0].get("status") if rows else "invalid"
        outcome = {"ok": "ok", "refused": "refused"}.get(status, "failed")
        message = rows[0].get("message", "") if rows else report.get("format_error", "no step in the report")
        self.outcomes.append({"step": index + 1, "appliance": step.get("appliance", ""), "feature": step.get("feature", ""),
                              "outcome": outcome, "message": message})
        return outcome

    def count(self, outcome: str) -> int:
        return sum(o["outcome"] == outcome for o in self.outcomes)

    def summary(self, cancelled: bool = False) -> str:
        done = f"{self.count('ok')} of {self.total} steps ran, {self.count('refused')} refused, {self.count('failed')} failed"
        return done + (" (cancelled)" if cancelled else "")

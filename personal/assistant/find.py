"""FindObject without rclpy: the navigation run a goal asks for, its feedback, its answer and what
the household memory learns from it.

The assistant node sends ``nav/start`` to the navigation node and follows ``nav/progress`` /
``nav/result`` (personal.navigation.progress, msg/NavigationRun); everything it decides from
them is here so that it is unit-tested without a graph.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field

from personal.navigation.progress import REJECTED, is_progress_of

VERIFY_SUFFIX = "+verify"
CANDIDATE = "candidate"  # memory category of a place the verifier turned down (never the object asked for)


class FindError(ValueError):
    """A goal that cannot be run (named in the result's ``why``)."""


def run_policy(base: str, verify: bool) -> str:
    """The navigation policy of a goal: ``value-map-rpg-owner+verify`` when it verifies before stop."""
    if not verify:
        return base
    if not base.startswith("value-map-"):
        raise FindError(f"verify needs a value-map policy (the assistant's policy is {base!r})")
    return base + VERIFY_SUFFIX


def owner_of(query: str, requester: str) -> str:
    """Whose object: the requester for "my ..."; else the query's possessive ("Lily's backpack")."""
    from personal.grounding.pipeline import query_owner

    if re.search(r"\bmy\b", query, re.IGNORECASE):
        if not requester.strip():
            raise FindError(f"{query!r} says 'my' but the goal names no requester")
        return requester.strip()
    return query_owner(query)


def resolved_query(query: str, owner: str) -> str:
    """"Find my mug." from Anna → "Find Anna's mug." (what the policies and the memory read)."""
    return re.sub(r"\bmy\b", f"{owner}'s", query, flags=re.IGNORECASE)


def household_summary(memory, episode_summary: str = "") -> tuple[str, str]:
    """The household description a goal grounds with, and its source: the memory's current
    ownership (every gift, new object, discard and correction it was told), else the simulator
    episode's own summary (a memory that knows nobody's objects yet, or none)."""
    text = memory.summary() if memory is not None else ""
    return (text, "memory") if text else (episode_summary, "episode")


def episode_id_from_reset(message: str) -> str:
    """The episode id in the sim bridge's ``episode/reset`` answer ("episode 1/3: <id> in <scene> ...")."""
    m = re.search(r"episode \d+/\d+: (\S+) in ", message)
    if m is None:
        raise FindError(f"episode/reset answered without an episode id: {message!r}")
    return m.group(1)


@dataclass
class FindTracker:
    """Follows one run: feedback from each progress report, the answer from the run's result."""

    episode_id: str
    policy: str
    verify: bool
    steps: int = 0
    status: str = "starting"
    best: dict | None = None
    checks: list = field(default_factory=list)
    recorded: int = 0  # checks already written to the memory
    unshown_rejection: bool = False  # a report said "rejected candidate" since the last feedback
    reports: int = 0  # progress reports heard for this run

    def mine(self, report: dict) -> bool:
        return is_progress_of(report, self.episode_id, self.policy)

    def on_progress(self, report: dict) -> None:
        self.reports += 1
        self.steps = int(report["step"])
        self.status = str(report["status"])
        # a rejection lasts one step; feedback goes out at most every 0.1 s and must not skip it
        self.unshown_rejection = self.unshown_rejection or self.status == REJECTED
        self.best = report.get("best") or self.best
        self.checks = list(report.get("checks") or [])

    def feedback(self) -> dict:
        best = self.best
        text = "" if best is None else f"detection at ({best['point'][0]:.2f}, {best['point'][1]:.2f}) at step {best['step']}"
        status, self.unshown_rejection = (REJECTED if self.unshown_rejection else self.status), False
        return {"steps": self.steps, "best_candidate": text, "best_score": float(best["score"]) if best else 0.0,
                "status": status}

    def new_rejections(self, rejects) -> list[dict]:
        """Checks not yet written to the memory that rejected their candidate (``rejects(check_dict)``)."""
        new = [c for c in self.checks[self.recorded:] if rejects(c)]
        self.recorded = len(self.checks)
        return new

    def outcome(self, run: dict) -> dict:
        """The goal's result fields from the run's ``nav/result`` (a NavigationRun as a dict)."""
        info = json.loads(run.get("info_json") or "{}")
        self.checks = info.get("stop_checks", self.checks)
        steps = int(run["steps"])
        failure = run.get("failure_reason") or ""
        point = info.get("stop_point_target")
        last = self.checks[-1] if self.checks else None
        verified = bool(self.verify and run["stopped"] and last is not None and last["verdict"] == "yes")
        found = bool(run["stopped"] and point is not None and (verified or not self.verify))
        score = _detection_score(info, point)
        if failure:
            why = f"navigation run ended: {failure}"
        elif found:
            why = (f"{'verified: ' + last['reason'] if verified else 'detected (not verified)'}; "
                   f"{info.get('stop_reason', '')}").strip("; ")
        elif run["stopped"]:
            why = f"stopped without a detection ({info.get('stop_reason') or 'no reason given'})"
        else:
            why = f"not found within {steps} steps"
        rejected = sum(1 for c in self.checks if c["verdict"] != "yes")
        if rejected and not found:
            why += f"; {rejected} candidate(s) rejected by the verifier"
        return {"success": found, "xy": tuple(point) if found else None, "verified": verified, "confidence": score if found else 0.0,
                "why": why, "steps": steps}


def _detection_score(info: dict, point) -> float:
    if point is None:
        return 0.0
    near = [d for d in info.get("detections") or [] if math.dist(d["point"], point) < 0.3]
    return float(near[-1]["score"]) if near else 0.0


def target_object(memory, query: str):
    """The memory's object the query asks for ("Lily's backpack": Lily's object matching
    "backpack"), or None. Reads ``personal.memory.events.matches``."""
    from personal.grounding.pipeline import query_owner
    from personal.memory.events import matches

    owner = query_owner(query)
    noun = re.sub(r"^(find|where is|where's|locate)\s+", "", query.strip().rstrip(".?!"), flags=re.IGNORECASE)
    noun = re.sub(r"^\w+'s\s+", "", noun).strip()
    found = [o for o in (matches(memory, noun, owner=owner or None) if noun else []) if o.category != CANDIDATE]
    if owner:
        theirs = {o.id for o in memory.objects_of(owner)}
        found = [o for o in found if o.id in theirs] or found
    return found[0] if found else None


def remember_rejection(memory, query: str, check: dict, z: float = 0.0) -> int:
    """A candidate the verifier turned down: an object record at its point with verdict ``no`` or
    ``unsure`` for this query (``HouseholdMemory.rejected_for`` then lists it)."""
    x, y = check["point"]
    oid = memory.add_object(f"candidate for {query!r} at ({x:.2f}, {y:.2f})", category=CANDIDATE)
    memory.saw(oid, (x, y, z), source="verification")
    memory.record_verdict(oid, query, check["verdict"], 0.0)
    return oid


def remember_found(memory, query: str, xy, z: float, verified: bool, confidence: float) -> int:
    """The found object's last-seen pose (and the verifier's yes) under the memory's object for the
    query; a new object record when the memory has none yet."""
    record = target_object(memory, query)
    oid = record.id if record is not None else memory.add_object(
        re.sub(r"^find\s+", "", query.strip().rstrip(".?!"), flags=re.IGNORECASE))
    memory.saw(oid, (xy[0], xy[1], z), source="verification" if verified else "perception")
    if verified:
        memory.record_verdict(oid, query, "yes", confidence)
    return oid

"""Confidence-weighted multi-view attribute tracker, attribute-majority fusion, adaptive stopping.

Each view contributes its per-attribute Yes/No with the view's confidence as
weight (low-visibility views are down-weighted, trap views get 0.1). An
attribute is *Matched* when its Yes weight leads its No weight by at least
``margin``, *Contradictory* when No leads by ``margin``, otherwise *Missing*
(abstains). Fusion: weighted votes of Matched (+w) and Contradictory (-w)
attributes; Yes when positive, No when negative; a tie is Unsure before the
last step and a conservative No at the last step. Adaptive stopping: stop when
the decision has mathematically converged (no evidence the remaining steps can
add changes it), or when all seen attributes are unanimous (optionally only
once ``min_coverage`` of the attribute weight has been seen).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from personal.verification.attributes import Attribute

MATCHED, CONTRADICTORY, MISSING = "Matched", "Contradictory", "Missing"


@dataclass
class AttributeTrack:
    attribute: Attribute
    yes: float = 0.0
    no: float = 0.0
    views: int = 0
    last_observed: str = ""
    last_reason: str = ""

    def status(self, margin: float) -> str:
        d = self.yes - self.no
        if d >= margin and self.yes > 0:
            return MATCHED
        if -d >= margin and self.no > 0:
            return CONTRADICTORY
        return MISSING

    def reachable(self, margin: float, extra: float) -> set[str]:
        """Statuses still reachable if up to ``extra`` more weight arrives (either way)."""
        d = self.yes - self.no
        out = set()
        if d + extra >= margin:
            out.add(MATCHED)
        if d - extra <= -margin:
            out.add(CONTRADICTORY)
        if d - extra < margin and d + extra > -margin:
            out.add(MISSING)
        return out or {self.status(margin)}


@dataclass
class Decision:
    decision: str  # Yes | No | Unsure
    stop: bool
    reason: str
    vote: float
    statuses: dict[str, str]


@dataclass
class Tracker:
    attributes: list[Attribute]
    horizon: int = 6
    margin: float = 0.5
    max_view_weight: float = 1.0
    weighted_votes: bool = True
    min_coverage: float = 0.0  # share of judgeable attribute weight that must be seen before a unanimity stop
    unjudgeable: set = field(default_factory=set)  # names the verifier can never decide (left out of coverage)
    # Multi-view size check (0 = off): a Yes needs some view in which the object looked at least
    # this share of the category's longest side (occlusion only shrinks a silhouette).
    min_size_ratio: float = 0.0
    tracks: dict[str, AttributeTrack] = field(default_factory=dict)
    steps: int = 0
    size_ratio_max: float | None = None

    def __post_init__(self) -> None:
        self.tracks = {a.name: AttributeTrack(a) for a in self.attributes}

    def update(self, judgements, confidence: float) -> None:
        """Add one view's judgements (objects with ``name``, ``status``, ``reason``, ``observed``)."""
        self.steps += 1
        w = max(0.0, min(self.max_view_weight, confidence))
        for j in judgements:
            t = self.tracks.get(j.name)
            if t is None:
                continue
            if j.status == "Yes":
                t.yes += w
            elif j.status == "No":
                t.no += w
            t.views += 1
            t.last_reason = j.reason
            if getattr(j, "observed", ""):
                t.last_observed = j.observed

    def note_extent(self, ratio: float | None) -> None:
        if ratio is not None:
            self.size_ratio_max = max(ratio, self.size_ratio_max or 0.0)

    def _size_blocks_yes(self) -> bool:
        return self.min_size_ratio > 0 and self.size_ratio_max is not None and self.size_ratio_max < self.min_size_ratio

    def skip_step(self) -> None:
        """A step that brought no new view (unreachable move)."""
        self.steps += 1

    def statuses(self) -> dict[str, str]:
        return {n: t.status(self.margin) for n, t in self.tracks.items()}

    def _w(self, t: AttributeTrack) -> float:
        return float(t.attribute.weight) if self.weighted_votes else 1.0

    def vote(self) -> float:
        v = 0.0
        for t in self.tracks.values():
            s = t.status(self.margin)
            v += self._w(t) if s == MATCHED else -self._w(t) if s == CONTRADICTORY else 0.0
        return v

    def vote_bounds(self, remaining: int) -> tuple[float, float]:
        extra = remaining * self.max_view_weight
        lo = hi = 0.0
        for t in self.tracks.values():
            r = t.reachable(self.margin, extra)
            w = self._w(t)
            lo += -w if CONTRADICTORY in r else 0.0 if MISSING in r else w
            hi += w if MATCHED in r else 0.0 if MISSING in r else -w
        return lo, hi

    def unresolved(self) -> list[Attribute]:
        """Attributes whose status can still change within the horizon (the ones worth asking about)."""
        remaining = max(0, self.horizon - self.steps)
        return [t.attribute for t in self.tracks.values()
                if len(t.reachable(self.margin, remaining * self.max_view_weight)) > 1 or t.status(self.margin) == MISSING]

    def decide(self, final: bool = False) -> Decision:
        statuses = self.statuses()
        v = self.vote()
        remaining = max(0, self.horizon - self.steps)
        small = self._size_blocks_yes()
        if final or remaining == 0:
            d = "Yes" if v > 0 and not small else "No"
            why = "final step: " + ("matches outnumber contradictions" if v > 0 else
                                    "contradictions outnumber matches" if v < 0 else "tie -> conservative No")
            if v > 0 and small:
                why = (f"final step: matches outnumber contradictions, but the object never looked larger than "
                       f"{self.size_ratio_max:.2f} of the category's size -> No")
            return Decision(d, True, why, v, statuses)
        lo, hi = self.vote_bounds(remaining)
        if lo > 0 and not small:
            return Decision("Yes", True, "converged: remaining steps cannot overturn the matches", v, statuses)
        if hi <= 0:
            return Decision("No", True, "converged: remaining steps cannot produce a Yes", v, statuses)
        seen = [s for s in statuses.values() if s != MISSING]
        total_w = sum(self._w(t) for n, t in self.tracks.items() if n not in self.unjudgeable) or 1.0
        seen_w = sum(self._w(t) for n, t in self.tracks.items() if statuses[n] != MISSING and n not in self.unjudgeable)
        if seen and len(set(seen)) == 1 and seen_w / total_w >= self.min_coverage and not (small and seen[0] == MATCHED):
            d = "Yes" if seen[0] == MATCHED else "No"
            return Decision(d, True, f"all {len(seen)} seen attributes unanimous ({seen[0]})", v, statuses)
        interim = "Yes" if v > 0 else "No" if v < 0 else "Unsure"
        return Decision(interim, False, "not converged", v, statuses)

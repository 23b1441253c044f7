"""VerifyObject without rclpy: which view to take next of a candidate point, and the verdict the
views add up to.

Each view is the robot's camera after one discrete action chosen here: turn to face the candidate,
drive up to ``near_m`` of it, then look from a turn either side. Every view is judged by the
verify-before-stop check (personal.navigation.verify_stop.StopVerifier: the depth segmenter's
proposal at the point, measured against the description by the attribute verifier) and the views
vote: a verdict is final once one side leads by ``margin`` views, else the majority at ``max_views``.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from personal.mapping.exploration import Act


def descriptions_for(query: str, summary: str = "", extractor=None) -> list[str]:
    """What the candidate is checked against: the query without its owner ("Lisa's blue mug with a
    chipped handle" → "blue mug with a chipped handle"), plus the owner's objects of that kind the
    household summary describes (read by ``extractor``, personal.grounding.extract)."""
    from personal.grounding.pipeline import query_owner
    from personal.navigation.verify_stop import target_descriptions

    text = re.sub(r"^(is (this|that|it)|verify|check)\s+", "", query.strip().rstrip(".?!"), flags=re.IGNORECASE)
    text = re.sub(r"^(the\s+)?\w+'s\s+", "", text).strip()
    out = [text] if text else []
    owner = query_owner(query)
    if summary.strip() and extractor is not None and owner:
        out += [d for d in target_descriptions(query, extractor.extract(summary), owner) if d not in out]
    return out


def next_view_action(pose: tuple[float, float, float], point: tuple[float, float], view: int, *,
                     turn_deg: float = 30.0, near_m: float = 1.0, blocked: bool = False) -> int:
    """The discrete action (personal.mapping.exploration.Act) before view ``view`` (1-based; view 0
    is where the robot stands): face the point, approach it, then alternate a turn either side."""
    x, y, yaw = pose
    error = math.remainder(math.atan2(point[1] - y, point[0] - x) - yaw, 2 * math.pi)
    if abs(error) > math.radians(turn_deg) / 2:
        return int(Act.TURN_LEFT if error > 0 else Act.TURN_RIGHT)
    if math.hypot(point[0] - x, point[1] - y) > near_m and not blocked:
        return int(Act.MOVE_FORWARD)
    return int(Act.TURN_LEFT if view % 2 else Act.TURN_RIGHT)


@dataclass
class ViewVote:
    max_views: int = 6
    margin: int = 2
    checks: list = field(default_factory=list)  # StopCheck per view

    def add(self, check) -> None:
        self.checks.append(check)

    def counts(self) -> tuple[int, int]:
        return sum(c.verdict == "yes" for c in self.checks), sum(c.verdict == "no" for c in self.checks)

    @property
    def verdict(self) -> str:
        yes, no = self.counts()
        return "yes" if yes > no else "no" if no > yes else "unsure"

    @property
    def confidence(self) -> float:
        """Share of the views taken that back the verdict (0 for unsure)."""
        yes, no = self.counts()
        return 0.0 if yes == no else max(yes, no) / len(self.checks)

    @property
    def done(self) -> bool:
        yes, no = self.counts()
        return abs(yes - no) >= self.margin or len(self.checks) >= self.max_views

    def why(self) -> str:
        yes, no = self.counts()
        backing = [c for c in self.checks if c.verdict == self.verdict]
        reason = backing[-1].reason if backing else (self.checks[-1].reason if self.checks else "no view")
        return f"{yes} yes / {no} no / {len(self.checks) - yes - no} unsure over {len(self.checks)} view(s): {reason}"

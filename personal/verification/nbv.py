"""Next-best-view strategies over the six relative directions.

Planners know only what the agent knows: its own azimuth history (poses of
views it obtained), the targets of moves that failed, and the tracker state.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

from personal.verification.env import DIRECTION_OFFSETS, MOVE_DIRECTIONS, RESOLUTION_DEG
from personal.verification.openai_compat import ChatClient, LLMError, extract_json
from personal.verification.schema import wrap_deg


@dataclass
class PlannerState:
    current_azimuth: float
    visited_azimuths: list[float]  # poses of obtained views (incl. the current one)
    failed_azimuths: list[float] = field(default_factory=list)  # requested targets of failed moves
    statuses: dict[str, str] = field(default_factory=dict)  # attribute -> Matched/Contradictory/Missing
    expected: dict[str, str] = field(default_factory=dict)  # attribute -> expected value
    descriptions: list[str] = field(default_factory=list)
    category: str = ""
    visibility_warning: str | None = None

    def target(self, direction: str) -> float:
        return self.current_azimuth + DIRECTION_OFFSETS[direction]

    def min_separation(self, direction: str) -> float:
        t = self.target(direction)
        known = self.visited_azimuths + self.failed_azimuths
        return min((abs(wrap_deg(t - a)) for a in known), default=180.0)

    def unvisited(self) -> list[str]:
        return [d for d in MOVE_DIRECTIONS if self.min_separation(d) > RESOLUTION_DEG]

    def visited_directions(self) -> list[str]:
        return [d for d in MOVE_DIRECTIONS if self.min_separation(d) <= RESOLUTION_DEG]


class RandomNBV:
    name = "random"

    def __init__(self, seed: int = 0):
        self.seed = seed
        self.rng = random.Random(seed)

    def begin_episode(self, index: int) -> None:
        """A generator per episode, from (seed, the episode's position in the index): an episode's
        views do not depend on which episodes ran before it, so sharded and serial runs agree."""
        self.rng = random.Random(f"{self.seed}:{index}")

    def choose(self, state: PlannerState) -> tuple[str, str]:
        options = state.unvisited() or list(MOVE_DIRECTIONS)
        d = self.rng.choice(options)
        return d, f"random among {len(options)} unvisited directions"


class FarthestPointNBV:
    """Angular farthest-point sampling: maximise the minimum angle to every known view."""

    name = "fps"

    def choose(self, state: PlannerState) -> tuple[str, str]:
        best = max(MOVE_DIRECTIONS, key=lambda d: (round(state.min_separation(d), 6), -MOVE_DIRECTIONS.index(d)))
        return best, f"farthest from known views ({state.min_separation(best):.0f} deg)"


NAV_PROMPT = """You are an embodied perception planner for attribute-based object verification.
Task: The following 3 sentences ALL describe the SAME target object. We have decomposed these descriptions into specific attributes to verify.
Object Description (3 sentences about the SAME object): 1) {d1} 2) {d2} 3) {d3}
Object Category: {category}
Attribute Verification Status: {status}
Navigation State: - Current View: You are currently viewing the object from the FRONT - Already Visited: {visited} - Available Directions to Move: {allowed} {warning}
Direction Guide (all directions are relative to YOUR current position): front-left/front-right = 60 degrees around the object to your left/right; back-left/back-right = 120 degrees; back = the opposite side.
IMPORTANT: You MUST choose ONE direction STRICTLY from the Available Directions to Move list above. Do NOT choose a direction listed as "Already Visited".
Choose the direction most likely reachable, with a clear view of the object, and the highest potential to reveal missing/unverified attributes.
Output EXACTLY this JSON format: {{"per_direction_analysis": "<analysis>", "chosen_direction": "<must be from Available Directions>", "why": "<brief reason>"}}"""


class LLMNBV:
    """The paper's attribute-based navigation prompt (App. C.5.1); falls back to FPS on bad replies."""

    name = "llm"

    def __init__(self, client: ChatClient):
        self.client = client
        self.fallback = FarthestPointNBV()

    def choose(self, state: PlannerState) -> tuple[str, str]:
        allowed = state.unvisited() or list(MOVE_DIRECTIONS)
        d = (state.descriptions + ["", "", ""])[:3]
        status = "; ".join(f"{n}={state.expected.get(n, '')}: {s}" for n, s in state.statuses.items()) or "none yet"
        prompt = NAV_PROMPT.format(
            d1=d[0], d2=d[1], d3=d[2], category=state.category, status=status,
            visited=", ".join(["front"] + state.visited_directions()), allowed=", ".join(allowed),
            warning=f"WARNING: {state.visibility_warning}" if state.visibility_warning else "",
        )
        try:
            reply = extract_json(self.client.chat(prompt, max_tokens=400))
            choice = str(reply.get("chosen_direction", "")).strip().lower()
            if choice in allowed:
                return choice, str(reply.get("why", ""))[:200]
            why = f"LLM chose {choice!r}, not allowed"
        except LLMError as exc:
            why = f"LLM error: {exc}"[:200]
        fd, fwhy = self.fallback.choose(state)
        return fd, f"{why}; fallback fps: {fwhy}"


def make_nbv(kind: str, seed: int = 0):
    if kind == "random":
        return RandomNBV(seed)
    if kind == "fps":
        return FarthestPointNBV()
    if kind == "llm":
        client = ChatClient.from_env("LLM")
        if client is None:
            raise ValueError("nbv 'llm' needs PERSONAL_LLM_BASE_URL and PERSONAL_LLM_MODEL")
        return LLMNBV(client)
    raise ValueError(f"unknown nbv strategy {kind!r} (random|fps|llm)")

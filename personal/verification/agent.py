"""The verification agent: decomposition -> per-view verification -> tracker -> NBV.

``VerificationAgent`` holds one episode's state and is driven step by step (the
ROS verifier node uses it the same way); ``run_episode`` drives it over an
offline :class:`VerificationEnv` and returns a result record in the public shape.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from personal.verification.attributes import Attribute, predict_category
from personal.verification.env import DIRECTION_OFFSETS, Observation, VerificationEnv
from personal.verification.nbv import PlannerState
from personal.verification.reader import load_depth, load_image, load_mask
from personal.verification.records import count_flips, result_record  # noqa: F401 - count_flips re-exported
from personal.verification.schema import HORIZON, CaptureEpisode, PairEpisode, Viewpoint
from personal.verification.tracker import Decision, Tracker
from personal.verification.verifier import ViewInput, ViewVerdict


@dataclass
class AgentConfig:
    mode: str = "multi"  # single | multi
    nbv: str = "fps"  # random | fps | llm
    detection: str = "mask"  # mask (GT mask) | box (GT box) — the paper's GT mode
    horizon: int = HORIZON
    margin: float = 0.5
    min_coverage: float = 0.0
    weighted_votes: bool = False  # paper: matched attributes outnumber contradictions (counts)
    min_size_ratio: float = 0.0  # multi-view size check (built-in verifier only; 0 = off)
    seed: int = 0


class VerificationAgent:
    """One episode: call ``begin`` then ``observe`` per step; ``planner_state`` feeds the NBV."""

    def __init__(self, decomposer, verifier, config: AgentConfig, attr_cache: dict | None = None):
        self.decomposer, self.verifier, self.config = decomposer, verifier, config
        self.attr_cache = attr_cache if attr_cache is not None else {}

    def begin(self, descriptions: list[str]) -> list[Attribute]:
        self.descriptions = list(descriptions)
        self.category = predict_category(self.descriptions) or "object"
        key = "\n".join(self.descriptions)
        if key not in self.attr_cache:
            self.attr_cache[key] = self.decomposer.decompose(self.descriptions, self.category)
        self.attributes = [Attribute(**a.to_dict()) for a in self.attr_cache[key]]
        if hasattr(self.verifier, "descriptions"):
            self.verifier.descriptions = self.descriptions
        horizon = 1 if self.config.mode == "single" else self.config.horizon
        self.tracker = Tracker(self.attributes, horizon=horizon, margin=self.config.margin,
                               weighted_votes=self.config.weighted_votes, min_coverage=self.config.min_coverage,
                               unjudgeable={a.name for a in self.attributes if not self._can_judge(a)},
                               min_size_ratio=self.config.min_size_ratio)
        self.visited: list[float] = []
        self.failed: list[float] = []
        self.transcript: list[dict] = []
        self.last_warning: str | None = None
        return self.attributes

    def _can_judge(self, a: Attribute) -> bool:
        judge = getattr(self.verifier, "can_judge", None)
        return judge(a) if judge else True

    def observe(self, obs: Observation, view: ViewInput | None, requested_azimuth: float | None = None) -> Decision:
        """Fold in one step (``view`` is None when the move failed and no new view came)."""
        verdict: ViewVerdict | None = None
        if view is not None and obs.new_view:
            verdict = self.verifier.verify(view, self.tracker.unresolved() or self.attributes, self.category,
                                           context=self.attributes)
            self.tracker.update(verdict.judgements, verdict.confidence)
            self.tracker.note_extent(verdict.extent_ratio)
            self.visited.append(obs.azimuth_deg)
        else:
            self.tracker.skip_step()
            if requested_azimuth is not None:
                self.failed.append(requested_azimuth)
        self.last_warning = obs.visibility_warning
        decision = self.tracker.decide(final=self.config.mode == "single")
        self.transcript.append(self._step_record(obs, verdict, decision))
        return decision

    def planner_state(self, current_azimuth: float) -> PlannerState:
        return PlannerState(
            current_azimuth=current_azimuth, visited_azimuths=list(self.visited), failed_azimuths=list(self.failed),
            statuses=self.tracker.statuses(), expected={a.name: a.expected for a in self.attributes},
            descriptions=self.descriptions, category=self.category, visibility_warning=self.last_warning,
        )

    def _step_record(self, obs: Observation, verdict: ViewVerdict | None, decision: Decision) -> dict:
        by_name = {j.name: j for j in verdict.judgements} if verdict else {}
        attrs = []
        for a in self.attributes:
            j = by_name.get(a.name)
            t = self.tracker.tracks[a.name]
            attrs.append({
                "name": a.name, "type": a.type, "expected": a.expected,
                "observed": (j.observed if j else "") or t.last_observed,
                "view_status": j.status if j else None, "reason": j.reason if j else "",
                "accumulated_status": decision.statuses[a.name],
            })
        return {
            **obs.to_dict(),
            "view_confidence": round(verdict.confidence, 3) if verdict else None,
            "visible_px": verdict.visible_px if verdict else None,
            "decision": decision.decision, "stop": decision.stop, "decision_reason": decision.reason,
            "vote": decision.vote, "attributes": attrs,
        }


def view_input(capture: CaptureEpisode, vp: Viewpoint, detection: str = "mask") -> ViewInput:
    """Load a capture as the verifier's input (GT mask, or GT box only)."""
    rgb = load_image(capture.root / vp.rgb)
    mask = load_mask(capture.root / vp.mask) if vp.mask and (capture.root / vp.mask).is_file() else None
    bbox = vp.mask_bbox_xyxy
    if detection == "box":
        if bbox is None and mask is not None and mask.any():
            ys, xs = np.nonzero(mask)
            bbox = [int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1]
        mask = None
    camera = capture.extra.get("camera") or {}
    depth = load_depth(capture.root / vp.depth) if vp.depth else None
    return ViewInput(rgb=rgb, mask=mask, bbox_xyxy=bbox, distance_m=vp.distance_m,
                     hfov_deg=float(camera.get("hfov_deg", 90.0)), pitch_deg=vp.pitch_deg, depth=depth)


def run_episode(pair: PairEpisode, agent: VerificationAgent, nbv, seed: int = 0) -> dict:
    """One episode offline; returns the result record."""
    cfg = agent.config
    env = VerificationEnv(pair, seed=seed, horizon=1 if cfg.mode == "single" else cfg.horizon)
    agent.begin(pair.query_texts)
    obs = env.reset()
    decision = agent.observe(obs, view_input(env.capture, obs.viewpoint, cfg.detection))
    interim = [decision.decision]
    first_view = agent.tracker.decide(final=True).decision
    planner_notes = []
    while not decision.stop and not env.done:
        direction, why = nbv.choose(agent.planner_state(env.current.azimuth()))
        requested = env.current.azimuth() + DIRECTION_OFFSETS[direction]
        planner_notes.append(why)
        obs = env.move(direction)
        view = view_input(env.capture, obs.viewpoint, cfg.detection) if obs.new_view else None
        decision = agent.observe(obs, view, requested_azimuth=requested)
        interim.append(decision.decision)
    if not decision.stop:
        decision = agent.tracker.decide(final=True)
        interim[-1] = decision.decision
    for rec, note in zip(agent.transcript[1:], planner_notes):
        rec["planner_reason"] = note
    return make_record(pair, agent, decision, interim, first_view, env.history, nbv_name=getattr(nbv, "name", ""))


def make_record(pair: PairEpisode, agent: VerificationAgent, decision: Decision, interim: list[str],
                first_view: str, history: list[Observation], nbv_name: str = "") -> dict:
    return result_record(
        pair, prediction=decision.decision, statuses=[o.status for o in history], first_view=first_view,
        interim=interim, transcript=agent.transcript, attributes=[a.to_dict() for a in agent.attributes],
        mode=agent.config.mode, nbv=nbv_name if agent.config.mode == "multi" else "none",
        stop_reason=decision.reason, query_category=agent.category, start_sector=history[0].sector_index,
    )

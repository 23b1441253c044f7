"""Message-level roles of the ``aiv_eval`` graph, ROS-free so they are testable in-process.

- ``CaptureServer`` (dataset replayer): AivCommand -> AivObservation + images.
- ``VerifierSession``: AivObservation + images -> AivVerdict (wraps ``VerificationAgent``).
- ``PlannerSession``: drives episodes (reset, NBV moves), scores verdicts, writes the report.

Payloads are dicts with the fields of ``msg/Aiv*.msg`` (the nodes convert the typed messages).
"""
from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from personal.verification.agent import AgentConfig, VerificationAgent, view_input
from personal.verification.records import result_record
from personal.verification.attributes import Attribute, make_decomposer
from personal.verification.env import DIRECTION_OFFSETS, EpisodeOver, Observation, VerificationEnv
from personal.verification.metrics import compute_metrics, write_report
from personal.verification.nbv import PlannerState, make_nbv
from personal.verification.schema import PairEpisode
from personal.verification.verifier import ViewInput, make_verifier


class CaptureServer:
    """Serves PInVerify captures step by step with the benchmark's environment semantics."""

    def __init__(self, pairs: list[PairEpisode], seed: int = 0, horizon: int = 6):
        self.pairs, self.seed, self.horizon = pairs, seed, horizon
        self.envs: dict[int, VerificationEnv] = {}

    def handle(self, cmd: dict) -> tuple[dict, np.ndarray | None, np.ndarray | None, np.ndarray | None]:
        """(AivObservation payload, rgb, mask, depth in metres; each image None when absent)
        for one AivCommand payload."""
        i = int(cmd["episode_index"])
        base = {"request_id": cmd["request_id"], "episode_index": i, "episode_key": "", "step": 0, "status": "error",
                "sector_index": -1, "azimuth_deg": 0.0, "new_view": False, "bbox_xyxy": [], "descriptions": []}
        if i >= len(self.pairs):
            return {**base, "error": f"episode_index {i} out of range (0..{len(self.pairs) - 1})"}, None, None, None
        pair = self.pairs[i]
        base["episode_key"] = pair.key
        try:
            if cmd["command"] == "reset":
                env = self.envs[i] = VerificationEnv(pair, seed=self.seed, horizon=self.horizon)
                obs, requested = env.reset(), 0.0
            elif cmd["command"] == "move":
                env = self.envs.get(i)
                if env is None:
                    return {**base, "error": f"episode {i}: move before reset"}, None, None, None
                requested = env.current.azimuth() + DIRECTION_OFFSETS.get(cmd["direction"], 0.0)
                obs = env.move(cmd["direction"])
            else:
                return {**base, "error": f"unknown command {cmd['command']!r} (reset|move)"}, None, None, None
        except (ValueError, EpisodeOver) as exc:
            return {**base, "error": str(exc)}, None, None, None
        payload = {
            **base, "step": obs.step, "status": obs.status, "sector_index": obs.sector_index,
            "azimuth_deg": float(obs.azimuth_deg), "requested_azimuth_deg": float(requested),
            "direction": obs.direction or "", "visibility_warning": obs.visibility_warning or "",
            "new_view": obs.new_view, "done": env.done,
            "descriptions": pair.query_texts if cmd["command"] == "reset" else [],
        }
        rgb = mask = depth = None
        if obs.new_view and obs.viewpoint is not None:
            vi = view_input(env.capture, obs.viewpoint, "mask")
            rgb, mask, depth = vi.rgb, vi.mask, vi.depth
            payload.update({"tag": obs.viewpoint.tag, "has_mask": mask is not None, "has_depth": depth is not None,
                            "bbox_xyxy": [int(v) for v in (vi.bbox_xyxy or [])],
                            "distance_m": float(vi.distance_m or 0.0), "hfov_deg": float(vi.hfov_deg),
                            "pitch_deg": float(vi.pitch_deg or 0.0)})
        return payload, rgb, mask, depth


def error_verdict(request_id: str, episode_index: int, step: int, error: str) -> dict:
    """A complete AivVerdict payload that ends the episode with ``error``."""
    return {"request_id": request_id, "episode_index": episode_index, "step": step, "decision": "Unsure",
            "forced_decision": "No", "stop": True, "reason": "", "vote": 0.0, "attribute_names": [],
            "attribute_expected": [], "attribute_status": [], "error": error}


class VerifierSession:
    """Per-episode verification state for the verifier node."""

    def __init__(self, config: AgentConfig, decomposer: str = "builtin", verifier: str = "builtin"):
        self.config = config
        self.agent = VerificationAgent(make_decomposer(decomposer), make_verifier(verifier), config)
        self.episode: int | None = None

    def handle(self, obs: dict, rgb: np.ndarray | None, mask: np.ndarray | None,
               depth: np.ndarray | None = None) -> dict:
        base = error_verdict(obs["request_id"], obs["episode_index"], obs["step"], "")
        if obs.get("error"):
            return {**base, "error": f"observation error: {obs['error']}"}
        first = obs["status"] == "start"
        if first:
            attrs = self.agent.begin(obs["descriptions"])
            self.episode = obs["episode_index"]
        elif self.episode != obs["episode_index"]:
            return {**base, "error": f"observation for episode {obs['episode_index']} but episode {self.episode} is active"}
        env_obs = Observation(obs["step"], obs["status"], obs["sector_index"], obs["azimuth_deg"], None,
                              obs.get("direction") or None, obs.get("visibility_warning") or None, obs["new_view"])
        view = None
        if obs["new_view"]:
            if rgb is None:
                return {**base, "error": "new_view without an rgb image"}
            use_mask = obs.get("has_mask") and self.config.detection == "mask"  # "box": GT box only
            view = ViewInput(rgb=rgb, mask=mask if use_mask else None,
                             bbox_xyxy=list(obs.get("bbox_xyxy") or []) or None, distance_m=obs.get("distance_m") or None,
                             hfov_deg=obs.get("hfov_deg", 90.0), pitch_deg=obs.get("pitch_deg"),
                             depth=depth if obs.get("has_depth") else None)
        decision = self.agent.observe(env_obs, view, requested_azimuth=obs.get("requested_azimuth_deg"))
        entry = self.agent.transcript[-1]
        entry["tag"] = obs.get("tag") or None
        final = obs.get("done", False) and not decision.stop
        if final:
            decision = self.agent.tracker.decide(final=True)
            entry.update(decision=decision.decision, stop=True, decision_reason=decision.reason)
        t = self.agent.tracker
        return {
            **base, "decision": decision.decision, "forced_decision": t.decide(final=True).decision,
            "stop": bool(decision.stop), "reason": decision.reason, "vote": float(decision.vote),
            "query_category": self.agent.category,
            "attribute_names": [a.name for a in self.agent.attributes],
            "attribute_expected": [a.expected for a in self.agent.attributes],
            "attribute_status": [decision.statuses[a.name] for a in self.agent.attributes],
            "attributes_json": json.dumps([a.to_dict() for a in attrs]) if first else "",
            "transcript_json": json.dumps(entry),
        }


@dataclass
class _Episode:
    index: int
    interim: list[str] = field(default_factory=list)
    statuses: list[str] = field(default_factory=list)
    transcript: list[dict] = field(default_factory=list)
    visited: list[float] = field(default_factory=list)
    failed: list[float] = field(default_factory=list)
    azimuth: float = 0.0
    first_view: str = "No"
    attributes: list[dict] = field(default_factory=list)
    category: str = ""
    warning: str | None = None
    planner_notes: list[str] = field(default_factory=list)


class PlannerSession:
    """Drives every episode: reset, then NBV moves until the verifier stops; collects records."""

    def __init__(self, pairs: list[PairEpisode], config: AgentConfig, limit: int | None = None, on_record=None,
                 start: int = 0):
        # episodes start .. start+limit-1 of the index (a shard's window); commands carry the index position
        self.pairs = pairs
        self.indices = list(range(len(pairs)))[start:(start + limit) if limit else None]
        self.on_record = on_record  # gets each episode's record as it is made (to write it at once)
        self.config = config
        self.nbv = make_nbv(config.nbv, config.seed) if config.mode == "multi" else None
        self.records: list[dict] = []
        self.current: _Episode | None = None
        self.pending: str | None = None  # request id awaiting a verdict
        self.last_observed: str | None = None  # request id of the last observation taken in
        self.next_index = 0  # position in self.indices

    @property
    def episodes(self) -> int:
        return len(self.indices)

    @property
    def finished(self) -> bool:
        return self.current is None and self.next_index >= len(self.indices)

    def _command(self, index: int, command: str, direction: str = "") -> dict:
        self.pending = uuid.uuid4().hex[:12]
        return {"request_id": self.pending, "episode_index": index, "command": command, "direction": direction}

    def start_next(self) -> dict | None:
        """The reset command of the next episode, or None when all are done."""
        if self.next_index >= len(self.indices):
            self.current = None
            return None
        self.current = _Episode(self.indices[self.next_index])
        self.next_index += 1
        if self.nbv is not None and hasattr(self.nbv, "begin_episode"):
            self.nbv.begin_episode(self.pairs[self.current.index].index)
        return self._command(self.current.index, "reset")

    def restart_current(self) -> None:
        """Forget the current episode's progress (before re-sending its lost reset)."""
        if self.current is not None:
            self.current = _Episode(self.current.index)
            self.last_observed = None  # the re-sent reset's observation is taken in again

    def observed(self, request_id: str) -> bool:
        """Whether the observation of ``request_id`` has been taken in (its verdict may be scored)."""
        return self.last_observed == request_id

    def on_observation(self, obs: dict) -> None:
        ep = self.current
        if ep is None or obs["request_id"] != self.pending or self.last_observed == obs["request_id"]:
            return
        self.last_observed = obs["request_id"]
        ep.statuses.append(obs["status"])
        ep.azimuth = obs["azimuth_deg"]
        ep.warning = obs.get("visibility_warning") or None
        if obs["new_view"]:
            ep.visited.append(obs["azimuth_deg"])
        elif obs["status"] == "unreachable":
            ep.failed.append(obs["requested_azimuth_deg"])

    def on_verdict(self, verdict: dict) -> dict | None:
        """Next command (move / next reset) or None when everything is finished."""
        ep = self.current
        if ep is None or verdict["request_id"] != self.pending:
            return None  # stale or foreign
        if verdict.get("error"):
            ep.interim.append("No")
            ep.transcript.append({"step": verdict["step"], "error": verdict["error"]})
            return self._finish(ep, {"decision": "No", "reason": f"error: {verdict['error']}", "error": verdict["error"]})
        if verdict["step"] == 1:
            ep.first_view = verdict["forced_decision"]
            ep.attributes = json.loads(verdict["attributes_json"] or "[]")
            ep.category = verdict.get("query_category", "")
        entry = json.loads(verdict["transcript_json"]) if verdict.get("transcript_json") else {}
        if ep.planner_notes and len(ep.transcript) >= 1:
            entry["planner_reason"] = ep.planner_notes[-1]
        ep.transcript.append(entry)
        ep.interim.append(verdict["decision"])
        horizon = 1 if self.config.mode == "single" else self.config.horizon
        if verdict["stop"] or len(ep.statuses) >= horizon:
            return self._finish(ep, verdict)
        state = PlannerState(
            current_azimuth=ep.azimuth, visited_azimuths=list(ep.visited), failed_azimuths=list(ep.failed),
            statuses=dict(zip(verdict["attribute_names"], verdict["attribute_status"])),
            expected=dict(zip(verdict["attribute_names"], verdict["attribute_expected"])),
            descriptions=self.pairs[ep.index].query_texts, category=ep.category, visibility_warning=ep.warning,
        )
        direction, why = self.nbv.choose(state)
        ep.planner_notes.append(why)
        return self._command(ep.index, "move", direction)

    def _finish(self, ep: _Episode, verdict: dict) -> dict | None:
        pair = self.pairs[ep.index]
        decision = verdict["decision"] if verdict["decision"] in ("Yes", "No") else "No"
        self.records.append(result_record(
            pair, prediction=decision, statuses=ep.statuses, first_view=ep.first_view, interim=ep.interim,
            transcript=ep.transcript, attributes=ep.attributes, mode=self.config.mode,
            nbv=self.config.nbv if self.config.mode == "multi" else "none", stop_reason=verdict.get("reason", ""),
            query_category=ep.category,
            # an episode that broke (unreadable capture, timeout) keeps the conservative No but is flagged
            error=verdict.get("error") or None,
        ))
        if self.on_record:
            self.on_record(self.records[-1])
        return self.start_next()

    def write(self, out_dir: str | Path, name: str, notes: list[str] | None = None) -> dict:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        with open(out / f"results_{name}.jsonl", "w") as fh:
            for r in self.records:
                fh.write(json.dumps(r) + "\n")
        m = compute_metrics(self.records)
        from dataclasses import asdict

        write_report({name: {"metrics": m, "config": asdict(self.config)}}, out,
                     title="PInVerify evaluation (aiv_eval graph)", notes=notes)
        return m


def attribute_objects(payload: str) -> list[Attribute]:
    return [Attribute(**a) for a in json.loads(payload or "[]")]

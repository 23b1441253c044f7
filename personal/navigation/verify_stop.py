"""Verify before stop: when a value-map policy would declare "found", check that the object at the
detected point is the described instance (PInVerify's verifier) and keep searching if it is not.

PersONAL's hard episodes hold look-alikes: Lily's red backpack and Tom's blue one are both
backpacks, and a grounding score built from an embedding of "backpack" + owner phrases can rank the
wrong one first. PInVerify exists because such confusions are common; the attribute verifier
measures the candidate's pixels (colour in CIELAB, the category's metric extent from depth) against
the owner's description, evidence the detection's embedding did not use.

Everything here is non-oracle: the candidate's mask is a depth-segmenter proposal
(``personal.perception.segment``) near the detected point in the current frame — with the map's
crop tower, the proposal whose crop embedding is most like the detected cell's feature — and the
description is what the ownership extractor read from the summary. Verdicts: ``yes`` (a judged
attribute matched and none contradicted), ``no`` (the main colour contradicted every description;
a part colour's "no" counts as unsure unless ``part_rejects``), ``unsure`` (nothing judgeable,
candidate not in view). A ``no`` must be repeated in an earlier frame of the approach (second
view) to stand. ``no`` — and ``unsure`` with ``reject_unsure`` — puts the point on the policy's
blacklist and the search goes on within the step budget. Defaults chosen on validation stop
moments (scripts/verify_stop_harness.py, docs/navigation.md). ``candidates="near"`` judges every
proposal near the point, not only the one that made the detection: ``yes`` if any matches, ``no``
only if every one contradicts (a candidate, docs/results/pan_verify/near/PLAN.md).
"""
from __future__ import annotations

import math
import re
from collections import deque
from dataclasses import dataclass, field

import numpy as np

MATCH_RADIUS_M = 0.8  # a proposal whose centroid is this close (map xy) to the detected point is the candidate
RECENT_FRAMES = 5  # frames kept for a second view of the candidate (the approach's earlier steps)
CANDIDATE_MODES = ("detected", "near")  # judge the proposal that made the detection | every proposal near it


def check_candidates(mode: str) -> str:
    """``mode`` if it is one of CANDIDATE_MODES, else a ValueError naming them (the CLI checks with
    this before anything loads)."""
    if mode not in CANDIDATE_MODES:
        raise ValueError(f"candidates must be one of {', '.join(CANDIDATE_MODES)}, got {mode!r}")
    return mode


@dataclass
class StopCheck:
    verdict: str  # yes | no | unsure
    reason: str
    point: tuple[float, float]
    step: int = 0
    judgements: list = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"verdict": self.verdict, "reason": self.reason, "point": [round(v, 2) for v in self.point],
                "step": self.step, "judgements": self.judgements}


def target_descriptions(query: str, phrases, owner: str | None) -> list[str]:
    """The owner's described objects whose head noun the query names ("Find Lily's backpack." +
    "Lily owns the red backpack" -> ["red backpack"]); every owned object if the query names none."""
    words = set(re.findall(r"[a-z]+", query.lower()))
    owned = [p.object for p in phrases if owner and p.person.lower() == owner.lower()]
    named = [o for o in owned if set(re.findall(r"[a-z]+", o.lower())) & words]
    return named or owned


class StopVerifier:
    def __init__(self, reject_unsure: bool = False, decomposer: str = "builtin", encoder=None,
                 colour_margin: float = 0.0, second_view: bool = True, part_rejects: bool = False,
                 instance_margin: float | None = None, candidates: str = "detected"):
        from personal.verification.attributes import make_decomposer
        from personal.verification.verifier import BuiltinImageVerifier

        self.candidates = check_candidates(candidates)
        self.reject_unsure = reject_unsure
        self.encoder = encoder  # the map's crop tower: associates the candidate through its embedding
        self.colour_margin = float(colour_margin)  # ΔE gap a colour "No" needs (0: off)
        self.second_view = second_view
        self.part_rejects = part_rejects  # a part colour's "No" may reject (else it counts as unsure)
        self.last_gap: float | None = None
        # learned instance check (None: off): the candidate's crop embedding is compared with the text
        # embeddings of every object the summary describes; another one beating the owner's by this
        # margin is a "no" whatever the colours say (colour alone cannot tell two white objects apart)
        self.instance_margin = instance_margin
        self.others: list[str] = []
        self.last_instance_gap: float | None = None
        self._text_emb: np.ndarray | None = None
        self.decomposer = make_decomposer(decomposer)
        # colour evidence only: the shape check and the category gate are tuned to whole-object masks,
        # and a depth proposal often joins an object to its support or shows a part of it
        self.verifier = BuiltinImageVerifier(category_gate=False, shape_check=False)
        self.descriptions: list[str] = []
        self.checks: list[StopCheck] = []
        self.recent: deque = deque(maxlen=RECENT_FRAMES)

    def prepare(self, query: str, phrases, owner: str | None) -> None:
        self.descriptions = target_descriptions(query, phrases, owner)
        self.others = list(dict.fromkeys(p.object for p in phrases if p.object not in self.descriptions))
        self._text_emb = None  # the instance check's text embeddings: one encoding per episode, not per check
        self.checks = []
        self.recent.clear()

    def observe(self, frame) -> None:
        """Called by the loop with every frame: the recent ones give a second view before a rejection."""
        self.recent.append(frame)

    def rejects(self, check: StopCheck) -> bool:
        return check.verdict == "no" or (self.reject_unsure and check.verdict == "unsure")

    def sees(self, frame, point: tuple[float, float], floor_z: float | None = None,
             cell_feature: np.ndarray | None = None) -> bool:
        """Whether ``frame`` shows a candidate proposal for ``point`` (what a check would judge)."""
        return not isinstance(self._located(frame, point, floor_z, cell_feature)[1], str)

    def _located(self, frame, point, floor_z, cell_feature):
        """(depth in metres, what ``_candidates`` found there: [(mask, centroid, segments, label), ...],
        the detection's own first, or why there is none); (None, why) without a colour and depth frame."""
        if frame.rgb is None or frame.depth is None:
            return None, "no colour or depth frame"
        from personal.depth import depth_to_metres

        depth = depth_to_metres(np.asarray(frame.depth))  # the ROS path hands 16UC1 millimetres through
        return depth, self._candidates(frame, depth, point, floor_z, cell_feature)

    def check(self, frame, point: tuple[float, float], floor_z: float | None = None, step: int = 0,
              cell_feature: np.ndarray | None = None) -> StopCheck:
        """``cell_feature``: the detected cell's feature-map vector; with the encoder it picks the
        proposal whose crop embedding made the detection. A rejection needs a second view to agree."""
        out = self._check(frame, point, floor_z, cell_feature)
        if self.second_view and self.rejects(out):
            out = self._second_look(out, frame, point, floor_z, cell_feature)
        out.step = step
        self.checks.append(out)
        return out

    def _second_look(self, first: StopCheck, frame, point, floor_z, cell_feature) -> StopCheck:
        """The same candidate in the oldest kept frame of the approach (another pose): a rejection
        stands only if that view rejects too; a yes there wins, anything else keeps the stop."""
        older = [f for f in self.recent if f is not frame and f.rgb is not None]
        if not older:
            return first
        again = self._check(older[0], point, floor_z, cell_feature)
        if self.rejects(again):
            first.reason += f"; second view: {again.reason}"
            return first
        verdict = "yes" if again.verdict == "yes" else "unsure"
        return StopCheck(verdict, f"first view: {first.reason}; second view: {again.reason}", point,
                         judgements=first.judgements + again.judgements)

    def _check(self, frame, point, floor_z, cell_feature=None) -> StopCheck:
        if not self.descriptions:
            return StopCheck("unsure", "no description of the owner's object to check against", point)
        depth, found = self._located(frame, point, floor_z, cell_feature)
        if isinstance(found, str):
            return StopCheck("unsure", found, point)
        checks = [self._judge(frame, depth, mask, centroid, point) for mask, centroid, _, _ in found]
        out = _combine(checks)
        if self.instance_margin is not None and out.verdict != "no":
            _, _, seg, k = found[0]
            why = self._instance_no(frame, seg, k)
            if why:
                return StopCheck("no", why, point, judgements=out.judgements)
        return out

    def _judge(self, frame, depth, mask, centroid, point) -> StopCheck:
        """The verdict on one proposal: its pixels against each of the owner's descriptions."""
        from personal.verification.attributes import predict_category
        from personal.verification.verifier import ViewInput

        cam = np.asarray(frame.T_map_camera)[:3, 3]
        h, w = depth.shape
        view = ViewInput(rgb=np.asarray(frame.rgb), mask=mask, depth=depth,
                         distance_m=float(np.linalg.norm(centroid - cam)), pitch_deg=0.0,
                         hfov_deg=math.degrees(2 * math.atan(w / 2 / float(frame.K[0][0]))))
        verdicts = []
        for text in self.descriptions:  # the owner may have several: a match with any one is a yes
            category = predict_category([text]) or "object"
            attrs = self.decomposer.decompose([text], category)
            judged = self.verifier.verify(view, attrs, category, context=attrs).judgements
            judged = [(j.name, self._margin_gate(j, a, view), j.reason) for a, j in zip(attrs, judged)]
            verdicts.append((text, judged))
        return _decide(verdicts, point)

    def _instance_no(self, frame, seg, k) -> str:
        """Why the candidate's crop looks like another described object more than the owner's, or ""."""
        enc = self.encoder
        self.last_instance_gap = None
        if enc is None or not self.others or not hasattr(enc, "embed_crops") or not hasattr(enc, "encode_text"):
            return ""
        crop = _unit(_crop_embeddings(enc, frame.rgb, seg, np.array([k]))[0])
        if self._text_emb is None:
            t = np.asarray(enc.encode_text(self.descriptions + self.others), np.float32)
            self._text_emb = t / np.maximum(np.linalg.norm(t, axis=1, keepdims=True), 1e-8)
        sims = self._text_emb @ crop
        own, j = float(sims[: len(self.descriptions)].max()), int(np.argmax(sims[len(self.descriptions):]))
        gap = float(sims[len(self.descriptions) + j]) - own
        self.last_instance_gap = gap
        if gap < self.instance_margin:
            return ""
        return f"the crop is more like '{self.others[j]}' than the owner's object (cosine gap {gap:.3f})"

    def _candidates(self, frame, depth, point, floor_z, cell_feature):
        """[(mask, map centroid, segments, label)] of the proposals to judge, or why there is none.
        Proposals whose centroid lies within MATCH_RADIUS_M of the point compete; with the encoder
        and the cell's feature the one whose crop embedding is most like the cell comes first (the
        proposal that gave the detection), else the nearest. ``candidates="near"``: all of them,
        the rest nearest first; else that first one alone."""
        from personal.perception.segment import segment_rgbd

        enc = self.encoder if cell_feature is not None and np.any(cell_feature) else None
        if enc is not None and hasattr(enc, "segments"):
            seg = enc.segments(depth, frame.K, frame.T_map_camera)  # the proposals the map was built from
        else:
            seg = segment_rgbd(depth, frame.K, frame.T_map_camera, floor_z=floor_z)
        objects = seg.objects()
        if not len(objects):
            return "no object proposal in view"
        dist = np.hypot(seg.centroid[objects, 0] - point[0], seg.centroid[objects, 1] - point[1])
        close = dist <= MATCH_RADIUS_M
        near = objects[close]
        if not len(near):
            return f"nearest proposal {dist.min():.2f} m from the detected point"
        by_distance = near[np.argsort(dist[close], kind="stable")]
        first = int(by_distance[0])
        if enc is not None and len(near) > 1 and hasattr(enc, "embed_crops"):
            first = int(near[int(np.argmax(_proposal_similarity(enc, frame.rgb, seg, near, cell_feature)))])
        chosen = [first] + ([int(k) for k in by_distance if k != first] if self.candidates == "near" else [])
        labels = seg.full_labels(depth.shape)
        return [(labels == k, seg.centroid[k], seg, k) for k in chosen]

    def _margin_gate(self, judgement, attribute, view) -> str:
        """A colour "No" stands only if the mask's pixels are clearly nearer another colour name
        than the described one (median ΔE gap >= colour_margin): shading turns black into grey
        and a mask edge takes in the support's pixels."""
        if judgement.status != "No":
            return judgement.status
        if judgement.name != "color":  # a part's colour: "no such part visible" is weak on a proposal mask
            return judgement.status if self.part_rejects else "Unsure"
        if self.colour_margin <= 0:
            return judgement.status
        gap = colour_gap(view, attribute.expected)
        self.last_gap = gap
        return judgement.status if gap is not None and gap >= self.colour_margin else "Unsure"


def _crop_embeddings(enc, rgb, seg, which) -> np.ndarray:
    from personal.perception.crops import frame_rgb, segment_crops

    crops, masks = segment_crops(frame_rgb(np.asarray(rgb, np.uint8)), seg, which, size=int(enc.config.image_size))
    emb, _ = enc.embed_crops(crops, masks)
    return np.asarray(emb, np.float32)


def _unit(v: np.ndarray) -> np.ndarray:
    return v / max(float(np.linalg.norm(v)), 1e-8)


def _proposal_similarity(enc, rgb, seg, which, cell_feature) -> np.ndarray:
    """Cosine of each proposal's crop embedding to the detected cell's feature."""
    emb = _crop_embeddings(enc, rgb, seg, which)
    f = np.asarray(cell_feature, np.float32)
    return emb @ f / np.maximum(np.linalg.norm(emb, axis=1) * np.linalg.norm(f), 1e-8)


def colour_gap(view, described: str) -> float | None:
    """Weighted median over the mask's pixels of ΔE(described colour) − ΔE(best colour name)."""
    from personal.verification.colors import color_names_in
    from personal.verification.verifier import _ColorStats, _erode

    expected = color_names_in(described)
    if not expected or view.mask is None:
        return None
    pixels = np.asarray(view.rgb)[_erode(view.mask)]
    if not len(pixels):
        return None
    stats = _ColorStats(pixels)
    gap = stats.dist[:, stats.names.index(expected[0])] - stats.best
    order = np.argsort(gap)
    cum = np.cumsum(stats.counts[order])
    return float(gap[order][np.searchsorted(cum, cum[-1] / 2)])


def _combine(checks: list[StopCheck]) -> StopCheck:
    """One verdict over the judged proposals: the first yes; no only if every one says no (the
    first's reason); else the first proposal's unsure. One proposal: its own verdict."""
    if len(checks) == 1:
        return checks[0]
    yes = next((c for c in checks if c.verdict == "yes"), None)
    if yes is not None:
        return yes
    if all(c.verdict == "no" for c in checks):
        out = checks[0]
        out.reason += f" (and the {len(checks) - 1} other proposal(s) near the point)"
        return out
    return next(c for c in checks if c.verdict == "unsure")


def _decide(verdicts: list, point) -> StopCheck:
    rows = [{"description": text, "attributes": [{"name": n, "status": s, "reason": r} for n, s, r in judged]}
            for text, judged in verdicts]
    statuses = [[s for _, s, _ in judged] for _, judged in verdicts]
    for (text, judged), st in zip(verdicts, statuses):
        if "Yes" in st and "No" not in st:
            return StopCheck("yes", f"matches '{text}'", point, judgements=rows)
    if statuses and all("No" in st for st in statuses):
        first = next(r for _, s, r in verdicts[0][1] if s == "No")
        return StopCheck("no", f"contradicts every description ({first})", point, judgements=rows)
    return StopCheck("unsure", "no described attribute could be judged in this view", point, judgements=rows)

"""Verify before stop: when a value-map policy would declare "found", check that the object at the
detected point is the described instance (PInVerify's verifier) and keep searching if it is not.

PersONAL's hard episodes hold look-alikes: Lily's red backpack and Tom's blue one are both
backpacks, and a grounding score built from an embedding of "backpack" + owner phrases can rank the
wrong one first. PInVerify exists because such confusions are common; the attribute verifier
measures the candidate's pixels (colour in CIELAB, the category's metric extent from depth) against
the owner's description, evidence the detection's embedding did not use.

Everything here is non-oracle: the candidate's mask is the depth segmenter's proposal
(``personal.perception.segment``) nearest the detected point in the current frame, the description
is what the ownership extractor read from the summary. Verdicts: ``yes`` (a judged attribute matched
and none contradicted), ``no`` (one contradicted), ``unsure`` (nothing judgeable, candidate not in
view). ``no`` — and ``unsure`` with ``reject_unsure`` — puts the point on the policy's blacklist and
the search goes on within the step budget.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np

MATCH_RADIUS_M = 0.8  # a proposal whose centroid is this close (map xy) to the detected point is the candidate


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
    def __init__(self, reject_unsure: bool = False, decomposer: str = "builtin"):
        from personal.verification.attributes import make_decomposer
        from personal.verification.verifier import BuiltinImageVerifier

        self.reject_unsure = reject_unsure
        self.decomposer = make_decomposer(decomposer)
        # colour evidence only: the shape check and the category gate are tuned to whole-object masks,
        # and a depth proposal often joins an object to its support or shows a part of it
        self.verifier = BuiltinImageVerifier(category_gate=False, shape_check=False)
        self.descriptions: list[str] = []
        self.checks: list[StopCheck] = []

    def prepare(self, query: str, phrases, owner: str | None) -> None:
        self.descriptions = target_descriptions(query, phrases, owner)
        self.checks = []

    def rejects(self, check: StopCheck) -> bool:
        return check.verdict == "no" or (self.reject_unsure and check.verdict == "unsure")

    def check(self, frame, point: tuple[float, float], floor_z: float | None = None, step: int = 0) -> StopCheck:
        out = self._check(frame, point, floor_z)
        out.step = step
        self.checks.append(out)
        return out

    def _check(self, frame, point, floor_z) -> StopCheck:
        from personal.perception.segment import segment_rgbd
        from personal.verification.attributes import predict_category
        from personal.verification.verifier import ViewInput

        if not self.descriptions:
            return StopCheck("unsure", "no description of the owner's object to check against", point)
        if frame.rgb is None or frame.depth is None:
            return StopCheck("unsure", "no colour or depth frame", point)
        from personal.depth import depth_to_metres

        depth = depth_to_metres(np.asarray(frame.depth))  # the ROS path hands 16UC1 millimetres through
        seg = segment_rgbd(depth, frame.K, frame.T_map_camera, floor_z=floor_z)
        objects = seg.objects()
        if not len(objects):
            return StopCheck("unsure", "no object proposal in view", point)
        dist = np.hypot(seg.centroid[objects, 0] - point[0], seg.centroid[objects, 1] - point[1])
        best = int(np.argmin(dist))
        if dist[best] > MATCH_RADIUS_M:
            return StopCheck("unsure", f"nearest proposal {dist[best]:.2f} m from the detected point", point)
        k = int(objects[best])
        mask = seg.full_labels(depth.shape) == k
        cam = np.asarray(frame.T_map_camera)[:3, 3]
        h, w = depth.shape
        view = ViewInput(rgb=np.asarray(frame.rgb), mask=mask, depth=depth,
                         distance_m=float(np.linalg.norm(seg.centroid[k] - cam)), pitch_deg=0.0,
                         hfov_deg=math.degrees(2 * math.atan(w / 2 / float(frame.K[0][0]))))
        verdicts = []
        for text in self.descriptions:  # the owner may have several: a match with any one is a yes
            category = predict_category([text]) or "object"
            attrs = self.decomposer.decompose([text], category)
            judged = self.verifier.verify(view, attrs, category, context=attrs).judgements
            verdicts.append((text, [(j.name, j.status, j.reason) for j in judged]))
        return _decide(verdicts, point)


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

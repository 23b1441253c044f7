"""Query-grounding scores on the online feature map, for the value-map explorer.

A scorer turns the feature map into two (H, W) maps on the feature grid:

- ``detect``: the grounded score of each cell as the grounding method defines it
  (``qs``: cos(cell, query); ``rpg`` / ``rpg-owner``: the same cosine inside the region
  gate of Algorithm 1, −inf outside). A cell whose score passes the explorer's threshold is
  a detection.
- ``guide``: a dense value for ranking frontiers (VLFM / OneMap value map): cos(cell, query)
  for ``qs``; for the RPG scorers the larger of that and the best similarity to the gating
  ownership phrases (all phrases for ``rpg``, the queried person's for ``rpg-owner``).

The grounding methods are the grounding library's (``personal.grounding.methods``); their
neighbourhoods (``nms_r``, ``nhood``) are in cells, so they are set to 1 m / resolution to
keep the paper's 1 m meaning on the finer navigation grid. ``phrase_floor`` additionally
asks the RPG scorers for a cell whose best gating-phrase similarity reaches it (the gate
alone, top-k peaks of a partial map, always picks *something* even before the target is seen);
``rpg-owner`` also asks that no other person's phrase match the cell better by more than
``ownership_margin`` (ownership consistency: a look-alike owned by someone else is not the
target, a shared object still is).

Scene-relative detection (``relative_margin``, RPG scorers): the summary describes several
objects; a cell counts only if it resembles the queried object's description more than every
other described object's, by at least the margin: ``relative`` = cos(cell, target description)
− max over the other descriptions. Descriptions are the extracted phrases' objects without their
owners (``the {object} in the {room}``), one per distinct object (co-owners' phrases of a shared
object are one description); the target is the object of the gating phrase (all phrases for
``rpg``, the queried person's for ``rpg-owner``) whose text is most similar to the query. Only
task text is used. A learned encoder's cells sit at cosines that vary from object to object
and frame to frame, so an absolute threshold alone lets a generic cell through; the margin asks
that the cell single out the queried object among the ones the summary names.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from personal.grounding.methods import GroundingFailure, OwnerGated, QueryScoring, RegionGated
from personal.grounding.pipeline import MapView, TextEmbedder, query_owner

SCORERS = ("qs", "rpg", "rpg-owner")


@dataclass
class ScoreMaps:
    detect: np.ndarray  # (H, W) float, -inf where not a candidate
    guide: np.ndarray  # (H, W) float, NaN where unobserved
    origin: tuple[float, float]
    resolution: float
    confidence: np.ndarray  # (H, W) feature-map confidence
    phrase_sim: np.ndarray | None = None  # (H, W) best gating-phrase similarity (RPG scorers)
    relative: np.ndarray | None = None  # (H, W) target description's cosine minus the best other one's
    failure: dict | None = None  # grounding failure that made the scorer fall back to QS


@dataclass
class GroundingScorer:
    method: str = "qs"
    phrase_floor: float = 0.68  # the ORACLE encoder's; per encoder: personal.navigation.thresholds
    ownership_margin: float = 0.05
    relative_margin: float | None = None  # RPG scorers: scene-relative detection gate (None: off)
    top_k: int = 3
    failure: dict | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        if self.method not in SCORERS:
            raise ValueError(f"unknown scorer {self.method!r}; choose one of {SCORERS}")
        self.q = None
        self.d = None
        self.people: list[str] = []
        self.owner = ""
        self.objects = None  # (M, E) unit embeddings of the described objects (owner-free)
        self.target_object: int | None = None

    # -- per episode ---------------------------------------------------------------
    def prepare(self, query: str, summary: str, owner: str, embed: TextEmbedder, extractor=None) -> None:
        """Embed the query and (RPG scorers) the ownership phrases extracted from the summary."""
        self.failure = None
        self.owner = (owner or "").strip() or query_owner(query)
        self.q = embed([query])[0]
        self.d, self.people = None, []
        self.objects, self.target_object = None, None
        if self.method == "qs":
            return
        try:
            phrases = list(extractor.extract(summary or "")) if extractor is not None else []
        except Exception as exc:  # an unreachable LLM extractor: fall back to QS, recorded
            self.failure = {"code": "extractor_error", "reason": f"{type(exc).__name__}: {exc}"}
            return
        if not phrases:
            self.failure = {"code": "no_phrases", "reason": "the summary contains no ownership statements"}
            return
        self.d = embed([p.text for p in phrases])
        self.people = [p.person for p in phrases]
        self._prepare_objects(phrases, embed)

    def _prepare_objects(self, phrases, embed) -> None:
        """Owner-free descriptions of the described objects and the one the query asks for."""
        keys, index = [], []
        for p in phrases:
            k = (" ".join(str(p.object).lower().split()), " ".join(str(p.room or "").lower().split()))
            if k not in keys:
                keys.append(k)
            index.append(keys.index(k))
        texts = [f"the {o} in the {r}" if r else f"the {o}" for o, r in keys]
        objs = np.asarray(embed(texts), dtype=np.float32)
        self.objects = objs / np.maximum(np.linalg.norm(objs, axis=1, keepdims=True), 1e-8)
        gate = np.ones(len(phrases), bool)
        if self.method == "rpg-owner":
            want = " ".join(self.owner.lower().split())
            gate = np.array([" ".join(p.person.lower().split()) == want for p in phrases], bool)
        if not gate.any():
            return  # the query names nobody the summary does: the grounding method fails per step
        q = self.q / max(float(np.linalg.norm(self.q)), 1e-8)
        dn = self.d / np.maximum(np.linalg.norm(self.d, axis=1, keepdims=True), 1e-8)
        text_sim = np.where(gate, dn @ q, -np.inf)
        self.target_object = index[int(np.argmax(text_sim))]

    def relative_map(self, f_unit: np.ndarray, valid: np.ndarray) -> np.ndarray | None:
        """cos(cell, target description) − max cos(cell, other description); +inf where the
        summary describes only the target, NaN where unobserved; None without a target."""
        if self.objects is None or self.target_object is None:
            return None
        sims = f_unit @ self.objects.T  # (H, W, M)
        t = self.target_object
        if sims.shape[-1] == 1:
            rel = np.full(sims.shape[:2], np.inf, np.float32)
        else:
            rel = sims[..., t] - np.delete(sims, t, axis=-1).max(axis=-1)
        return np.where(valid, rel, np.nan)

    # -- per step --------------------------------------------------------------------
    def _method(self, resolution: float):
        r = max(1, int(round(1.0 / resolution)))
        if self.method == "rpg":
            return RegionGated(top_k=self.top_k, nhood=r, nms_r=r)
        return OwnerGated(top_k=self.top_k, nhood=r, nms_r=r)

    def maps(self, feature_map) -> ScoreMaps | None:
        """Score maps of a ``FeatureMap`` (None while it is empty)."""
        if self.q is None:
            raise RuntimeError("GroundingScorer.prepare() was not called for this episode")
        if feature_map is None or feature_map.confidence.size == 0 or not (feature_map.confidence > 0).any():
            return None
        view = MapView.of(feature_map)
        inp = view.inputs(query=self.q, phrases=self.d, phrase_people=self.people, owner=self.owner)
        qs = QueryScoring().score_map(inp)
        guide = np.where(np.isfinite(qs), qs, np.nan)
        out = ScoreMaps(qs, guide, view.origin, view.resolution, view.confidence, failure=self.failure)
        if self.method == "qs" or self.d is None:
            return out
        method = self._method(view.resolution)
        try:
            v, _ = method.score_map(inp)
        except GroundingFailure as exc:  # e.g. the query names someone the summary does not
            out.failure = {"code": exc.code, "reason": exc.reason}
            return out
        gate_phr = method.phrase_mask(inp, len(self.d))
        f = view.features / np.maximum(view.norms, 1e-8)[..., None]
        sims = f @ self.d.T  # (H, W, K) cosine to every ownership phrase
        psim = np.where(view.valid, sims[..., gate_phr].max(axis=-1), np.nan)
        out.phrase_sim = psim
        out.relative = self.relative_map(f, view.valid)
        ok = np.nan_to_num(psim, nan=-np.inf) >= self.phrase_floor
        if self.relative_margin is not None and out.relative is not None:
            ok &= np.nan_to_num(out.relative, nan=-np.inf) >= self.relative_margin
        if self.method == "rpg-owner":
            # ownership consistency: the cell matches the queried person's object about as well
            # as anybody else's (a look-alike owned by someone else is not a detection). The
            # margin keeps shared objects (hard split): co-owners' phrases name the same object
            # and differ only by a few hundredths, a look-alike's by about a tenth or more.
            ok &= psim >= sims.max(axis=-1) - self.ownership_margin
        out.detect = np.where(ok, v, -np.inf)
        out.guide = np.fmax(guide, psim)
        return out


def cell_center(maps: ScoreMaps, row: int, col: int) -> tuple[float, float]:
    return (maps.origin[0] + (col + 0.5) * maps.resolution, maps.origin[1] + (row + 0.5) * maps.resolution)


def best_detection(maps: ScoreMaps, threshold: float, min_confidence: float, exclude=()) -> tuple[tuple[float, float], float] | None:
    """Centre and score of the best cell with detect ≥ threshold and enough confidence,
    skipping cells within 0.5 m of an ``exclude`` point."""
    s = np.where((maps.confidence >= min_confidence) & np.isfinite(maps.detect), maps.detect, -np.inf)
    for ex in exclude:
        r, c = _cell(maps, ex)
        k = int(math.ceil(0.5 / maps.resolution))
        s[max(r - k, 0) : r + k + 1, max(c - k, 0) : c + k + 1] = -np.inf
    k = int(np.argmax(s))
    if not np.isfinite(s.flat[k]) or s.flat[k] < threshold:
        return None
    r, c = divmod(k, s.shape[1])
    return cell_center(maps, r, c), float(s.flat[k])


def _cell(maps: ScoreMaps, xy) -> tuple[int, int]:
    return int(math.floor((xy[1] - maps.origin[1]) / maps.resolution)), int(math.floor((xy[0] - maps.origin[0]) / maps.resolution))

"""One grounding query end to end: summary → phrases → embeddings → every method.

Used by the grounding node and by offline evaluation, so the node stays thin:

    view = MapView.of(feature_map)                 # FeatureMap, saved map, or arrays
    g = ground_query(view, query=..., summary=..., owner=..., extractor=..., encoder=..., methods=...)
    g = ground_episode(view, episode, extractor, encoder, methods)
    records = score_grounding(g, episode, scene)   # -> [EpisodeResult] (personal.grounding.eval.pog)

Failures never raise out of here: every method gets an outcome, either a
``Grounding`` or ``failure = {code, reason}``.
"""
from __future__ import annotations

import re
import time
import zlib
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from personal.grounding.methods import (SCENE_CONTEXT_TEXTS, Grounding, GroundingFailure, GroundingInputs, Method, feature_norms,
                                        make_method)


# -- the map ---------------------------------------------------------------------------


@dataclass
class MapView:
    """What the methods need from a feature map (arrays + geometry), with cached norms."""

    features: np.ndarray  # (H, W, E)
    valid: np.ndarray  # (H, W) bool: confidence > 0
    origin: tuple[float, float]
    resolution: float
    encoder: str = ""
    confidence: np.ndarray | None = None
    _norms: np.ndarray | None = field(default=None, repr=False)

    @classmethod
    def of(cls, fm: Any) -> "MapView":
        """From a ``MapView``, a ``personal.mapping.feature_map.FeatureMap`` (duck-typed),
        or a dict with embeddings/confidence/origin/resolution."""
        if isinstance(fm, MapView):
            return fm
        if isinstance(fm, dict):
            return cls.from_arrays(fm["embeddings"], fm["confidence"], fm["origin"], fm["resolution"], fm.get("encoder", ""))
        if hasattr(fm, "embeddings") and hasattr(fm, "confidence") and hasattr(fm, "geometry"):
            geo = fm.geometry
            return cls.from_arrays(fm.embeddings, fm.confidence, geo.origin, geo.resolution, getattr(fm, "encoder", ""))
        raise TypeError(f"cannot read a feature map from {type(fm).__name__}")

    @classmethod
    def from_arrays(cls, embeddings, confidence, origin, resolution, encoder: str = "") -> "MapView":
        f = np.asarray(embeddings, dtype=np.float32)
        c = np.asarray(confidence, dtype=np.float32)
        if f.ndim != 3:
            f = f.reshape(c.shape + (-1,)) if f.size and c.ndim == 2 else np.zeros(c.shape[:2] + (0,), np.float32)
        # NaN/inf cells are treated as unobserved rather than poisoning every cosine
        finite = np.isfinite(f).all(axis=-1) if f.size else np.zeros(c.shape, bool)
        valid = (c > 0) & finite
        if not finite.all():
            f = np.where(finite[..., None], f, 0.0).astype(np.float32)
        return cls(f, valid, (float(origin[0]), float(origin[1])), float(resolution), encoder, c)

    @property
    def norms(self) -> np.ndarray:
        if self._norms is None:
            self._norms = feature_norms(self.features)
        return self._norms

    def similarity(self, query: np.ndarray) -> np.ndarray:
        """cos(cell embedding, ``query``) per cell, NaN where unobserved: the QS heat map."""
        sim = (self.features @ query) / np.maximum(self.norms * np.linalg.norm(query), 1e-8)
        return np.where(self.valid, sim, np.nan)

    @property
    def dim(self) -> int:
        return int(self.features.shape[-1]) if self.features.ndim == 3 else 0

    def inputs(self, **kw) -> GroundingInputs:
        norms = self.norms if self.features.size else None
        return GroundingInputs(self.features, self.valid, self.origin, self.resolution, feature_norms=norms, **kw)


# -- text side ---------------------------------------------------------------------------


class TextEmbedder:
    """Caches text embeddings of an encoder (phrases and queries repeat across episodes)."""

    def __init__(self, encoder: Any, max_items: int = 20000):
        self.encoder = encoder
        self.max_items = max_items
        self._cache: dict[str, np.ndarray] = {}

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if missing:
            vecs = np.asarray(_encode_texts(self.encoder, missing), dtype=np.float32)
            if len(self._cache) + len(missing) > self.max_items:
                self._cache.clear()
            self._cache.update(zip(missing, vecs))
        if not texts:
            return np.zeros((0, 0), np.float32)
        return np.stack([self._cache[t] for t in texts])


def _encode_texts(encoder: Any, texts: list[str]) -> np.ndarray:
    for attr in ("encode_text", "embed_text", "embed_texts", "encode_texts"):
        fn = getattr(encoder, attr, None)
        if callable(fn):
            return np.asarray(fn(texts))
    if callable(encoder):
        return np.asarray(encoder(texts))
    raise TypeError(f"encoder {type(encoder).__name__} has no text-embedding method (encode_text)")


def encoder_name(encoder: Any) -> str:
    return str(getattr(encoder, "name", type(encoder).__name__))


def encoder_is_oracle(encoder: Any) -> bool:
    return bool(getattr(encoder, "is_oracle", False)) or "oracle" in encoder_name(encoder).lower() or "oracle" in type(encoder).__name__.lower()


_POSSESSIVE = re.compile(r"\b([A-Z][\w\-]*)['’]s?(?=\s|$)")


def query_owner(query: str) -> str:
    """The person a query is about, from its possessive ("Find Lisa's cabinet" -> "Lisa"); '' if none."""
    m = _POSSESSIVE.search(query or "")
    return m.group(1) if m else ""


def _phrase_fields(p: Any) -> tuple[str, str]:
    """(text, person) of an extracted phrase: ``OwnershipPhrase`` (duck-typed) or a plain string."""
    if isinstance(p, str):
        return p, ""
    return str(getattr(p, "text")), str(getattr(p, "person", ""))


def _phrase_object(p: Any) -> str:
    """What a phrase says about the object alone, as a camera could see it: ``"the " + object`` of an
    ``OwnershipPhrase`` (no owner, no room); a plain-string phrase is used whole."""
    obj = getattr(p, "object", None)
    if isinstance(p, str) or not obj:
        return _phrase_fields(p)[0]
    obj = str(obj).strip()
    return obj if obj.lower().startswith(("the ", "a ", "an ")) else f"the {obj}"


def _extract(extractor: Any, summary: str, extracted_summary: Sequence[str] | None = None) -> list:
    """Phrases of a summary; an extractor that reads the episode's own ``extracted_summary``
    (``uses_extracted_summary``, e.g. ``EpisodeExtractor``) gets it too."""
    fn = getattr(extractor, "extract", None) or extractor
    if getattr(extractor, "uses_extracted_summary", False):
        return list(fn(summary, list(extracted_summary or [])))
    return list(fn(summary))


# -- one query --------------------------------------------------------------------------


@dataclass
class MethodOutcome:
    method: str
    grounding: Grounding | None
    failure: dict | None
    latency_ms: float


@dataclass
class QueryGrounding:
    episode_id: str
    query: str
    owner: str
    phrases: list[str]
    phrase_people: list[str]
    outcomes: list[MethodOutcome]
    extract_ms: float = 0.0
    embed_ms: float = 0.0
    issues: list[dict] = field(default_factory=list)  # query-level problems (also in each affected failure)

    def outcome(self, method: str) -> MethodOutcome:
        for o in self.outcomes:
            if o.method == method:
                return o
        raise KeyError(method)


def _failure(code: str, reason: str) -> dict:
    return {"code": code, "reason": reason}


def ground_query(
    feature_map: Any,
    *,
    query: str,
    summary: str,
    owner: str | None,
    extractor: Any,
    encoder: Any,
    methods: Sequence[Method | str],
    episode_id: str = "",
    seed: int = 0,
    embedder: TextEmbedder | None = None,
    extracted_summary: Sequence[str] | None = None,
) -> QueryGrounding:
    """Run every method on one query; never raises for bad input (records failures)."""
    view = MapView.of(feature_map)
    meths = [make_method(m) if isinstance(m, str) else m for m in methods]
    embed = embedder or TextEmbedder(encoder)
    owner = (owner or "").strip() or query_owner(query)
    issues: list[dict] = []
    summary_failure: dict | None = None

    t0 = time.perf_counter()
    phrases: list = []
    if any(m.uses_summary for m in meths):
        try:
            phrases = _extract(extractor, summary or "", extracted_summary)
        except Exception as exc:  # an unreachable LLM must not stop the evaluation
            summary_failure = _failure("extractor_error", f"{type(exc).__name__}: {exc}")
    extract_ms = (time.perf_counter() - t0) * 1e3
    texts, people = zip(*[_phrase_fields(p) for p in phrases]) if phrases else ((), ())
    if summary_failure is None and any(m.uses_summary for m in meths):
        if not texts:
            summary_failure = _failure("no_phrases", "the summary contains no ownership statements")
        elif owner and people and any(people) and owner.lower() not in {p.lower() for p in people}:
            summary_failure = _failure(
                "unknown_person",
                f"the query names {owner!r}, who owns nothing in the summary (summary names: {', '.join(sorted(set(people)))})",
            )
    if summary_failure:
        issues.append(summary_failure)

    t1 = time.perf_counter()
    q_vec = d_vec = c_vec = None
    embed_failure = None
    scene_relative = any(getattr(m, "uses_context", False) for m in meths)
    context = list(SCENE_CONTEXT_TEXTS) if scene_relative else []
    objects = [_phrase_object(p) for p in phrases] if scene_relative else []
    o_vec = None
    try:
        vecs = embed([query] + list(texts) + context + objects)
        k, n = len(texts), len(context)
        q_vec, d_vec = vecs[0], vecs[1:1 + k]
        c_vec = vecs[1 + k:1 + k + n] if context else None
        o_vec = vecs[1 + k + n:] if objects else None
    except Exception as exc:
        embed_failure = _failure("encoder_error", f"{type(exc).__name__}: {exc}")
        issues.append(embed_failure)
    embed_ms = (time.perf_counter() - t1) * 1e3

    rng_seed = (zlib.crc32(episode_id.encode()) + seed) & 0xFFFFFFFF
    outcomes = []
    for m in meths:
        pre = embed_failure if m.name not in ("random", "centre") else None
        pre = pre or (summary_failure if m.uses_summary else None)
        outcomes.append(_run_method(m, view, pre, q_vec, d_vec, list(people), owner, rng_seed, c_vec, o_vec))
    return QueryGrounding(episode_id, query, owner, list(texts), list(people), outcomes, extract_ms, embed_ms, issues)


def _run_method(m: Method, view: MapView, pre: dict | None, q, d, people, owner, seed, context=None, objects=None) -> MethodOutcome:
    if pre is not None:
        return MethodOutcome(m.name, None, pre, float("nan"))
    t = time.perf_counter()
    try:
        g = m.ground(view.inputs(phrases=d, phrase_people=people, query=q, owner=owner, seed=seed, context=context,
                                 phrase_objects=objects))
        g.info["observed_cells"] = int(view.valid.sum())
        return MethodOutcome(m.name, g, None, (time.perf_counter() - t) * 1e3)
    except GroundingFailure as exc:
        return MethodOutcome(m.name, None, _failure(exc.code, exc.reason), (time.perf_counter() - t) * 1e3)


def ground_episode(feature_map: Any, episode: Any, extractor: Any, encoder: Any, methods: Sequence[Method | str], **kw) -> QueryGrounding:
    """:func:`ground_query` for a ``personal.world.model.Episode``."""
    return ground_query(
        feature_map,
        query=episode.query,
        summary=episode.summary,
        owner=episode.owner,
        extractor=extractor,
        encoder=encoder,
        methods=methods,
        episode_id=episode.episode_id,
        extracted_summary=getattr(episode, "extracted_summary", None),
        **kw,
    )


# -- scoring against ground truth ------------------------------------------------------------


def target_boxes(episode: Any, scene: Any) -> tuple[list, dict | None]:
    """Footprints of the episode's targets, or a failure when the ground truth is unusable.
    Without a scene model (the public HM3D files) the targets are the goals' centres from the
    episode file: PersONAL scores POG within 1 m of them (HM3D has no reliable boxes)."""
    if scene is None:
        goals = [g for g in getattr(episode, "goals", []) if g.object_name in episode.target_object_ids]
        if goals:
            from personal.world.model import Box

            return [Box(tuple(g.position), (0.0, 0.0, 0.0)) for g in goals], None
        return [], _failure("scene_missing", f"no scene {episode.scene_id!r} for episode {episode.episode_id!r}")
    if not episode.target_object_ids:
        return [], _failure("no_target", f"episode {episode.episode_id!r} lists no target_object_ids")
    boxes, missing = [], []
    for oid in episode.target_object_ids:
        try:
            boxes.append(scene.object(oid).box)
        except KeyError:
            missing.append(oid)
    if missing:
        return [], _failure("target_missing", f"target object(s) {', '.join(missing)} not in scene {scene.scene_id!r}")
    return boxes, None


def score_grounding(g: QueryGrounding, episode: Any, scene: Any) -> list:
    """One ``EpisodeResult`` per method. Bad ground truth turns every method into a failure."""
    from personal.grounding.eval.pog import owner_phrases, score_episode

    boxes, gt_failure = target_boxes(episode, scene)
    out = []
    for o in g.outcomes:
        failure = gt_failure or o.failure
        gr = o.grounding
        info = dict(gr.info) if gr else {}
        info.update(phrases=len(g.phrases), extract_ms=round(g.extract_ms, 3), embed_ms=round(g.embed_ms, 3),
                    owner_phrases=owner_phrases(g.phrases, g.owner))
        if g.issues:
            info["issues"] = g.issues
        out.append(
            score_episode(
                episode_id=episode.episode_id,
                scene_id=episode.scene_id,
                split=episode.split,
                method=o.method,
                points=gr.points if (gr and not gt_failure) else [],
                scores=gr.scores if (gr and not gt_failure) else [],
                targets=boxes,
                latency_ms=o.latency_ms,
                query=episode.query,
                owner=g.owner,
                target_object_ids=episode.target_object_ids,
                failure=failure,
                info=info,
            )
        )
    return out


def evaluate_offline(
    episodes: Sequence[Any],
    scenes: dict[str, Any],
    maps: dict[str, Any],
    extractor: Any,
    encoder: Any,
    methods: Sequence[Method | str],
    seed: int = 0,
    progress=None,
    on_results=None,
) -> list:
    """Ground and score every episode against the map of its scene (no ROS). ``on_results`` gets
    each episode's results as soon as they exist (to write them before the next episode)."""
    meths = [make_method(m) if isinstance(m, str) else m for m in methods]
    embedder = TextEmbedder(encoder)
    extractor = CachingExtractor(extractor)
    prefetch_texts(episodes, extractor, embedder, any(m.uses_summary for m in meths))
    views = {sid: MapView.of(fm) for sid, fm in maps.items()}
    results = []
    for i, ep in enumerate(episodes):
        view = views.get(ep.scene_id)
        if view is None:
            view = MapView.from_arrays(np.zeros((0, 0, 0)), np.zeros((0, 0)), (0.0, 0.0), 1.0)
        g = ground_episode(view, ep, extractor, encoder, meths, seed=seed, embedder=embedder)
        scored = score_grounding(g, ep, scenes.get(ep.scene_id))
        results.extend(scored)
        if on_results:
            on_results(scored)
        if progress:
            progress(i + 1, len(episodes))
    return results


class CachingExtractor:
    """Remembers the phrases of each summary (episodes of a scene share summaries);
    an extractor error is re-raised for every episode that needs it."""

    def __init__(self, extractor: Any):
        self.inner = extractor
        self.name = getattr(extractor, "name", type(extractor).__name__)
        self.uses_extracted_summary = getattr(extractor, "uses_extracted_summary", False)
        self._cache: dict[Any, Any] = {}

    def extract(self, summary: str, extracted_summary: Sequence[str] | None = None) -> list:
        key = (summary, tuple(extracted_summary or ())) if self.uses_extracted_summary else summary
        if key not in self._cache:
            try:
                self._cache[key] = _extract(self.inner, summary, extracted_summary)
            except Exception as exc:  # remembered, re-raised per episode
                self._cache[key] = exc
        hit = self._cache[key]
        if isinstance(hit, Exception):
            raise hit
        return hit


def prefetch_texts(episodes: Sequence[Any], extractor: CachingExtractor, embedder: TextEmbedder, with_phrases: bool) -> None:
    """Embed every query and phrase of ``episodes`` in one batched call (text encoders
    are several times faster batched than one episode at a time)."""
    prefetch_queries([(ep.query, ep.summary, ep.extracted_summary) for ep in episodes], extractor, embedder, with_phrases)


def prefetch_queries(pairs: Sequence[tuple], extractor: CachingExtractor, embedder: TextEmbedder, with_phrases: bool) -> None:
    """:func:`prefetch_texts` for (query, summary[, extracted_summary]) tuples. Errors are left
    for :func:`ground_query` to record per query."""
    texts = []
    for query, summary, *extracted in pairs:
        texts.append(query)
        if with_phrases:
            try:
                texts.extend(_phrase_fields(p)[0] for p in _extract(extractor, summary or "", extracted[0] if extracted else None))
            except Exception:
                pass  # recorded per query by ground_query
    try:
        embedder(list(dict.fromkeys(texts)))
    except Exception:
        pass  # recorded per query by ground_query


def result_payloads(g: QueryGrounding, *, request_id: str, scene_id: str, map_encoder: str = "") -> list[dict]:
    """One ``GroundingResult`` payload (``msg/GroundingResult.msg``) per method."""
    out = []
    for i, o in enumerate(g.outcomes):
        gr = o.grounding
        out.append({
            "request_id": request_id,
            "episode_id": g.episode_id,
            "scene_id": scene_id,
            "method": o.method,
            "ok": o.failure is None,
            "failure_code": (o.failure or {}).get("code", ""),
            "failure_reason": (o.failure or {}).get("reason", ""),
            "points": [{"x": float(x), "y": float(y), "z": 0.0} for x, y in (gr.points if gr else [])],
            "scores": [float(s) for s in (gr.scores if gr else [])],
            "latency_ms": float(o.latency_ms) if o.latency_ms == o.latency_ms else 0.0,
            "extract_ms": float(g.extract_ms),
            "embed_ms": float(g.embed_ms),
            "owner": g.owner,
            "phrases": list(g.phrases),
            "map_encoder": map_encoder,
            "gate_cells": int(gr.info.get("gate_cells", 0)) if gr else 0,
            "observed_cells": int(gr.info.get("observed_cells", 0)) if gr else 0,
            "index": i,
            "count": len(g.outcomes),
        })
    return out


def failed_payloads(*, request_id: str, episode_id: str, scene_id: str, methods: Sequence[str], code: str, reason: str) -> list[dict]:
    """Results for a query that could not be attempted at all (no map, malformed request...)."""
    return [
        {"request_id": request_id, "episode_id": episode_id, "scene_id": scene_id, "method": m, "ok": False,
         "failure_code": code, "failure_reason": reason, "points": [], "scores": [], "latency_ms": 0.0,
         "extract_ms": 0.0, "embed_ms": 0.0, "owner": "", "phrases": [], "map_encoder": "", "index": i, "count": len(methods)}
        for i, m in enumerate(methods)
    ]

"""Personalized Object Grounding (POG) methods on a 2-D semantic feature map.

Every method takes a :class:`GroundingInputs` (feature map ``F`` (H×W×E) with a
valid-cell mask, the map geometry, ownership-phrase embeddings ``D`` (K×E), a
query embedding ``q`` (E)) and returns a :class:`Grounding`: ranked top-n map
coordinates (map frame, metres) with scores. Bad input never crashes a method:
it raises :class:`GroundingFailure` with a machine-readable ``code`` and a
human ``reason`` that the evaluator records.

Methods (seed: PersONAL §V-B, Algorithm 1):

- ``random``    – a seeded random point in an observed cell.
- ``centre``    – the centre of the observed part of the map.
- ``qs``        – Query Scoring: cosine of ``q`` against every cell, argmax.
- ``rpg``       – Region-gated Personalized Grounding, Algorithm 1: L2-normalise
  F and D; per-phrase cosine maps; NMS-TopK peaks per phrase (``top_k`` peaks,
  suppression radius ``nms_r`` cells); dilate the peaks by ``nhood`` cells into
  a binary mask M; V = cos(F ⊙ M, q); argmax. Batched over B.
- ``rpg-owner`` – beyond the paper: RPG gated only by the phrases that name the
  queried person, so other people's objects of the same category cannot win
  (also covers "one of X's …": all of X's regions stay open).
- ``rpg-scene`` / ``rpg-owner-scene`` – beyond the paper: the same gate-then-score
  steps with *scene-relative* scores instead of raw cosines (:func:`rpg_scene_numpy`).
  A cell is compared with every phrase of the scene description (its object part:
  no owner's name, no room) plus a few structure texts (``SCENE_CONTEXT_TEXTS``:
  wall, floor, ceiling, door frame) at once: its per-phrase gate map is the
  log-softmax of its cosines over those texts at temperature ``tau``, and the query
  (against the full phrases) is scored on the gated map as
  ``sum_j p(phrase j | cell) * a_j`` with ``a = softmax_j(cos(q, d_j) / tau_q)`` (which
  phrases the query is about: text against text). A cell that resembles every
  description (a blurred or mixed cell) no longer wins on raw cosine. Only text inputs
  of the task and the map are used; the temperatures were chosen on validation
  households (docs/grounding.md).

Conventions (documented because the paper leaves them open):

- Neighbourhoods are square (Chebyshev distance, in cells): ``nms_r = 1``
  suppresses the 8 neighbours of a peak, ``nhood = 1`` keeps the 3×3 block
  around it ("a 1-pixel radius … 1 m" in the paper, whose cells are 1 m).
- Unobserved cells (confidence 0) are never selected: their scores are −inf
  rather than the 0 a zero vector would get. Masked-out cells (outside M) are
  likewise −inf, so "argmax over the non-masked regions" holds even when every
  unmasked similarity is negative.
- cos(F ⊙ M, q) equals cos(F, q) inside M, so the implementation scores the
  normalised map once and applies M as a −inf gate (same result, less work).
- Top-n outputs (for SR@top-3) are taken greedily from the final score map
  with a separation of ``pred_sep_m`` metres (default 1 m, the success radius)
  so that the candidates are distinct places rather than adjacent cells.
- Cell (row, col) has its centre at x = origin_x + (col + ½)·res,
  y = origin_y + (row + ½)·res (``nav_msgs/OccupancyGrid`` layout).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

EPS = 1e-8
NEG_INF = -np.inf


class GroundingFailure(Exception):
    """A method could not ground the query; ``reason`` goes into results.json."""

    def __init__(self, code: str, reason: str):
        super().__init__(f"{code}: {reason}")
        self.code = code
        self.reason = reason


# -- inputs / outputs ---------------------------------------------------------


@dataclass
class GroundingInputs:
    features: np.ndarray  # (H, W, E) float
    valid: np.ndarray  # (H, W) bool — observed cells (confidence > 0)
    origin: tuple[float, float]  # map-frame (x, y) of the corner of cell (0, 0)
    resolution: float  # metres per cell
    phrases: np.ndarray | None = None  # (K, E) ownership-phrase embeddings
    phrase_people: Sequence[str] = ()  # person named by each phrase (len K)
    query: np.ndarray | None = None  # (E,)
    owner: str | None = None  # queried person (for rpg-owner)
    seed: int = 0  # per-episode seed for the random baseline
    context: np.ndarray | None = None  # (C, E) embeddings of SCENE_CONTEXT_TEXTS (scene-relative methods)
    # (K, E) embeddings of what each phrase says about the object alone ("the black wallet on the
    # nightstand": no owner, no room), which is what a camera can see (scene-relative methods)
    phrase_objects: np.ndarray | None = None
    # cached ||F|| per cell (H, W); computed on demand, reusable across queries
    feature_norms: np.ndarray | None = field(default=None, repr=False)

    def cell_center(self, row: int, col: int) -> tuple[float, float]:
        return (
            float(self.origin[0] + (col + 0.5) * self.resolution),
            float(self.origin[1] + (row + 0.5) * self.resolution),
        )

    def norms(self) -> np.ndarray:
        if self.feature_norms is None:
            self.feature_norms = feature_norms(self.features)
        return self.feature_norms


@dataclass
class Grounding:
    """Ranked predictions of one method for one query."""

    method: str
    cells: list[tuple[int, int]]  # (row, col), best first
    points: list[tuple[float, float]]  # map-frame (x, y), best first
    scores: list[float]
    info: dict = field(default_factory=dict)  # method-specific extras (mask size, ...)


def feature_norms(features: np.ndarray) -> np.ndarray:
    f = np.asarray(features, dtype=np.float32)
    return np.sqrt(np.einsum("...e,...e->...", f, f))


# -- shared numpy kernels -------------------------------------------------------


def nms_topk_numpy(scores: np.ndarray, top_k: int, radius: int) -> tuple[np.ndarray, np.ndarray]:
    """Greedy NMS-TopK over the last two axes of ``scores`` (..., H, W).

    Returns ``idx`` (..., top_k, 2) int (row, col) and ``val`` (..., top_k);
    slots with no remaining finite score have val = −inf and idx = −1.
    Each pick suppresses the (2·radius+1)² square around it.
    """
    s = np.array(scores, dtype=np.float64, copy=True)
    lead, (h, w) = s.shape[:-2], s.shape[-2:]
    flat = s.reshape(-1, h * w)
    rows = np.arange(h)[None, :, None]
    cols = np.arange(w)[None, None, :]
    idx = np.full((flat.shape[0], top_k, 2), -1, dtype=np.int64)
    val = np.full((flat.shape[0], top_k), NEG_INF)
    for t in range(top_k):
        best = flat.argmax(axis=1)
        best_val = flat[np.arange(flat.shape[0]), best]
        ok = np.isfinite(best_val)
        r, c = best // w, best % w
        idx[ok, t, 0], idx[ok, t, 1] = r[ok], c[ok]
        val[ok, t] = best_val[ok]
        window = (np.abs(rows - r[:, None, None]) <= radius) & (np.abs(cols - c[:, None, None]) <= radius)
        flat[window.reshape(flat.shape[0], -1) & ok[:, None]] = NEG_INF
    return idx.reshape(*lead, top_k, 2), val.reshape(*lead, top_k)


def dilate_numpy(mask: np.ndarray, nhood: int) -> np.ndarray:
    """Binary dilation of (..., H, W) by a (2·nhood+1)² square."""
    if nhood <= 0:
        return mask.astype(bool)
    from scipy.ndimage import maximum_filter

    size = (1,) * (mask.ndim - 2) + (2 * nhood + 1, 2 * nhood + 1)
    return maximum_filter(mask.astype(np.uint8), size=size, mode="constant", cval=0).astype(bool)


def peak_gate_numpy(peaks: np.ndarray, peak_val: np.ndarray, valid: np.ndarray, nhood: int) -> np.ndarray:
    """RPG's gate M (..., H, W): every phrase's found NMS-TopK peaks (``peaks`` (..., K, top_k, 2),
    ``peak_val`` −inf where none was found), dilated by ``nhood``, on observed cells."""
    p = np.zeros(valid.shape, dtype=bool)
    found = np.nonzero(np.isfinite(peak_val))
    cells = peaks[found]  # (n, 2)
    p[(*found[:-2], cells[:, 0], cells[:, 1])] = True
    return dilate_numpy(p, nhood) & valid


def rpg_numpy(
    features: np.ndarray,
    valid: np.ndarray,
    phrases: np.ndarray,
    phrase_mask: np.ndarray,
    query: np.ndarray,
    top_k: int = 3,
    nhood: int = 1,
    nms_r: int = 1,
    norms: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Algorithm 1, batched: F (B,H,W,E), valid (B,H,W), D (B,K,E), phrase_mask (B,K), q (B,E).

    Returns the final score map V (B,H,W) (−inf outside the gate or unobserved)
    and the gate mask M (B,H,W).
    """
    b, h, w, e = features.shape
    f = features.reshape(b, h * w, e).astype(np.float32, copy=False)
    fn = feature_norms(f) if norms is None else norms.reshape(b, h * w).astype(np.float32)
    inv_f = 1.0 / np.maximum(fn, EPS)
    d = phrases.astype(np.float32, copy=False)
    d = d / np.maximum(np.linalg.norm(d, axis=-1, keepdims=True), EPS)
    # S_desc: per-cell × per-phrase cosine, (B, K, H·W)
    s_desc = np.matmul(f, d.transpose(0, 2, 1)).transpose(0, 2, 1) * inv_f[:, None, :]
    gate = valid.reshape(b, 1, h * w) & phrase_mask[:, :, None]
    s_desc = np.where(gate, s_desc, NEG_INF).reshape(b, -1, h, w)
    m = peak_gate_numpy(*nms_topk_numpy(s_desc, top_k, nms_r), valid, nhood)  # peaks (B,K,top_k,2)
    qv = query.astype(np.float32, copy=False)
    qv = qv / np.maximum(np.linalg.norm(qv, axis=-1, keepdims=True), EPS)
    v = np.einsum("bne,be->bn", f, qv) * inv_f
    v = np.where(m.reshape(b, -1), v, NEG_INF).reshape(b, h, w)
    return v, m


def qs_numpy(features, valid, query, norms=None) -> np.ndarray:
    """Query Scoring, batched: cos(F, q) on observed cells, −inf elsewhere. (B,H,W)."""
    b, h, w, e = features.shape
    f = features.reshape(b, h * w, e).astype(np.float32, copy=False)
    fn = feature_norms(f) if norms is None else norms.reshape(b, h * w).astype(np.float32)
    qv = query.astype(np.float32, copy=False)
    qv = qv / np.maximum(np.linalg.norm(qv, axis=-1, keepdims=True), EPS)
    v = np.einsum("bne,be->bn", f, qv) / np.maximum(fn, EPS)
    return np.where(valid.reshape(b, -1), v, NEG_INF).reshape(b, h, w)


# Texts a scene-relative method compares every cell with besides the scene description:
# what a cell shows when it shows none of the described objects (the same four structure
# classes the crop tower is trained on; plain English, not read from any scene).
SCENE_CONTEXT_TEXTS = ("a wall", "the floor", "the ceiling", "a door frame")


def log_softmax(z: np.ndarray, axis: int = -1) -> np.ndarray:
    m = np.max(z, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    return z - (m + np.log(np.sum(np.exp(z - m), axis=axis, keepdims=True)))


def _unit(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), EPS)


def rpg_scene_numpy(
    features: np.ndarray,
    valid: np.ndarray,
    phrases: np.ndarray,
    phrase_mask: np.ndarray,
    query: np.ndarray,
    context: np.ndarray | None = None,
    top_k: int = 3,
    nhood: int = 1,
    nms_r: int = 1,
    tau: float = 0.2,
    tau_q: float = 0.02,
    norms: np.ndarray | None = None,
    objects: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Scene-relative RPG on one map: F (H,W,E), valid (H,W), D (K,E), phrase_mask (K,), q (E,),
    context (C,E) or None, objects (K,E) or None: each phrase's object part, compared with the
    cells instead of the full phrase when given. Returns (V, M) like :func:`rpg_numpy`.

    - S = cos(cell, [objects or D; context]) (H·W, K+C); P = softmax(S / tau) over the texts of each cell.
    - Gate: per phrase of ``phrase_mask`` the map log P[:, j]; NMS-TopK peaks (``top_k``,
      ``nms_r``), dilated by ``nhood``: M.
    - a = softmax over the masked phrases of cos(q, d_j) / tau_q (0 for the others).
    - V = P[:, :K] @ a inside M, −inf elsewhere.
    """
    h, w, e = features.shape
    f = features.reshape(h * w, e).astype(np.float32, copy=False)
    fn = feature_norms(f) if norms is None else norms.reshape(h * w).astype(np.float32)
    f = f / np.maximum(fn, EPS)[:, None]
    d = _unit(np.atleast_2d(phrases))
    k = len(d)
    ctx = _unit(np.atleast_2d(context)) if context is not None and len(context) else np.zeros((0, e), np.float32)
    seen = d if objects is None else _unit(np.atleast_2d(objects))
    if seen.shape != d.shape:
        raise ValueError(f"objects {seen.shape} must match phrases {d.shape}")
    log_p = log_softmax((f @ np.concatenate([seen, ctx]).T) / tau, axis=1)[:, :k]  # (H·W, K)
    vm = valid.reshape(-1)
    pm = np.asarray(phrase_mask, bool)
    gates = np.where(vm[:, None] & pm[None, :], log_p, NEG_INF).T.reshape(k, h, w)
    m = peak_gate_numpy(*nms_topk_numpy(gates, top_k, nms_r), valid, nhood)
    q = _unit(query)
    a = np.where(pm, (d @ q) / tau_q, NEG_INF)
    a = np.exp(log_softmax(a))
    v = np.exp(log_p) @ a
    return np.where(m.reshape(-1), v, NEG_INF).reshape(h, w), m


# -- torch kernels (same maths; used when backend="torch") ----------------------


def nms_topk_torch(scores, top_k: int, radius: int):
    import torch

    s = scores.clone().to(torch.float64)
    lead, (h, w) = s.shape[:-2], s.shape[-2:]
    flat = s.reshape(-1, h * w)
    n = flat.shape[0]
    rows = torch.arange(h).view(1, h, 1)
    cols = torch.arange(w).view(1, 1, w)
    idx = torch.full((n, top_k, 2), -1, dtype=torch.int64)
    val = torch.full((n, top_k), float("-inf"), dtype=torch.float64)
    ar = torch.arange(n)
    for t in range(top_k):
        best = flat.argmax(dim=1)
        best_val = flat[ar, best]
        ok = torch.isfinite(best_val)
        r, c = best // w, best % w
        idx[:, t, 0] = torch.where(ok, r, idx[:, t, 0])
        idx[:, t, 1] = torch.where(ok, c, idx[:, t, 1])
        val[:, t] = torch.where(ok, best_val, val[:, t])
        window = ((rows - r.view(-1, 1, 1)).abs() <= radius) & ((cols - c.view(-1, 1, 1)).abs() <= radius)
        flat = flat.masked_fill(window.reshape(n, -1) & ok.view(-1, 1), float("-inf"))
    return idx.reshape(*lead, top_k, 2), val.reshape(*lead, top_k)


def rpg_torch(features, valid, phrases, phrase_mask, query, top_k=3, nhood=1, nms_r=1, norms=None):
    """Torch twin of :func:`rpg_numpy`; accepts numpy or torch inputs, returns numpy."""
    import torch
    import torch.nn.functional as tf

    f = torch.as_tensor(features, dtype=torch.float32)
    b, h, w, e = f.shape
    f = f.reshape(b, h * w, e)
    vm = torch.as_tensor(valid, dtype=torch.bool).reshape(b, h * w)
    fn = f.norm(dim=-1) if norms is None else torch.as_tensor(norms, dtype=torch.float32).reshape(b, h * w)
    inv_f = 1.0 / fn.clamp_min(EPS)
    d = tf.normalize(torch.as_tensor(phrases, dtype=torch.float32), dim=-1, eps=EPS)
    s_desc = torch.bmm(d, f.transpose(1, 2)) * inv_f[:, None, :]
    gate = vm[:, None, :] & torch.as_tensor(phrase_mask, dtype=torch.bool)[:, :, None]
    s_desc = s_desc.masked_fill(~gate, float("-inf")).reshape(b, -1, h, w)
    peaks, peak_val = nms_topk_torch(s_desc, top_k, nms_r)
    p = torch.zeros((b, h, w), dtype=torch.float32)
    bi, ki, ti = torch.nonzero(torch.isfinite(peak_val), as_tuple=True)
    p[bi, peaks[bi, ki, ti, 0], peaks[bi, ki, ti, 1]] = 1.0
    if nhood > 0:
        p = tf.max_pool2d(p[:, None], kernel_size=2 * nhood + 1, stride=1, padding=nhood)[:, 0]
    m = (p > 0) & vm.reshape(b, h, w)
    qv = tf.normalize(torch.as_tensor(query, dtype=torch.float32), dim=-1, eps=EPS)
    v = torch.bmm(f, qv[:, :, None])[..., 0] * inv_f
    v = v.masked_fill(~m.reshape(b, -1), float("-inf")).reshape(b, h, w)
    return v.numpy(), m.numpy()


def qs_torch(features, valid, query, norms=None) -> np.ndarray:
    import torch
    import torch.nn.functional as tf

    f = torch.as_tensor(features, dtype=torch.float32)
    b, h, w, e = f.shape
    f = f.reshape(b, h * w, e)
    fn = f.norm(dim=-1) if norms is None else torch.as_tensor(norms, dtype=torch.float32).reshape(b, h * w)
    qv = tf.normalize(torch.as_tensor(query, dtype=torch.float32), dim=-1, eps=EPS)
    v = torch.bmm(f, qv[:, :, None])[..., 0] / fn.clamp_min(EPS)
    v = v.masked_fill(~torch.as_tensor(valid, dtype=torch.bool).reshape(b, -1), float("-inf"))
    return v.reshape(b, h, w).numpy()


# -- methods --------------------------------------------------------------------


def _check_map(inp: GroundingInputs) -> None:
    f = inp.features
    if f is None or f.ndim != 3 or f.shape[0] == 0 or f.shape[1] == 0:
        shape = None if f is None else tuple(f.shape)
        raise GroundingFailure("empty_map", f"feature map must be H×W×E with H, W > 0, got {shape}")
    if inp.valid.shape != f.shape[:2]:
        raise GroundingFailure("bad_map", f"valid mask {inp.valid.shape} does not match map {f.shape[:2]}")
    if not inp.valid.any():
        raise GroundingFailure("empty_map", "feature map has no observed cells (all confidence 0)")
    if not (inp.resolution > 0):
        raise GroundingFailure("bad_map", f"map resolution must be > 0, got {inp.resolution}")


def _check_vector(name: str, vec: np.ndarray | None, dim: int) -> np.ndarray:
    if vec is None:
        raise GroundingFailure(f"no_{name}", f"no {name} embedding given")
    vec = np.asarray(vec, dtype=np.float32)
    if vec.shape[-1] != dim:
        raise GroundingFailure("dim_mismatch", f"{name} embedding has dim {vec.shape[-1]}, map has {dim}")
    if not np.all(np.isfinite(vec)) or not np.any(np.linalg.norm(vec, axis=-1) > EPS):
        raise GroundingFailure(f"bad_{name}", f"{name} embedding is zero or not finite")
    return vec


def _query_and_phrases(inp: GroundingInputs) -> tuple[int, np.ndarray, np.ndarray]:
    """The checked inputs every RPG variant needs: (embedding size, query, phrase embeddings)."""
    _check_map(inp)
    e = inp.features.shape[-1]
    q = _check_vector("query", inp.query, e)
    if inp.phrases is None or len(inp.phrases) == 0:
        raise GroundingFailure("no_phrases", "no ownership phrases were extracted from the summary")
    return e, q, _check_vector("phrase", np.atleast_2d(inp.phrases), e)


def _top_points(inp: GroundingInputs, score_map: np.ndarray, n: int, sep_m: float, method: str) -> Grounding:
    radius = max(0, math.ceil(sep_m / inp.resolution) - 1) if sep_m > 0 else 0
    idx, val = nms_topk_numpy(score_map, n, radius)
    keep = np.isfinite(val)
    if not keep.any():
        raise GroundingFailure("no_candidate", "no observed cell left to score")
    cells = [(int(r), int(c)) for (r, c), k in zip(idx, keep) if k]
    return Grounding(
        method=method,
        cells=cells,
        points=[inp.cell_center(r, c) for r, c in cells],
        scores=[float(v) for v in val[keep]],
    )


class Method:
    """Base class: ``name`` (registry key), ``label`` (report row), ``ground``."""

    name = ""
    label = ""
    uses_summary = False  # needs ownership phrases
    uses_context = False  # needs GroundingInputs.context (SCENE_CONTEXT_TEXTS) and .phrase_objects

    def __init__(self, n_predictions: int = 3, pred_sep_m: float = 1.0):
        self.n_predictions = int(n_predictions)
        self.pred_sep_m = float(pred_sep_m)

    def params(self) -> dict:
        return {"n_predictions": self.n_predictions, "pred_sep_m": self.pred_sep_m}

    def ground(self, inp: GroundingInputs) -> Grounding:
        raise NotImplementedError


class RandomPoint(Method):
    name, label = "random", "Random (x,y)"

    def ground(self, inp: GroundingInputs) -> Grounding:
        _check_map(inp)
        rng = np.random.default_rng(inp.seed)
        rows, cols = np.nonzero(inp.valid)
        order = rng.permutation(len(rows))[: self.n_predictions]
        cells = [(int(rows[i]), int(cols[i])) for i in order]
        # a uniformly random point inside each drawn observed cell
        jitter = rng.random((len(cells), 2))
        points = [
            (
                float(inp.origin[0] + (c + jx) * inp.resolution),
                float(inp.origin[1] + (r + jy) * inp.resolution),
            )
            for (r, c), (jx, jy) in zip(cells, jitter)
        ]
        return Grounding(self.name, cells, points, [0.0] * len(cells))


class MapCentre(Method):
    """Centre of the observed cells' bounding box (``of="observed"``) or of the whole grid."""

    name, label = "centre", "Center (x,y)"

    def __init__(self, of: str = "observed", **kw):
        super().__init__(**kw)
        if of not in ("observed", "grid"):
            raise ValueError(f"MapCentre: of must be 'observed' or 'grid', got {of!r}")
        self.of = of

    def params(self) -> dict:
        return {**super().params(), "of": self.of}

    def ground(self, inp: GroundingInputs) -> Grounding:
        _check_map(inp)
        h, w = inp.valid.shape
        if self.of == "grid":
            r0, r1, c0, c1 = 0, h - 1, 0, w - 1
        else:
            rows, cols = np.nonzero(inp.valid)
            r0, r1, c0, c1 = rows.min(), rows.max(), cols.min(), cols.max()
        x = inp.origin[0] + (c0 + c1 + 1) / 2 * inp.resolution
        y = inp.origin[1] + (r0 + r1 + 1) / 2 * inp.resolution
        cell = (int((r0 + r1) // 2), int((c0 + c1) // 2))
        return Grounding(self.name, [cell], [(float(x), float(y))], [0.0])


class QueryScoring(Method):
    name, label = "qs", "Query-Score (QS)"

    def __init__(self, backend: str = "numpy", **kw):
        super().__init__(**kw)
        self.backend = _check_backend(backend)

    def params(self) -> dict:
        return {**super().params(), "backend": self.backend}

    def score_map(self, inp: GroundingInputs) -> np.ndarray:
        _check_map(inp)
        q = _check_vector("query", inp.query, inp.features.shape[-1])
        fn = qs_torch if self.backend == "torch" else qs_numpy
        return fn(inp.features[None], inp.valid[None], q[None], norms=inp.norms()[None])[0]

    def ground(self, inp: GroundingInputs) -> Grounding:
        return _top_points(inp, self.score_map(inp), self.n_predictions, self.pred_sep_m, self.name)


class RegionGated(Method):
    """RPG, Algorithm 1 (all K phrases gate the map)."""

    name, label = "rpg", "Region-Gated (RPG)"
    uses_summary = True

    def __init__(self, top_k: int = 3, nhood: int = 1, nms_r: int = 1, backend: str = "numpy", **kw):
        super().__init__(**kw)
        if top_k < 1 or nhood < 0 or nms_r < 0:
            raise ValueError(f"{self.name}: need top_k >= 1, nhood >= 0, nms_r >= 0 (got {top_k}, {nhood}, {nms_r})")
        self.top_k, self.nhood, self.nms_r = int(top_k), int(nhood), int(nms_r)
        self.backend = _check_backend(backend)

    def params(self) -> dict:
        return {**super().params(), "top_k": self.top_k, "nhood": self.nhood, "nms_r": self.nms_r, "backend": self.backend}

    def phrase_mask(self, inp: GroundingInputs, k: int) -> np.ndarray:
        return np.ones(k, dtype=bool)

    def score_map(self, inp: GroundingInputs) -> tuple[np.ndarray, np.ndarray]:
        e, q, d = _query_and_phrases(inp)
        pm = self.phrase_mask(inp, len(d))
        fn = rpg_torch if self.backend == "torch" else rpg_numpy
        v, m = fn(
            inp.features[None], inp.valid[None], d[None], pm[None], q[None],
            top_k=self.top_k, nhood=self.nhood, nms_r=self.nms_r, norms=inp.norms()[None],
        )
        return v[0], m[0]

    def ground(self, inp: GroundingInputs) -> Grounding:
        v, m = self.score_map(inp)
        out = _top_points(inp, v, self.n_predictions, self.pred_sep_m, self.name)
        out.info["gate_cells"] = int(m.sum())
        return out


class OwnerGated(RegionGated):
    """RPG gated only by phrases that name the queried person (beyond the paper)."""

    name, label = "rpg-owner", "RPG-owner (ours)"

    def phrase_mask(self, inp: GroundingInputs, k: int) -> np.ndarray:
        if len(inp.phrase_people) != k:
            raise GroundingFailure("bad_phrases", f"{k} phrase embeddings but {len(inp.phrase_people)} phrase owners")
        if not inp.owner:
            raise GroundingFailure("no_owner", "the query names no person")
        want = _norm_name(inp.owner)
        mask = np.array([_norm_name(p) == want for p in inp.phrase_people], dtype=bool)
        if not mask.any():
            known = ", ".join(sorted({p for p in inp.phrase_people})) or "nobody"
            raise GroundingFailure(
                "unknown_person", f"no ownership phrase names {inp.owner!r} (phrases name: {known})"
            )
        return mask


class SceneRelative(RegionGated):
    """RPG with scene-relative scores (beyond the paper; :func:`rpg_scene_numpy`). numpy only:
    ``backend`` is accepted for a uniform interface and recorded, the maths runs in numpy."""

    name, label = "rpg-scene", "RPG scene-relative (ours)"
    uses_context = True

    def __init__(self, tau: float = 0.2, tau_q: float = 0.02, **kw):
        super().__init__(**kw)
        if not (tau > 0 and tau_q > 0):
            raise ValueError(f"{self.name}: need tau > 0 and tau_q > 0 (got {tau}, {tau_q})")
        self.tau, self.tau_q = float(tau), float(tau_q)

    def params(self) -> dict:
        return {**super().params(), "tau": self.tau, "tau_q": self.tau_q,
                "context_texts": list(SCENE_CONTEXT_TEXTS)}

    def score_map(self, inp: GroundingInputs) -> tuple[np.ndarray, np.ndarray]:
        e, q, d = _query_and_phrases(inp)
        ctx = None if inp.context is None or len(inp.context) == 0 else _check_vector("context", np.atleast_2d(inp.context), e)
        objects = None
        if inp.phrase_objects is not None:
            objects = _check_vector("phrase_object", np.atleast_2d(inp.phrase_objects), e)
            if len(objects) != len(d):
                raise GroundingFailure("bad_phrases", f"{len(d)} phrase embeddings but {len(objects)} phrase-object embeddings")
        pm = self.phrase_mask(inp, len(d))
        return rpg_scene_numpy(inp.features, inp.valid, d, pm, q, ctx, top_k=self.top_k, nhood=self.nhood,
                               nms_r=self.nms_r, tau=self.tau, tau_q=self.tau_q, norms=inp.norms(), objects=objects)


class OwnerSceneRelative(SceneRelative):
    """Scene-relative RPG gated and routed by the queried person's phrases only."""

    name, label = "rpg-owner-scene", "RPG-owner scene-relative (ours)"
    phrase_mask = OwnerGated.phrase_mask


def _norm_name(name: str) -> str:
    return " ".join(name.lower().split())


def _check_backend(backend: str) -> str:
    if backend not in ("numpy", "torch"):
        raise ValueError(f"backend must be 'numpy' or 'torch', got {backend!r}")
    return backend


# -- registry -------------------------------------------------------------------

METHODS: dict[str, Callable[..., Method]] = {
    "random": RandomPoint,
    "centre": MapCentre,
    "center": MapCentre,
    "qs": QueryScoring,
    "rpg": RegionGated,
    "rpg-owner": OwnerGated,
    "rpg_owner": OwnerGated,
    "rpg-scene": SceneRelative,
    "rpg_scene": SceneRelative,
    "rpg-owner-scene": OwnerSceneRelative,
    "rpg_owner_scene": OwnerSceneRelative,
}

def make_method(name: str, **params) -> Method:
    """Build a registered method by name (case-insensitive); unknown names list the known ones."""
    key = name.strip().lower()
    if key not in METHODS:
        raise ValueError(f"unknown grounding method {name!r} (known: {', '.join(sorted(METHODS))})")
    return METHODS[key](**params)


def parse_method_list(text: str | Sequence[str]) -> list[str]:
    """``"random,qs, rpg"`` -> ``["random", "qs", "rpg"]`` (validated)."""
    names = [n.strip() for n in (text.split(",") if isinstance(text, str) else text) if n.strip()]
    for n in names:
        if n.lower() not in METHODS:
            raise ValueError(f"unknown grounding method {n!r} (known: {', '.join(sorted(METHODS))})")
    return [METHODS[n.lower()].name for n in names]

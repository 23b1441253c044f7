"""Per-view attribute verification: Yes / No / Unsure with a reason.

``BuiltinImageVerifier`` measures the crop itself (no model): colour attributes
from the pixel colour distribution in CIELAB, a category gate from the object's
metric extent, Unsure for every other attribute type and for views whose
visible area is too small. ``VLMVerifier`` asks an OpenAI-compatible multimodal
endpoint with the paper's prompt (App. C.4.1), one attribute at a time.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from personal.verification.attributes import Attribute
from personal.verification.colors import (
    COLOR_NAMES, color_names_in, is_glossy, shading_invariant_distance, srgb_to_lab,
)
from personal.verification.openai_compat import ChatClient, LLMError, extract_json
from personal.verification.schema import mask_threshold
from personal.verification.shape import ShapeChecker

STATUSES = ("Yes", "No", "Unsure")
CROP_PAD_PX = 3
CROP_MIN_SHORT_PX = 512
TRAP_CONFIDENCE = 0.1  # paper: full image with detection confidence 0.1 when no mask is usable


@dataclass
class ViewInput:
    """What a verifier sees at one step."""

    rgb: np.ndarray  # HxWx3 uint8 (full capture)
    mask: np.ndarray | None = None  # HxW bool target mask (GT mask mode)
    bbox_xyxy: list[int] | None = None  # box when no mask (GT box / detector mode)
    distance_m: float | None = None  # camera-to-object distance (pose + goal position)
    hfov_deg: float = 90.0
    pitch_deg: float | None = None  # camera pitch, for the apparent height bound
    detection_confidence: float = 1.0
    depth: np.ndarray | None = None  # HxW float32 planar depth in metres (0 = invalid), when the data has it


@dataclass
class Judgement:
    name: str
    status: str  # Yes | No | Unsure
    reason: str
    observed: str = ""


@dataclass
class ViewVerdict:
    judgements: list[Judgement]
    confidence: float  # evidence weight of this view for the tracker (visibility-aware)
    visible_px: int
    notes: list[str] = field(default_factory=list)
    # seen extent / the category's longest nominal side (None: not measurable from this view)
    extent_ratio: float | None = None


def crop_for_verification(rgb: np.ndarray, mask: np.ndarray | None, bbox: list[int] | None,
                          pad: int = CROP_PAD_PX, min_short: int = CROP_MIN_SHORT_PX):
    """(crop, crop_mask) padded by ``pad`` px and upscaled (nearest) so the short side is >= ``min_short``.

    Returns (None, None) when there is neither a mask with pixels nor a box.
    """
    h, w = rgb.shape[:2]
    if mask is not None and mask.any():
        ys, xs = np.nonzero(mask)
        x0, y0, x1, y1 = xs.min(), ys.min(), xs.max() + 1, ys.max() + 1
    elif bbox is not None:
        x0, y0, x1, y1 = (int(v) for v in bbox)
    else:
        return None, None
    x0, y0 = max(0, x0 - pad), max(0, y0 - pad)
    x1, y1 = min(w, x1 + pad), min(h, y1 + pad)
    crop = rgb[y0:y1, x0:x1]
    cmask = mask[y0:y1, x0:x1] if mask is not None else None
    short = min(crop.shape[:2])
    if 0 < short < min_short:
        k = int(math.ceil(min_short / short))
        crop = np.repeat(np.repeat(crop, k, axis=0), k, axis=1)
        if cmask is not None:
            cmask = np.repeat(np.repeat(cmask, k, axis=0), k, axis=1)
    return crop, cmask


def _erode(mask: np.ndarray) -> np.ndarray:
    """One-pixel 4-neighbour erosion (drops edge pixels blended with the background)."""
    m = mask.copy()
    m[1:, :] &= mask[:-1, :]
    m[:-1, :] &= mask[1:, :]
    m[:, 1:] &= mask[:, :-1]
    m[:, :-1] &= mask[:, 1:]
    return m if m.sum() >= 0.3 * mask.sum() else mask


def category_extent_prior() -> dict[str, tuple[float, float, float]]:
    """Nominal (width, depth, height) of each known category including its parts, in metres.

    Category-level prior knowledge (what size a mug is), from the synthetic catalog;
    never per-object ground truth.
    """
    try:
        from personal.world.catalog import CATEGORIES
    except ImportError:  # pragma: no cover
        return {}
    out = {}
    for name, c in CATEGORIES.items():
        lo = [-s / 2 for s in c.size]
        hi = [s / 2 for s in c.size]
        for p in c.parts:
            for ax in range(3):
                centre, half = p.offset[ax] * c.size[ax], p.scale[ax] * c.size[ax] / 2
                lo[ax], hi[ax] = min(lo[ax], centre - half), max(hi[ax], centre + half)
        out[name] = tuple(h - l for l, h in zip(lo, hi))
    return out


class BuiltinImageVerifier:
    """Measures the crop: colour attributes in CIELAB, category by metric extent, else Unsure."""

    name = "builtin"

    def __init__(self, main_yes: float = 0.30, main_no: float = 0.10, part_yes: float = 0.015,
                 unexplained_no: float = 0.04, min_part_px: int = 12, size_upper: float = 1.2, size_lower: float = 0.35,
                 category_gate: bool = True, shape_check: bool = True, locate_parts: bool = True,
                 part_region_yes: float = 0.30, part_region_no: float = 0.10, min_body_px: int = 30,
                 max_orientations: int = 8):
        self.main_yes, self.main_no = main_yes, main_no
        self.part_yes, self.unexplained_no, self.min_part_px = part_yes, unexplained_no, min_part_px
        self.size_upper, self.size_lower = size_upper, size_lower
        self.category_gate = category_gate
        self.shape = ShapeChecker() if shape_check else None
        self.locate_parts = locate_parts and self.shape is not None
        self.part_region_yes, self.part_region_no, self.min_body_px = part_region_yes, part_region_no, min_body_px
        self.max_orientations = max_orientations
        self._extents = category_extent_prior()

    # -- public -----------------------------------------------------------
    @staticmethod
    def can_judge(a: Attribute) -> bool:
        """Attributes this verifier can decide (Yes or No): colours with a known colour name."""
        return a.type == "color" and bool(color_names_in(a.expected))

    def verify(self, view: ViewInput, attributes: list[Attribute], category: str,
               context: list[Attribute] | None = None) -> ViewVerdict:
        """Judge ``attributes``; ``context`` (default: the same list) is every described attribute,
        whose colours count as explained when looking for a differently coloured part."""
        mask = view.mask
        if mask is None and view.bbox_xyxy is not None:
            mask = self._box_core(view.rgb.shape[:2], view.bbox_xyxy)
        visible = int(mask.sum()) if mask is not None else 0
        tau = mask_threshold(category)
        if mask is None or visible < tau:
            reason = f"visible area {visible} px is below the {tau} px threshold for {category}"
            return ViewVerdict([Judgement(a.name, "Unsure", reason) for a in attributes], TRAP_CONFIDENCE, visible, [reason])
        # Nearest-neighbour upscaling repeats every pixel k*k times, so the colour proportions
        # measured here are those of the paper's upscaled crop; skip the copy.
        rgb = view.rgb
        crop, cmask = crop_for_verification(rgb, mask, view.bbox_xyxy, min_short=0)
        # visibility-aware weight: 0.6 at the threshold, 1.0 from three times the threshold
        confidence = view.detection_confidence * min(1.0, 0.4 + 0.2 * visible / tau)
        notes = []
        gate = self._category_check(mask, view, category) if self.category_gate else None
        fit = None
        if gate is None and self.shape is not None and view.mask is not None:
            fit = self.shape.check(category, view.mask, view.depth, view.distance_m or 0.0, view.pitch_deg or 0.0,
                                   view.hfov_deg, exhaustive=self.locate_parts)
            gate = None if fit is None or fit.consistent else fit.reason(category)
        if gate is not None:
            notes.append(gate)
            return ViewVerdict([Judgement(a.name, "No", gate, "other category") for a in attributes], confidence, visible, notes)
        extent = self._extent(mask, view, category)
        ratio = max(extent[0], extent[1]) / max(extent[2]) if extent else None
        pixels = crop[_erode(cmask)] if cmask is not None else crop.reshape(-1, 3)
        # a described metal or glass object shows its colour darker and mixed with reflections
        glossy = any(a.type == "material" and is_glossy(a.expected) for a in (context or attributes))
        stats = _ColorStats(pixels, glossy)
        described = sorted({n for a in (context or attributes) if a.type in ("color", "pattern")
                            for n in color_names_in(a.expected)})
        regions = []
        if self.locate_parts and fit is not None and fit.used_depth:
            for yaw in fit.plausible_yaws_deg[: self.max_orientations]:
                r = self._regions(view, category, yaw)
                if r is not None:
                    regions.append(r)
        out = []
        for a in attributes:
            if regions and a.type == "color" and color_names_in(a.expected):
                out.append(self._judge_located(a, rgb, regions, glossy))
            else:
                out.append(self._judge(a, stats, described, context or attributes))
        return ViewVerdict(out, max(confidence, TRAP_CONFIDENCE), visible, notes, ratio)

    # -- helpers ----------------------------------------------------------
    @staticmethod
    def _box_core(shape, bbox) -> np.ndarray:
        """Without a mask, the central 60% of the box stands in for the object."""
        x0, y0, x1, y1 = (int(v) for v in bbox)
        m = np.zeros(shape, dtype=bool)
        dx, dy = int(0.2 * (x1 - x0)), int(0.2 * (y1 - y0))
        m[y0 + dy:y1 - dy, x0 + dx:x1 - dx] = True
        return m

    def _extent(self, mask: np.ndarray, view: ViewInput, category: str):
        """(width_m, height_m, nominal extent) of the object's silhouette, or None if unmeasurable."""
        ext = self._extents.get(category)
        if ext is None or not view.distance_m:
            return None
        ys, xs = np.nonzero(mask)
        h, w = mask.shape
        if xs.min() == 0 or ys.min() == 0 or xs.max() == w - 1 or ys.max() == h - 1:
            return None  # cut by the image border: extent unknown
        f = (w / 2) / math.tan(math.radians(view.hfov_deg) / 2)
        return (xs.max() - xs.min() + 1) * view.distance_m / f, (ys.max() - ys.min() + 1) * view.distance_m / f, ext

    def _category_check(self, mask: np.ndarray, view: ViewInput, category: str) -> str | None:
        """A reason string when the object's metric extent cannot be a ``category``."""
        measured = self._extent(mask, view, category)
        if measured is None:
            return None
        width_m, height_m, ext = measured
        W, D, H = ext
        diag_wd = math.hypot(W, D)
        pitch = math.radians(abs(view.pitch_deg or 0.0))
        # Upper bounds calibrated on positive views (ratios <= 1.1): the silhouette is no wider
        # than the footprint diagonal and no taller than the side plus the foreshortened top.
        max_w = self.size_upper * diag_wd
        max_h = self.size_upper * (H * math.cos(pitch) + diag_wd * math.sin(pitch) + 0.25 * diag_wd)
        longest = max(W, D, H)
        if width_m > max_w or height_m > max_h or max(width_m, height_m) < self.size_lower * longest:
            return (f"object extent {width_m:.2f}x{height_m:.2f} m is inconsistent with a {category} "
                    f"(nominal {W:.2f}x{D:.2f}x{H:.2f} m)")
        return None

    def _regions(self, view: ViewInput, category: str, yaw_deg: float) -> dict[str, np.ndarray] | None:
        """Mask pixels per piece of the category's fitted shape: "body" (body and its darker accent
        pieces) and one entry per coloured part ("handle", "spine label"...)."""
        located = self.shape.role_map(category, view.mask, view.distance_m or 0.0, view.pitch_deg or 0.0,
                                      view.hfov_deg, yaw_deg)
        if located is None:
            return None
        roles, names = located
        out: dict[str, np.ndarray] = {}
        for i, name in enumerate(names):
            key = "body" if name in ("body", "accent") else name[5:] if name.startswith("part:") else None
            if key is not None:
                out[key] = out.get(key, np.zeros(roles.shape, bool)) | (roles == i)
        return out

    def _judge_located(self, a: Attribute, rgb: np.ndarray, orientations: list[dict[str, np.ndarray]],
                       glossy: bool = False) -> Judgement:
        """A colour judged on the pixels where the fitted shape draws the body (``color``) or the part.

        ``orientations``: the regions of every orientation that fits the view about as well as
        the best (a flat or symmetric object fits several). Yes if the colour fills the region
        in one of them; No only if every one shows the region and none has the colour."""
        expected = color_names_in(a.expected)[0]
        part = None if a.name == "color" else a.name[:-len("_color")].replace("_", " ") if a.name.endswith("_color") else a.name
        where = "body" if part is None else part
        if all(where not in r for r in orientations):
            return Judgement(a.name, "Unsure", f"a {where} is not part of the shape of this category", "")
        yes, no = (self.main_yes, self.main_no) if part is None else (self.part_region_yes, self.part_region_no)
        least = self.min_body_px if part is None else self.min_part_px
        seen = []  # (fraction, pixels, dominant) per orientation that shows the region
        for regions in orientations:
            region = regions.get(where)
            if region is None:
                continue
            if part is None:
                region = _erode(region)
            n = int(region.sum())
            if n < least:
                return Judgement(a.name, "Unsure", f"the {where} is not visible from this view ({n} px where a fitting "
                                 f"orientation of the shape draws it)", "")
            stats = _ColorStats(rgb[region], glossy)
            seen.append((stats.fraction(expected), n, stats.dominant()))
        frac, n, dominant = max(seen)
        if frac >= yes:
            return Judgement(a.name, "Yes", f"{frac:.0%} of the {where} ({n} px) is {expected}", expected)
        if frac < no:
            return Judgement(a.name, "No", f"only {frac:.0%} of the {where} ({n} px) is {expected}; mostly {dominant}"
                             + (f" (in each of {len(seen)} fitting orientations)" if len(seen) > 1 else ""), dominant)
        return Judgement(a.name, "Unsure", f"{frac:.0%} of the {where} ({n} px) is {expected}", dominant)

    def _judge(self, a: Attribute, stats: "_ColorStats", described: list[str],
               context: list[Attribute] | None = None) -> Judgement:
        colors = color_names_in(a.expected)
        if a.type not in ("color", "pattern") or not colors:
            return Judgement(a.name, "Unsure", f"{a.type} attributes need a model backend (built-in measures colour only)")
        if a.type == "pattern":
            # Only the pattern's colour is measurable here, not its shape.
            frac = min(stats.fraction(c) for c in colors)
            if frac >= self.part_yes and stats.count(colors[0]) >= self.min_part_px:
                return Judgement(a.name, "Yes", f"{'/'.join(colors)} present ({frac:.1%} of object)", "/".join(colors))
            return Judgement(a.name, "Unsure", f"pattern colour {'/'.join(colors)} not seen ({frac:.1%})", stats.dominant())
        expected = colors[0]
        frac = stats.fraction(expected)
        other, other_frac = stats.unexplained(described)
        if a.name == "color":
            if frac >= self.main_yes:
                return Judgement(a.name, "Yes", f"{frac:.0%} of the object is {expected}", expected)
            if frac < self.main_no:
                # (a large part can cover the body from one side, e.g. a towel's border; colour
                # alone cannot tell that from a differently coloured body, so this stays a No)
                return Judgement(a.name, "No", f"only {frac:.0%} is {expected}; mostly {stats.dominant()}", stats.dominant())
            return Judgement(a.name, "Unsure", f"{frac:.0%} is {expected}", stats.dominant())
        # part colour: present -> Yes; absent while an undescribed colour region is visible -> No.
        # A part described in a colour another attribute also has (a black handle on a black mug)
        # cannot be told apart from it by colour alone: presence proves nothing.
        shared = any(expected in color_names_in(b.expected) for b in (context or []) if b.name != a.name and b.type == "color")
        if frac >= self.part_yes and stats.count(expected) >= self.min_part_px and not shared:
            return Judgement(a.name, "Yes", f"{expected} region found ({frac:.1%} of object)", expected)
        if other and other_frac >= self.unexplained_no and (frac < self.part_yes or shared):
            return Judgement(a.name, "No", f"no {expected} part visible; an undescribed {other} region ({other_frac:.1%}) is", other)
        if shared:
            return Judgement(a.name, "Unsure", f"{expected} is also the colour of another described attribute", "")
        return Judgement(a.name, "Unsure", f"no {expected} region visible from this view", "")


class _ColorStats:
    """Per-pixel colour-name consistency for one crop (computed once, queried per attribute).

    Pixels are reduced to unique colours with counts first (flat-shaded or
    quantised images have few distinct colours), so the cost is per colour.
    """

    MATCH_MARGIN = 6.0  # ΔE slack over the best name for a pixel to count as that colour too
    MAX_DE = 22.0
    EXPLAIN_DE = 16.0  # a pixel this close to a described colour is never evidence of another part colour

    def __init__(self, pixels: np.ndarray, glossy: bool = False):
        px = np.ascontiguousarray(pixels.reshape(-1, 3)).astype(np.int32)
        keys, counts = np.unique((px[:, 0] << 16) | (px[:, 1] << 8) | px[:, 2], return_counts=True)
        colors = np.stack([keys >> 16, (keys >> 8) & 255, keys & 255], axis=1)
        self.total = int(counts.sum())
        self.counts = counts.astype(np.float64)
        self.lab = srgb_to_lab(colors)
        self.names = list(COLOR_NAMES)
        self.dist = shading_invariant_distance(self.lab, self.names, glossy)  # (U, K)
        self.best = self.dist.min(1)

    def _consistent(self, name: str) -> np.ndarray:
        d = self.dist[:, self.names.index(name)]
        return (d <= self.best + self.MATCH_MARGIN) & (d <= self.MAX_DE)

    def fraction(self, name: str) -> float:
        return float(self.counts[self._consistent(name)].sum() / self.total) if self.total else 0.0

    def count(self, name: str) -> int:
        return int(self.counts[self._consistent(name)].sum())

    def dominant(self) -> str:
        if not self.total:
            return ""
        idx = self.dist.argmin(1)
        return self.names[int(np.bincount(idx, weights=self.counts, minlength=len(self.names)).argmax())]

    def unexplained(self, described: list[str]) -> tuple[str, float]:
        """Largest colour among pixels consistent with none of the described colours."""
        if not self.total:
            return "", 0.0
        # Looser than _consistent: a shade of a described colour (dark green leaves of a
        # "green" plant) is explained even when another name fits it slightly better.
        explained = np.zeros(len(self.counts), dtype=bool)
        for name in described:
            explained |= self._consistent(name) | (self.dist[:, self.names.index(name)] <= self.EXPLAIN_DE)
        rest = ~explained
        if not rest.any():
            return "", 0.0
        idx = self.dist[rest].argmin(1)
        sums = np.bincount(idx, weights=self.counts[rest], minlength=len(self.names))
        k = int(sums.argmax())
        return self.names[k], float(sums[k] / self.total)


VERIFY_PROMPT = """You will be given an image of a candidate object. We need to verify BOTH the object category AND a specific attribute.
IMPORTANT: The object must be the correct CATEGORY first. If it's not a {category}, answer 'No' immediately.
Object Category (MUST match): {category}
Object descriptions (3 sentences describing the SAME object): 1) {d1} 2) {d2} 3) {d3}
Attribute to verify: {name} = {expected}
Answer in JSON format: {{"answer": "Yes/No/Unsure", "reason": "brief explanation"}}
Rules: - FIRST check: Is the object in the image a {category}? If NOT, say 'No'. - If it IS the correct category, then check the attribute. - If the attribute matches the expected value, say 'Yes'. - If the attribute is visible but has a DIFFERENT value (e.g. red instead of blue), say 'No'. - If the attribute is NOT visible due to angle/occlusion, say 'Unsure'."""


class VLMVerifier:
    """Per-attribute verification by an OpenAI-compatible vision-language model."""

    name = "vlm"

    @staticmethod
    def can_judge(a: Attribute) -> bool:
        return True

    def __init__(self, client: ChatClient, descriptions: list[str] | None = None):
        self.client = client
        self.descriptions = descriptions or []

    def verify(self, view: ViewInput, attributes: list[Attribute], category: str,
               context: list[Attribute] | None = None) -> ViewVerdict:
        visible = int(view.mask.sum()) if view.mask is not None else 0
        crop, _ = crop_for_verification(view.rgb, view.mask, view.bbox_xyxy)
        confidence = view.detection_confidence
        if crop is None or (view.mask is not None and visible < mask_threshold(category)):
            crop, confidence = view.rgb, TRAP_CONFIDENCE  # paper: full image, c = 0.1
        d = (self.descriptions + ["", "", ""])[:3]
        out = []
        for a in attributes:
            prompt = VERIFY_PROMPT.format(category=category, d1=d[0], d2=d[1], d3=d[2], name=a.name, expected=a.expected)
            try:
                reply = extract_json(self.client.chat(prompt, images=[crop], max_tokens=200))
                answer = str(reply.get("answer", "Unsure")).strip().capitalize()
                status = answer if answer in STATUSES else "Unsure"
                out.append(Judgement(a.name, status, str(reply.get("reason", ""))[:300]))
            except LLMError as exc:
                out.append(Judgement(a.name, "Unsure", f"model error: {exc}"[:300]))
        return ViewVerdict(out, confidence, visible)


def make_verifier(kind: str = "builtin", descriptions: list[str] | None = None):
    if kind == "builtin":
        return BuiltinImageVerifier()
    if kind == "vlm":
        client = ChatClient.from_env("VLM")
        if client is None:
            raise ValueError("verifier 'vlm' needs PERSONAL_VLM_BASE_URL/PERSONAL_VLM_MODEL (or the LLM ones)")
        return VLMVerifier(client, descriptions)
    raise ValueError(f"unknown verifier {kind!r} (builtin|vlm)")

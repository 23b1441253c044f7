"""PInVerify data model: one index line (a query/target pair) and its capture episode.

Field names follow the public release (see docs/BENCHMARKS.md, PInVerify): index
``.jsonl`` lines and per-episode ``meta.json`` with a ``viewpoints`` array.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

PAIR_TYPES = ("positive", "neg_same", "neg_diff")
VIEW_TYPES = ("near", "far")
# 12 raw sectors of 30°, sector_skip=1 -> 6 active sectors 60° apart.
N_RAW_SECTORS = 12
SECTOR_ORDER = (0, 2, 4, 6, 8, 10)
SECTOR_WIDTH_DEG = 360.0 / N_RAW_SECTORS
RANGES = {"near": (0.9, 1.2), "far": (1.4, 1.7)}
CAPTURE_HW = (360, 640)
HORIZON = 6

# Per-category mask-area thresholds (pixels at 360x640), tiered by object size as in
# the paper's App. A.7 (the table values are not in our copy of the paper, so these
# tiers are ours: small objects get a lower bar so they are not all trap views).
MASK_THRESHOLD_TIERS = {"small": 150, "medium": 400, "large": 900}
CATEGORY_TIER = {
    "keys": "small", "watch": "small", "eyeglasses": "small", "wallet": "small",
    "cellphone": "small", "visor": "medium", "hat": "medium", "mug": "medium",
    "camera": "medium", "book": "medium", "headphones": "medium", "toy": "medium",
    "ball": "medium", "shoes": "medium", "bag": "large", "backpack": "large",
    "laptop": "large", "teddy bear": "large",
}
DEFAULT_TIER = "medium"


def category_tier(category: str) -> str:
    """Size tier of a category: the PInVerify table, else the synthetic catalog's nominal size."""
    name = category.replace("_", " ")
    if name in CATEGORY_TIER:
        return CATEGORY_TIER[name]
    try:
        from personal.world.catalog import CATEGORIES
    except ImportError:  # pragma: no cover
        return DEFAULT_TIER
    if name not in CATEGORIES:
        return DEFAULT_TIER
    size = max(CATEGORIES[name].size)
    return "small" if size < 0.15 else "medium" if size < 0.35 else "large"


def mask_threshold(category: str) -> int:
    """Minimum target mask area (pixels at 360x640) for a capture to count as visible."""
    return MASK_THRESHOLD_TIERS[category_tier(category)]


def capture_tag(sector_index: int, view_type: str) -> str:
    return f"s{sector_index}_{view_type}"


def sector_center_deg(sector_index: int) -> float:
    """Nominal azimuth of a raw sector (centre of its 30° wedge)."""
    return (sector_index + 0.5) * SECTOR_WIDTH_DEG


def wrap_deg(angle: float) -> float:
    """Angle in (-180, 180]."""
    a = math.fmod(angle + 180.0, 360.0)
    if a <= 0:
        a += 360.0
    return a - 180.0


@dataclass
class Viewpoint:
    """One capture (sector x near/far) of a capture episode."""

    tag: str
    sector_index: int
    view_type: str  # near | far ("unknown" only for non-navigable attempts)
    navigable: bool
    mask_meets_threshold: bool
    rgb: str  # path relative to the episode folder, "rgb/rgb_s2_near.png"
    mask: str | None = None  # "mask/mask_s2_near.png"
    depth: str | None = None  # "depth/depth_s2_near.png", uint16 mm (optional; generated sets only)
    mask_bbox_xyxy: list[int] | None = None
    mask_area: int | None = None
    azimuth_deg: float | None = None  # camera position around the goal, CCW from map +x
    position: list[float] | None = None  # map frame (ours)
    camera_position: list[float] | None = None  # habitat frame (y up), as the public release writes it
    distance_m: float | None = None  # camera to object centre (3-D)
    pitch_deg: float | None = None  # camera pitch (negative looks down)

    @property
    def is_trap(self) -> bool:
        return self.navigable and not self.mask_meets_threshold

    def azimuth(self) -> float:
        return self.azimuth_deg if self.azimuth_deg is not None else sector_center_deg(self.sector_index)


@dataclass
class CaptureEpisode:
    """A target object in a scene with its captures (one ``meta.json``)."""

    root: Path  # episode folder
    scene_key: str
    episode_id: str
    object_id: str
    object_category: str
    viewpoints: list[Viewpoint]
    goal_position_nominal: list[float] | None = None
    sector_order: list[int] = field(default_factory=lambda: list(SECTOR_ORDER))
    extra: dict = field(default_factory=dict)

    def sector_views(self, sector_index: int) -> list[Viewpoint]:
        return [v for v in self.viewpoints if v.sector_index == sector_index]

    def navigable_sectors(self) -> list[int]:
        return sorted({v.sector_index for v in self.viewpoints if v.navigable})

    def visible_sectors(self) -> list[int]:
        return sorted({v.sector_index for v in self.viewpoints if v.navigable and v.mask_meets_threshold})

    def trap_sectors(self) -> list[int]:
        vis = set(self.visible_sectors())
        return [s for s in self.navigable_sectors() if s not in vis]


@dataclass
class PairEpisode:
    """One evaluation line: a candidate (target) object in its capture episode, and the
    query whose descriptions the agent checks against it."""

    scene_key: str
    episode_id: str
    object_id: str  # the target: the object actually in the captures
    object_category: str
    episode_path: str
    query_object_id: str
    query_descriptions: list[str]  # what the agent is asked about (public: query_descriptions / text_pos)
    target_descriptions: list[str]  # the target's own descriptions (public: target_descriptions / text_neg)
    pair_type: str
    label: int
    valid_start_sectors: list[int]
    navigable_sectors: list[int]
    query_object_category: str = ""
    neg_object_id: str | None = None
    captures_meta: list[dict] = field(default_factory=list)
    index: int = 0  # position in the index file (start-sector seeding)
    extra: dict = field(default_factory=dict)
    capture: CaptureEpisode | None = None  # filled by the reader

    @property
    def query_texts(self) -> list[str]:
        """The descriptions the agent sees: the query object's."""
        return list(self.query_descriptions)

    @property
    def key(self) -> str:
        return f"{self.scene_key}/{self.episode_id}/{self.pair_type}/{self.query_object_id}"

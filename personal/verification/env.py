"""PInVerify environment semantics over a capture episode.

Directions are relative to the agent's current position around the object: the
current sector is always "front (0°)"; "left"/"right" are the agent's own left
and right while it faces the object (moving left = clockwise seen from above,
i.e. decreasing map azimuth); "back" sectors lie on the far side of the object.
A move resolves geometrically: target azimuth = current azimuth + offset; the
closest navigable capture within ±30° is taken, otherwise the move is
*unreachable* (the agent stays). Arriving at a sector with no capture above the
mask threshold is a *trap*. Both cost a step and set ``visibility_warning`` on
the returned observation. A step is one observation: the start view is step 1,
and the episode ends after ``HORIZON`` (6) steps.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from personal.verification.schema import HORIZON, CaptureEpisode, PairEpisode, Viewpoint, wrap_deg

# Offsets in map azimuth (CCW, degrees) for each relative direction; see module doc.
DIRECTION_OFFSETS = {
    "front": 0.0,
    "front-left": -60.0,
    "back-left": -120.0,
    "back": 180.0,
    "back-right": 120.0,
    "front-right": 60.0,
}
MOVE_DIRECTIONS = tuple(d for d in DIRECTION_OFFSETS if d != "front")
RESOLUTION_DEG = 30.0


class EpisodeOver(RuntimeError):
    pass


@dataclass
class Observation:
    step: int  # 1-based; the start view is step 1
    status: str  # start | ok | unreachable | trap
    sector_index: int
    azimuth_deg: float
    viewpoint: Viewpoint | None  # None when the move failed (no new view)
    direction: str | None = None
    visibility_warning: str | None = None
    new_view: bool = True

    def to_dict(self) -> dict:
        return {
            "step": self.step, "status": self.status, "sector_index": self.sector_index,
            "azimuth_deg": round(self.azimuth_deg, 2), "direction": self.direction,
            "visibility_warning": self.visibility_warning, "new_view": self.new_view,
            "tag": self.viewpoint.tag if self.viewpoint else None,
            "rgb": self.viewpoint.rgb if self.viewpoint else None,
        }


def start_sector(pair: PairEpisode, seed: int) -> int:
    """Deterministic start among the visible sectors, from the seed and the episode index."""
    sectors = sorted(pair.valid_start_sectors)
    rng = np.random.default_rng([seed, pair.index])
    return sectors[int(rng.integers(len(sectors)))]


def best_view(views: list[Viewpoint]) -> Viewpoint | None:
    """The capture shown on arriving at a sector: visible near, visible far, then trap views."""
    ranked = sorted(
        (v for v in views if v.navigable),
        key=lambda v: (not v.mask_meets_threshold, v.view_type != "near"),
    )
    return ranked[0] if ranked else None


def resolve_direction(capture: CaptureEpisode, current_az: float, direction: str) -> Viewpoint | None:
    """Closest navigable capture within ±30° of the requested azimuth, or None (unreachable)."""
    if direction not in DIRECTION_OFFSETS:
        raise ValueError(f"unknown direction {direction!r} (known: {', '.join(DIRECTION_OFFSETS)})")
    target = current_az + DIRECTION_OFFSETS[direction]
    best, best_err = None, RESOLUTION_DEG + 1e-9
    for v in capture.viewpoints:
        if not v.navigable:
            continue
        err = abs(wrap_deg(v.azimuth() - target))
        if err <= best_err:
            if best is None or err < best_err - 1e-9 or (v.view_type == "near" and best.view_type != "near"):
                best, best_err = v, err
    return best


@dataclass
class VerificationEnv:
    pair: PairEpisode
    seed: int = 0
    horizon: int = HORIZON
    steps: int = 0
    current: Viewpoint | None = None
    history: list[Observation] = field(default_factory=list)

    @property
    def capture(self) -> CaptureEpisode:
        if self.pair.capture is None:
            raise ValueError(f"episode {self.pair.key} has no capture data loaded")
        return self.pair.capture

    def reset(self) -> Observation:
        sector = start_sector(self.pair, self.seed)
        view = best_view(self.capture.sector_views(sector))
        if view is None or not view.mask_meets_threshold:
            raise ValueError(f"episode {self.pair.key}: start sector {sector} has no visible capture")
        self.steps, self.current, self.history = 1, view, []
        obs = Observation(1, "start", sector, view.azimuth(), view)
        self.history.append(obs)
        return obs

    @property
    def done(self) -> bool:
        return self.steps >= self.horizon

    def direction_targets(self) -> dict[str, float]:
        """Requested map azimuth of each move direction from the current pose."""
        az = self.current.azimuth()
        return {d: az + DIRECTION_OFFSETS[d] for d in MOVE_DIRECTIONS}

    def move(self, direction: str) -> Observation:
        if self.current is None:
            raise EpisodeOver("call reset() first")
        if self.done:
            raise EpisodeOver(f"episode {self.pair.key}: horizon of {self.horizon} steps used up")
        self.steps += 1
        hit = resolve_direction(self.capture, self.current.azimuth(), direction)
        if hit is None:
            obs = Observation(
                self.steps, "unreachable", self.current.sector_index, self.current.azimuth(), None, direction,
                f"Moving {direction} failed: that sector is unreachable; you stayed in place.", new_view=False,
            )
        else:
            view = best_view(self.capture.sector_views(hit.sector_index)) or hit
            self.current = view
            if view.mask_meets_threshold:
                obs = Observation(self.steps, "ok", view.sector_index, view.azimuth(), view, direction)
            else:
                obs = Observation(
                    self.steps, "trap", view.sector_index, view.azimuth(), view, direction,
                    f"After moving {direction} the target is barely visible (mask below threshold).",
                )
        self.history.append(obs)
        return obs

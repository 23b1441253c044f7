"""The preference registry: three tiers, language, an automatic metric, and its binning.

Each preference maps a recorded ``Trajectory`` (plus the episode ``Layout``) to a continuous
score, and bins it into a satisfaction label d in {0, 1/4, 3/4, 1} as LIBERO-PeRM does.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Callable

import numpy as np

from personal.manipulation.layout import Layout
from personal.manipulation.trajectory import Trajectory

LEVELS = (0.0, 0.25, 0.75, 1.0)
NOMINAL_SPEED = 0.20  # m/s: the benchmark's reference pace for "execution steps"
NOMINAL_GRIPPER_S = 1.6  # s: reference time spent closing + opening the gripper


class Tier(str, Enum):
    MOTION = "motion"
    SKILL = "skill"
    USER_PROFILE = "user_profile"


@dataclass(frozen=True)
class Binning:
    """Three cut points splitting a score into d = 0 | 1/4 | 3/4 | 1.

    ``higher_is_better``: score >= t[2] -> 1, >= t[1] -> 3/4, >= t[0] -> 1/4, else 0.
    Otherwise mirrored: score <= t[2] -> 1, <= t[1] -> 3/4, <= t[0] -> 1/4, else 0.
    """

    thresholds: tuple[float, float, float]
    higher_is_better: bool = True

    def __post_init__(self) -> None:
        t = self.thresholds
        ok = t[0] <= t[1] <= t[2] if self.higher_is_better else t[0] >= t[1] >= t[2]
        if not ok:
            raise ValueError(f"thresholds {t} must be monotone toward the better end")

    def __call__(self, score: float) -> float:
        if not np.isfinite(score):
            return 0.0
        passed = sum((score >= t) if self.higher_is_better else (score <= t) for t in self.thresholds)
        return LEVELS[passed]


Metric = Callable[[Trajectory, Layout], float]


@dataclass(frozen=True)
class Preference:
    id: str
    tier: Tier
    language: str  # explicit preference text; may contain {obstacle}
    context: str  # ComprePref: the same preference conveyed through context
    metric: Metric
    binning: Binning
    unit: str
    missions: tuple[str, ...]  # missions whose layouts make this preference meaningful
    conflicts: tuple[str, ...] = ()
    description: str = ""

    def text(self, layout: Layout | None = None) -> str:
        return _fill(self.language, layout)

    def context_text(self, layout: Layout | None = None) -> str:
        text = _fill(self.context, layout)
        return text[:1].upper() + text[1:]

    def score(self, traj: Trajectory, layout: Layout) -> float:
        return float(self.metric(traj, layout))

    def satisfaction(self, traj: Trajectory, layout: Layout) -> float:
        return self.binning(self.score(traj, layout))


def _fill(text: str, layout: Layout | None) -> str:
    if "{obstacle}" not in text:
        return text
    obs = layout.obstacle if layout is not None else None
    return text.format(obstacle=f"the {obs.colour} {obs.category or obs.shape}" if obs else "the obstacle")


# -- metrics ------------------------------------------------------------------------------


def steps_ratio(traj: Trajectory, layout: Layout) -> float:
    """Execution steps / reference steps at the nominal pace along the canonical path."""
    obj = traj.manipulated_object([c.name for c in layout.candidates])
    if not obj:
        return float("inf")
    start = np.array(layout.eef_start)
    o0 = traj.objects[obj][0]
    goal = np.array(layout.get(layout.target).pos)
    path = np.linalg.norm(start - o0) + np.linalg.norm((goal - o0)[:2]) + 0.2  # reach + carry + lift/lower
    ref_steps = (path / NOMINAL_SPEED + NOMINAL_GRIPPER_S) / traj.dt
    return float(traj.steps / ref_steps)


def _speeds(traj: Trajectory) -> np.ndarray:
    end = traj.steps
    return np.linalg.norm(np.diff(traj.eef_pos[:end], axis=0), axis=1) / traj.dt


def p95_speed(traj: Trajectory, layout: Layout) -> float:
    v = _speeds(traj)
    return float(np.percentile(v, 95)) if len(v) else 0.0


def p95_acceleration(traj: Trajectory, layout: Layout) -> float:
    """95th percentile of |d^2 p / dt^2| of the end effector (the seed's smoothness metric)."""
    p = traj.eef_pos[: traj.steps]
    if len(p) < 3:
        return 0.0
    acc = np.linalg.norm(np.diff(p, n=2, axis=0), axis=1) / traj.dt**2
    return float(np.percentile(acc, 95))


def min_clearance(traj: Trajectory, layout: Layout) -> float:
    """Closest approach of the end effector (and what it carries) to the keep-away object."""
    obs = layout.obstacle
    if obs is None:
        raise ValueError(f"mission {layout.mission!r} has no obstacle for a keep-away preference")
    pts = [traj.eef_pos]
    for name, a, b in traj.hold_segments():
        pts.append(traj.objects[name][a : b + 1])
    return float(min(obs.clearance(p) for p in np.concatenate(pts)))


def _carry(traj: Trajectory) -> tuple[int, int] | None:
    seg = traj.carry_segment()
    return (seg[1], seg[2]) if seg else None


def carry_height(traj: Trajectory, layout: Layout) -> float:
    """Highest end-effector point above the table while carrying the object."""
    seg = _carry(traj)
    if seg is None:
        return float("nan")
    return float(np.max(traj.eef_pos[seg[0] : seg[1] + 1, 2]) - layout.table_z)


def carry_rotation_deg(traj: Trajectory, layout: Layout) -> float:
    """|yaw change| of the gripper (hence the held object) between grasp and release."""
    seg = _carry(traj)
    if seg is None:
        return float("nan")
    return float(abs(np.degrees(traj.eef_yaw[seg[1]] - traj.eef_yaw[seg[0]])))


def lift_height(traj: Trajectory, layout: Layout) -> float:
    """How far the manipulated object was raised above its start height (0 = pushed)."""
    obj = traj.manipulated_object([c.name for c in layout.candidates])
    if not obj:
        return float("nan")
    z = traj.objects[obj][:, 2]
    return float(np.max(z) - z[0])


def grasp_handle_distance(traj: Trajectory, layout: Layout) -> float:
    """Distance from the gripper at grasp time to the handle centre of the grasped object."""
    for name, a, _ in traj.hold_segments():
        spec = layout.get(name)
        if spec.handle_offset is None:
            continue
        # the handle moves with the object; use its pose at the grasp step
        handle = traj.objects[name][a] + np.array(spec.handle_offset)
        return float(np.linalg.norm(traj.eef_pos[a] - handle))
    return float("nan")


def _picked_attribute(pred: Callable[[Layout, str], bool]) -> Metric:
    def metric(traj: Trajectory, layout: Layout) -> float:
        obj = traj.manipulated_object([c.name for c in layout.candidates])
        return 1.0 if obj and pred(layout, obj) else 0.0

    return metric


def _is_colour(colour: str) -> Callable[[Layout, str], bool]:
    return lambda layout, name: layout.get(name).colour == colour


def _is_biggest(layout: Layout, name: str) -> bool:
    return layout.get(name).volume >= max(c.volume for c in layout.candidates) - 1e-12


def _is_smallest(layout: Layout, name: str) -> bool:
    return layout.get(name).volume <= min(c.volume for c in layout.candidates) + 1e-12


# -- the registry -------------------------------------------------------------------------

BLOCK_MISSIONS = ("bin", "mat")
ALL = ("bin", "mat", "handle")
BINARY = Binning((0.5, 0.5, 0.5))

PREFERENCES: dict[str, Preference] = {
    p.id: p
    for p in [
        Preference("speed_up", Tier.MOTION, "Move faster", "Guests will use them immediately.",
                   steps_ratio, Binning((1.0, 0.9, 0.8), higher_is_better=False), "x reference steps", ALL,
                   conflicts=("slow_down",), description="execution steps relative to the nominal-pace reference"),
        Preference("slow_down", Tier.MOTION, "Move slowly", "The baby is asleep right next to the table.",
                   p95_speed, Binning((0.16, 0.12, 0.09), higher_is_better=False), "m/s (p95 eef speed)", ALL,
                   conflicts=("speed_up",)),
        Preference("smooth", Tier.MOTION, "Avoid sudden acceleration",
                   "My grandmother gets nervous when the arm jerks.",
                   p95_acceleration, Binning((1.5, 1.0, 0.6), higher_is_better=False), "m/s^2 (p95 eef accel)", ALL),
        Preference("keep_away", Tier.MOTION, "Keep away from {obstacle}",
                   "{obstacle} is fragile and was expensive.",
                   min_clearance, Binning((0.05, 0.08, 0.11)), "m (min clearance)", ALL),
        Preference("move_higher", Tier.MOTION, "Move higher when carrying",
                   "The cat likes to swipe at things passing low over the table.",
                   carry_height, Binning((0.20, 0.24, 0.27)), "m (max carry height)", ALL,
                   conflicts=("close_to_ground",)),
        Preference("close_to_ground", Tier.MOTION, "Stay close to the table when carrying",
                   "If it slips, it should not fall far.",
                   carry_height, Binning((0.12, 0.09, 0.07), higher_is_better=False), "m (max carry height)",
                   ("mat",), conflicts=("move_higher",)),
        Preference("rotate_when_placing", Tier.SKILL, "Rotate it a quarter turn when placing",
                   "It should face the other way when it lands.",
                   carry_rotation_deg, Binning((20.0, 45.0, 75.0)), "deg (carry yaw change)", ALL),
        Preference("push", Tier.SKILL, "Push it instead of lifting it",
                   "The gripper pads are worn, so don't lift anything.",
                   lift_height, Binning((0.04, 0.02, 0.01), higher_is_better=False), "m (object lift)", ("mat",),
                   conflicts=("move_higher",)),
        Preference("grasp_by_handle", Tier.SKILL, "Pick it up by the handle",
                   "The head just came out of the hot oven, too hot to touch.",
                   grasp_handle_distance, Binning((0.08, 0.05, 0.03), higher_is_better=False),
                   "m (grasp to handle centre)", ("handle",)),
        Preference("prefer_red", Tier.USER_PROFILE, "Prefer the red one", "Red is my favourite colour.",
                   _picked_attribute(_is_colour("red")), BINARY, "picked red", BLOCK_MISSIONS,
                   conflicts=("prefer_blue", "prefer_bigger")),
        Preference("prefer_blue", Tier.USER_PROFILE, "Prefer the blue one", "Blue matches my kitchen.",
                   _picked_attribute(_is_colour("blue")), BINARY, "picked blue", BLOCK_MISSIONS,
                   conflicts=("prefer_red", "prefer_smaller")),
        Preference("prefer_bigger", Tier.USER_PROFILE, "Prefer the bigger one", "I need the chunky one as the base of my tower.",
                   _picked_attribute(_is_biggest), BINARY, "picked biggest", BLOCK_MISSIONS,
                   conflicts=("prefer_smaller", "prefer_red")),
        Preference("prefer_smaller", Tier.USER_PROFILE, "Prefer the smaller one", "There is only a little space left for it.",
                   _picked_attribute(_is_smallest), BINARY, "picked smallest", BLOCK_MISSIONS,
                   conflicts=("prefer_bigger", "prefer_blue")),
    ]
}


def get(pref_id: str) -> Preference:
    try:
        return PREFERENCES[pref_id]
    except KeyError:
        raise KeyError(f"unknown preference {pref_id!r} (known: {', '.join(PREFERENCES)})") from None


def by_tier(tier: Tier | str) -> list[Preference]:
    return [p for p in PREFERENCES.values() if p.tier == Tier(tier)]


# -- prompts -----------------------------------------------------------------------------


def prompt(task: str, prefs: list[str] | tuple[str, ...] = (), layout: Layout | None = None,
           contextual: bool = False) -> str:
    """``Task: {task}. Preference: {preference}.`` (explicit) or the ComprePref contextual rewrite."""
    task = task.rstrip(".")
    if not prefs:
        return f"Task: {task}."
    if contextual:
        return f"Task: {task}. " + " ".join(get(p).context_text(layout) for p in prefs)
    return f"Task: {task}. Preference: " + "; ".join(get(p).text(layout) for p in prefs) + "."

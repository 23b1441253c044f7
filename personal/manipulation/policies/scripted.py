"""OracleScriptedPolicy: the built-in preference-aware reference policy.

An ORACLE: it plans from the episode layout (true object poses, ``oracle/layout``), closes the
loop on the end-effector state (and, for pushing, on the live object positions ``oracle/objects``
when given), and ignores the images. The prompt is parsed by a keyword
lexicon (``parse_prompt``) into preference ids; each preference shapes the skill plan:

- motion: speed (speed_up/slow_down), velocity ramps (smooth), carry height (move_higher /
  close_to_ground), detours around the obstacle (keep_away);
- skill: pick vs push, a quarter turn while carrying (rotate_when_placing);
- user profile: which candidate to pick (prefer_red/blue/bigger/smaller).

Conflicts: the task always wins; of two conflicting preferences the first stated is followed.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass

import numpy as np

from personal.manipulation import preferences as P
from personal.manipulation.layout import Layout, ObjectSpec
from personal.manipulation.policies.base import ObservationError, Policy, axis_angle_to_yaw, validate_observation
from personal.manipulation.trajectory import DT

POS_SCALE = 0.05  # m per step at action 1 (robosuite OSC delta output_max)
ROT_SCALE = 0.5  # rad per step at action 1
KP = 2.0  # set-point tracking gain

# Explicit phrasings and the ComprePref contextual cues (the lexicon covers the rewrite vocabulary
# in preferences.py, so ComprePref is not a generalisation test for this policy).
LEXICON: dict[str, list[str]] = {
    "speed_up": [r"\bfast", r"\bquick", r"hurry", r"speed up", r"immediately", r"right away"],
    "slow_down": [r"\bslow", r"asleep", r"no rush", r"careful(ly)?\b(?! not)"],
    "smooth": [r"sudden", r"smooth", r"jerk", r"gentl"],
    "keep_away": [r"keep away", r"away from", r"fragile", r"don't touch the", r"avoid the"],
    "move_higher": [r"\bhigher\b", r"\bhigh\b", r"swipe", r"lift it well"],
    "close_to_ground": [r"close to the (table|ground)", r"\blow\b", r"fall far", r"stay low"],
    "rotate_when_placing": [r"rotate", r"quarter turn", r"face the other way", r"turn it"],
    "grasp_by_handle": [r"handle", r"too hot to touch"],
    "push": [r"\bpush", r"slide", r"don't lift", r"instead of lifting", r"pads are worn"],
    "prefer_red": [r"\bred\b"],
    "prefer_blue": [r"\bblue\b"],
    "prefer_bigger": [r"\bbig", r"\blarge", r"chunky"],
    "prefer_smaller": [r"\bsmall", r"\blittle\b"],
}


def parse_prompt(prompt: str) -> tuple[str, list[str]]:
    """``Task: X. Preference: Y.`` (or a contextual rewrite) -> (task, preference ids in order stated)."""
    text = prompt.strip()
    m = re.match(r"(?is)\s*task:\s*(.*?)\.\s*(.*)$", text)
    task, rest = (m.group(1), m.group(2)) if m else (text, "")
    rest = re.sub(r"(?i)^preference:\s*", "", rest).lower()
    found: list[tuple[int, str]] = []
    for pid, patterns in LEXICON.items():
        hits = [h.start() for pat in patterns for h in re.finditer(pat, rest)]
        if hits:
            found.append((min(hits), pid))
    return task, [pid for _, pid in sorted(found)]


def resolve_conflicts(prefs: list[str]) -> list[str]:
    kept: list[str] = []
    for p in prefs:
        if not any(p in P.get(k).conflicts or k in P.get(p).conflicts for k in kept):
            kept.append(p)
    return kept


@dataclass
class Style:
    speed: float = 0.20  # m/s cruise
    accel: float = float("inf")  # m/s^2 ramp limit (inf = step changes)
    carry_z: float = 0.15  # eef height above the table while moving
    clearance: float = 0.04  # min eef-to-obstacle distance the planner keeps
    close_steps: int = 12
    open_steps: int = 8
    rotate: float = 0.0  # yaw change while carrying (rad)
    push: bool = False
    by_handle: bool = False
    tol_scale: float = 1.0  # hurried: accept waypoints sooner (less settling)


def style_for(prefs: list[str]) -> Style:
    s = Style()
    if "speed_up" in prefs:
        s.speed, s.close_steps, s.open_steps, s.tol_scale = 0.55, 5, 3, 2.0
    if "slow_down" in prefs:
        s.speed, s.close_steps, s.open_steps = 0.07, 14, 10
    if "smooth" in prefs:
        s.accel = 0.4
    if "move_higher" in prefs:
        s.carry_z = 0.30
    if "close_to_ground" in prefs:
        s.carry_z = 0.06
    if "keep_away" in prefs:
        s.clearance = 0.15
    if "rotate_when_placing" in prefs:
        s.rotate = np.pi / 2
    if "push" in prefs:
        s.push = True
    if "grasp_by_handle" in prefs:
        s.by_handle = True
    return s


def choose_object(layout: Layout, prefs: list[str], start_xy: np.ndarray) -> ObjectSpec:
    cands = layout.candidates
    for p in prefs:
        if p == "prefer_red":
            return next((c for c in cands if c.colour == "red"), cands[0])
        if p == "prefer_blue":
            return next((c for c in cands if c.colour == "blue"), cands[0])
        if p == "prefer_bigger":
            return max(cands, key=lambda c: c.volume)
        if p == "prefer_smaller":
            return min(cands, key=lambda c: c.volume)
    return min(cands, key=lambda c: float(np.linalg.norm(np.array(c.pos[:2]) - start_xy)))  # nearest


@dataclass
class Waypoint:
    pos: np.ndarray
    yaw: float
    grip: float  # -1 open, +1 closed
    hold: int = 0  # steps to wait once reached
    tol: float = 0.01
    push: tuple | None = None  # (object, goal xy, half size): closed-loop push while ``oracle/objects`` is given


def _detour(a: np.ndarray, b: np.ndarray, obs: ObjectSpec | None, clearance: float) -> list[np.ndarray]:
    """Via points (at the segment's height) so the xy segment a->b keeps ``clearance`` from ``obs``."""
    if obs is None or min(a[2], b[2]) - (obs.pos[2] + obs.half_size[2]) >= clearance:
        return []
    c = np.array(obs.pos[:2])
    need = obs.half_size[0] * 1.42 + clearance  # AABB corner radius + clearance
    ab = b[:2] - a[:2]
    L = float(np.linalg.norm(ab))
    if L < 1e-6:
        return []
    t = float(np.clip(np.dot(c - a[:2], ab) / L**2, 0.0, 1.0))
    closest = a[:2] + t * ab
    dist = float(np.linalg.norm(c - closest))
    if dist >= need or t in (0.0, 1.0):
        return []
    n = np.array([-ab[1], ab[0]]) / L
    side = 1.0 if np.dot(closest - c, n) >= 0 else -1.0
    # two via points beside the obstacle, before and after it along the segment
    u = ab / L
    z = max(a[2], b[2])
    return [np.array([*(c + side * n * need * 1.05 - u * need * 0.7), z]),
            np.array([*(c + side * n * need * 1.05 + u * need * 0.7), z])]


def plan(layout: Layout, prefs: list[str], eef: np.ndarray, yaw0: float) -> tuple[list[Waypoint], Style, str]:
    style = style_for(prefs)
    obj = choose_object(layout, prefs, eef[:2])
    rec = layout.get(layout.target)
    tz = layout.table_z
    obs = layout.obstacle
    o = np.array(obj.pos, float)
    high = tz + style.carry_z
    # eef height that holds a block at its centre; release just above the receptacle surface
    release_z = tz + (0.01 + obj.half_size[2] + 0.03 if rec.shape == "bin" else 2 * rec.half_size[2] + obj.half_size[2] + 0.004)
    goal = np.array([rec.pos[0], rec.pos[1], release_z])
    wps: list[Waypoint] = []

    def go(p, grip, yaw=yaw0, hold=0, tol=0.01, push=None):
        prev = wps[-1].pos if wps else eef
        for v in _detour(prev, np.asarray(p, float), obs, style.clearance):
            wps.append(Waypoint(v, yaw, grip))
        wps.append(Waypoint(np.asarray(p, float), yaw, grip, hold, tol * style.tol_scale, push))

    if style.push:
        u = goal[:2] - o[:2]
        u /= np.linalg.norm(u)
        behind = o[:2] - u * (obj.half_size[0] + 0.035)
        finish = goal[:2] - u * (obj.half_size[0] + 0.01)
        low = tz + 0.02
        go([*behind, max(high, tz + 0.12)], -1.0)
        go([*behind, max(high, tz + 0.12)], 1.0, hold=style.close_steps)
        go([*behind, low], 1.0)
        go([*finish, low], 1.0, tol=0.006, push=(obj.name, goal[:2].copy(), obj.half_size[0]))
        go([*finish, tz + 0.12], 1.0)
        return wps, style, obj.name

    # the plain skill grasps near the mass centre; grasp_by_handle takes the handle's grip point
    g = o + np.array(obj.handle_offset if (style.by_handle and obj.handle_offset) else obj.grasp_offset)
    goal[:2] += g[:2] - o[:2]  # keep the object centred over the receptacle
    grasp_z = g[2] + 0.005
    go([g[0], g[1], high], -1.0)
    go([g[0], g[1], grasp_z], -1.0, tol=0.006)
    go([g[0], g[1], grasp_z], 1.0, hold=style.close_steps)
    go([g[0], g[1], high], 1.0)
    go([goal[0], goal[1], high], 1.0, yaw=yaw0 + style.rotate, tol=0.015)
    go(goal, 1.0, yaw=yaw0 + style.rotate, tol=0.008)
    go(goal, -1.0, yaw=yaw0 + style.rotate, hold=style.open_steps)
    go([goal[0], goal[1], high], -1.0, yaw=yaw0 + style.rotate)
    return wps, style, obj.name


class OracleScriptedPolicy(Policy):
    """Skill-library policy shaped by the parsed preference (ORACLE: reads ``oracle/layout``)."""

    name = "oracle_scripted"

    def __init__(self, chunk: int = 1, **_ignored) -> None:
        self.chunk = max(1, int(chunk))
        self.reset()

    def reset(self) -> None:
        self._key = None
        self.waypoints: list[Waypoint] = []
        self.i = 0
        self.waited = 0
        self.vel = np.zeros(3)
        self.ref: np.ndarray | None = None
        self.ref_yaw = 0.0
        self.prefs: list[str] = []
        self.target_obj = ""

    def infer(self, obs: dict) -> dict:
        validate_observation(obs)
        if "oracle/layout" not in obs:
            raise ObservationError("OracleScriptedPolicy needs 'oracle/layout' (JSON of the episode layout)")
        state = np.asarray(obs["observation/state"], float)
        eef, yaw = state[:3], axis_angle_to_yaw(state[3:6])
        key = (obs["oracle/layout"], obs.get("prompt", ""))
        if key != self._key:
            self.reset()
            self._key = key
            try:
                layout = Layout.from_dict(json.loads(obs["oracle/layout"]))
            except (ValueError, TypeError) as exc:
                raise ObservationError(f"'oracle/layout' is not a valid layout: {exc}") from None
            _, parsed = parse_prompt(obs.get("prompt", ""))
            self.prefs = resolve_conflicts(parsed)
            self.waypoints, self.style, self.target_obj = plan(layout, self.prefs, eef, yaw)
        self.objects = None
        if "oracle/objects" in obs:
            try:
                self.objects = {k: np.asarray(v, float) for k, v in json.loads(obs["oracle/objects"]).items()}
            except (ValueError, TypeError, AttributeError) as exc:
                raise ObservationError(f"'oracle/objects' must be JSON {{name: [x, y, z]}}: {exc}") from None
        # The policy is closed-loop (chunk 1 by default). A longer chunk is an open-loop look-ahead that
        # assumes the arm reaches each set-point; its internal clock advances by the whole chunk, so
        # clients should execute all of it (metadata ``action_horizon``). On robosuite, chunks of 5+
        # lose success (the controller lags the set-points), so evaluate it with chunk 1.
        actions = []
        for _ in range(self.chunk):
            actions.append(self._step(eef, yaw))
            eef, yaw = self.ref.copy(), self.ref_yaw
        return {"actions": np.array(actions, dtype=np.float32)}

    @property
    def metadata(self) -> dict:
        return {**super().metadata, "action_horizon": self.chunk, "oracle": True}

    def _step(self, eef: np.ndarray, yaw: float) -> np.ndarray:
        """Advance a virtual set-point along the plan at the style's speed and ramp, then command the
        controller toward it (a P term: the OSC reaches only part of each commanded delta per step)."""
        if self.ref is None:
            self.ref, self.ref_yaw = eef.copy(), yaw
        if self.i >= len(self.waypoints):
            last = self.waypoints[-1] if self.waypoints else None
            return self._command(eef, yaw, last.grip if last else -1.0)
        wp = self.waypoints[self.i]
        if wp.push is not None and self.objects is not None and wp.push[0] in self.objects:
            return self._push_step(eef, yaw, wp)
        err = wp.pos - self.ref
        dist = float(np.linalg.norm(err))
        yaw_err = float(wp.yaw - self.ref_yaw)
        arrived = dist < 1e-4 and abs(yaw_err) < 1e-3
        v_cmd = np.zeros(3) if arrived else self._velocity(err, dist)
        # ramp limit (smooth) applies to every change of velocity, stopping included
        dv = v_cmd - self.vel
        max_dv = self.style.accel * DT
        if np.linalg.norm(dv) > max_dv:
            dv *= max_dv / np.linalg.norm(dv)
        self.vel = self.vel + dv
        step = self.vel * DT
        self.ref = wp.pos.copy() if np.linalg.norm(step) >= dist else self.ref + step
        rot = self.style.speed * 4.0 * DT  # rad per step, scaled with the motion speed
        self.ref_yaw += float(np.clip(yaw_err, -rot, rot))
        if arrived and np.linalg.norm(wp.pos - eef) < wp.tol:
            self.waited += 1
            if self.waited > wp.hold:
                self.i, self.waited = self.i + 1, 0
        return self._command(eef, yaw, wp.grip)

    def _push_step(self, eef: np.ndarray, yaw: float, wp: Waypoint) -> np.ndarray:
        """Centre-seeking push: keep the fingers on the block's far side from the goal, aimed through its
        centre at the goal, so sideways drift of the block is corrected as it goes."""
        name, goal, half = wp.push
        block = self.objects[name]
        to_goal = goal - block[:2]
        if np.linalg.norm(to_goal) < 0.012:
            self.i, self.waited, self.vel = self.i + 1, 0, np.zeros(3)
            self.ref = eef.copy()
            return self._command(eef, yaw, wp.grip)
        u = to_goal / np.linalg.norm(to_goal)
        target = np.array([*(block[:2] - u * (half + 0.005)), wp.pos[2]])
        step = target - self.ref
        speed = min(self.style.speed, 0.08) * DT
        if np.linalg.norm(step) > speed:
            step *= speed / np.linalg.norm(step)
        self.ref = self.ref + step
        return self._command(eef, yaw, wp.grip)

    def _command(self, eef: np.ndarray, yaw: float, grip: float) -> np.ndarray:
        a = np.zeros(7)
        a[:3] = np.clip(KP * (self.ref - eef) / POS_SCALE, -1, 1)
        yaw_err = float(np.arctan2(np.sin(self.ref_yaw - yaw), np.cos(self.ref_yaw - yaw)))
        a[5] = np.clip(KP * yaw_err / ROT_SCALE, -1, 1)
        a[6] = grip
        return a

    def _velocity(self, err: np.ndarray, dist: float) -> np.ndarray:
        speed = self.style.speed
        if np.isfinite(self.style.accel):
            speed = min(speed, np.sqrt(2 * self.style.accel * dist))  # brake in time for the waypoint
        return err / max(dist, 1e-9) * speed

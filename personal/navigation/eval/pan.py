"""PersONAL Personalized Active Navigation (PAN) metrics and report (seed §V-C, Table IV).

Definitions (stated in every report):

- **Success**: the agent called STOP within ``SUCCESS_RADIUS_M`` = 1.0 m of a target
  object's *extent* — the horizontal distance from the stop position to the object's
  axis-aligned box footprint (PersONAL's public evaluator measures to the object's box, not
  to a view point; habitat-lab ObjectNav's 0.1 m-to-a-view-point rule is a different one).
  An episode that runs out of its 500 steps without STOP fails.
- **SPL** = S · L / max(P, L): L is the geodesic shortest-path length from the start to
  the success region (navigable cells within 1.0 m of a target's footprint) on the
  simulator's navigable grid; P the length the agent actually travelled.
- **DTG**: geodesic distance from the final position to that success region (0 inside it;
  habitat's ``distance_to_goal`` with every navigable cell of the region as a view point).
- **Steps**: actions taken, STOP included.

SR and SPL are reported in %, DTG in metres, per split and total, in Table IV's layout.
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Sequence

import numpy as np

from personal.world.model import SPLITS, Box, Episode, Scene
from personal.runs.output import save_figure, write_file

SUCCESS_RADIUS_M = 1.0
RELAXED_RADIUS_M = 1.5  # PersONAL's view point radius for large HM3D objects
MAX_STEPS = 500
COLUMNS = SPLITS + ("total",)
SUCCESS_STATEMENT = (
    f"Success = STOP within {SUCCESS_RADIUS_M:g} m of the target object's extent (horizontal distance from the "
    "stop position to the object's box footprint, PersONAL's public evaluator convention; not habitat ObjectNav's "
    f"0.1 m to a view point). Budget {MAX_STEPS} steps; no STOP = failure."
)

GRID_MEASURES = (
    "SPL = S·L/max(P, L) with L the geodesic shortest path (simulator navigable grid) from the start to the "
    f"success region (navigable cells within {SUCCESS_RADIUS_M:g} m of a target's footprint). DTG = geodesic "
    "distance from the end position to that region (0 inside). SR and SPL in %, DTG in m.")
VIEW_POINT_SUCCESS_STATEMENT = (
    f"Success = STOP within {SUCCESS_RADIUS_M:g} m of the target object (PersONAL): measured to the object's box when a "
    "scene model gives it, else horizontally to the goal's centre, with 1.5 m for a target whose view points reach "
    "beyond 1.0 m (PersONAL's relaxation for large HM3D objects). Not habitat ObjectNav's 0.1 m to a view point. "
    f"Budget {MAX_STEPS} steps; no STOP = failure.")
VIEW_POINT_MEASURES = (
    "DTG = habitat-sim pathfinder geodesic distance from the end position to the nearest view point of a target "
    "(habitat-lab DistanceToGoal, VIEW_POINTS); SPL = S·L/max(P, L) with L the same geodesic from the start. "
    "SR and SPL in %, DTG in m.")

# Seed Table IV (HM3D, real perception) for reference.
PAPER_TABLE_IV = {
    "Human": [(70.21, 49.20, 1.26), (65.22, 40.05, 1.40), (60.13, 35.31, 1.32), (63.54, 41.34, 1.48)],
    "Human w. env. memory†": [(89.00, 58.12, 0.84), (86.00, 55.00, 1.10), (82.00, 53.20, 0.98), (86.00, 52.18, 1.03)],
    "Random": [(0.01, 0.00, 6.02), (0.05, 0.00, 6.98), (0.01, 0.00, 0.00), (0.00, 0.00, 8.20)],
    "VLFM": [(12.50, 6.00, 5.21), (10.49, 4.00, 5.18), (7.82, 1.00, 5.03), (9.88, 6.00, 5.03)],
    "OneMap": [(38.17, 29.00, 3.04), (28.61, 21.00, 3.75), (20.00, 16.00, 4.68), (28.93, 22.00, 3.82)],
}


# -- per-episode metrics -------------------------------------------------------------------


def path_length(poses: Sequence[Sequence[float]]) -> float:
    """Metres travelled along consecutive (x, y, ...) poses."""
    return float(sum(math.hypot(b[0] - a[0], b[1] - a[1]) for a, b in zip(poses, poses[1:])))


def distance_to_boxes(x: float, y: float, boxes: Sequence[Box]) -> float:
    """Horizontal distance from (x, y) to the nearest box footprint (0 inside); inf if none."""
    return min((b.distance_2d(x, y) for b in boxes), default=math.inf)


def is_success(stopped: bool, x: float, y: float, boxes: Sequence[Box], radius: float = SUCCESS_RADIUS_M) -> bool:
    return bool(stopped) and distance_to_boxes(x, y, boxes) <= radius


def spl(success: bool, shortest: float, taken: float) -> float:
    """S · L / max(P, L); 0 for a failure or an unreachable goal (L = inf/NaN)."""
    if not success or not math.isfinite(shortest) or shortest < 0:
        return 0.0
    denom = max(taken, shortest)
    return 1.0 if denom <= 0 else float(shortest / denom)


@dataclass
class PanEpisodeResult:
    episode_id: str
    scene_id: str
    split: str
    method: str
    success: bool
    spl: float
    dtg: float  # metres, geodesic to the success region at the end
    steps: int
    stopped: bool
    path_length: float
    geodesic_distance: float  # L
    stop_distance: float  # horizontal distance from the end position to the nearest target box
    collisions: int = 0
    guard_overrides: int = 0
    is_oracle: bool = False
    failure_reason: str = ""
    final_position: list[float] = field(default_factory=list)
    info: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "PanEpisodeResult":
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})


def score_episode(*, episode, method: str, poses: Sequence[Sequence[float]], stopped: bool, steps: int,
                  target_boxes: Sequence[Box], shortest: float, geodesic_to_goal: Callable[[float, float], float],
                  collisions: int = 0, guard_overrides: int = 0, is_oracle: bool = False, info: dict | None = None,
                  radius: float = SUCCESS_RADIUS_M) -> PanEpisodeResult:
    """Score one episode from its trajectory (``poses``: start, then after every action)."""
    if not poses:
        raise ValueError(f"episode {episode.episode_id}: empty trajectory")
    x, y = float(poses[-1][0]), float(poses[-1][1])
    ok = is_success(stopped, x, y, target_boxes, radius)
    taken = path_length(poses)
    reason = ""
    if not ok:
        if not stopped:
            reason = f"no STOP within {steps} steps"
        else:
            reason = f"stopped {distance_to_boxes(x, y, target_boxes):.2f} m from the nearest target (> {radius:g} m)"
    dtg = float(geodesic_to_goal(x, y))
    return PanEpisodeResult(
        episode_id=episode.episode_id, scene_id=episode.scene_id, split=episode.split, method=method, success=ok,
        spl=spl(ok, shortest, taken), dtg=dtg, steps=int(steps), stopped=bool(stopped), path_length=taken,
        geodesic_distance=float(shortest), stop_distance=distance_to_boxes(x, y, target_boxes), collisions=int(collisions),
        guard_overrides=int(guard_overrides), is_oracle=is_oracle, failure_reason=reason, final_position=[x, y],
        info=dict(info or {}),
    )


class GoalGeometry:
    """Ground-truth geometry of one episode from a simulator backend (for the evaluator only)."""

    def __init__(self, backend, episode, radius: float = SUCCESS_RADIUS_M) -> None:
        self.backend, self.episode, self.radius = backend, episode, radius
        scene = backend.scene
        self.boxes = [scene.object(o).box for o in episode.target_object_ids]
        self.shortest = float(backend.episode_goal_distance(episode, radius))

    def geodesic_to_goal(self, x: float, y: float) -> float:
        return float(self.backend.goal_distance(x, y, list(self.episode.target_object_ids), self.episode.floor_id, self.radius))

    def score(self, traj, method: str, is_oracle: bool, info: dict | None = None) -> PanEpisodeResult:
        """``score_episode`` of an in-process run (``personal.navigation.loop.Trajectory``) of this episode."""
        return score_episode(episode=self.episode, method=method, poses=traj.poses, stopped=traj.stopped,
                             steps=traj.steps, target_boxes=self.boxes, shortest=self.shortest,
                             geodesic_to_goal=self.geodesic_to_goal, collisions=sum(traj.collisions),
                             guard_overrides=traj.guard_overrides, is_oracle=is_oracle, info=info, radius=self.radius)


class ViewPointGoalGeometry:
    """Ground truth of one episode from its file's goals and habitat-sim's pathfinder (the
    Habitat backend), as habitat-lab's ObjectNav measures do with ``distance_to: VIEW_POINTS``:
    DTG is the geodesic distance to the nearest view point of a target, and SPL's L the same
    from the start (what the public files' ``info.geodesic_distance`` holds). Success stays
    PersONAL's: STOP within 1.0 m of the target object, measured to its box when a scene model
    knows it. HM3D files give only the object's centre; the authors kept view points within
    1.0 m of it, relaxed to 1.5 m for large objects (seed, "Dataset construction"), so there the
    radius is 1.5 m when a target's view points reach beyond 1.0 m, else 1.0 m, measured to the
    centre (horizontally)."""

    def __init__(self, backend, episode, scene=None, radius: float = SUCCESS_RADIUS_M) -> None:
        self.backend, self.episode, self.radius = backend, episode, radius
        self.view_points = episode.view_point_positions()
        if not self.view_points:
            raise ValueError(f"episode {episode.episode_id}: its targets have no view points in the episode file")
        if scene is not None:
            self.boxes = [scene.object(o).box for o in episode.target_object_ids]
            self.extent = "object box (scene model)"
        else:
            self.boxes = [Box(tuple(g.position), (0.0, 0.0, 0.0)) for g in episode.goals]
            reach = max(math.dist(v.position[:2], g.position[:2]) for g in episode.goals for v in g.view_points)
            if reach > radius:
                self.radius = RELAXED_RADIUS_M
            self.extent = f"goal centre (the file gives no extent), radius {self.radius:g} m"
        self.z = float(episode.start_position[2])
        self.shortest = float(backend.path_distance(episode.start_position, self.view_points))

    def geodesic_to_goal(self, x: float, y: float) -> float:
        return float(self.backend.path_distance((x, y, self.z), self.view_points))


def goal_geometry(backend, episode, scene=None):
    """The evaluator's ground truth for ``episode`` on ``backend``: view points and pathfinder
    geodesics on habitat-sim, the navigable grid's success region on the synthetic simulator."""
    if getattr(backend, "scores_with_view_points", False):
        return ViewPointGoalGeometry(backend, episode, scene)
    return GoalGeometry(backend, episode)


# -- aggregation -----------------------------------------------------------------------------


def episode_result(backend, episode: Episode, scene: Scene | None, poses: list, steps: int, stopped: bool) -> dict:
    """Payload of ``personal/msg/EpisodeResult`` for a finished episode (PersONAL's success,
    SPL and DTG from the simulator's ground truth), as the sim bridge publishes it."""
    geo = goal_geometry(backend, episode, scene)
    r = score_episode(episode=episode, method="", poses=poses, stopped=stopped, steps=steps, target_boxes=geo.boxes,
                      shortest=geo.shortest, geodesic_to_goal=geo.geodesic_to_goal, radius=geo.radius)
    L, P = r.geodesic_distance, r.path_length
    soft = 0.0  # habitat-lab's SoftSPL: (1 - DTG / L) weighted like SPL, success or not
    if math.isfinite(L) and L > 0 and math.isfinite(r.dtg):
        soft = max(0.0, 1.0 - r.dtg / L) * L / max(L, P)
    return {
        "episode_id": str(episode.episode_id), "scene_id": episode.scene_id, "split": episode.split,
        "success": bool(r.success), "spl": float(r.spl), "distance_to_goal": float(r.dtg), "soft_spl": float(soft),
        "path_length": float(r.path_length), "geodesic_distance": float(r.geodesic_distance), "steps": int(steps),
        "stopped": bool(stopped), "predicted_object_ids": [], "failure_reason": r.failure_reason,
    }


def _mean(values: list[float]) -> float | None:
    vals = [v for v in values if v is not None and math.isfinite(v)]
    return float(np.mean(vals)) if vals else None


def summarize(results: Iterable[PanEpisodeResult], methods: Sequence[str] | None = None) -> dict:
    """{"methods": {method: {split|total: {n, sr, spl, dtg, steps, stop_rate, collisions, dtg_inf}}}}.

    SR and SPL in %, DTG in metres (episodes whose DTG is infinite — end position off the
    navigable grid — are counted in ``dtg_inf`` and left out of the mean)."""
    results = list(results)
    methods = list(methods) if methods else list(dict.fromkeys(r.method for r in results))
    out: dict = {"methods": {}, "success_radius_m": SUCCESS_RADIUS_M, "success_definition": SUCCESS_STATEMENT}
    for m in methods:
        per = {}
        for col in COLUMNS:
            rs = [r for r in results if r.method == m and (col == "total" or r.split == col)]
            per[col] = {
                "n": len(rs),
                "sr": 100.0 * _mean([float(r.success) for r in rs]) if rs else None,
                "spl": 100.0 * _mean([r.spl for r in rs]) if rs else None,
                "dtg": _mean([r.dtg for r in rs]),
                "dtg_inf": sum(1 for r in rs if not math.isfinite(r.dtg)),
                "steps": _mean([float(r.steps) for r in rs]),
                "stop_rate": 100.0 * _mean([float(r.stopped) for r in rs]) if rs else None,
                "collisions": _mean([float(r.collisions) for r in rs]),
            }
        out["methods"][m] = per
    return out


def _f(v, digits: int = 2) -> str:
    return "–" if v is None else f"{v:.{digits}f}"


def table_iv(summary: dict, labels: dict[str, str] | None = None) -> list[str]:
    """Markdown table in Table IV's layout (SR↑ SPL↑ DTG↓ per split, then total)."""
    labels = labels or {}
    head = "| Method | " + " | ".join(f"{c.capitalize()} SR↑ | SPL↑ | DTG↓" for c in COLUMNS) + " |"
    sep = "|---|" + "---:|" * (3 * len(COLUMNS))
    rows = [head, sep]
    for m, per in summary["methods"].items():
        cells = []
        for c in COLUMNS:
            s = per[c]
            cells += [_f(s["sr"]), _f(s["spl"]), _f(s["dtg"])]
        rows.append(f"| {labels.get(m, m)} | " + " | ".join(cells) + " |")
    return rows


def paper_table() -> list[str]:
    head = "| Method (paper, HM3D) | " + " | ".join(f"{c.capitalize()} SR | SPL | DTG" for c in COLUMNS) + " |"
    rows = [head, "|---|" + "---:|" * (3 * len(COLUMNS))]
    for m, vals in PAPER_TABLE_IV.items():
        rows.append(f"| {m} | " + " | ".join(f"{a:.2f} | {b:.2f} | {c:.2f}" for a, b, c in vals) + " |")
    return rows


def ordering_check(summary: dict, random: str = "random-frontier", explorers: Sequence[str] = (), oracle: str = "oracle",
                   margin_pp: float = 10.0) -> tuple[bool | None, list[str]]:
    """Does the expected order hold on the total split: random ≪ value-map explorers ≤ oracle?"""
    meth = summary["methods"]
    lines, ok = [], True

    def sr(m):
        return (meth.get(m) or {}).get("total", {}).get("sr")

    r, o = sr(random), sr(oracle)
    for e in explorers:
        v = sr(e)
        if v is None or r is None:
            continue
        good = v >= r + margin_pp
        ok &= good
        lines.append(f"{e} total SR {v:.1f}% vs {random} {r:.1f}%: {'above by ≥' if good else 'NOT above by'} {margin_pp:g} pp")
        if o is not None:
            good_o = o >= v
            ok &= good_o
            lines.append(f"{oracle} total SR {o:.1f}% {'≥' if good_o else '<'} {e} {v:.1f}%")
    if not lines:
        return None, [f"not checked: needs {random} and at least one value-map explorer in the run"]
    return ok, lines


@dataclass
class PanUpperBound:
    """The run's value-map explorers with the ORACLE encoder (``label`` says how), for the report."""

    label: str
    results: list[PanEpisodeResult] = field(default_factory=list)
    error: str = ""  # why it could not be computed (the report says so)

    def summary(self, methods: Sequence[str] | None = None) -> dict:
        ms = [m for m in (methods or []) if any(r.method == m for r in self.results)] or None
        return {"label": self.label, "error": self.error,
                **({"methods": summarize(self.results, ms)["methods"]} if self.results else {})}


def headline(meta: dict) -> str:
    """The report's title: it names the encoder, and says ORACLE when the encoder reads ground truth."""
    enc = meta.get("encoder") or "unknown encoder"
    kind = ("ORACLE encoder (reads simulator ground truth)" if meta.get("encoder_is_oracle")
            else "learned encoder (no ground truth)")
    return f"PersONAL PAN evaluation — encoder {enc}, {kind}"


def write_report(out_dir: str | Path, results: Sequence[PanEpisodeResult], meta: dict, methods: Sequence[str],
                 labels: dict[str, str] | None = None, explorers: Sequence[str] = (), view_points: bool = False,
                 upper_bound: PanUpperBound | None = None) -> dict:
    """Write ``results.json``, ``summary.json`` and ``report.md``; returns the summary.
    ``view_points``: scored with :class:`ViewPointGoalGeometry` (habitat-sim), which the
    report's definitions then state. ``upper_bound``: the explorers with the ORACLE encoder,
    reported beside the run (labelled so) and kept in ``upper_bound/results.json``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    summary = summarize(results, methods)
    if upper_bound is not None:
        summary["upper_bound"] = upper_bound.summary(methods)
        (out / "upper_bound").mkdir(exist_ok=True)
        write_file(out / "upper_bound" / "results.json",
            json.dumps([r.to_dict() for r in upper_bound.results], indent=1, default=_json_default))
    if view_points:
        summary["success_definition"] = VIEW_POINT_SUCCESS_STATEMENT
        summary["measures_definition"] = VIEW_POINT_MEASURES
    summary["meta"] = meta
    holds, lines = ordering_check(summary, explorers=explorers)
    summary["ordering_holds"] = holds
    summary["ordering"] = lines
    write_file(out / "results.json", json.dumps([r.to_dict() for r in results], indent=1, default=_json_default))
    write_file(out / "summary.json", json.dumps(summary, indent=1, default=_json_default))
    write_file(out / "report.md", render_report(summary, results, labels or {}))
    return summary


def upper_bound_section(summary: dict, labels: dict[str, str]) -> list[str]:
    """The ORACLE-encoder upper bound's Table IV and learned / ORACLE SR (empty without one)."""
    ub = summary.get("upper_bound")
    if not ub:
        return []
    out = ["## ORACLE upper bound — not a method", "", f"{ub['label']}.", ""]
    if ub.get("error"):
        return out + [f"Not computed: {ub['error']}.", ""]
    out += table_iv({"methods": ub["methods"]}, {m: f"{labels.get(m, m)}, ORACLE encoder" for m in ub["methods"]}) + [""]
    out += ["| Method | learned total SR | ORACLE-encoder total SR | learned / ORACLE |", "|---|---:|---:|---:|"]
    for m, per in ub["methods"].items():
        mine = summary["methods"].get(m, {}).get("total", {}).get("sr")
        theirs = per["total"]["sr"]
        ratio = f"{100 * mine / theirs:.0f} %" if mine is not None and theirs else "–"
        out.append(f"| {labels.get(m, m)} | {_f(mine, 1)} | {_f(theirs, 1)} | {ratio} |")
    return out + [""]


def _json_default(o):
    if isinstance(o, (np.floating, np.integer)):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(type(o).__name__)


def render_report(summary: dict, results: Sequence[PanEpisodeResult], labels: dict[str, str]) -> str:
    meta = summary.get("meta", {})
    out = [f"# {headline(meta)}", "", f"**{summary.get('success_definition', SUCCESS_STATEMENT)}**", "",
           summary.get("measures_definition", GRID_MEASURES), ""]
    out += ["## Setup", ""] + [f"- {k}: {v}" for k, v in meta.items()] + [""]
    oracles = sorted({r.method for r in results if r.is_oracle})
    if oracles:
        out += [f"ORACLE rows ({', '.join(oracles)}) read simulator ground truth (true navigable map and target boxes): "
                "an upper bound in the spirit of the paper's *Human w. env. memory*, not a method.", ""]
    out += ["## Results (Table IV layout)", ""] + table_iv(summary, labels) + [""]
    out += ["Episodes per cell: " + ", ".join(f"{c}={next(iter(summary['methods'].values()))[c]['n']}" for c in COLUMNS)
            if summary["methods"] else "", ""]
    out += upper_bound_section(summary, labels)
    out += ["### Also measured (total)", "", "| Method | steps | STOP called (%) | collisions / episode | DTG = inf |", "|---|---:|---:|---:|---:|"]
    for m, per in summary["methods"].items():
        t = per["total"]
        out.append(f"| {labels.get(m, m)} | {_f(t['steps'], 1)} | {_f(t['stop_rate'], 1)} | {_f(t['collisions'], 1)} | {t['dtg_inf']} |")
    out += ["", "## Expected ordering (random ≪ value-map explorer ≤ oracle)", ""]
    out += [f"- {line}" for line in summary.get("ordering", [])]
    out += [f"- holds: **{summary.get('ordering_holds')}**", ""]
    out += ["## Paper (seed Table IV, HM3D, for reference — different scenes and perception)", ""] + paper_table() + [""]
    fails: dict[str, dict[str, int]] = {}
    for r in results:
        if not r.success:
            key = "no STOP" if not r.stopped else "stopped too far"
            fails.setdefault(r.method, {}).setdefault(key, 0)
            fails[r.method][key] += 1
    if fails:
        out += ["## Failures", ""] + [f"- {labels.get(m, m)}: " + ", ".join(f"{k} {v}" for k, v in d.items()) for m, d in fails.items()] + [""]
    out += ["Files: `results.json` (per episode × method), `summary.json`, `trajectories/*.png` (sampled episodes).", ""]
    return "\n".join(out)


# -- plots --------------------------------------------------------------------------------


def plot_trajectory(path: str | Path, *, scene, episode, runs: dict[str, dict], labels: dict[str, str] | None = None,
                    occupancy: tuple[np.ndarray, object] | None = None) -> Path:
    """Top-down plot of one episode: walls and objects (ground truth), the agent's occupancy map
    (``occupancy`` = (state, GridGeometry), optional), the target boxes with their 1 m success
    outline, and per method the path, stop point (✓/✗) and detections.
    ``runs``: method -> {"poses": [...], "success": bool, "stopped": bool, "detections": [...]}."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyBboxPatch, Rectangle

    labels = labels or {}
    fig, ax = plt.subplots(figsize=(7, 7))
    if occupancy is not None:
        state, geo = occupancy
        img = np.full(state.shape, np.nan)
        img[state == 0] = 0.15
        img[state == 100] = 0.8
        x0, y0, x1, y1 = geo.bounds
        ax.imshow(img, origin="lower", extent=(x0, x1, y0, y1), cmap="Greys", vmin=0, vmax=1, interpolation="nearest", alpha=0.8)
    z = next((f.z for f in scene.floors if f.index == episode.floor_id), 0.0)
    for w in scene.walls:
        b = w.box
        if b.min[2] < z + 1.0 and b.max[2] > z:
            ax.add_patch(Rectangle((b.min[0], b.min[1]), b.size[0], b.size[1], color="#333", zorder=2))
    targets = set(episode.target_object_ids)
    for o in scene.objects:
        if o.floor != episode.floor_id:
            continue
        b = o.box
        is_t = o.object_id in targets
        same = o.category == episode.object_category and not is_t
        ec = "red" if is_t else ("orange" if same else "#999")
        ax.add_patch(Rectangle((b.min[0], b.min[1]), b.size[0], b.size[1], fill=is_t, fc="#ffb3b3" if is_t else "none",
                               ec=ec, lw=2 if (is_t or same) else 0.6, zorder=3))
        if is_t:
            r = SUCCESS_RADIUS_M
            ax.add_patch(FancyBboxPatch((b.min[0], b.min[1]), b.size[0], b.size[1], boxstyle=f"round,pad={r}",
                                        fill=False, ec="red", ls=":", lw=1.2, zorder=3))
    sx, sy, _ = episode.start_position
    ax.plot(sx, sy, "^", color="blue", ms=10, mec="k", zorder=6, label="start")
    for i, (m, run) in enumerate(runs.items()):
        poses = np.asarray(run["poses"], dtype=float)
        if len(poses) == 0:
            continue
        c = f"C{i}"
        ax.plot(poses[:, 0], poses[:, 1], "-", color=c, lw=1.5, alpha=0.85, zorder=5, label=labels.get(m, m))
        mark = "o" if run.get("success") else "X"
        ax.plot(poses[-1, 0], poses[-1, 1], mark, color=c, ms=11, mec="k", zorder=7)
        for d in run.get("detections", [])[-3:]:
            ax.plot(d["point"][0], d["point"][1], "*", color=c, ms=12, mec="k", zorder=7)
    x0, y0, x1, y1 = scene.bounds()
    ax.set_xlim(x0 - 0.5, x1 + 0.5)
    ax.set_ylim(y0 - 0.5, y1 + 0.5)
    ax.set_aspect("equal")
    ax.set_xlabel("x (m, map frame)")
    ax.set_ylabel("y (m)")
    ax.set_title(f"{episode.episode_id} [{episode.split}] {episode.query}\n"
                 "red = target (dotted: 1 m success outline), orange = same category; o = success stop, X = failure, * = detection",
                 fontsize=7)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # outside: never over the target
    save_figure(fig, path, dpi=80, bbox_inches="tight")
    plt.close(fig)
    return Path(path)


def load_results(run_dir: str | Path) -> list[PanEpisodeResult]:
    p = Path(run_dir) / "results.json"
    if not p.exists():
        raise FileNotFoundError(f"{p}: no PAN results (run `personal pan eval` first)")
    return [PanEpisodeResult.from_dict(d) for d in json.loads(p.read_text())]

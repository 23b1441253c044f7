"""PAN policies (ROS-free). Each maps (pose, collision flag, online maps) to a discrete action.

- ``random-frontier``: PersONAL's sanity baseline — drive to uniformly random reachable
  frontiers until the 500-step budget ends, then STOP where it stands.
- ``value-map`` (scorer ``qs`` | ``rpg`` | ``rpg-owner``): VLFM / OneMap-style explorer.
  Frontiers are ranked by the grounding value of the map around them minus a path-length
  cost; once a cell's grounded score passes ``threshold`` (with enough observation
  confidence), it plans a shortest path on the inflated occupancy grid to a reachable pose
  within ``stop_radius_m`` of that cell and STOPs there.
- ``oracle``: ORACLE "human with environment memory" upper bound — knows the true
  navigable map and the target objects, follows the geodesic shortest path to the nearest
  pose within ``stop_radius_m`` of a target and STOPs.

Actions are ints with ``personal.sim.backends.base.Action`` values (``Act`` here).
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass, replace

import numpy as np
from scipy import ndimage

from personal.mapping.exploration import Act
from personal.mapping.frontier import detect_frontiers
from personal.navigation.follower import PathFollower
from personal.navigation.planner import DistanceField, PlanGrid, disc, path_length
from personal.navigation.scoring import GroundingScorer, ScoreMaps, best_detection, cell_center
from personal.navigation.thresholds import ORACLE_THRESHOLDS, DetectionThresholds


@dataclass
class EpisodeSpec:
    """What the agent is told at the start of an episode (no map, no target location)."""

    episode_id: str
    query: str
    summary: str = ""
    owner: str = ""
    floor_z: float = 0.0
    floor: int = 0
    map_kept: bool = False  # a later request in the same home: the map of the earlier ones is kept


@dataclass
class StepInput:
    pose: tuple[float, float, float]  # x, y, yaw in the map frame
    step: int  # actions already taken this episode
    max_steps: int
    mapper: object | None = None  # personal.navigation.mapper.OnlineMapper


class NavPolicy:
    name = ""
    label = ""
    is_oracle = False
    needs_map = True  # occupancy from depth
    needs_features = False  # semantic feature map

    def reset(self, spec: EpisodeSpec) -> None:
        self.spec = spec
        self.info: dict = {}
        self.turn_left_hint = True

    def act(self, inp: StepInput) -> int:
        raise NotImplementedError


# -- frontier navigation shared by the exploring policies -----------------------------------


@dataclass
class ExploreConfig:
    agent_radius: float = 0.18
    plan_resolution: float = 0.1
    reach_m: float = 0.5  # a frontier is reached from a navigable cell this close
    min_frontier_cells: int = 4
    initial_spin: bool = True
    turn_deg: float = 30.0
    forward_m: float = 0.25
    blacklist_m: float = 0.5


@dataclass
class _Goal:
    kind: str  # "frontier" | "target"
    point: tuple[float, float]  # the frontier cell / detected cell it serves
    path: list[tuple[float, float]]
    utility: float = 0.0
    budget: int = 0
    steps: int = 0


class FrontierPolicy(NavPolicy):
    """Shared machinery: planning grid, frontier costs, goal following, blacklists."""

    def __init__(self, config: ExploreConfig | None = None, follower: PathFollower | None = None) -> None:
        self.cfg = config or ExploreConfig()
        self.follower = follower or PathFollower(turn_deg=self.cfg.turn_deg, forward_m=self.cfg.forward_m)

    def reset(self, spec: EpisodeSpec) -> None:
        super().reset(spec)
        self.goal: _Goal | None = None
        self._grid: PlanGrid | None = None
        self.blacklist: list[tuple[float, float]] = []
        self._spin_left = int(round(360.0 / self.cfg.turn_deg)) if self.cfg.initial_spin else 0
        self.info = {"frontier_goals": 0, "blacklisted": 0}

    # -- planning ---------------------------------------------------------------------------
    def _plan(self, mapper, x: float, y: float) -> tuple[PlanGrid, DistanceField | None, np.ndarray]:
        state = mapper.state()
        grid = PlanGrid(state, mapper.occupancy.geometry, agent_radius=self.cfg.agent_radius,
                        resolution=self.cfg.plan_resolution)
        self._grid = grid
        return grid, grid.distances_from(x, y), state

    def _frontier_costs(self, grid: PlanGrid, field: DistanceField, state: np.ndarray, geometry):
        """(frontiers, per-frontier path cost to within reach, argmin cell per frontier (fine (r, c)))."""
        frontiers, _ = detect_frontiers(state, geometry, self.cfg.min_frontier_cells)
        if not frontiers:
            return [], np.zeros(0), []
        near = ndimage.minimum_filter(field.dist, footprint=disc(self.cfg.reach_m / grid.geo.resolution),
                                      mode="constant", cval=np.inf)
        costs, best = [], []
        for f in frontiers:
            rc = f.cells
            keep = np.ones(len(rc), bool)
            if self.blacklist:
                xs, ys = geometry.center(rc[:, 0], rc[:, 1])
                for bx, by in self.blacklist:
                    keep &= (xs - bx) ** 2 + (ys - by) ** 2 > self.cfg.blacklist_m**2
            if not keep.any():
                costs.append(np.inf)
                best.append(None)
                continue
            c = near[rc[keep, 0] // grid.k, rc[keep, 1] // grid.k]
            j = int(np.argmin(c))
            costs.append(float(c[j]))
            best.append(tuple(rc[keep][j]))
        return frontiers, np.array(costs), best

    def _goal_near(self, grid: PlanGrid, field: DistanceField, point: tuple[float, float], radius: float):
        cell = field.nearest(grid.near([point], radius))
        return None if cell is None else field.path_to(cell)

    def _frontier_goal(self, grid, field, geometry, cell_rc, utility: float) -> _Goal | None:
        fx, fy = geometry.center(cell_rc[0], cell_rc[1])
        point = (float(fx), float(fy))
        path = self._goal_near(grid, field, point, self.cfg.reach_m)
        if path is None:
            return None
        steps = int(math.ceil(path_length(path) / self.cfg.forward_m))
        self.info["frontier_goals"] += 1
        return _Goal("frontier", point, path, utility, budget=3 * steps + 20)

    def _blacklist_goal(self) -> None:
        if self.goal is not None:
            self.blacklist.append(self.goal.point)
            self.info["blacklisted"] += 1
        self.goal = None

    def _follow(self, pose, path) -> int | None:
        a = self.follower.action(pose, path, self._grid.is_free if self._grid is not None else None)
        if a is not None:
            self.turn_left_hint = self.follower.heading_error(pose, path) >= 0
        return a

    def _spin(self) -> int | None:
        if self._spin_left > 0:
            self._spin_left -= 1
            self.turn_left_hint = True
            return int(Act.TURN_LEFT)
        return None

    def _drive_to_frontier(self, inp: StepInput, grid, field, state) -> int:
        """Follow (or pick, via ``_choose_frontier``) a frontier goal; spin in place when none is reachable."""
        x, y, yaw = inp.pose
        geometry = inp.mapper.occupancy.geometry
        for _ in range(4):
            if self.goal is None or self.goal.kind != "frontier":
                self.goal = self._choose_frontier(grid, field, state, geometry)
                if self.goal is None:
                    break
            g = self.goal
            g.steps += 1
            if g.steps > g.budget:
                self._blacklist_goal()
                continue
            path = self._goal_near(grid, field, g.point, self.cfg.reach_m) if field is not None else None
            if path is None or not _still_frontier(state, geometry, g.point):
                self.goal = None  # explored meanwhile or no longer reachable: choose again
                continue
            g.path = path
            a = self._follow(inp.pose, path)
            if a is not None:
                return a
            a = self.follower.face(inp.pose, g.point)
            if a is not None:
                return a
            self._blacklist_goal()  # standing at it, facing it, and it is still a frontier
        self.turn_left_hint = True
        return int(Act.TURN_LEFT)  # nothing reachable: look around (the map may open up)

    def _choose_frontier(self, grid, field, state, geometry) -> _Goal | None:
        raise NotImplementedError


def _still_frontier(state: np.ndarray, geometry, point, radius: float = 0.3) -> bool:
    from personal.mapping.frontier import frontier_mask

    cy, cx = geometry.cell(*point)
    k = max(1, int(math.ceil(radius / geometry.resolution)))
    win = state[max(cy - k - 1, 0) : cy + k + 2, max(cx - k - 1, 0) : cx + k + 2]
    return bool(win.size and frontier_mask(win)[1:-1, 1:-1].any())


# -- random frontier ----------------------------------------------------------------------


class RandomFrontierPolicy(FrontierPolicy):
    """Uniformly random reachable frontiers until the budget ends, then STOP (PersONAL §V-A)."""

    name, label = "random-frontier", "Random frontier"

    def __init__(self, seed: int = 0, **kw) -> None:
        super().__init__(**kw)
        self.seed = seed

    def reset(self, spec: EpisodeSpec) -> None:
        super().reset(spec)
        self.rng = random.Random(f"{self.seed}:{spec.episode_id}")

    def act(self, inp: StepInput) -> int:
        if inp.step >= inp.max_steps - 1:
            return int(Act.STOP)  # the budget's last action: stop where it stands
        a = self._spin()
        if a is not None:
            return a
        x, y, _ = inp.pose
        grid, field, state = self._plan(inp.mapper, x, y)
        return self._drive_to_frontier(inp, grid, field, state)

    def _choose_frontier(self, grid, field, state, geometry):
        if field is None:
            return None
        frontiers, costs, best = self._frontier_costs(grid, field, state, geometry)
        ok = [i for i in range(len(frontiers)) if np.isfinite(costs[i])]
        self.rng.shuffle(ok)
        for i in ok:
            g = self._frontier_goal(grid, field, geometry, best[i], 0.0)
            if g is not None:
                return g
        return None


# -- value-map explorer --------------------------------------------------------------------


@dataclass
class ValueMapConfig:
    threshold: float = ORACLE_THRESHOLDS.threshold  # grounded score (cosine) that counts as a detection; per encoder
    min_confidence: float = 2.0  # feature-map confidence of a detected cell (≈ pixels seen at full weight / 100)
    stop_radius_m: float = 0.6  # stop at a navigable pose this close to the detected cell's centre
    value_radius_m: float = 1.5  # a frontier's value: best guide score this close to it
    distance_weight: float = 0.05  # utility = value − weight · path metres
    hysteresis: float = 0.05  # switch frontier only for this much more utility
    target_budget_factor: float = 3.0
    # memory (a kept map): before exploring frontiers, look closely at remembered candidates —
    # cells seen by earlier requests whose grounded score comes within ``relook_margin`` of the
    # threshold (a cell seen from far blurs its object with the room, or lacks the confidence a
    # detection needs). None: off. At most ``relook_max`` of them, best first, 1 m apart.
    relook_margin: float | None = None
    relook_guide_floor: float | None = None  # also cells whose guide value (query / phrase likeness) reaches this
    relook_max: int = 4
    relook_radius_m: float = 1.0  # drive to a navigable pose this close, then face the cell
    # memory, then a fallback to exploring as if blind: with a kept map the home is already mapped,
    # so no frontier is left near the objects the earlier requests saw only from far. From step
    # ``reopen_after`` of the request, obstacle cells whose feature confidence is below
    # ``reopen_conf`` (seen, but poorly or long ago: a faded map) count as unknown for choosing
    # frontiers, so the explorer goes to look at them closely; planning still treats them as
    # obstacles. Cells with no feature at all stay known (a wall the encoder never scored would
    # be a frontier forever). None: off. ``reopen_new``: count only the confidence gained during
    # this request (as if blind: every remembered object must be seen again), not the total.
    reopen_conf: float | None = None
    reopen_after: int = 0
    reopen_new: bool = False
    # the whole fallback: from step ``blind_after`` of a request on a kept map, frontiers are those
    # of what THIS request has seen (``OccupancyGrid.recent``), as a blind start would have them;
    # remembered detections still come first and planning still uses the whole map. None: off.
    blind_after: int | None = None


class ValueMapExplorer(FrontierPolicy):
    """Frontiers ranked by query-grounding value; detect → shortest path → STOP."""

    name = "value-map"
    needs_features = True

    def __init__(self, scorer: GroundingScorer, embed, extractor=None, config: ValueMapConfig | None = None, **kw) -> None:
        super().__init__(**kw)
        self.scorer = scorer
        self.embed = embed
        self.extractor = extractor
        self.vcfg = config or ValueMapConfig()
        self.name = f"value-map-{scorer.method}"
        self.label = {"qs": "Value-map explorer (QS)", "rpg": "Value-map explorer (RPG)",
                      "rpg-owner": "Value-map explorer (RPG-owner)"}[scorer.method]

    def reset(self, spec: EpisodeSpec) -> None:
        super().reset(spec)
        self.scorer.prepare(spec.query, spec.summary, spec.owner, self.embed, self.extractor)
        self.target_blacklist: list[tuple[float, float]] = []
        self.info.update({"detections": [], "scorer_failure": self.scorer.failure, "stop_reason": ""})
        self.last_maps: ScoreMaps | None = None
        self._relooks: list[tuple[float, float]] | None = None  # chosen on first need (kept map only)
        self._conf0 = None  # (feature confidence, its geometry) at the request's first step (reopen_new)

    def act(self, inp: StepInput) -> int:
        x, y, _ = inp.pose
        fm = inp.mapper.feature_map
        if self.vcfg.reopen_new and self._conf0 is None and fm is not None and getattr(self.spec, "map_kept", False):
            self._conf0 = (fm.confidence.copy(), fm.geometry)  # what the earlier requests left (first frame: now)
        maps = self.scorer.maps(fm)
        self.last_maps = maps
        if maps is not None and maps.failure and not self.info.get("scorer_failure"):
            self.info["scorer_failure"] = maps.failure
        grid, field, state = self._plan(inp.mapper, x, y)
        if field is not None and maps is not None:
            a = self._pursue_target(inp, grid, field, maps)
            if a is not None:
                return a
        a = self._spin()
        if a is not None:
            return a
        if field is not None and maps is not None:
            a = self._relook(inp, grid, field, maps)
            if a is not None:
                return a
        return self._drive_to_frontier(inp, grid, field, self._reopened(inp, state))

    def _reopened(self, inp: StepInput, state: np.ndarray) -> np.ndarray:
        """The occupancy state for choosing frontiers: with a kept map and ``reopen_conf`` set,
        poorly seen obstacle cells become unknown again (see ``ValueMapConfig.reopen_conf``)."""
        v = self.vcfg
        kept = getattr(self.spec, "map_kept", False)
        if kept and v.blind_after is not None and inp.step >= v.blind_after:
            state = as_if_blind(state, inp.mapper.occupancy.recent)
            self.info.setdefault("blind_from_step", inp.step)
        if v.reopen_conf is None or not kept or inp.step < v.reopen_after:
            return state
        out = reopen_poorly_seen(state, inp.mapper.occupancy.geometry, inp.mapper.feature_map, v.reopen_conf,
                                 before=self._conf0)
        self.info["reopened_cells"] = max(self.info.get("reopened_cells", 0), int((out != state).sum()))
        return out

    # -- memory: look again at remembered candidates ----------------------------------------
    def _relook(self, inp: StepInput, grid, field, maps: ScoreMaps) -> int | None:
        """With a kept map, drive close to each remembered candidate (chosen once, after the
        initial look-around) and face it, so its cells are seen closely; None when none is left."""
        v = self.vcfg
        if self._relooks is None:
            self._relooks = []
            if getattr(self.spec, "map_kept", False):
                if v.relook_margin is not None:
                    self._relooks += relook_candidates(maps, v.threshold - v.relook_margin, v.relook_max,
                                                       exclude=self.target_blacklist)
                if v.relook_guide_floor is not None:
                    self._relooks += relook_candidates(maps, v.relook_guide_floor, v.relook_max - len(self._relooks),
                                                       exclude=self.target_blacklist + self._relooks, score="guide")
            self.info["relook_candidates"] = [[round(x, 2), round(y, 2)] for x, y in self._relooks]
        while self._relooks:
            point = self._relooks[0]
            path = self._goal_near(grid, field, point, v.relook_radius_m)
            if path is not None and (self.goal is None or self.goal.kind != "relook" or self.goal.point != point):
                steps = int(math.ceil(path_length(path) / self.cfg.forward_m))
                self.goal = _Goal("relook", point, path, budget=3 * steps + 20)
            g = self.goal
            if path is None or g is None or g.kind != "relook":
                self._relooks.pop(0)  # not reachable through known space
                continue
            g.path, g.steps = path, g.steps + 1
            a = self._follow(inp.pose, path) if g.steps <= g.budget else None
            if a is None and g.steps <= g.budget:
                a = self.follower.face(inp.pose, point)
            if a is not None:
                return a
            self._relooks.pop(0)  # looked at from close by (or out of budget)
            self.goal = None
            self.info["relooked"] = self.info.get("relooked", 0) + 1
        return None

    # -- target ------------------------------------------------------------------------
    def _pursue_target(self, inp: StepInput, grid, field, maps: ScoreMaps) -> int | None:
        v = self.vcfg
        det = best_detection(maps, v.threshold, v.min_confidence, exclude=self.target_blacklist)
        if det is None:
            if self.goal is not None and self.goal.kind == "target":
                self.goal = None  # the evidence faded (more views of that cell)
            return None
        point, score = det
        path = self._goal_near(grid, field, point, v.stop_radius_m)
        if path is None:
            return None  # seen but not yet reachable through known space: keep exploring
        if self.goal is None or self.goal.kind != "target" or math.dist(self.goal.point, point) > 0.3:
            steps = int(math.ceil(path_length(path) / self.cfg.forward_m))
            self.goal = _Goal("target", point, path, score, budget=int(v.target_budget_factor * steps) + 20)
            self.info["detections"].append({"step": inp.step, "point": [round(point[0], 2), round(point[1], 2)],
                                            "score": round(score, 3)})
        g = self.goal
        g.path, g.steps = path, g.steps + 1
        if g.steps > g.budget:
            self.target_blacklist.append(g.point)
            self.goal = None
            return None
        a = self._follow(inp.pose, path)
        if a is None:
            self.info["stop_reason"] = f"detection {score:.2f} at ({point[0]:.2f}, {point[1]:.2f})"
            self.info["stop_point_target"] = list(point)
            return int(Act.STOP)
        return a

    def reject_target(self, point) -> None:
        """The verifier said the object at ``point`` is not the one asked for: never stop there
        again this episode (verify before stop, personal.navigation.verify_stop)."""
        self.target_blacklist.append(tuple(point))
        self.goal = None
        self.info.pop("stop_point_target", None)
        self.info["stop_reason"] = ""

    # -- frontiers -----------------------------------------------------------------------
    def _frontier_values(self, frontiers, geometry, maps: ScoreMaps | None) -> np.ndarray:
        if maps is None:
            return np.zeros(len(frontiers))
        g = np.nan_to_num(maps.guide, nan=0.0, neginf=0.0)
        g = ndimage.maximum_filter(g, footprint=disc(self.vcfg.value_radius_m / maps.resolution), mode="constant", cval=0.0)
        vals = []
        for f in frontiers:
            xs, ys = geometry.center(f.cells[:, 0], f.cells[:, 1])
            c = np.floor((xs - maps.origin[0]) / maps.resolution).astype(int)
            r = np.floor((ys - maps.origin[1]) / maps.resolution).astype(int)
            ok = (r >= 0) & (c >= 0) & (r < g.shape[0]) & (c < g.shape[1])
            vals.append(float(g[r[ok], c[ok]].max()) if ok.any() else 0.0)
        return np.array(vals)

    def _choose_frontier(self, grid, field, state, geometry):
        if field is None:
            return None
        frontiers, costs, best = self._frontier_costs(grid, field, state, geometry)
        if not frontiers:
            return None
        util = self._frontier_values(frontiers, geometry, self.last_maps) - self.vcfg.distance_weight * costs
        for i in np.argsort(-util):
            if not np.isfinite(util[i]):
                break
            g = self._frontier_goal(grid, field, geometry, best[i], float(util[i]))
            if g is not None:
                return g
        return None


def as_if_blind(state: np.ndarray, recent: np.ndarray) -> np.ndarray:
    """A copy of ``state`` that is UNKNOWN wherever ``recent`` (cells this request observed) is
    False: its frontiers are the edge of what the request itself has seen."""
    from personal.mapping.occupancy import UNKNOWN

    if recent.shape != state.shape:
        raise ValueError(f"recent mask {recent.shape} does not match the occupancy state {state.shape}")
    return np.where(recent, state, np.int8(UNKNOWN)).astype(state.dtype)


def reopen_poorly_seen(state: np.ndarray, geometry, feature_map, floor: float, before=None) -> np.ndarray:
    """A copy of ``state`` in which OCCUPIED cells whose feature-map cell has a confidence in
    (0, ``floor``) are UNKNOWN (the free cells next to them become frontiers). ``before``:
    (confidence, geometry) of an earlier moment; then the confidence gained since is compared."""
    from personal.mapping.occupancy import OCCUPIED, UNKNOWN

    if feature_map is None:
        return state
    rows, cols = np.nonzero(state == OCCUPIED)
    if not len(rows):
        return state
    xs, ys = geometry.center(rows, cols)
    fr, fc = feature_map.geometry.cells(np.stack([xs, ys], 1))
    ok = feature_map.geometry.inside(fr, fc)
    conf = np.zeros(len(rows), np.float32)
    conf[ok] = feature_map.confidence[fr[ok], fc[ok]]
    gained = conf.copy()
    if before is not None:
        c0, g0 = before
        br, bc = g0.cells(np.stack([xs, ys], 1))
        ok0 = g0.inside(br, bc)  # g0 is the geometry c0 was copied with
        gained[ok0] -= c0[br[ok0], bc[ok0]]
    poor = (conf > 0) & (gained < floor)
    out = state.copy()
    out[rows[poor], cols[poor]] = UNKNOWN
    return out


def relook_candidates(maps: ScoreMaps, floor: float, max_n: int, exclude=(), spacing_m: float = 1.0,
                      score: str = "detect") -> list[tuple[float, float]]:
    """Centres of up to ``max_n`` cells whose ``score`` map (``detect``: grounded score; ``guide``:
    the value map) is ≥ ``floor``, best first, at least ``spacing_m`` apart and away from
    ``exclude`` points (0.5 m)."""
    a = maps.detect if score == "detect" else maps.guide
    s = np.where(np.isfinite(a), a, -np.inf)
    k = int(math.ceil(spacing_m / maps.resolution))
    kx = int(math.ceil(0.5 / maps.resolution))
    for ex in exclude:
        r, c = _score_cell(maps, ex)
        s[max(r - kx, 0) : r + kx + 1, max(c - kx, 0) : c + kx + 1] = -np.inf
    out: list[tuple[float, float]] = []
    while len(out) < max_n:
        i = int(np.argmax(s))
        if not np.isfinite(s.flat[i]) or s.flat[i] < floor:
            break
        r, c = divmod(i, s.shape[1])
        out.append(cell_center(maps, r, c))
        s[max(r - k, 0) : r + k + 1, max(c - k, 0) : c + k + 1] = -np.inf
    return out


def _score_cell(maps: ScoreMaps, xy) -> tuple[int, int]:
    return int(math.floor((xy[1] - maps.origin[1]) / maps.resolution)), int(math.floor((xy[0] - maps.origin[0]) / maps.resolution))


# -- oracle ------------------------------------------------------------------------------


class OraclePolicy(NavPolicy):
    """ORACLE "human with environment memory": the true navigable grid of the scene
    (``personal.sim.navgrid.NavGrid``) and the target boxes are given; it follows the geodesic
    shortest path to the nearest pose within ``stop_radius_m`` of a target and STOPs."""

    name, label = "oracle", "ORACLE human w. env. memory (GT map + target)"
    is_oracle = True
    needs_map = False

    def __init__(self, stop_radius_m: float = 0.8, follower: PathFollower | None = None) -> None:
        self.stop_radius_m = stop_radius_m
        self.follower = follower or PathFollower()

    def set_ground_truth(self, navgrid, target_boxes) -> None:
        """ORACLE input: the scene's navigable grid and the target objects' boxes."""
        self.navgrid = navgrid
        self.goal_cells = navgrid.cells_near_boxes(list(target_boxes), self.stop_radius_m)

    def reset(self, spec: EpisodeSpec) -> None:
        super().reset(spec)
        if getattr(self, "navgrid", None) is None:
            raise RuntimeError("OraclePolicy needs set_ground_truth(navgrid, target_boxes) before reset")
        self.info = {"stop_reason": ""}

    def _path(self, x: float, y: float) -> list[tuple[float, float]] | None:
        g = self.navgrid
        if len(self.goal_cells) == 0:
            return None
        dist, pred = g.distance_field(self.goal_cells)
        snapped = g.snap(x, y, 0.6)
        if snapped is None:
            return None
        iy, ix = g.cell(*snapped)
        node = iy * g.spec.nx + ix
        if not np.isfinite(dist[node]):
            return None
        goals = set(int(v) for v in self.goal_cells)
        path = []
        while node >= 0:
            path.append(g.cell_center(*divmod(int(node), g.spec.nx)))
            if node in goals:
                break
            node = int(pred[node])
        return path

    def act(self, inp: StepInput) -> int:
        x, y, _ = inp.pose
        path = self._path(x, y)
        if path is None:
            self.info["stop_reason"] = "no path to the target"
            return int(Act.STOP)
        a = self.follower.action(inp.pose, path, self.navgrid.is_navigable)
        if a is None:
            self.info["stop_reason"] = "at the target"
            return int(Act.STOP)
        self.turn_left_hint = self.follower.heading_error(inp.pose, path) >= 0
        return a


# -- registry ------------------------------------------------------------------------------

POLICIES = ("random-frontier", "value-map-qs", "value-map-rpg", "value-map-rpg-owner", "oracle")
DEFAULT_POLICIES = POLICIES


def make_policy(name: str, *, embed=None, extractor=None, seed: int = 0, value_config: ValueMapConfig | None = None,
                thresholds: DetectionThresholds | None = None) -> NavPolicy:
    """Build a policy by name. ``embed`` (a TextEmbedder) is needed by the value-map
    explorers, ``extractor`` (ownership phrases) by the RPG ones; ``thresholds`` (the
    encoder's detection pair, ``personal.navigation.thresholds.thresholds_for``) sets their
    detection threshold and phrase floor (default: the ORACLE encoder's). The ``oracle``
    still needs ``set_ground_truth`` per episode."""
    key = name.strip().lower()
    if key == "random-frontier":
        return RandomFrontierPolicy(seed=seed)
    if key == "oracle":
        return OraclePolicy()
    if key.startswith("value-map-") and key[len("value-map-"):] in ("qs", "rpg", "rpg-owner"):
        if embed is None:
            raise ValueError(f"policy {name!r} needs a text embedder (embed=...)")
        th = thresholds or ORACLE_THRESHOLDS
        method = key[len("value-map-"):]
        rule = th.rule(method)
        scorer = GroundingScorer(method, phrase_floor=rule.phrase_floor, relative_margin=rule.relative_margin)
        if scorer.method != "qs" and extractor is None:
            raise ValueError(f"policy {name!r} needs an ownership-phrase extractor (extractor=...)")
        cfg = replace(value_config or ValueMapConfig(), threshold=rule.threshold)
        explorer = ValueMapExplorer(scorer, embed, extractor, cfg)
        explorer.thresholds = th
        return explorer
    raise ValueError(f"unknown navigation policy {name!r} (known: {', '.join(POLICIES)})")


VERIFY_SUFFIX = "+verify"  # "value-map-rpg-owner+verify": verify before stop (personal.navigation.verify_stop)
LOOK_SUFFIX = "+look"  # "value-map-rpg-owner+look+verify": face the candidate (tilting down if need be) first


def split_verify(name: str) -> tuple[str, bool]:
    """``("value-map-rpg", True)`` for ``"value-map-rpg+verify"`` (and ``"value-map-rpg+look+verify"``);
    only value-map explorers stop on a detection."""
    if name.endswith(VERIFY_SUFFIX):
        base = name[: -len(VERIFY_SUFFIX)]
        base = base[: -len(LOOK_SUFFIX)] if base.endswith(LOOK_SUFFIX) else base
        if not base.startswith("value-map-"):
            raise ValueError(f"{name!r}: only the value-map explorers stop on a detection to verify")
        return base, True
    return name, False


def looks_before_verifying(name: str) -> bool:
    """Whether ``name`` (``...+look+verify``) faces the candidate, and tilts to it, before the verdict."""
    return name.endswith(LOOK_SUFFIX + VERIFY_SUFFIX)


def parse_policy_list(text) -> list[str]:
    names = [n.strip().lower() for n in (text.split(",") if isinstance(text, str) else text) if n.strip()]
    for n in names:
        if split_verify(n)[0] not in POLICIES:
            raise ValueError(f"unknown navigation policy {n!r} (known: {', '.join(POLICIES)}; "
                             f"a value-map explorer + '{VERIFY_SUFFIX}' verifies before it stops, "
                             f"+ '{LOOK_SUFFIX}{VERIFY_SUFFIX}' looks at the candidate first)")
    return names

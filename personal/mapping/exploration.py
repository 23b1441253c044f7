"""Frontier exploration producing discrete actions (PersONAL pre-exploration).

The policy reads the occupancy state (int8 -1/0/100 + grid geometry) and the agent pose,
picks the reachable frontier with the shortest path (Dijkstra on a coarsened, inflated
grid), and turns / moves forward along that path. It stops when no reachable frontier is
left or the step budget (2,500 in PersONAL) is spent. A collision leaves a virtual obstacle
ahead of the agent, so the next plan goes around it instead of into the same wall again.

Actions are the ints of ``personal.sim.backends.base.Action`` (not imported here so the
library stays free of the simulator's dependencies).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import dijkstra

from personal.mapping.frontier import Frontier, frontier_clusters, frontier_labels
from personal.mapping.grid import GridGeometry, snap_to_cell
from personal.mapping.occupancy import FREE, OCCUPIED
# the discrete action vocabulary (STOP, MOVE_FORWARD, TURN_LEFT/RIGHT, LOOK_UP/DOWN) is the simulator's, one enum
from personal.sim.backends.base import Action as Act


# the explore node's parameters: {name: (default, description)}
PARAMETERS = {
    "max_steps": (2500, "action budget (PersONAL pre-exploration: 2,500)"),
    "agent_radius": (0.18, "m, clearance for planning"),
    # a bound, not a pace: the loop acts as soon as the newest pose is mapped (a blocked move keeps the
    # pose, whose map is already there); waiting for every pose keeps exploration the same under any
    # load, so sharded and serial runs explore alike and a recorded run's replay maps the same frames
    "map_timeout": (60.0, "s to wait for the map of the newest pose before deciding on the latest map"),
    "start_timeout": (60.0, "s to wait for the first agent state and map before giving up"),
    "save_on_finish": (True, "call map/save when exploration ends"),
    "exit_on_finish": (True, "exit the process when exploration ends (ends the explore graph)"),
    "all_episodes": (False, "explore every episode of the bridge in turn (episode/next after each saved map), "
                            "one graph for several scenes"),
}


def map_matches_pose(status: dict, pose: tuple[float, float, float], grid_stamp_ns: int) -> bool:
    """Whether the mapping node's ``status`` (x, y, yaw, stamp_ns of its newest frame) is of ``pose``
    (within 2 cm and 2°) and the grid stamped ``grid_stamp_ns`` already includes that frame."""
    x, y, yaw = pose
    dyaw = abs((status["yaw"] - yaw + math.pi) % (2 * math.pi) - math.pi)
    if math.hypot(status["x"] - x, status["y"] - y) > 0.02 or dyaw > math.radians(2.0):
        return False
    return grid_stamp_ns >= int(status["stamp_ns"])




def wrap_angle(a: float) -> float:
    return (a + math.pi) % (2 * math.pi) - math.pi


@dataclass
class ExplorerConfig:
    max_steps: int = 2500  # PersONAL pre-exploration budget
    forward_m: float = 0.25
    turn_deg: float = 30.0
    agent_radius: float = 0.18
    plan_resolution: float = 0.1  # planning grid (coarsened occupancy)
    reach_m: float = 0.6  # a frontier counts as reached from a navigable cell this close
    goal_tolerance_m: float = 0.25
    lookahead_m: float = 0.5
    min_frontier_cells: int = 4
    initial_spin: bool = True  # look around once before moving
    collision_block_m: float = 0.15  # radius of the virtual obstacle left by a collision
    blacklist_m: float = 0.5
    tight_radius_scale: float = 0.5  # clearance used when nothing is reachable at the full radius


@dataclass
class Plan:
    goal: tuple[float, float]
    path: list[tuple[float, float]]
    frontier: tuple[float, float]  # the frontier cell the goal serves
    steps_taken: int = 0
    budget: int = 0


@dataclass
class ExplorerStatus:
    steps: int = 0
    done: bool = False
    reason: str = ""
    collisions: int = 0
    blacklisted: int = 0
    _frontier_labels: tuple | None = field(default=None, repr=False)  # (labels, geometry) of the last decision

    @property
    def frontiers(self) -> list[Frontier]:
        """The frontiers of the last decision (built on demand: the policy itself needs only their cells)."""
        if self._frontier_labels is None:
            return []
        return frontier_clusters(*self._frontier_labels)


class FrontierExplorer:
    def __init__(self, config: ExplorerConfig | None = None) -> None:
        self.cfg = config or ExplorerConfig()
        self.reset()

    def reset(self) -> None:
        self.status = ExplorerStatus()
        self.plan: Plan | None = None
        self._blocked: list[tuple[float, float]] = []
        self._blacklist: list[tuple[float, float]] = []
        self._spin_left = int(round(360.0 / self.cfg.turn_deg)) if self.cfg.initial_spin else 0
        self._last_collision_at: tuple[float, float] | None = None
        self._planners: dict[float, _CoarsePlanner] = {}  # the last planner per clearance scale (reused graphs)

    # -- main entry --------------------------------------------------------------
    def act(self, state: np.ndarray, geometry: GridGeometry, pose: tuple[float, float, float], collided: bool = False) -> int:
        """Next action for the agent at ``pose`` = (x, y, yaw) given the occupancy ``state``."""
        st = self.status
        if st.done:
            return Act.STOP
        if st.steps >= self.cfg.max_steps:
            return self._finish("step budget spent")
        x, y, yaw = pose
        if collided:
            self._on_collision(x, y, yaw)
        if self._spin_left > 0:
            self._spin_left -= 1
            return self._step(Act.TURN_LEFT)
        action = self._navigate(state, geometry, x, y, yaw)
        if action is None:
            return self._finish("no reachable frontier")
        return self._step(action)

    def _step(self, action: int) -> int:
        self.status.steps += 1
        if self.plan is not None:
            self.plan.steps_taken += 1
        return int(action)

    def _finish(self, reason: str) -> int:
        self.status.done, self.status.reason = True, reason
        return int(Act.STOP)

    def _on_collision(self, x: float, y: float, yaw: float) -> None:
        self.status.collisions += 1
        ahead = (x + self.cfg.forward_m * math.cos(yaw), y + self.cfg.forward_m * math.sin(yaw))
        self._blocked.append(ahead)
        if self.plan is not None and self._last_collision_at is not None and math.dist(self._last_collision_at, (x, y)) < 0.3:
            self._blacklist_plan()  # second collision on the same approach: give that goal up
        self._last_collision_at = (x, y)
        self.plan = None

    def _blacklist_plan(self) -> None:
        if self.plan is not None:
            self._blacklist.append(self.plan.frontier)
            self.status.blacklisted += 1
        self.plan = None

    # -- planning -----------------------------------------------------------------
    def _navigate(self, state, geometry, x, y, yaw) -> int | None:
        labels, _ = frontier_labels(state, self.cfg.min_frontier_cells)
        self.status._frontier_labels = (labels, geometry)
        planner: _CoarsePlanner | None = None
        for _ in range(8):  # a few goals may be given up in one decision
            frontier_cells = labels > 0
            if self._blacklist:
                frontier_cells &= ~self._disc_mask(geometry, self._blacklist, self.cfg.blacklist_m)
            if self.plan is not None:
                if self.plan.steps_taken > self.plan.budget:
                    self._blacklist_plan()  # taking far too long: probably unreachable
                    continue
                if not self._frontier_near(frontier_cells, geometry, self.plan.frontier):
                    self.plan = None  # explored meanwhile
            if not frontier_cells.any():
                return None
            if planner is None:
                planner = self._planners[1.0] = _CoarsePlanner(state, geometry, self.cfg, self._blocked,
                                                               previous=self._planners.get(1.0))
            if self.plan is not None:
                self.plan = planner.replan(x, y, self.plan)  # None when no longer reachable
            if self.plan is None:
                self.plan = planner.plan_to_frontier(x, y, frontier_cells)
            if self.plan is None:
                # noisy obstacle cells can wall the agent into a pocket at the full radius:
                # retry with a tighter clearance before declaring the exploration finished
                scale = self.cfg.tight_radius_scale
                tight = self._planners[scale] = _CoarsePlanner(state, geometry, self.cfg, self._blocked, radius_scale=scale,
                                                               previous=self._planners.get(scale))
                self.plan = tight.plan_to_frontier(x, y, frontier_cells)
                if self.plan is None:
                    return None
            if math.dist((x, y), self.plan.goal) >= self.cfg.goal_tolerance_m:
                return self._follow(x, y, yaw)
            action = self._face_frontier(x, y, yaw)
            if action is not None:
                return action
            self._blacklist_plan()  # at the goal, looking at it, and it is still a frontier
        return None

    def _face_frontier(self, x, y, yaw) -> int | None:
        """At the goal: turn towards the frontier; None once facing it (the map already holds that view)."""
        fx, fy = self.plan.frontier
        err = wrap_angle(math.atan2(fy - y, fx - x) - yaw)
        if abs(err) > math.radians(self.cfg.turn_deg / 2 + 1):
            return Act.TURN_LEFT if err > 0 else Act.TURN_RIGHT
        return None

    def _follow(self, x, y, yaw) -> int:
        path = self.plan.path
        target = path[-1]
        travelled, prev = 0.0, (x, y)
        for p in path:
            travelled += math.dist(prev, p)
            prev = p
            if travelled >= self.cfg.lookahead_m:
                target = p
                break
        err = wrap_angle(math.atan2(target[1] - y, target[0] - x) - yaw)
        if abs(err) > math.radians(self.cfg.turn_deg / 2 + 1):
            return Act.TURN_LEFT if err > 0 else Act.TURN_RIGHT
        return Act.MOVE_FORWARD

    @staticmethod
    def _frontier_near(frontier_cells: np.ndarray, geometry: GridGeometry, xy, radius: float = 0.3) -> bool:
        cy, cx = geometry.cell(*xy)
        k = max(1, int(math.ceil(radius / geometry.resolution)))
        win = frontier_cells[max(cy - k, 0) : cy + k + 1, max(cx - k, 0) : cx + k + 1]
        return bool(win.any())

    @staticmethod
    def _disc_mask(geometry: GridGeometry, centres, radius: float) -> np.ndarray:
        """Cells within ``radius`` of any centre (stamped disc by disc: few centres, small discs)."""
        mask = np.zeros(geometry.shape, bool)
        k = int(math.ceil(radius / geometry.resolution))
        yy, xx = np.mgrid[-k : k + 1, -k : k + 1]
        stamp = (yy**2 + xx**2) <= k * k
        ny, nx = geometry.shape
        for x, y in centres:
            cy, cx = geometry.cell(x, y)
            y0, y1, x0, x1 = max(cy - k, 0), min(cy + k + 1, ny), max(cx - k, 0), min(cx + k + 1, nx)
            if y0 < y1 and x0 < x1:
                mask[y0:y1, x0:x1] |= stamp[y0 - (cy - k) : y1 - (cy - k), x0 - (cx - k) : x1 - (cx - k)]
        return mask


class _CoarsePlanner:
    """Shortest paths on a coarsened navigable grid (8-connected, Dijkstra)."""

    def __init__(self, state: np.ndarray, geometry: GridGeometry, cfg: ExplorerConfig, blocked, radius_scale: float = 1.0,
                 previous: "_CoarsePlanner | None" = None) -> None:
        self.cfg = cfg
        self.fine = geometry
        k = max(1, int(round(cfg.plan_resolution / geometry.resolution)))
        self.k = k
        occ = state == OCCUPIED
        if blocked:
            occ = occ | FrontierExplorer._disc_mask(geometry, blocked, cfg.collision_block_m)
        # free cells whose centre is farther than the clearance from every occupied cell (the Euclidean
        # distance transform thresholded, computed as a dilation by the disc of offsets within it)
        nav = (state == FREE) & ~_near(occ, geometry.resolution, cfg.agent_radius * radius_scale)
        ny, nx = -(-state.shape[0] // k), -(-state.shape[1] // k)
        pad = np.zeros((ny * k, nx * k), bool)
        pad[: state.shape[0], : state.shape[1]] = nav
        # a coarse cell is navigable when most (at least half) of its fine cells are
        self.nav = 2 * pad.reshape(ny, k, nx, k).sum(axis=(1, 3), dtype=np.int64) >= k * k
        self.geo = GridGeometry(geometry.resolution * k, geometry.origin, (ny, nx))
        # the graph and the shortest-path trees depend on the navigable cells only: when they are those of
        # the previous decision's planner (a turn that revealed nothing navigable, a blocked move), reuse them
        if previous is not None and previous.geo == self.geo and np.array_equal(previous.nav, self.nav):
            self._graph, self._trees = previous._graph, previous._trees
        else:
            self._graph, self._trees = _grid_graph(self.nav), {}

    def _start(self, x: float, y: float) -> int | None:
        return snap_to_cell(self.nav, self.geo, x, y, max_snap=0.6)

    def _dijkstra(self, start: int):
        """(distances (coarse grid shape), predecessors) from ``start``; computed once per graph and start
        (the arrays are shared: read them only)."""
        tree = self._trees.get(start)
        if tree is None:
            dist, pred = dijkstra(self._graph, directed=False, indices=start, return_predecessors=True)
            tree = self._trees[start] = (dist.reshape(self.nav.shape), pred)
        return tree

    def _path(self, pred: np.ndarray, goal: int) -> list[tuple[float, float]]:
        nx = self.nav.shape[1]
        cells = []
        node = goal
        while node >= 0:
            cells.append(node)
            node = pred[node]
        cells.reverse()
        cells = np.array(cells)
        xs, ys = self.geo.center(cells // nx, cells % nx)
        return list(zip(map(float, xs), map(float, ys)))

    def plan_to_frontier(self, x: float, y: float, frontier_cells: np.ndarray) -> Plan | None:
        start = self._start(x, y)
        if start is None:
            return None
        dist, pred = self._dijkstra(start)
        # per coarse cell: min path distance of any navigable cell within reach
        r = max(1, int(round(self.cfg.reach_m / self.geo.resolution)))
        fr, fc = np.nonzero(frontier_cells)
        cr, cc = fr // self.k, fc // self.k
        cost = _disc_min_at(dist, cr, cc, r)
        if not np.isfinite(cost).any():
            return None
        j = int(np.argmin(cost))
        fx, fy = self.fine.center(fr[j], fc[j])
        # the goal: the closest-by-path navigable cell within reach of that frontier cell
        r0, c0 = cr[j], cc[j]
        ny, nx = dist.shape
        ys, xs = slice(max(r0 - r, 0), min(r0 + r + 1, ny)), slice(max(c0 - r, 0), min(c0 + r + 1, nx))
        win = dist[ys, xs]
        wy, wx = np.mgrid[ys, xs]
        inside = ((wy - r0) ** 2 + (wx - c0) ** 2 <= r * r) & np.isfinite(win)
        k = np.argmin(np.where(inside, win, np.inf))
        goal = int(wy.ravel()[k] * self.nav.shape[1] + wx.ravel()[k])
        path = self._path(pred, goal)
        budget = 3 * int(math.ceil(cost[j] / self.cfg.forward_m)) + 2 * int(round(360 / self.cfg.turn_deg)) + 10
        return Plan(goal=path[-1], path=path, frontier=(float(fx), float(fy)), budget=budget)

    def replan(self, x: float, y: float, plan: Plan) -> Plan | None:
        """A fresh path to the existing goal, or None when it is no longer reachable."""
        start = self._start(x, y)
        if start is None:
            return None
        gy, gx = self.geo.cell(*plan.goal)
        ny, nx = self.nav.shape
        if not (0 <= gy < ny and 0 <= gx < nx and self.nav[gy, gx]):
            return None
        dist, pred = self._dijkstra(start)
        if not np.isfinite(dist[gy, gx]):
            return None
        plan.path = self._path(pred, gy * nx + gx)
        return plan


def _disc_min_at(values: np.ndarray, rows: np.ndarray, cols: np.ndarray, r: int) -> np.ndarray:
    """``ndimage.minimum_filter(values, footprint=disc of radius r, mode="constant", cval=inf)[rows, cols]``,
    computed at those cells only (the frontier cells are a small part of the map)."""
    if len(rows) == 0:
        return np.empty(0, values.dtype)
    ny, nx = values.shape
    cells, inverse = np.unique(rows * nx + cols, return_inverse=True)
    yy, xx = np.mgrid[-r : r + 1, -r : r + 1]
    disc = (yy**2 + xx**2) <= r * r
    padded = np.full((ny + 2 * r, nx + 2 * r), np.inf, dtype=values.dtype)
    padded[r : r + ny, r : r + nx] = values
    # flat offsets of the disc in the padded array, from each cell's (padded) position
    offsets = (yy[disc] * (nx + 2 * r) + xx[disc]).astype(np.int64)
    centres = (cells // nx + r) * (nx + 2 * r) + (cells % nx + r)
    best = padded.reshape(-1)[centres[:, None] + offsets[None, :]].min(axis=1)
    return best[inverse.reshape(-1)]


def _near(occ: np.ndarray, resolution: float, clearance: float) -> np.ndarray:
    """Cells whose distance to some ``occ`` cell, ``sqrt(dy^2 + dx^2) * resolution`` in float64 as the
    Euclidean distance transform gives it, is at most ``clearance`` — ``edt(~occ) * resolution <= clearance``
    exactly (the same distances, compared offset by offset), without the transform: the disc of those
    offsets is a union of horizontal runs, so this is a few shifted ORs of row dilations."""
    r = int(math.floor(clearance / resolution)) + 1
    half: dict[int, int] = {}  # row offset -> half width of the disc's run
    for dy in range(-r, r + 1):
        for dx in range(r + 1):
            if math.sqrt(float(dy * dy + dx * dx)) * resolution <= clearance:
                half[dy] = dx
    ny, nx = occ.shape
    out = np.zeros_like(occ)
    if not half or not occ.any():
        return out
    rows: dict[int, np.ndarray] = {}
    cur, w = occ, 0
    for want in sorted(set(half.values())):
        while w < want:  # dilate the rows by one more cell each side
            nxt = cur.copy()
            nxt[:, 1:] |= cur[:, :-1]
            nxt[:, :-1] |= cur[:, 1:]
            cur, w = nxt, w + 1
        rows[want] = cur
    for dy, w in half.items():
        if abs(dy) >= ny:
            continue
        src = rows[w]
        out[max(dy, 0) : ny + min(dy, 0)] |= src[max(-dy, 0) : ny - max(dy, 0)]
    return out


def _grid_graph(nav: np.ndarray) -> sp.csr_matrix:
    """8-connected graph over navigable cells (edge weights in cells: 1 or sqrt 2).

    Diagonal steps need both orthogonal neighbours navigable (no corner cutting).
    """
    ny, nx = nav.shape
    idx = np.arange(ny * nx).reshape(ny, nx)

    def window(dy: int, dx: int):
        """Slices of the source cells and of their (dy, dx) neighbours (dy >= 0)."""
        src = (slice(0, ny - dy), slice(max(0, -dx), nx - max(0, dx)))
        dst = (slice(dy, ny), slice(max(0, dx), nx + min(0, dx)))
        return src, dst

    rows, cols, w = [], [], []
    for dy, dx in ((0, 1), (1, 0), (1, 1), (1, -1)):
        src, dst = window(dy, dx)
        m = nav[src] & nav[dst]
        if dy and dx:
            below = nav[dy:ny, src[1]]  # (y+dy, x)
            beside = nav[src[0], dst[1]]  # (y, x+dx)
            m &= below & beside
        rows.append(idx[src][m])
        cols.append(idx[dst][m])
        w.append(np.full(int(m.sum()), math.hypot(dy, dx)))
    r, c, ww = np.concatenate(rows), np.concatenate(cols), np.concatenate(w)
    return sp.csr_matrix((ww, (r, c)), shape=(ny * nx, ny * nx))

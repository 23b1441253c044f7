"""Memory across requests (issue 31): how a later request uses the kept map — remembered feature
confidence faded so new views count, remembered candidates looked at closely before frontiers."""
import numpy as np
import pytest

from personal.navigation.loop import NavigationLoop
from personal.navigation.mapper import OnlineMapper
from personal.navigation.policies import EpisodeSpec, ValueMapConfig, relook_candidates
from personal.navigation.scoring import ScoreMaps


def _maps(detect):
    detect = np.asarray(detect, np.float32)
    return ScoreMaps(detect, detect.copy(), (0.0, 0.0), 0.25, np.ones_like(detect))


def test_relook_candidates_best_first_spaced_and_above_the_floor():
    d = np.full((12, 12), -np.inf, np.float32)
    d[1, 1], d[1, 2], d[8, 8], d[10, 1] = 0.20, 0.19, 0.15, 0.05  # (1, 2) is within 1 m of (1, 1)
    pts = relook_candidates(_maps(d), floor=0.1, max_n=5)
    assert pts == [(0.375, 0.375), (2.125, 2.125)]  # cell centres (x, y) of (1, 1) then (8, 8); 0.05 below the floor
    assert relook_candidates(_maps(d), floor=0.1, max_n=1) == [(0.375, 0.375)]
    # a rejected target (within 0.5 m) is not looked at again
    assert relook_candidates(_maps(d), floor=0.1, max_n=5, exclude=[(2.1, 2.1)]) == [(0.375, 0.375)]


def test_relook_candidates_by_guide_value():
    d = np.full((12, 12), -np.inf, np.float32)
    m = _maps(d)
    m.guide = np.full((12, 12), np.nan, np.float32)
    m.guide[4, 4], m.guide[9, 9] = 0.3, 0.1
    assert relook_candidates(m, floor=0.1, max_n=3) == []  # nothing grounded
    assert relook_candidates(m, floor=0.2, max_n=3, score="guide") == [(1.125, 1.125)]


def test_fade_keeps_features_and_scales_their_weight():
    m = OnlineMapper(features=lambda *a: None, feature_dim=4)
    fm = m.feature_map
    fm.integrate(np.array([[0.1, 0.1], [1.1, 1.1]]), np.array([10.0, 4.0]), np.eye(4, dtype=np.float32)[:2])
    emb = fm.embeddings.copy()
    conf = fm.confidence.copy()
    m.fade_features(0.1)
    assert np.array_equal(fm.embeddings, emb) and np.allclose(fm.confidence, 0.1 * conf)
    # a new view of a faded cell now moves its feature ten times more than it would have
    fm.integrate(np.array([[0.1, 0.1]]), np.array([10.0]), np.eye(4, dtype=np.float32)[3:4])
    f = fm.normalized()[fm.geometry.cells(np.array([[0.1, 0.1]]))][0]
    assert f[3] > f[0]
    for bad in (0.0, 1.5, -1.0):
        with pytest.raises(ValueError, match="fade factor"):
            m.fade_features(bad)


class _Spy:
    """A policy that records the spec it is reset with."""

    name, is_oracle, needs_map, needs_features = "spy", False, True, False

    def reset(self, spec):
        self.spec = spec


def test_loop_fades_and_flags_only_a_kept_map():
    mapper = OnlineMapper(features=lambda *a: None, feature_dim=4)
    mapper.feature_map.integrate(np.array([[0.1, 0.1]]), np.array([10.0]), np.eye(4, dtype=np.float32)[:1])
    spy = _Spy()
    loop = NavigationLoop(spy, mapper, memory_fade=0.5)
    spec = EpisodeSpec("e2", "Find Ana's mug.")
    loop.reset(spec, keep_map=True)
    assert spy.spec.map_kept is True and np.isclose(mapper.feature_map.confidence.max(), 5.0)
    loop.reset(spec, keep_map=False)  # scratch: a blind start, nothing remembered
    assert spy.spec.map_kept is False and not mapper.feature_map.confidence.any()


def test_relook_is_off_from_scratch_and_without_a_margin():
    from personal.navigation.eval.pan_run import build_loop, make_components
    from personal.navigation.eval.pan_sequence import MemoryRule

    comps = make_components("oracle")
    loop = build_loop("value-map-rpg-owner", comps, memory=MemoryRule(0.1, 0.05, 2))
    pol = loop.policy
    assert pol.vcfg.relook_margin == 0.05 and pol.vcfg.relook_max == 2 and loop.memory_fade == 0.1
    d = np.full((12, 12), -np.inf, np.float32)
    d[5, 5] = 0.9
    pol.reset(EpisodeSpec("e", "Find Ana's mug."))  # scratch: no remembered candidates
    assert pol._relook(None, None, None, _maps(d)) is None and pol.info["relook_candidates"] == []
    assert ValueMapConfig().relook_margin is None  # the policy's default: off


def test_sequences_can_run_one_condition():
    from personal.navigation.eval.pan_run import generate_pan_set, make_components
    from personal.navigation.eval.pan_sequence import run_sequences
    from personal.world.model import SPLITS

    scenes, eps = generate_pan_set(1, SPLITS, 1, 300)
    eps = sorted(eps, key=lambda e: (e.scene_id, SPLITS.index(e.split)))
    comps = make_components("oracle")
    with pytest.raises(ValueError, match="conditions"):
        run_sequences(scenes, eps, "value-map-rpg-owner", comps, k=2, max_steps=5, conditions=("later",))
    recs = run_sequences(scenes, eps, "value-map-rpg-owner", comps, k=2, max_steps=20, conditions=("memory",))
    assert [(r["position"], r["condition"]) for r in recs] == [(1, "memory"), (2, "memory")]
    assert all("target_seen" in r and "closest_m" in r["target_seen"] for r in recs)


def _reopen_world():
    """A 2 m x 2 m occupancy map (0.05 m cells), all free but two obstacles: one at (0.4, 0.4) whose
    feature cell (0.25 m) was seen poorly, one at (1.6, 1.6) seen well; a third at (1.6, 0.4) has
    no feature at all."""
    from personal.mapping.grid import GridGeometry
    from personal.mapping.occupancy import FREE, OCCUPIED

    geo = GridGeometry(0.05, (0.0, 0.0), (40, 40))
    state = np.full((40, 40), FREE, np.int8)
    for x, y in ((0.4, 0.4), (1.6, 1.6), (1.6, 0.4)):
        r, c = geo.cell(x, y)
        state[r - 1 : r + 2, c - 1 : c + 2] = OCCUPIED
    m = OnlineMapper(features=lambda *a: None, feature_dim=4)
    m.feature_map.integrate(np.array([[0.4, 0.4], [1.6, 1.6]]), np.array([50.0, 5000.0]), np.eye(4, dtype=np.float32)[:2])
    return geo, state, m.feature_map


def test_reopen_turns_poorly_seen_obstacles_into_frontiers():
    from personal.mapping.frontier import frontier_mask
    from personal.mapping.occupancy import OCCUPIED, UNKNOWN
    from personal.navigation.policies import reopen_poorly_seen

    geo, state, fm = _reopen_world()
    assert not frontier_mask(state).any()  # a fully mapped home: nothing left to explore
    out = reopen_poorly_seen(state, geo, fm, floor=1000.0)
    poor, good, blank = geo.cell(0.4, 0.4), geo.cell(1.6, 1.6), geo.cell(1.6, 0.4)
    assert out[poor] == UNKNOWN and out[good] == OCCUPIED and out[blank] == OCCUPIED
    assert state[poor] == OCCUPIED  # the planning map is left as it is
    fr = np.argwhere(frontier_mask(out))
    xs, ys = geo.center(fr[:, 0], fr[:, 1])
    assert len(fr) and np.all(np.hypot(xs - 0.4, ys - 0.4) < 0.2)  # the frontier rings the poorly seen one only
    assert (reopen_poorly_seen(state, geo, fm, floor=10.0) == state).all()  # both seen well enough
    assert reopen_poorly_seen(state, geo, None, floor=1e9) is state  # no feature map: nothing to judge by


def test_reopen_new_counts_only_what_this_request_saw():
    from personal.mapping.occupancy import OCCUPIED, UNKNOWN
    from personal.navigation.policies import reopen_poorly_seen

    geo, state, fm = _reopen_world()
    before = (fm.confidence.copy(), fm.geometry)
    out = reopen_poorly_seen(state, geo, fm, floor=100.0, before=before)  # nothing seen yet in this request
    assert out[geo.cell(1.6, 1.6)] == UNKNOWN and out[geo.cell(0.4, 0.4)] == UNKNOWN
    fm.ensure_contains(-3.0, -3.0, 3.0, 3.0)  # the map grows meanwhile (origin moves): still matched by position
    fm.integrate(np.array([[1.6, 1.6]]), np.array([400.0]), np.eye(4, dtype=np.float32)[2:3])  # seen again now
    out = reopen_poorly_seen(state, geo, fm, floor=100.0, before=before)
    assert out[geo.cell(1.6, 1.6)] == OCCUPIED and out[geo.cell(0.4, 0.4)] == UNKNOWN


def test_reopen_only_with_a_kept_map_and_after_its_step():
    from personal.navigation.eval.pan_run import build_loop, make_components
    from personal.navigation.eval.pan_sequence import MemoryRule
    from personal.navigation.policies import StepInput

    geo, state, fm = _reopen_world()
    comps = make_components("oracle")
    pol = build_loop("value-map-rpg-owner", comps, memory=MemoryRule(reopen_conf=1000.0, reopen_after=10)).policy
    assert pol.vcfg.reopen_conf == 1000.0 and pol.vcfg.reopen_after == 10 and ValueMapConfig().reopen_conf is None

    class _M:
        feature_map, occupancy = fm, type("O", (), {"geometry": geo})()

    pol.reset(EpisodeSpec("e", "Find Ana's mug."))  # scratch: the state as it is
    assert pol._reopened(StepInput((0, 0, 0), 50, 500, _M()), state) is state
    pol.reset(EpisodeSpec("e", "Find Ana's mug.", map_kept=True))
    assert pol._reopened(StepInput((0, 0, 0), 9, 500, _M()), state) is state  # memory first
    assert (pol._reopened(StepInput((0, 0, 0), 10, 500, _M()), state) != state).any()
    assert pol.info["reopened_cells"] == 9


def test_occupancy_remembers_what_the_current_task_saw():
    from personal.mapping.occupancy import FREE, OccupancyGrid, UNKNOWN
    from personal.navigation.policies import as_if_blind

    g = OccupancyGrid(0.05)
    g.mark_free_disc(0.0, 0.0, 0.3)
    assert g.recent.any() and (g.recent == g.seen).all()
    g.forget_recent()  # a new request on the kept map
    assert g.seen.any() and not g.recent.any()
    assert (as_if_blind(g.state(), g.recent) == UNKNOWN).all() and (g.state() == FREE).any()
    g.mark_free_disc(2.0, 2.0, 0.3)  # the grid grows: the mask follows the geometry
    assert g.recent.shape == g.seen.shape
    assert g.recent[g.geometry.cell(2.0, 2.0)] and not g.recent[g.geometry.cell(0.0, 0.0)]
    assert g.seen[g.geometry.cell(0.0, 0.0)]
    pts = np.array([[1.0, 0.0, 0.0], [1.2, 0.0, 0.0], [1.2, 0.3, 0.5]])  # floor and an obstacle, seen now
    g.integrate(pts, np.array([0.0, 0.0, 0.9]))
    assert all(g.recent[g.geometry.cell(x, y)] for x, y, _ in pts)


def test_frontiers_as_if_blind_ring_only_what_this_request_saw():
    from personal.mapping.frontier import frontier_mask
    from personal.mapping.occupancy import FREE, UNKNOWN
    from personal.navigation.policies import as_if_blind

    state = np.full((40, 40), FREE, np.int8)  # a fully mapped home: no frontier
    recent = np.zeros((40, 40), bool)
    recent[15:25, 15:25] = True  # what the request has seen so far
    assert not frontier_mask(state).any()
    out = as_if_blind(state, recent)
    assert (out[~recent] == UNKNOWN).all() and (out[recent] == FREE).all() and (state == FREE).all()
    fr = np.argwhere(frontier_mask(out))
    assert len(fr) and fr.min() >= 15 and fr.max() <= 24  # on the edge of the seen square
    with pytest.raises(ValueError, match="recent mask"):
        as_if_blind(state, recent[:10])


def test_blind_frontiers_only_with_a_kept_map_and_after_their_step():
    from personal.mapping.occupancy import OccupancyGrid, UNKNOWN
    from personal.navigation.eval.pan_run import build_loop, make_components
    from personal.navigation.eval.pan_sequence import MemoryRule
    from personal.navigation.policies import StepInput

    comps = make_components("oracle")
    loop = build_loop("value-map-rpg-owner", comps, memory=MemoryRule(blind_after=5))
    pol, mapper = loop.policy, loop.mapper
    assert pol.vcfg.blind_after == 5 and ValueMapConfig().blind_after is None
    mapper.occupancy.mark_free_disc(0.0, 0.0, 1.0)
    state = mapper.state()
    loop.reset(EpisodeSpec("e", "Find Ana's mug."), keep_map=True)  # the loop forgets what is recent
    assert not mapper.occupancy.recent.any() and mapper.occupancy.seen.any()
    assert pol._reopened(StepInput((0, 0, 0), 4, 500, mapper), state) is state  # memory first
    assert (pol._reopened(StepInput((0, 0, 0), 5, 500, mapper), state) == UNKNOWN).all()
    assert pol.info["blind_from_step"] == 5
    pol.reset(EpisodeSpec("e", "Find Ana's mug."))  # scratch: the state as it is
    assert pol._reopened(StepInput((0, 0, 0), 50, 500, mapper), state) is state
    assert isinstance(mapper.occupancy, OccupancyGrid)

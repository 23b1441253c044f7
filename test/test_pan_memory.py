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

"""Frame/state pairing of the navigation node and the grounding scorers of the explorer."""
import math

import numpy as np
import pytest

from personal.navigation.sync import FrameSync, pose_matches


def test_frame_sync_pairs_the_observation_that_matches_the_agent_state():
    sync = FrameSync(required=("depth", "pose", "odom"))
    sync.add((1, 0), "depth", "d_old")
    sync.add((1, 0), "pose", "p_old")
    sync.add((1, 0), "odom", (0.0, 0.0, 0.0))
    sync.add((2, 0), "odom", (0.25, 0.0, 0.0))  # newer frame, still incomplete
    assert sync.match((0.25, 0.0, 0.0)) is None
    sync.add((2, 0), "depth", "d_new")
    assert sync.match((0.25, 0.0, 0.0)) is None  # no camera pose yet
    sync.add((2, 0), "pose", "p_new")
    g = sync.match((0.25, 0.0, 0.0))
    assert g.parts["depth"] == "d_new"
    assert sync.match((0.0, 0.0, 0.0)).parts["depth"] == "d_old"  # a blocked step: same pose, same view
    assert pose_matches((0, 0, math.pi), (0, 0, -math.pi))


def _feature_map(cells: dict, dim: int, res: float = 0.25):
    from personal.mapping.feature_map import FeatureMap

    fm = FeatureMap(dim, res, bounds=(0.0, 0.0, 4.0, 4.0))
    for (x, y), vec in cells.items():
        fm.integrate(np.array([[x, y, 0.5]]), np.array([5.0]), vec[None, :])
    return fm


class _Embed:
    """Texts -> fixed unit vectors (by keyword) so similarities are known exactly."""

    def __init__(self, dim=8):
        self.dim = dim

    def __call__(self, texts):
        out = []
        for t in texts:
            v = np.full(self.dim, 0.02, np.float32)
            t = t.lower()
            if "lamp" in t:
                v[0] = 1.0
            if "black" in t:
                v[1] = 0.9
            if "gold" in t:
                v[2] = 0.9
            if "theo" in t:
                v[3] = 0.0
            out.append(v / np.linalg.norm(v))
        return np.stack(out)


class _Extractor:
    def extract(self, summary):
        from personal.grounding.extract import OwnershipPhrase

        return [OwnershipPhrase("Theo", "black lamp", "living room"), OwnershipPhrase("Lisa", "gold lamp", "bedroom")]


@pytest.mark.parametrize("method,expected", [("rpg-owner", (1.0, 1.0)), ("rpg", None), ("qs", None)])
def test_scorers_detect_the_owners_object_only_with_ownership(method, expected):
    from personal.navigation.scoring import GroundingScorer, best_detection

    emb = _Embed()
    black, gold = emb(["the black lamp"])[0], emb(["the gold lamp"])[0]
    fm = _feature_map({(1.05, 1.05): black, (3.05, 3.05): gold}, emb.dim)
    scorer = GroundingScorer(method, phrase_floor=0.6)
    scorer.prepare("Find Theo's lamp.", "Theo owns the black lamp. Lisa owns the gold lamp.", "Theo", emb, _Extractor())
    maps = scorer.maps(fm)
    det = best_detection(maps, threshold=0.3, min_confidence=0.1)
    assert det is not None
    (x, y), score = det
    if expected is not None:
        assert math.dist((x, y), expected) < 0.2  # Theo's black lamp, not Lisa's gold one
        # the gold lamp is never a detection for rpg-owner: its best phrase is Lisa's
        r, c = int(3.05 / 0.25), int(3.05 / 0.25)
        assert not np.isfinite(maps.detect[r, c])
    else:
        # without the owner gate both lamps score the same query similarity: either may win
        assert min(math.dist((x, y), (1.0, 1.0)), math.dist((x, y), (3.0, 3.0))) < 0.2
    assert np.nanmax(maps.guide) > 0.5


class _EmbedNamed(_Embed):
    """Like _Embed, plus a 'theo' direction, so the query picks Theo's phrase by its text."""

    def __call__(self, texts):
        out = []
        for t in texts:
            v = np.zeros(self.dim, np.float32)
            t = t.lower()
            v[0] = 1.0 if "lamp" in t else 0.0
            v[1] = 0.9 if "black" in t else 0.0
            v[2] = 0.9 if "gold" in t else 0.0
            v[3] = 0.5 if "theo" in t else 0.0
            v[7] = 0.02
            out.append(v / np.linalg.norm(v))
        return np.stack(out)


@pytest.mark.parametrize("method", ["rpg", "rpg-owner"])
def test_relative_margin_rejects_a_cell_that_does_not_single_out_the_queried_object(method):
    """A generic 'lamp' cell is the best query match (QS 0.89) and passes every absolute floor,
    but it resembles Theo's black lamp and Lisa's gold lamp equally: the scene-relative margin
    turns it down and leaves Theo's lamp; without the margin the generic cell is the detection."""
    from personal.navigation.scoring import GroundingScorer, best_detection

    emb = _EmbedNamed()
    black, gold, generic = emb(["the black lamp", "the gold lamp", "the lamp"])
    fm = _feature_map({(1.05, 1.05): black, (3.05, 3.05): gold, (1.05, 3.05): generic}, emb.dim)
    found = {}
    for margin in (None, 0.05):
        scorer = GroundingScorer(method, phrase_floor=-1.0, ownership_margin=1.0, relative_margin=margin)
        scorer.prepare("Find Theo's lamp.", "", "Theo", emb, _Extractor())
        maps = scorer.maps(fm)
        assert maps.relative is not None
        (x, y), _ = best_detection(maps, threshold=0.3, min_confidence=0.1)
        found[margin] = (x, y)
    assert math.dist(found[None], (1.05, 3.05)) < 0.2  # the generic cell wins on the absolute score
    assert math.dist(found[0.05], (1.05, 1.05)) < 0.2  # Theo's black lamp: closer to its description than to the gold lamp's
    r, c = int(3.05 / 0.25), int(1.05 / 0.25)
    assert abs(maps.relative[r, c]) < 1e-6  # generic: equally like both described objects


def test_encoder_rules_reach_each_scorer():
    from personal.navigation.policies import make_policy
    from personal.navigation.thresholds import DetectionThresholds, ScorerRule, thresholds_for

    th = DetectionThresholds(0.2, 0.3, "test", by_scorer=(("rpg", ScorerRule(0.1, 0.25, 0.04)),))
    assert th.rule("qs") == ScorerRule(0.2, 0.3, None) and th.rule("rpg").relative_margin == 0.04
    rpg = make_policy("value-map-rpg", embed=_EmbedNamed(), extractor=_Extractor(), thresholds=th)
    assert (rpg.vcfg.threshold, rpg.scorer.phrase_floor, rpg.scorer.relative_margin) == (0.1, 0.25, 0.04)
    qs = make_policy("value-map-qs", embed=_EmbedNamed(), thresholds=th)
    assert (qs.vcfg.threshold, qs.scorer.relative_margin) == (0.2, None)
    assert thresholds_for("oracle-captions-minilm").rule("rpg").relative_margin is None  # the ORACLE's rule is unchanged

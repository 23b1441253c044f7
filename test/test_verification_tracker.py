"""Tracker, attribute-majority fusion and adaptive stopping on scripted evidence."""
from dataclasses import dataclass

from personal.verification.agent import count_flips
from personal.verification.attributes import Attribute
from personal.verification.tracker import CONTRADICTORY, MATCHED, MISSING, Tracker


@dataclass
class J:
    name: str
    status: str
    reason: str = ""
    observed: str = ""


def attrs(*spec):
    return [Attribute(n, "color", w, n, n) for n, w in spec]


def test_single_confident_view_matches_and_low_visibility_view_abstains():
    t = Tracker(attrs(("color", 3), ("handle_color", 2)), margin=0.5)
    t.update([J("color", "Yes"), J("handle_color", "No")], confidence=0.2)  # low visibility: weight 0.2 < margin
    assert t.statuses() == {"color": MISSING, "handle_color": MISSING}
    t.update([J("color", "Yes"), J("handle_color", "Unsure")], confidence=1.0)
    assert t.statuses() == {"color": MATCHED, "handle_color": MISSING}


def test_conflicting_views_cancel_by_weight():
    t = Tracker(attrs(("color", 3)), margin=0.5)
    t.update([J("color", "Yes")], 1.0)
    t.update([J("color", "No")], 0.8)
    assert t.statuses()["color"] == MISSING  # 1.0 - 0.8 = 0.2 < margin
    t.update([J("color", "No")], 1.0)
    assert t.statuses()["color"] == CONTRADICTORY  # 1.0 - 1.8 = -0.8


def test_fusion_weighted_vote_and_conservative_tie_at_final_step():
    t = Tracker(attrs(("color", 2), ("handle_color", 2)), horizon=2)
    t.update([J("color", "Yes"), J("handle_color", "No")], 1.0)
    d = t.decide()
    assert d.vote == 0 and d.decision == "Unsure" and not d.stop  # tie before the last step stays open
    t.update([J("color", "Unsure"), J("handle_color", "Unsure")], 1.0)
    d = t.decide()
    assert d.stop and d.decision == "No" and "tie" in d.reason  # conservative No at the end


def test_unweighted_votes_count_attributes():
    t = Tracker(attrs(("color", 3), ("a", 1), ("b", 1)), weighted_votes=False, horizon=1)
    t.update([J("color", "Yes"), J("a", "No"), J("b", "No")], 1.0)
    assert t.vote() == -1 and t.decide().decision == "No"
    t2 = Tracker(attrs(("color", 3), ("a", 1), ("b", 1)), weighted_votes=True, horizon=1)
    t2.update([J("color", "Yes"), J("a", "No"), J("b", "No")], 1.0)
    assert t2.vote() == 1 and t2.decide().decision == "Yes"


def test_unanimity_stop_and_coverage_requirement():
    a = attrs(("color", 3), ("handle_color", 2), ("lid_color", 2))
    t = Tracker(a, horizon=6)
    t.update([J("color", "Yes"), J("handle_color", "Unsure"), J("lid_color", "Unsure")], 1.0)
    d = t.decide()
    assert d.stop and d.decision == "Yes" and "unanimous" in d.reason
    t = Tracker(a, horizon=6, min_coverage=0.6)  # 3 of 7 weight seen < 0.6: keep looking
    t.update([J("color", "Yes"), J("handle_color", "Unsure"), J("lid_color", "Unsure")], 1.0)
    d = t.decide()
    assert not d.stop and d.decision == "Yes"
    t.update([J("handle_color", "Yes"), J("lid_color", "Unsure")], 1.0)
    assert t.decide().stop


def test_mixed_evidence_does_not_stop_until_converged_or_final():
    t = Tracker(attrs(("color", 3), ("handle_color", 2)), horizon=3)
    t.update([J("color", "Yes"), J("handle_color", "No")], 1.0)
    d = t.decide()
    assert not d.stop and d.decision == "Yes"  # 3 - 2 > 0 interim
    t.update([J("color", "Yes"), J("handle_color", "No")], 1.0)
    # after 2 steps, 1 remaining: color yes=2 (cannot drop below margin with 1 more),
    # handle no=2 (cannot flip) -> vote bounds (1, 1) -> converged Yes
    d = t.decide()
    assert d.stop and d.decision == "Yes" and "converged" in d.reason


def test_vote_bounds_and_convergence_to_no():
    t = Tracker(attrs(("color", 3)), horizon=2)
    t.update([J("color", "No")], 1.0)
    lo, hi = t.vote_bounds(remaining=1)
    assert (lo, hi) == (-3.0, 0.0)  # one more Yes of weight 1 can only reach a tie (Missing)
    d = t.decide()
    assert d.stop and d.decision == "No" and "converged" in d.reason


def test_skip_step_counts_toward_horizon():
    t = Tracker(attrs(("color", 3), ("x", 1)), horizon=2)
    t.update([J("color", "Unsure"), J("x", "Unsure")], 1.0)
    assert not t.decide().stop
    t.skip_step()
    d = t.decide()
    assert d.stop and d.decision == "No"  # nothing matched by the horizon


def test_unresolved_lists_attributes_that_can_still_change():
    t = Tracker(attrs(("color", 3), ("x", 1)), horizon=2)
    t.update([J("color", "Yes"), J("x", "Unsure")], 1.0)
    t.update([J("color", "Yes"), J("x", "Unsure")], 1.0)
    assert [a.name for a in t.unresolved()] == ["x"]


def test_flip_counting():
    assert count_flips(["Yes", "Unsure", "No", "No", "Yes"]) == 2
    assert count_flips(["Unsure", "Unsure"]) == 0
    assert count_flips(["No"]) == 0


def test_multi_view_size_check_blocks_yes_until_a_full_size_view():
    t = Tracker(attrs(("color", 3)), horizon=3, min_size_ratio=0.6)
    t.update([J("color", "Yes")], 1.0)
    t.note_extent(0.3)  # looked too small (occluded, or another category)
    d = t.decide()
    assert not d.stop and d.decision == "Yes"  # unanimity would stop; the size check keeps looking
    t.update([J("color", "Yes")], 1.0)
    t.note_extent(0.8)
    assert t.decide().stop
    t = Tracker(attrs(("color", 3)), horizon=1, min_size_ratio=0.6)
    t.update([J("color", "Yes")], 1.0)
    t.note_extent(0.3)
    d = t.decide()
    assert d.stop and d.decision == "No" and "never looked larger" in d.reason
    t = Tracker(attrs(("color", 3)), horizon=1, min_size_ratio=0.6)  # never measurable: no effect
    t.update([J("color", "Yes")], 1.0)
    t.note_extent(None)
    assert t.decide().decision == "Yes"

"""The assistant's FindObject / VerifyObject decisions without rclpy (personal/assistant/find.py,
verify.py, personal/navigation/progress.py): policies, owners, feedback, results, memory records,
view choice and the vote."""
import json
import math

import pytest

from personal.assistant.find import (CANDIDATE, FindError, FindTracker, episode_id_from_reset, household_summary,
                                     owner_of, remember_found, remember_rejection, resolved_query, run_policy, target_object)
from personal.assistant.verify import ViewVote, descriptions_for, next_view_action
from personal.mapping.exploration import Act
from personal.memory.store import HouseholdMemory
from personal.navigation.verify_stop import StopCheck


def test_goal_fields_become_a_navigation_run():
    assert run_policy("value-map-rpg-owner", True) == "value-map-rpg-owner+verify"
    assert run_policy("random-frontier", False) == "random-frontier"
    with pytest.raises(FindError, match="value-map"):
        run_policy("random-frontier", True)
    assert owner_of("Find my mug.", "Anna") == "Anna" and resolved_query("Find my mug.", "Anna") == "Find Anna's mug."
    assert owner_of("Find Lily's backpack.", "Tom") == "Lily"
    with pytest.raises(FindError, match="no requester"):
        owner_of("Find my mug.", "")
    assert episode_id_from_reset("episode 1/3: synth_00002_easy_000 in synth_00002 (easy): Find Leo's mug.") == \
        "synth_00002_easy_000"
    with pytest.raises(FindError):
        episode_id_from_reset("no episode loaded")


def _check(verdict, step, point=(1.0, 2.0)):
    return {"verdict": verdict, "reason": f"{verdict} reason", "point": list(point), "step": step, "judgements": []}


def test_tracker_feedback_rejections_and_the_verified_result():
    t = FindTracker("e1", "value-map-rpg-owner+verify", verify=True)
    assert not t.mine({"episode_id": "e1", "policy": "value-map-qs"})
    t.on_progress({"step": 30, "status": "rejected candidate", "best": {"step": 25, "point": [1.0, 2.0], "score": 0.7},
                   "checks": [_check("no", 29)]})
    fb = t.feedback()
    assert fb["steps"] == 30 and fb["status"] == "rejected candidate" and fb["best_score"] == pytest.approx(0.7)
    assert "(1.00, 2.00)" in fb["best_candidate"]
    assert [c["verdict"] for c in t.new_rejections(lambda c: c["verdict"] != "yes")] == ["no"]
    assert t.new_rejections(lambda c: True) == []  # each check is written once
    info = {"stop_point_target": [4.0, 5.0], "stop_reason": "detection 0.81 at (4.00, 5.00)",
            "detections": [{"step": 25, "point": [1.0, 2.0], "score": 0.7}, {"step": 60, "point": [4.0, 5.0], "score": 0.81}],
            "stop_checks": [_check("no", 29), _check("yes", 70, (4.0, 5.0))]}
    out = t.outcome({"steps": 71, "stopped": True, "failure_reason": "", "info_json": json.dumps(info)})
    assert out["success"] and out["verified"] and out["xy"] == (4.0, 5.0) and out["confidence"] == pytest.approx(0.81)
    assert out["why"].startswith("verified: yes reason")


def test_a_rejection_between_two_feedbacks_is_still_shown_once():
    t = FindTracker("e1", "p", verify=True)
    t.on_progress({"step": 34, "status": "rejected candidate", "best": None, "checks": [_check("no", 33)]})
    t.on_progress({"step": 35, "status": "exploring", "best": None, "checks": [_check("no", 33)]})  # before the next feedback
    assert t.unshown_rejection
    assert (t.feedback()["status"], t.feedback()["status"]) == ("rejected candidate", "exploring")


def test_a_stop_the_verifier_did_not_accept_is_no_success_and_budget_and_failures_are_named():
    t = FindTracker("e1", "p", verify=True)
    info = {"stop_point_target": [4.0, 5.0], "stop_checks": [_check("unsure", 70, (4.0, 5.0))]}
    out = t.outcome({"steps": 71, "stopped": True, "failure_reason": "", "info_json": json.dumps(info)})
    assert not out["success"] and not out["verified"] and out["xy"] is None and "rejected" in out["why"]
    out = FindTracker("e1", "p", verify=False).outcome({"steps": 500, "stopped": False, "failure_reason": "", "info_json": "{}"})
    assert not out["success"] and out["why"] == "not found within 500 steps"
    out = FindTracker("e1", "p", verify=False).outcome({"steps": 3, "stopped": False, "info_json": "{}",
                                                       "failure_reason": "timeout waiting for agent_state"})
    assert "timeout waiting for agent_state" in out["why"]
    found = FindTracker("e1", "p", verify=False).outcome({"steps": 9, "stopped": True, "failure_reason": "",
                                                         "info_json": json.dumps({"stop_point_target": [1, 1]})})
    assert found["success"] and not found["verified"] and "not verified" in found["why"]


def test_memory_gets_the_rejected_candidates_and_the_found_objects_last_seen_pose(tmp_path):
    with HouseholdMemory(tmp_path / "hh.sqlite") as mem:
        mug = mem.add_object("green mug", category="mug")
        mem.assert_owner("Lily", mug, "summary")
        mem.add_object("red mug", category="mug")
        query = "Find Lily's mug."
        bad = remember_rejection(mem, query, _check("no", 12, (3.0, 4.0)))
        assert mem.rejected_for(query) == {bad} and mem.object(bad).category == CANDIDATE
        assert target_object(mem, query).id == mug  # never the rejected candidate
        assert remember_found(mem, query, (1.5, 2.5), 0.0, verified=True, confidence=0.9) == mug
        seen = mem.last_seen(mug)
        assert (seen.x, seen.y, seen.source) == (1.5, 2.5, "verification")
        new = remember_found(mem, "Find Tom's lamp.", (0.0, 1.0), 0.0, verified=False, confidence=0.5)
        assert new not in (mug, bad) and mem.last_seen(new).source == "perception"


def test_find_grounds_with_the_memorys_ownership_after_an_event_else_the_episodes(tmp_path):
    from personal.memory.desk import MemoryDesk

    episode = ("The grey washing machine next to the cabinet in the kitchen belongs to Leo. "
               "The gold floor lamp against the wall in the master bedroom belongs to Rosa.")
    with HouseholdMemory(tmp_path / "hh.sqlite") as mem:
        assert household_summary(mem, episode) == (episode, "episode")  # the memory knows nothing yet
        assert household_summary(None, episode) == (episode, "episode")
        desk = MemoryDesk(mem, "hh")
        assert desk.seed(episode) == 2
        assert desk.tell("Leo gave his washing machine to Rosa.")["success"]
        text, source = household_summary(mem, episode)
        assert source == "memory" and "washing machine next to the cabinet in the kitchen belongs to Rosa" in text
        assert "Leo" not in text  # the gift closed Leo's relation: grounding "Find Leo's washing machine." finds no phrase
        remember_rejection(mem, "Find Rosa's washing machine.", _check("no", 3, (1.0, 1.0)))
        assert "candidate" not in household_summary(mem, episode)[0]  # rejected places are nobody's objects


def test_views_face_then_approach_then_look_from_either_side():
    assert next_view_action((0.0, 0.0, 0.0), (0.0, 3.0), 1) == Act.TURN_LEFT
    assert next_view_action((0.0, 0.0, 0.0), (0.0, -3.0), 1) == Act.TURN_RIGHT
    assert next_view_action((0.0, 0.0, math.pi / 2), (0.0, 3.0), 1) == Act.MOVE_FORWARD
    assert next_view_action((0.0, 0.0, math.pi / 2), (0.0, 3.0), 1, blocked=True) == Act.TURN_LEFT
    assert {next_view_action((0.0, 0.0, 0.0), (0.5, 0.0), v) for v in (1, 2)} == {Act.TURN_LEFT, Act.TURN_RIGHT}


def test_the_vote_stops_at_a_margin_or_the_view_budget():
    vote = ViewVote(max_views=5, margin=2)
    for verdict in ("yes", "unsure", "yes"):
        assert not vote.done
        vote.add(StopCheck(verdict, f"{verdict} here", (0, 0)))
    assert vote.done and vote.verdict == "yes" and vote.confidence == pytest.approx(2 / 3)
    assert vote.why().startswith("2 yes / 0 no / 1 unsure over 3 view(s)")
    tie = ViewVote(max_views=2)
    tie.add(StopCheck("yes", "", (0, 0)))
    tie.add(StopCheck("no", "", (0, 0)))
    assert tie.done and tie.verdict == "unsure" and tie.confidence == 0.0


def test_descriptions_drop_the_owner_and_add_what_the_summary_says():
    from personal.grounding.extract import make_extractor

    assert descriptions_for("Lisa's blue mug with a chipped handle") == ["blue mug with a chipped handle"]
    got = descriptions_for("Lily's backpack", "Lily owns the red backpack in the bedroom.", make_extractor("builtin"))
    assert got[0] == "backpack" and any("red backpack" in d for d in got[1:]), got


def test_progress_reports_status_best_detection_and_checks():
    from types import SimpleNamespace

    from personal.navigation.progress import REJECTED, run_progress
    from personal.navigation.verify_stop import StopVerifier

    verifier = StopVerifier()
    verifier.checks = [StopCheck("no", "red, not blue", (1.0, 2.0), step=4)]
    policy = SimpleNamespace(info={"detections": [{"step": 3, "point": [1.0, 2.0], "score": 0.6}]},
                             goal=SimpleNamespace(kind="target"))
    loop = SimpleNamespace(policy=policy, stop_verifier=verifier, step_count=5, max_steps=100)
    report = run_progress(loop, "e1", "value-map-rpg+verify")
    assert report["status"] == REJECTED and report["best"]["score"] == 0.6 and report["checks"][0]["verdict"] == "no"
    loop.step_count = 6
    assert run_progress(loop, "e1", "p")["status"] == "approaching"
    policy.goal = None
    assert run_progress(loop, "e1", "p")["status"] == "exploring"

"""Metrics against hand-computed records, and the report writer."""
import json

import pytest

from personal.verification.metrics import RecordError, compute_metrics, write_report


def rec(pt, pred, steps, cat="mug", unr=0, trap=0, first=None, flips=0):
    label = int(pt == "positive")
    return {"pair_type": pt, "label": label, "prediction": pred, "steps": steps,
            "is_correct": (pred == "Yes") == (label == 1), "object_category": cat, "moves": steps - 1,
            "nav_unreachable": unr, "nav_trap": trap, "first_view_prediction": first or pred, "flips": flips}


RECORDS = [
    rec("positive", "Yes", 1),                                   # correct
    rec("positive", "No", 4, unr=1, trap=1, first="Yes", flips=1),  # wrong; first view was right
    rec("neg_same", "No", 3, cat="hat", trap=1, first="Yes", flips=1),  # correct; first view wrong
    rec("neg_same", "Yes", 2, cat="hat"),                        # wrong
    rec("neg_diff", "No", 1, cat="hat"),                         # correct
    rec("neg_diff", "No", 1),                                    # correct
]


def test_hand_computed_metrics():
    m = compute_metrics(RECORDS)
    assert m["n"] == 6
    assert m["accuracy"] == pytest.approx(4 / 6, abs=1e-4)
    assert {pt: (v["n"], v["accuracy"]) for pt, v in m["per_pair_type"].items()} == {
        "positive": (2, 0.5), "neg_same": (2, 0.5), "neg_diff": (2, 1.0)}
    assert m["per_category"]["mug"]["n"] == 3 and m["per_category"]["mug"]["accuracy"] == pytest.approx(2 / 3, abs=1e-4)
    assert m["per_category"]["hat"]["neg_same"] == 0.5
    assert m["asd"] == pytest.approx(12 / 6)
    nav = m["navigation"]  # RECORDS use our older field names (nav_unreachable, object_category, flips)
    assert (nav["moves"], nav["nav_fail_unreachable"], nav["nav_fail_trap"], nav["nav_failures"]) == (6, 1, 2, 3)
    assert nav["failure_rate_per_move"] == 0.5 and nav["unreachable_rate_per_move"] == pytest.approx(1 / 6, abs=1e-4)
    assert nav["failure_rate_per_step"] == pytest.approx(3 / 12, abs=1e-4)
    # first view: pos Yes ok, pos Yes ok, neg_same Yes wrong, neg_same Yes wrong, neg_diff No ok x2 -> 4/6
    assert m["first_view_accuracy"] == pytest.approx(4 / 6, abs=1e-4)
    assert m["flips"] == {"total": 2, "mean_per_episode": pytest.approx(2 / 6, abs=1e-4), "episodes_with_flip": pytest.approx(2 / 6, abs=1e-4)}
    assert m["multi_step_fraction"] == pytest.approx(3 / 6, abs=1e-4)
    assert m["predicted_yes_rate"] == pytest.approx(2 / 6, abs=1e-4)


def test_integer_predictions_are_accepted():
    r = [dict(RECORDS[0], prediction=1), dict(RECORDS[4], prediction=0)]
    assert compute_metrics(r)["accuracy"] == 1.0


def test_bad_records_name_the_record():
    bad = [RECORDS[0], {k: v for k, v in RECORDS[1].items() if k != "steps"}]
    with pytest.raises(RecordError, match=r"record 1: missing field\(s\) \['steps'\]"):
        compute_metrics(bad)
    with pytest.raises(RecordError, match="record 0: pair_type"):
        compute_metrics([dict(RECORDS[0], pair_type="pos")])
    with pytest.raises(RecordError, match="record 0: field 'prediction'"):
        compute_metrics([dict(RECORDS[0], prediction="Maybe")])


def test_report_files(tmp_path):
    m = compute_metrics(RECORDS)
    paths = write_report({"SV": {"metrics": m}, "MV-fps": {"metrics": m}}, tmp_path, notes=["test run"])
    assert json.loads(paths["metrics"].read_text())["SV"]["metrics"]["n"] == 6
    text = paths["report"].read_text()
    assert "| SV | 6 | 0.667 | 0.500 | 0.500 | 1.000 | 2.000 |" in text and "ASD" in text and "test run" in text
    assert text.count("| 0 |") >= 2  # errors column
    assert paths["plot_pair_type"].stat().st_size > 1000 and paths["plot_tradeoff"].stat().st_size > 1000


def test_failure_causes_from_final_tracker_state():
    def final(*statuses):
        return [{"attributes": [{"name": f"a{i}", "type": t, "accumulated_status": s} for i, (t, s) in enumerate(statuses)]}]

    recs = [
        dict(rec("positive", "No", 2), transcript=final(("color", "Matched"), ("color", "Contradictory"))),
        dict(rec("positive", "No", 6), transcript=final(("color", "Missing"), ("material", "Missing"))),
        dict(rec("neg_same", "Yes", 1), transcript=final(("color", "Matched"), ("color", "Missing"))),
        dict(rec("neg_same", "Yes", 1), transcript=final(("color", "Matched"), ("material", "Missing"))),
        dict(rec("neg_diff", "No", 1), transcript=final(("color", "Contradictory"))),  # correct: not counted
    ]
    fc = compute_metrics(recs)["failure_causes"]
    assert fc == {"positive": {"contradiction": 1, "observation_gap": 1},
                  "neg_same": {"false_confirmation": 1, "missing_evidence": 1}, "neg_diff": {}}


def test_paired_comparison():
    from personal.verification.metrics import compare_runs

    base = [dict(rec("neg_same", "Yes", 1), episode_key="a"), dict(rec("neg_same", "No", 1), episode_key="b"),
            dict(rec("positive", "Yes", 1), episode_key="c")]
    other = [dict(rec("neg_same", "No", 3), episode_key="a"), dict(rec("neg_same", "No", 2), episode_key="b"),
             dict(rec("positive", "No", 4), episode_key="c")]
    cmp_ = compare_runs(base, other)
    assert cmp_["neg_same"] == {"fixed": 1, "broken": 0, "fixed_multi_step": 1}
    assert cmp_["positive"] == {"fixed": 0, "broken": 1, "fixed_multi_step": 0}

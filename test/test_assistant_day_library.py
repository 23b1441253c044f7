"""The scripted household day without rclpy (personal/assistant/day.py): the shipped scripts load,
bad scripts are refused naming file, step and field, expectations and memory changes are worded,
and the report's figures come from its records."""
import json

import pytest

from personal import exit_codes
from personal.assistant.day import (DAYS_DIR, DayScriptError, day_exit_code, load_day, memory_changes, memory_state, record,
                                    unmet, write_report)


def test_the_shipped_days_load_with_every_kind_of_step():
    names = sorted(p.stem for p in DAYS_DIR.glob("*.yaml"))
    assert names == ["leo-saturday", "leo-short", "vera-errands"]
    kinds = {s.kind for n in names for s in load_day(n).steps}
    assert kinds == {"tell", "ask", "find", "verify", "routine"}
    short = load_day("leo-short")
    assert short.graph["seed"] == 2 and [s.kind for s in short.steps] == ["tell", "ask", "find", "verify", "routine"]
    assert short.steps[3].options["at"] == "found" and short.steps[2].expect == {"success": True, "verified": True}


@pytest.mark.parametrize("text, words", [
    ("steps: []", "non-empty list 'steps'"),
    ("steps: [{tell: hi, find: x}]", "step 1: needs exactly one of"),
    ("steps: [{tell: hi, speker: Tom}]", "step 1: unknown field(s) speker for a tell step"),
    ("steps: [{tell: hi}, {find: x, max_steps: 0}]", "step 2: 'max_steps' must be a whole number >= 1"),
    ("steps: [{verify: Lily's mug}]", "step 1: 'at: found' needs a find step before it"),
    ("steps: [{verify: Lily's mug, at: [1]}]", "'at' is 'found'"),
    ("steps: [{ask: mug, expect: {verdict: yes}}]", "'expect' names outcome fields of a ask step"),
    ("steps: [{routine: evening, steps: bad}]", "'steps' is a list of PG steps"),
    ("steps: [{tell: '  '}]", "'tell' must be a non-empty string"),
    ("steps: [{tell: a\n", "not YAML"),
])
def test_bad_scripts_are_refused_naming_the_step_and_field(tmp_path, text, words):
    path = tmp_path / "day.yaml"
    path.write_text(text)
    with pytest.raises(DayScriptError) as err:
        load_day(str(path))
    assert str(path) in str(err.value) and words in str(err.value)


def test_a_missing_script_names_the_shipped_ones():
    with pytest.raises(DayScriptError, match="cannot read the day script.*leo-short"):
        load_day("no-such-day")


def _objects(*rows):
    return [{"id": i, "description": d, "category": c, "owners": w, "last_seen": s} for i, d, c, w, s in rows]


def test_memory_changes_name_gifts_new_gone_sightings_and_candidates():
    before = memory_state(_objects((1, "grey washing machine", None, ["Leo"], None), (2, "white cutting board", None, ["Filippo"], None)))
    after = memory_state(_objects((1, "grey washing machine", None, ["Rosa"], [1.9, 10.1]), (3, "red kettle", None, ["Pietro"], None),
                                  (4, "candidate for 'x' at (1.00, 2.00)", "candidate", [], [1.0, 2.0])))
    assert memory_changes(before, after) == [
        "grey washing machine: Leo → Rosa", "grey washing machine: seen at (1.90, 10.10)", "+ red kettle (Pietro)",
        "- white cutting board (gone)", "+ 1 rejected candidate place(s)"]
    assert memory_changes(after, after) == []


def test_expectations_and_the_report_agree_with_the_records(tmp_path):
    day = load_day("leo-short")
    state = memory_state(_objects((1, "grey washing machine", None, ["Rosa"], None)))
    records = [record(day.steps[0], {"understood": True, "message": "understood", "effects": ["gift"], "unresolved": []},
                      0.2, [], state, state),
               record(day.steps[2], {"status": "succeeded", "success": False, "verified": False, "steps": 200, "why": "not found"},
                      31.5, ["step 1: exploring"], state, state)]
    assert not records[0].unmet and records[0].ok
    assert records[1].unmet == ["success: expected True, got False", "verified: expected True, got False"] and not records[1].ok
    assert unmet({"owners": ["Rosa"]}, {"owners": ["Rosa"]}) == []
    called_off = load_day("vera-errands").steps[2]  # expect: {status: canceled}
    assert record(called_off, {"status": "canceled", "success": False}, 27.0, [], state, state).ok
    assert not record(day.steps[3], {"status": "aborted", "verdict": "unsure"}, 1.0, [], state, state).ok
    assert day_exit_code(records, len(day.steps)) == exit_codes.INCOMPLETE  # a step unmet, and three not run
    assert day_exit_code(records[:1], 1) == exit_codes.OK
    md = write_report(tmp_path, day, records, "2026-12-02T05:00:00+00:00", "stopped by hand").read_text()
    data = json.loads((tmp_path / "day.json").read_text())
    assert data["ok"] == 1 and data["run"] == 2 and data["steps"] == 5 and data["records"][1]["seconds"] == 31.5
    assert "**1/5 steps ok**" in md and "success: expected True, got False" in md and "stopped early: stopped by hand" in md
    assert "| grey washing machine | Rosa |" in md

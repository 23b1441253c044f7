"""Plan Generation programs: validity on a plan with known bad steps, resets, safety refusals."""
import json
from pathlib import Path

import pytest

from personal.smarthome.household import load_household
from personal.smarthome.plans import PlanExecutor, SafetyPolicy, parse_plan, safety_conditions

DATA = Path(__file__).parent / "data" / "smarthome_household.json"


@pytest.fixture
def home():
    h = load_household(DATA)
    h.context.situation.members_present = ["hand01_1", "hand01_2"]  # an adult is home: no safety condition
    return h


def step(appliance, feature, args=None, category=("ROUTINE",), sid="s"):
    return {"step_id": sid, "appliance": appliance, "feature": feature, "category": list(category), "args": args or {},
            "rationale": "test"}


BAD_PLAN = [{"program_id": "evening", "steps": [
    step("stove", "Turn Off Burner", {"burner": 2}, ["ACCIDENT_RESPONSE"]),  # ok (title resolves)
    step("tv", "set_power", {"state": "on"}),  # ok
    step("tv", "display_notification", {"message": "Dinner at 7"}),  # ok: the TV was switched on by the step above
    step("dishwasher", "start_cycle", {"program": "eco"}),  # bad: not owned -> EXECUTION_ERROR
    step("speaker", "levitate", {}),  # bad: no such feature -> INVALID_TOOL_NAME
    step("thermostat", "set_target_temperature", {}),  # bad: missing temperature_f -> MISSING_ARGUMENTS
    step("thermostat", "set_target_temperature", {"temperature_f": 70, "fan": "high"}),  # bad -> UNEXPECTED_ARGUMENTS
    step("thermostat", "set_target_temperature", {"temperature_f": 150}),  # bad: out of range -> EXECUTION_ERROR
    {"step_id": "x", "appliance": "tv", "feature": "calibrate_av", "category": ["PARTY"], "args": {}},  # bad category
    step("toolbox", "create_routine", {"functions": ["tv.calibrate_av", "speaker.speak"]}),  # ok
]}, {"program_id": "morning", "steps": [
    step("tv", "display_notification", {"message": "Good morning"}),  # bad: fresh program -> TV is off again
]}]


def test_validity_and_every_failure_on_a_plan_with_known_bad_steps(home):
    report = PlanExecutor(home).execute(BAD_PLAN)
    statuses = [s.status for s in report.steps]
    assert statuses == ["ok", "ok", "ok", "invalid", "invalid", "invalid", "invalid", "invalid", "invalid", "ok", "invalid"]
    assert report.validity == pytest.approx(4 / 11)
    errors = [s.error_type for s in report.failures]
    assert errors == ["EXECUTION_ERROR", "INVALID_TOOL_NAME", "MISSING_ARGUMENTS", "UNEXPECTED_ARGUMENTS", "EXECUTION_ERROR",
                      "UPSTREAM_FORMAT_ERROR", "EXECUTION_ERROR"]
    assert "needs the appliance on" in report.failures[-1].message  # environment reset between programs
    assert report.steps[-2].result.startswith("routine_")
    d = report.to_dict()
    assert d["failures"] == 7 and d["total_steps"] == 11 and json.dumps(d)
    # the household itself is untouched: every program ran on a copy
    assert home.appliance("tv").appliance.state["power"] == "off"


def test_plan_text_forms_and_format_errors(home):
    flat = json.dumps([{"program_id": "p", **step("speaker", "speak", {"message": "hi"})},
                       {"program_id": "p", **step("speaker", "set_volume", {"volume": 3})}])
    progs = parse_plan(f"```json\n{flat}\n```")
    assert [len(p["steps"]) for p in progs] == [2]
    assert PlanExecutor(home).execute(flat).validity == 1.0
    bad = PlanExecutor(home).execute("Here is my plan: turn on the TV")
    assert bad.validity == 0.0 and bad.format_error.startswith("plan is not valid JSON")
    assert PlanExecutor(home).execute([42]).format_error.startswith("plan[0]")


def test_plans_are_data_never_code(home, tmp_path):
    marker = tmp_path / "pwned"
    payload = f"__import__('pathlib').Path({str(marker)!r}).write_text('x')"
    report = PlanExecutor(home).execute([{"program_id": payload, "steps": [
        step("speaker", "speak", {"message": payload}),
        step(payload, payload, {payload: payload})]}])
    assert [s.status for s in report.steps] == ["ok", "invalid"]
    assert report.steps[0].result["message"] == payload  # carried as text
    assert not marker.exists()


def test_safety_refusal_child_alone_and_nobody_home():
    h = load_household(DATA)  # Leo (9) is home alone
    assert safety_conditions(h) == {"nobody_home": False, "child_alone": True}
    plan = [{"program_id": "after_school", "steps": [
        step("oven", "remote_preheat", {"temperature_f": 400}),
        step("stove", "turn_on_burner", {"burner": 1, "level": 6}),
        step("door-lock", "unlock", {"user": "visitor"}),
        step("garage-door-opener", "operate_door", {"action": "open"}),
        step("garage-door-opener", "operate_door", {"action": "close"}),  # closing is not hazardous
        step("stove", "turn_off_all", {}),  # switching off is not hazardous
    ]}]
    report = PlanExecutor(h).execute(plan)
    assert [s.status for s in report.steps] == ["refused"] * 4 + ["ok", "ok"]
    assert all("child_alone" in s.message for s in report.refusals)
    assert report.validity == 1.0  # refused steps are well formed
    h.context.situation.members_present = []
    assert safety_conditions(h)["nobody_home"]
    assert len(PlanExecutor(h).execute(plan).refusals) == 4
    h.context.situation.members_present = ["hand01_1"]
    assert PlanExecutor(h).execute(plan).refusals == []
    h.context.situation.members_present = ["hand01_2"]
    assert PlanExecutor(h, SafetyPolicy(conditions=("nobody_home",))).execute(plan).refusals == []


def test_toolbox_functions(home):
    plan = [{"program_id": "log", "steps": [
        step("toolbox", "update_memories", {"household_id": "hand01", "memories": [
            {"memory": "Leo was startled by the stove.", "subjects": ["hand01_2"], "time": "2026-11-14T15:41"}]}),
        step("toolbox", "update_sensor_status", {"sensor_name": "motion-1", "sensor_location": "Hallway", "status": "idle"}),
        step("toolbox", "update_appliance_status", {"appliance_name": "tv", "appliance_location": "Living Room",
                                                    "status": {"volume": 10}}),
        step("toolbox", "update_pet_information", {"household_id": "hand01", "pet": {"name": "Denali", "animal": "dog", "age": 5}}),
        step("toolbox", "update_user_information", {"user": {"member_id": "hand01_1", "occupation": "head nurse"}}),
        step("toolbox", "update_memories", {"household_id": "other", "memories": []}),
        step("toolbox", "update_appliance_status", {"appliance_name": "tv", "appliance_location": "Living Room",
                                                    "status": {"volume": 999}}),
    ]}]
    report = PlanExecutor(home).execute(plan)
    assert [s.status for s in report.steps] == ["ok"] * 5 + ["invalid", "invalid"]
    assert report.steps[4].result["occupation"] == "head nurse"


def test_create_routine_checks_every_function(home):
    """issue 15, finding 11: create_routine(["os.system"]) was valid, inflating plan validity."""
    plan = [{"program_id": "r", "steps": [
        step("toolbox", "create_routine", {"functions": ["tv.calibrate_av", "speaker.Speak", "update_sensor_status"]}),
        step("toolbox", "create_routine", {"functions": ["os.system"]}),
        step("toolbox", "create_routine", {"functions": ["tv.levitate"]}),
        step("toolbox", "create_routine", {"functions": ["__import__"]}),
        step("toolbox", "create_routine", {"functions": [42]}),
    ]}]
    report = PlanExecutor(home).execute(plan)
    assert [s.status for s in report.steps] == ["ok"] + ["invalid"] * 4, [(s.status, s.message) for s in report.steps]
    msgs = [s.message for s in report.steps[1:]]
    assert "no appliance 'os'" in msgs[0] and "no feature 'levitate'" in msgs[1]
    assert "nor a toolbox function" in msgs[2] and "expected a list of strings" in msgs[3]
    assert report.validity == pytest.approx(1 / 5)

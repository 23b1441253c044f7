"""Household schema validation, the appliance catalogue and the seeded generator."""
import copy
import json
from pathlib import Path

import pytest

from personal.smarthome.appliances import CATALOGUE, MANDATORY, validate_state
from personal.smarthome.features import FeatureError
from personal.smarthome.generator import generate_household
from personal.smarthome.household import HouseholdError, load_household, parse_household

DATA = Path(__file__).parent / "data" / "smarthome_household.json"


@pytest.fixture
def doc():
    return json.loads(DATA.read_text())


def test_hand_written_household_loads_with_default_states(doc):
    h = parse_household(doc)
    assert [m.name for m in h.members] == ["Emily Carter", "Leo Carter"]
    fridge = h.appliance("refrigerator").appliance
    assert fridge.state["fridge_celsius"] == 3.0  # filled from the catalogue default
    assert h.appliance("thermostat").appliance.state["target_temperature_f"] == 71  # kept from the file


@pytest.mark.parametrize("mutate, path", [
    (lambda d: d["members"][1].__setitem__("age", "nine"), "members[1].age"),
    (lambda d: d["members"][0].pop("name"), "members[0].name"),
    (lambda d: d.__setitem__("colour", "blue"), "colour"),
    (lambda d: d["appliances"][1]["appliance"]["state"].__setitem__("target_temperature_f", 120),
     "appliances[1].appliance.state.target_temperature_f"),
    (lambda d: d["appliances"][2]["appliance"].__setitem__("type", "teleporter"), "appliances[2].appliance.type"),
    (lambda d: d["memories"][0]["subjects"].append("hand01_9"), "memories[0].subjects[1]"),
    (lambda d: d.__setitem__("household_size", 3), "household_size"),
    (lambda d: d["context"]["situation"]["members_present"].append("ghost"), "context.situation.members_present[1]"),
    (lambda d: d["video_transcript"]["entities"]["events"][0].pop("ts_start"), "video_transcript.entities.events[0].ts_start"),
])
def test_invalid_household_errors_name_the_field_path(doc, mutate, path):
    mutate(doc)
    with pytest.raises(HouseholdError) as err:
        parse_household(doc, source="hand.json")
    assert f"{path}:" in str(err.value)
    assert str(err.value).startswith("hand.json: invalid household")


def test_load_household_reports_bad_json(tmp_path):
    bad = tmp_path / "h.json"
    bad.write_text("{not json")
    with pytest.raises(HouseholdError, match=r"h\.json: malformed JSON"):
        load_household(bad)


def test_catalogue_size_mandatory_and_seed_api_features():
    assert len(CATALOGUE) >= 40
    assert set(MANDATORY) <= set(CATALOGUE)
    titles = {t: {f.title for f in CATALOGUE[t].features.values()} for t in CATALOGUE}
    seed = {
        "refrigerator": ["Internal cameras for remote viewing", "Touchscreen family hub interface",
                         "Ingredient management and expiration tracking", "Recipe Recommendation",
                         "Diagnostic alerts (e.g., door ajar)", "Dual ice maker (cubes and crushed/spheres)"],
        "oven": ["Remote preheat via app", "Internal AI camera monitoring", "Cooking control compatibility",
                 "Integrated meat probe with digital readout"],
        "speaker": ["Collect user response", "Next-Gen AI Assistant Integration", "Spatial/Room-Sensing Audio",
                    "Matter/Thread/Wi-Fi 6E Hub Support", "High-Fidelity Audio with Dolby Atmos support",
                    "Generate notification for the user"],
        "tv": ["Universal Content Search", "Hands-free Voice Control", "Smart Home Dashboard Overlay", "Ambient Art Mode",
               "Multi-View / Split Screen", "AI Picture/Sound Calibration",
               "Generate notification for the user to be displayed on TV", "Next-Gen AI Assistant Integration"],
        "thermostat": ["Remote room sensors", "Learning algorithms for schedule automation"],
        "coffee_maker": ["Scheduled brewing"],
    }
    for t, names in seed.items():
        assert set(names) <= titles[t], (t, set(names) - titles[t])
    # features the seed's plan examples call by method name
    assert "operate_door" in CATALOGUE["garage_door_opener"].features
    assert "complex_query" in CATALOGUE["speaker"].features
    assert CATALOGUE["stove"].feature("Turn Off Burner").method == "turn_off_burner"
    assert CATALOGUE["air_purifier"].feature("set_mode").params["mode"].choices.count("allergen") == 1


def test_every_type_with_power_gated_features_can_be_switched_on():
    for t in CATALOGUE.values():
        if any(f.needs_power for f in t.features.values()):
            assert "set_power" in t.features, t.type


def test_validate_state_reports_each_bad_key():
    problems = validate_state("thermostat", {"mode": "warp", "bogus": 1, "learning": "yes"})
    assert any(p.startswith("mode:") for p in problems)
    assert any(p.startswith("bogus: unknown state key") for p in problems)
    assert any(p.startswith("learning:") for p in problems)
    assert validate_state("thermostat", CATALOGUE["thermostat"].default_state) == []


def test_generator_is_seeded_and_spans_occupancies():
    a, b = generate_household(7), generate_household(7)
    assert a.to_json() == b.to_json()
    assert generate_household(8).to_json() != a.to_json()
    kinds = set()
    for seed in range(24):
        h = generate_household(seed)
        kinds.add(h.occupancy_type)
        assert 5 <= len(h.appliances) <= 12
        assert set(MANDATORY) <= {p.appliance.type for p in h.appliances}
        assert h.memories and all(m.time and m.subjects for m in h.memories)
        assert h.context.situation is not None
        names = [m.name.split()[0] for m in h.members]
        assert len(names) == len(set(names))
        for m in h.members:
            assert m.hobbies and m.lifestyle and m.preference and m.persona
    assert kinds == {"single", "family", "roommate"}
    with pytest.raises(ValueError):
        generate_household(1, occupancy="commune")


def test_generated_household_round_trips_through_json(tmp_path):
    from personal.smarthome.household import save_household

    h = generate_household(3)
    save_household(h, tmp_path / "h.json")
    assert load_household(tmp_path / "h.json").to_json() == h.to_json()

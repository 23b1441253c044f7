"""Every appliance feature: callable with valid arguments, rejecting invalid ones."""
import copy

import pytest

from personal.smarthome.appliances import CATALOGUE
from personal.smarthome.features import FeatureError

FEATURES = [(t, f) for t in CATALOGUE for f in CATALOGUE[t].features]


def _fresh(type_):
    state = copy.deepcopy(CATALOGUE[type_].default_state)
    if "power" in state:
        state["power"] = "on"
    return state


def _wrong_type_value(kind):
    return {"int": "five", "float": "warm", "str": 42, "bool": "yes", "list": "not-a-list", "time": 730}[kind]


@pytest.mark.parametrize("type_, method", FEATURES)
def test_feature_runs_with_its_example_and_is_deterministic(type_, method):
    t = CATALOGUE[type_]
    f = t.features[method]
    s1, s2 = _fresh(type_), _fresh(type_)
    r1 = t.call(s1, method, copy.deepcopy(f.example))
    r2 = t.call(s2, method, copy.deepcopy(f.example))
    assert r1 == r2 and s1 == s2
    assert isinstance(r1, (dict, list, str))


@pytest.mark.parametrize("type_, method", FEATURES)
def test_feature_rejects_invalid_arguments(type_, method):
    t = CATALOGUE[type_]
    f = t.features[method]
    state = _fresh(type_)
    with pytest.raises(FeatureError, match="unexpected arguments"):
        t.call(state, method, {**f.example, "definitely_not_a_param": 1})
    for name, p in f.params.items():
        bad = {**f.example, name: _wrong_type_value(p.kind)}
        with pytest.raises(FeatureError, match=name):
            t.call(_fresh(type_), method, bad)
        if p.required:
            with pytest.raises(FeatureError, match=f"missing required argument '{name}'"):
                t.call(_fresh(type_), method, {k: v for k, v in f.example.items() if k != name})
        if p.choices and p.kind != "list":
            with pytest.raises(FeatureError, match="is not one of"):
                t.call(_fresh(type_), method, {**f.example, name: "no-such-choice"})
        if p.hi is not None and p.kind in ("int", "float"):
            with pytest.raises(FeatureError, match="outside"):
                t.call(_fresh(type_), method, {**f.example, name: p.hi + 1})
    with pytest.raises(FeatureError):
        t.call(state, method, "not-an-object")


def test_power_prerequisite_and_title_lookup():
    tv = CATALOGUE["tv"]
    state = copy.deepcopy(tv.default_state)  # power off
    with pytest.raises(FeatureError) as err:
        tv.call(state, "universal_search", {"query": "cats"})
    assert err.value.kind == "prerequisite" and "set_power" in str(err.value)
    tv.call(state, "set_power", {"state": "on"})
    out = tv.call(state, "Universal Content Search", {"query": "cats"})  # the seed's title resolves too
    assert out["query"] == "cats" and len(out["results"]) == 2
    with pytest.raises(FeatureError) as err:
        tv.call(state, "teleport", {})
    assert err.value.kind == "unknown_feature"


def test_stateful_results_follow_state():
    fridge = CATALOGUE["refrigerator"]
    state = copy.deepcopy(fridge.default_state)
    report = fridge.call(state, "manage_ingredients", {"create_shopping_list": "weekly"})
    assert report["shopping_list"]["items"] == ["milk", "spinach"]  # quantity <= 1 or expiring within 2 days
    recipe = fridge.call(state, "recommend_recipe", {"request": "omelette with spinach"})
    assert recipe["recipe"] == "vegetable omelette" and state["screen"] == "recipe: vegetable omelette"
    with pytest.raises(FeatureError, match="outside"):
        fridge.call(state, "set_temperature", {"compartment": "freezer", "celsius": 4})
    oven = CATALOGUE["oven"]
    ostate = copy.deepcopy(oven.default_state)
    ostate["door"] = "open"
    assert oven.call(ostate, "remote_preheat", {})["preheating"] is False  # unsafe -> alert, no heating
    ostate["door"] = "closed"
    assert oven.call(ostate, "remote_preheat", {})["target_temperature_f"] == 350
    garage = CATALOGUE["garage_door_opener"]
    assert garage.features["operate_door"].is_hazardous({"action": "open"})
    assert not garage.features["operate_door"].is_hazardous({"action": "close"})

"""The safety layer: the one set of rules every path that changes an appliance goes through —
plans (``PlanExecutor``), direct tool calls and MQTT ``…/set`` commands (both ``ToolExecutor``).

A change is *hazardous* when it heats, unlocks or opens: a feature marked ``hazard`` in the
catalogue (oven preheat, burner on, space heater on, door unlock, garage open), or a raw state
write (``update_appliance``, the plan toolbox's ``update_appliance_status``) that does the same to
the state (``locked`` true → false, a garage ``door`` becoming open, an oven / burner / heater
heating up). A hazardous change is refused while a configured safety condition holds:
``nobody_home`` (no member present) or ``child_alone`` (only members under 13 present).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from personal.smarthome.appliances import CATALOGUE
from personal.smarthome.features import FeatureError
from personal.smarthome.household import Household

CHILD_AGE = 13


def safety_conditions(h: Household) -> dict[str, bool]:
    """Which safety conditions hold in the household's current situation."""
    sit = h.context.situation
    present = [h.member(mid) for mid in (sit.members_present if sit else [])]
    return {"nobody_home": sit is not None and not present,
            "child_alone": bool(present) and all(m.age < CHILD_AGE for m in present)}


def _rises(key: str) -> Callable[[dict, dict], bool]:
    return lambda before, after: _num(after.get(key)) > _num(before.get(key))


def _num(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


def _oven_heats(before: dict, after: dict) -> bool:
    return (after.get("status") not in (None, "idle", "off") and after.get("status") != before.get("status")) \
        or _rises("target_temperature_f")(before, after)


def _burner_up(before: dict, after: dict) -> bool:
    b, a = before.get("burners") or {}, after.get("burners") or {}
    return isinstance(a, dict) and any(_num(level) > _num(b.get(k) if isinstance(b, dict) else 0) for k, level in a.items())


def _heater_on(before: dict, after: dict) -> bool:
    return after.get("power") == "on" and (before.get("power") != "on" or after.get("heat_level") != before.get("heat_level"))


# appliance type -> (hazard, does the state change from before to after do it?)
STATE_HAZARDS: dict[str, tuple[str, Callable[[dict, dict], bool]]] = {
    "door_lock": ("unlock", lambda before, after: bool(before.get("locked", True)) and after.get("locked") is False),
    "garage_door_opener": ("open", lambda before, after: after.get("door") == "open" and before.get("door") != "open"),
    "oven": ("heat", _oven_heats),
    "stove": ("heat", _burner_up),
    "space_heater": ("heat", _heater_on),
}


@dataclass
class SafetyPolicy:
    conditions: tuple[str, ...] = ("nobody_home", "child_alone")

    def refusal(self, h: Household, hazard: str) -> str | None:
        """The refusal text for a change that would ``hazard`` (``""``: none) in ``h`` now, or None."""
        held = [c for c, on in safety_conditions(h).items() if on and c in self.conditions]
        if hazard and held:
            return f"refused: a step that would {hazard} is not allowed while {' and '.join(held)}"
        return None

    def feature_refusal(self, h: Household, appliance_type: str, feature: str, args: Any) -> str | None:
        """Refusal for running ``feature`` with ``args``; None when allowed or when the call is malformed
        (the feature's own validation then reports that)."""
        try:
            f = CATALOGUE[appliance_type].feature(feature)
            bound = f.bind(args if isinstance(args, dict) else {})
        except (FeatureError, KeyError):
            return None
        return self.refusal(h, f.hazard if f.is_hazardous(bound) else "")

    def state_refusal(self, h: Household, appliance_type: str, before: dict, after: dict) -> str | None:
        """Refusal for writing the state ``after`` over ``before`` directly."""
        hazard, does_it = STATE_HAZARDS.get(appliance_type, ("", None))
        return self.refusal(h, hazard) if does_it is not None and does_it(before, after) else None

"""Appliance catalogue: 47 smart-appliance types with feature-level methods.

Covers every appliance and feature of the seed's API references (refrigerator, oven,
speaker, TV), the features its examples use (garage-door ``operate_door``, speaker
``complex_query``, stove burner off, smart display notification, light dimming, hood
power, air-purifier allergen mode, TV calibration / ambient mode / notification,
thermostat remote sensors and learning, coffee-maker scheduled brewing) and the five
mandatory appliances (refrigerator, thermostat, microwave, speaker, TV).

``ApplianceType.call(state, method, args)`` validates arguments, checks prerequisites,
runs the feature on ``state`` (mutating it) and returns a deterministic result.
"""
from __future__ import annotations

import copy
import hashlib
from dataclasses import dataclass
from typing import Any

from personal.smarthome.features import (
    Feature, FeatureError, P, Param, action, notifier, power_feature, report, setter, toggle,
)

MANDATORY = ("refrigerator", "thermostat", "microwave", "speaker", "tv")


@dataclass(frozen=True)
class ApplianceType:
    type: str
    title: str
    description: str
    default_state: dict[str, Any]
    features: dict[str, Feature]

    def feature(self, name: str) -> Feature:
        """Resolve a feature by method name or by the seed's title (case-insensitive)."""
        if name in self.features:
            return self.features[name]
        key = _norm(name)
        for f in self.features.values():
            if _norm(f.title) == key or _norm(f.method) == key:
                return f
        raise FeatureError(f"{self.type} has no feature {name!r} (features: {sorted(self.features)})", "unknown_feature")

    def call(self, state: dict[str, Any], name: str, args: dict[str, Any]) -> Any:
        feature = self.feature(name)
        bound = feature.bind(args)
        if feature.needs_power and state.get("power") == "off":
            raise FeatureError(
                f"{self.type}.{feature.method} needs the appliance on; call set_power with state='on' first", "prerequisite")
        return feature.run(state, bound)

    def describe(self) -> dict[str, Any]:
        return {"type": self.type, "title": self.title, "description": self.description,
                "features": [f.describe() for f in self.features.values()]}


def _norm(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum())


def _digest(*parts: Any) -> int:
    """Stable small integer from the inputs (Python's hash() is salted per process)."""
    return int(hashlib.sha1("|".join(map(str, parts)).encode()).hexdigest()[:8], 16)


CATALOGUE: dict[str, ApplianceType] = {}


def _t(type_: str, title: str, description: str, state: dict[str, Any], *features: Feature, power: bool = True) -> None:
    feats = ([power_feature()] if power else []) + list(features)
    state = ({"power": "off"} if power else {}) | state
    CATALOGUE[type_] = ApplianceType(type_, title, description, state, {f.method: f for f in feats})


def _assistant(device: str) -> Feature:
    def run(state: dict, args: dict) -> Any:
        history = list(state.get("query_history", []))
        state["query_history"] = (history + [args["query_text"]])[-10:]
        context = history[-3:] if args["context_history"] else []
        return {"answered_by": "assistant_llm", "query": args["query_text"], "context_used": context,
                "response": f"{device} assistant is handling: {args['query_text']}"}

    return action("complex_query", "Next-Gen AI Assistant Integration",
                  "Offloads complex, conversational queries to a large language model for context-aware answers.",
                  {"query_text": P("str"), "context_history": P("bool", opt=True, default=False)}, run,
                  {"query_text": "play an evening chill lo-fi mix", "context_history": True}, needs_power=True,
                  tags=("assistant", "music"))


# ---------------------------------------------------------------- kitchen: cold storage
RECIPES = {
    "vegetable omelette": {"eggs", "spinach", "cheese", "milk"},
    "chicken stir fry": {"chicken", "broccoli", "soy sauce", "rice"},
    "berry smoothie": {"berries", "yogurt", "banana", "milk"},
    "pasta primavera": {"pasta", "tomatoes", "spinach", "cheese"},
    "salmon with greens": {"salmon", "spinach", "lemon"},
    "tofu curry": {"tofu", "coconut milk", "rice", "broccoli"},
}


def _fridge_camera(state: dict, args: dict) -> Any:
    names = [i["name"] for i in state["ingredients"]]
    return {"snapshot": f"fridge_snapshot_{_digest(*names) % 10000:04d}.jpg", "detected_contents": names}


def _fridge_hub(state: dict, args: dict) -> Any:
    state["hub_widgets"] = list(args["widgets"])
    if args.get("notification"):
        state["hub_notifications"] = (state.get("hub_notifications", []) + [args["notification"]])[-5:]
    return {"widgets": state["hub_widgets"], "notification": args.get("notification")}


def _fridge_ingredients(state: dict, args: dict) -> Any:
    wanted = args.get("ingredients")
    items = [i for i in state["ingredients"] if not wanted or i["name"] in wanted]
    if wanted:
        missing = sorted(set(wanted) - {i["name"] for i in items})
        if missing:
            raise FeatureError(f"ingredients not in the refrigerator: {missing}")
    out: dict[str, Any] = {"ingredients": copy.deepcopy(items)}
    if args.get("create_shopping_list"):
        low = [i["name"] for i in items if i["quantity"] <= 1 or i["days_to_expiry"] <= 2]
        state["shopping_lists"] = {**state.get("shopping_lists", {}), args["create_shopping_list"]: low}
        out["shopping_list"] = {"name": args["create_shopping_list"], "items": low}
    return out


def _fridge_recipe(state: dict, args: dict) -> Any:
    have = {i["name"] for i in state["ingredients"]}
    words = set(args["request"].lower().replace(",", " ").split())
    def score(item):
        name, needs = item
        return (len(needs & have) + 2 * len(words & set(name.split())), name)
    name, needs = max(RECIPES.items(), key=score)
    state["screen"] = f"recipe: {name}"
    return {"recipe": name, "uses": sorted(needs & have), "missing": sorted(needs - have), "displayed_on": "fridge screen"}


def _fridge_alert(state: dict, args: dict) -> Any:
    state["alerts"] = (state.get("alerts", []) + [args["issue"]])[-5:]
    return {"alert_sent": True, "issue": args["issue"]}


def _fridge_ice(state: dict, args: dict) -> Any:
    state["ice_maker"] = args["mode"]
    state["rapid_ice"] = bool(args["rapid"]) and args["mode"] != "off"
    return {"ice_maker": state["ice_maker"], "rapid_ice": state["rapid_ice"]}


def _fridge_temp(state: dict, args: dict) -> Any:
    lo, hi = (1.0, 7.0) if args["compartment"] == "fridge" else (-24.0, -14.0)
    if not lo <= args["celsius"] <= hi:
        raise FeatureError(f"argument 'celsius': {args['celsius']} outside [{lo}, {hi}] for the {args['compartment']}")
    state[f"{args['compartment']}_celsius"] = args["celsius"]
    return {f"{args['compartment']}_celsius": args["celsius"]}


_t("refrigerator", "Smart Refrigerator", "Family-hub refrigerator with cameras and ingredient tracking.",
   {"power": "on", "fridge_celsius": 3.0, "freezer_celsius": -18.0, "door": "closed", "ice_maker": "cubes",
    "rapid_ice": False, "hub_widgets": ["calendar"], "screen": "home",
    "ingredients": [{"name": "milk", "quantity": 1, "days_to_expiry": 2}, {"name": "eggs", "quantity": 6, "days_to_expiry": 10},
                    {"name": "spinach", "quantity": 1, "days_to_expiry": 1}, {"name": "cheese", "quantity": 2, "days_to_expiry": 20}]},
   action("view_internal_camera", "Internal cameras for remote viewing",
          "Sends a snapshot of the fridge/freezer contents to the app and lists the detected contents.", {}, _fridge_camera, {},
          tags=("cooking", "shopping")),
   action("update_family_hub", "Touchscreen family hub interface",
          "Updates the widgets on the family hub screen (calendar, notes, weather, photos, music); can push a notification.",
          {"widgets": P("list", choices=("calendar", "notes", "weather", "photos", "music"), lo=1, hi=5),
           "notification": P("str", opt=True)}, _fridge_hub, {"widgets": ["calendar", "notes"], "notification": "Soccer practice 5pm"},
          tags=("family", "child", "notification")),
   action("manage_ingredients", "Ingredient management and expiration tracking",
          "Reports ingredients with quantity and expiry; all ingredients when none are given. With create_shopping_list "
          "it generates a shopping list for ingredients that are low or about to expire.",
          {"ingredients": P("list", opt=True), "create_shopping_list": P("str", opt=True)}, _fridge_ingredients,
          {"create_shopping_list": "weekly"}, tags=("cooking", "shopping", "health")),
   action("recommend_recipe", "Recipe Recommendation",
          "Recommends a personalized recipe for a natural-language request and displays it on the fridge screen.",
          {"request": P("str")}, _fridge_recipe, {"request": "a quick vegetarian dinner"}, tags=("cooking", "health")),
   action("send_diagnostic_alert", "Diagnostic alerts (e.g., door ajar)", "Sends an alert to the user for the issue.",
          {"issue": P("str", choices=("door_ajar", "temperature_high", "water_filter", "ice_maker_jam", "power_outage"))},
          _fridge_alert, {"issue": "door_ajar"}, tags=("safety", "maintenance")),
   action("set_ice_maker", "Dual ice maker (cubes and crushed/spheres)",
          "Toggles the ice maker mode or triggers a rapid ice production cycle.",
          {"mode": P("str", choices=("cubes", "crushed", "spheres", "off")), "rapid": P("bool", opt=True, default=False)},
          _fridge_ice, {"mode": "crushed", "rapid": True}, tags=("party", "hot")),
   action("set_temperature", "Compartment temperature", "Sets the fridge (1..7 C) or freezer (-24..-14 C) temperature.",
          {"compartment": P("str", choices=("fridge", "freezer")), "celsius": P("float", lo=-24, hi=7)}, _fridge_temp,
          {"compartment": "fridge", "celsius": 4}, tags=("energy",)),
   power=False)

_t("freezer", "Smart Chest Freezer", "Standalone freezer with fast-freeze.",
   {"power": "on", "temperature_f": 0.0, "fast_freeze": False},
   setter("set_temperature", "Temperature control", "Sets the freezer temperature in F.", "temperature_f",
          P("float", lo=-10, hi=10), -5, needs_power=False),
   toggle("set_fast_freeze", "Fast freeze", "Boosts cooling for freshly added food.", "fast_freeze", needs_power=False,
          tags=("cooking", "shopping")),
   report("get_status", "Status", "Temperature and fast-freeze state.", ("temperature_f", "fast_freeze")),
   power=False)

_t("wine_cooler", "Wine Cooler", "Dual-zone wine cooler.", {"temperature_f": 55.0, "bottles": 12},
   setter("set_temperature", "Temperature control", "Sets the cellar temperature in F.", "temperature_f",
          P("float", lo=40, hi=65), 52, tags=("party",)),
   report("get_inventory", "Bottle inventory", "Number of bottles stored.", ("bottles",), tags=("party",)))


# ---------------------------------------------------------------- kitchen: cooking
def _oven_preheat(state: dict, args: dict) -> Any:
    if state["door"] == "open":
        state["alerts"] = (state.get("alerts", []) + ["preheat refused: door open"])[-5:]
        return {"preheating": False, "alert_sent": True, "issue": "oven door is open; preheating is unsafe"}
    state.update(power="on", target_temperature_f=args["temperature_f"], status="preheating")
    return {"preheating": True, "target_temperature_f": args["temperature_f"], "diagnostic": "ok"}


def _oven_camera(state: dict, args: dict) -> Any:
    if args["query"]:
        contents = state["contents"] or "nothing"
        return {"answer": f"The oven contains {contents}; status {state['status']}.", "query": args["query"]}
    if args["mode"] == "video":
        return {"live_feed": f"https://oven.local/live/{_digest(state['contents']) % 1000:03d}"}
    return {"snapshot": f"oven_snapshot_{_digest(state['contents'], state['status']) % 10000:04d}.jpg",
            "contents": state["contents"]}


def _oven_probe(state: dict, args: dict) -> Any:
    if args.get("target_alert_f") is not None:
        state["probe_alert_f"] = args["target_alert_f"]
    return {"probe_temperature_f": state["probe_temperature_f"], "alert_at_f": state.get("probe_alert_f")}


def _oven_timer(state: dict, args: dict) -> Any:
    state["timer_minutes"] = args["minutes"]
    return {"timer_minutes": args["minutes"]}


_t("oven", "Smart Wall Oven", "Wi-Fi oven with camera, modes and meat probe.",
   {"door": "closed", "status": "idle", "mode": "bake", "target_temperature_f": 0, "contents": "", "probe_temperature_f": 68,
    "probe_alert_f": None, "timer_minutes": 0},
   action("remote_preheat", "Remote preheat via app",
          "Preheats to 350 F or the requested temperature after a safety diagnostic; if unsafe, alerts the user app.",
          {"temperature_f": P("int", opt=True, lo=170, hi=550, default=350)}, _oven_preheat, {"temperature_f": 375},
          hazard="heat", tags=("cooking",)),
   action("camera_monitor", "Internal AI camera monitoring",
          "Snapshot of the oven contents; a live feed link in video mode; answers a query about the contents if given.",
          {"mode": P("str", opt=True, choices=("snapshot", "video"), default="snapshot"), "query": P("str", opt=True)},
          _oven_camera, {"mode": "snapshot"}, tags=("cooking", "safety")),
   setter("set_cooking_mode", "Cooking control compatibility", "Changes the oven mode between convection, broil and bake.",
          "mode", P("str", choices=("convection", "broil", "bake")), "convection", needs_power=False, tags=("cooking",)),
   action("read_meat_probe", "Integrated meat probe with digital readout",
          "Returns the meat-probe temperature; can set a target alert temperature.",
          {"target_alert_f": P("int", opt=True, lo=100, hi=212)}, _oven_probe, {"target_alert_f": 165}, tags=("cooking",)),
   action("set_timer", "Cooking timer", "Sets a cooking timer in minutes.", {"minutes": P("int", lo=1, hi=720)}, _oven_timer,
          {"minutes": 30}, needs_power=True, tags=("cooking",)),
   action("turn_off", "Turn off oven", "Stops heating and turns the oven off.", {},
          lambda s, a: s.update(power="off", status="idle", target_temperature_f=0) or {"power": "off"}, {},
          tags=("safety",)))


def _micro_cook(state: dict, args: dict) -> Any:
    if state["door"] == "open":
        raise FeatureError("microwave door is open; close it before starting")
    state.update(status="cooking", power_level=args["power_level"], remaining_seconds=args["seconds"])
    return {"status": "cooking", "power_level": args["power_level"], "seconds": args["seconds"]}


def _micro_defrost(state: dict, args: dict) -> Any:
    seconds = int(round(args["weight_g"] * 0.6))
    state.update(status="defrosting", remaining_seconds=seconds)
    return {"status": "defrosting", "seconds": seconds}


_t("microwave", "Smart Microwave", "Microwave with sensor reheat and defrost.",
   {"door": "closed", "status": "idle", "power_level": 10, "remaining_seconds": 0},
   action("start_cooking", "Start cooking", "Cooks at a power level (1..10) for a number of seconds.",
          {"power_level": P("int", lo=1, hi=10), "seconds": P("int", lo=1, hi=5999)}, _micro_cook,
          {"power_level": 8, "seconds": 90}, needs_power=True, tags=("cooking",)),
   action("defrost", "Defrost by weight", "Defrosts food by weight in grams.", {"weight_g": P("int", lo=50, hi=3000)},
          _micro_defrost, {"weight_g": 500}, needs_power=True, tags=("cooking",)),
   setter("sensor_reheat", "Sensor reheat", "Reheats with humidity sensing for a food category.", "reheat_program",
          P("str", choices=("plate", "soup", "beverage", "pizza")), "soup", arg="food", also={"status": "reheating"},
          tags=("cooking", "elderly")),
   action("stop", "Stop", "Stops the current program.", {},
          lambda s, a: s.update(status="idle", remaining_seconds=0) or {"status": "idle"}, {}))


def _burner_on(state: dict, args: dict) -> Any:
    if state["child_lock"]:
        raise FeatureError("stove child lock is on; disable it with set_child_lock first")
    burners = dict(state["burners"])
    burners[str(args["burner"])] = args["level"]
    state["burners"] = burners
    return {"burners": burners}


def _burner_off(state: dict, args: dict) -> Any:
    burners = dict(state["burners"])
    burners[str(args["burner"])] = 0
    state["burners"] = burners
    return {"burners": burners}


_t("stove", "Smart Induction Cooktop", "Four-burner induction cooktop.",
   {"burners": {"1": 0, "2": 0, "3": 0, "4": 0}, "child_lock": False},
   action("turn_on_burner", "Turn On Burner", "Turns a burner (1..4) on at a level (1..10).",
          {"burner": P("int", lo=1, hi=4), "level": P("int", lo=1, hi=10)}, _burner_on, {"burner": 1, "level": 5},
          needs_power=True, hazard="heat", tags=("cooking",)),
   action("turn_off_burner", "Turn Off Burner", "Turns one burner off.", {"burner": P("int", lo=1, hi=4)}, _burner_off,
          {"burner": 1}, tags=("safety",)),
   action("turn_off_all", "Turn Off All Burners", "Turns every burner off.", {},
          lambda s, a: s.update(burners={k: 0 for k in s["burners"]}) or {"burners": s["burners"]}, {}, tags=("safety",)),
   toggle("set_child_lock", "Child lock", "Locks the controls against children.", "child_lock", needs_power=False,
          tags=("child", "safety")))

_t("kitchen_hood", "Kitchen Hood", "Range hood with fan and light.", {"fan_speed": 0, "light": False, "auto_mode": False},
   setter("set_fan_speed", "Fan speed", "Sets the extraction fan speed (0..4).", "fan_speed", P("int", lo=0, hi=4), 3,
          tags=("cooking", "odor")),
   toggle("set_light", "Cooktop light", "Turns the hood light on or off.", "light"),
   toggle("set_auto_mode", "Auto ventilation", "Matches fan speed to cooktop heat automatically.", "auto_mode",
          tags=("cooking", "odor")))

_t("dishwasher", "Smart Dishwasher", "Dishwasher with delayed start.", {"status": "idle", "program": "normal", "delay_hours": 0},
   setter("start_cycle", "Start wash cycle", "Starts a wash program.", "program",
          P("str", choices=("eco", "normal", "heavy", "quick")), "eco", also={"status": "running"}, tags=("cleaning", "energy")),
   setter("set_delay_start", "Delay start", "Delays the next cycle by N hours (off-peak energy).", "delay_hours",
          P("int", lo=0, hi=24), 3, tags=("energy", "night")),
   report("get_status", "Cycle status", "Program and status.", ("status", "program", "delay_hours")))


def _brew(state: dict, args: dict) -> Any:
    if state["water_level"] < args["cups"]:
        raise FeatureError(f"not enough water for {args['cups']} cups (tank holds {state['water_level']}); refill first")
    state.update(status="brewing", strength=args["strength"], water_level=state["water_level"] - args["cups"])
    return {"status": "brewing", "cups": args["cups"], "strength": args["strength"]}


def _schedule_brew(state: dict, args: dict) -> Any:
    state["scheduled_brew"] = {"time": args["time"], "strength": args["strength"]}
    return {"scheduled_brew": state["scheduled_brew"]}


_t("coffee_maker", "Smart Coffee Maker", "Drip coffee maker with schedule.",
   {"status": "idle", "strength": "medium", "water_level": 8, "scheduled_brew": None, "keep_warm_minutes": 0},
   action("brew", "Brew now", "Brews 1..12 cups at a strength.",
          {"cups": P("int", lo=1, hi=12), "strength": P("str", opt=True, choices=("mild", "medium", "strong"), default="medium")},
          _brew, {"cups": 2, "strength": "strong"}, needs_power=True, tags=("coffee", "early_riser")),
   action("schedule_brew", "Scheduled brewing", "Schedules a brew at HH:MM.",
          {"time": P("time"), "strength": P("str", opt=True, choices=("mild", "medium", "strong"), default="medium")},
          _schedule_brew, {"time": "06:30"}, tags=("coffee", "early_riser", "work")),
   setter("set_keep_warm", "Keep warm", "Keeps the carafe warm for N minutes.", "keep_warm_minutes", P("int", lo=0, hi=240),
          60, arg="minutes", tags=("coffee",)))

_t("kettle", "Smart Kettle", "Variable-temperature kettle.", {"target_celsius": 100, "status": "idle", "keep_warm": False},
   setter("boil", "Boil to temperature", "Heats water to a target temperature (40..100 C).", "target_celsius",
          P("int", lo=40, hi=100), 85, also={"status": "heating"}, tags=("tea", "early_riser")),
   toggle("set_keep_warm", "Keep warm", "Holds the water at the target temperature.", "keep_warm", tags=("tea",)))

_t("toaster", "Smart Toaster", "Toaster with shade control.", {"shade": 4, "status": "idle"},
   setter("toast", "Toast", "Toasts at a shade 1..7.", "shade", P("int", lo=1, hi=7), 4, also={"status": "toasting"},
          tags=("breakfast",)))

_t("air_fryer", "Smart Air Fryer", "Air fryer with presets.", {"temperature_f": 0, "minutes": 0, "status": "idle"},
   action("start", "Start air frying", "Fries at a temperature for minutes.",
          {"temperature_f": P("int", lo=180, hi=400), "minutes": P("int", lo=1, hi=60)},
          lambda s, a: s.update(temperature_f=a["temperature_f"], minutes=a["minutes"], status="cooking") or dict(a),
          {"temperature_f": 380, "minutes": 12}, needs_power=True, tags=("cooking", "health")),
   setter("run_preset", "Presets", "Runs a preset.", "preset", P("str", choices=("fries", "chicken", "vegetables", "fish")),
          "vegetables", also={"status": "cooking"}, tags=("cooking",)))

_t("rice_cooker", "Smart Rice Cooker", "Multi-grain rice cooker.", {"mode": "white", "status": "idle", "keep_warm": True},
   setter("cook", "Cook", "Cooks a grain program.", "mode", P("str", choices=("white", "brown", "porridge", "quinoa")), "brown",
          also={"status": "cooking"}, tags=("cooking",)),
   toggle("set_keep_warm", "Keep warm", "Keeps rice warm after cooking.", "keep_warm"))

_t("slow_cooker", "Smart Slow Cooker", "Slow cooker with remote control.", {"setting": "off", "hours": 0},
   action("start", "Start slow cooking", "Cooks on a setting for hours.",
          {"setting": P("str", choices=("low", "high", "warm")), "hours": P("int", lo=1, hi=12)},
          lambda s, a: s.update(setting=a["setting"], hours=a["hours"]) or dict(a), {"setting": "low", "hours": 8},
          needs_power=True, tags=("cooking", "work")))

_t("blender", "Smart Blender", "High-speed blender.", {"program": "none", "status": "idle"},
   action("blend", "Blend program", "Runs a blend program for seconds.",
          {"program": P("str", choices=("smoothie", "soup", "crush_ice", "pulse")), "seconds": P("int", lo=5, hi=180)},
          lambda s, a: s.update(program=a["program"], status="blending") or dict(a), {"program": "smoothie", "seconds": 45},
          needs_power=True, tags=("fitness", "health")))

_t("water_dispenser", "Water Purifier / Dispenser", "Filtered water dispenser.", {"filter_life_percent": 64, "last_dispense_ml": 0},
   action("dispense", "Dispense water", "Dispenses ml of water at a temperature.",
          {"ml": P("int", lo=50, hi=2000), "temperature": P("str", choices=("cold", "ambient", "hot"))},
          lambda s, a: s.update(last_dispense_ml=a["ml"]) or dict(a), {"ml": 250, "temperature": "cold"}, needs_power=True,
          tags=("health", "fitness")),
   report("filter_status", "Filter status", "Remaining filter life.", ("filter_life_percent",), tags=("maintenance",)))


# ---------------------------------------------------------------- laundry & cleaning
_t("washer", "Smart Washer", "Front-load washer.", {"status": "idle", "program": "normal", "water_temperature": "warm", "auto_detergent": True},
   action("start_cycle", "Start wash", "Starts a program at a water temperature.",
          {"program": P("str", choices=("normal", "delicates", "heavy", "quick", "bedding")),
           "temperature": P("str", choices=("cold", "warm", "hot"))},
          lambda s, a: s.update(status="running", program=a["program"], water_temperature=a["temperature"]) or dict(a),
          {"program": "quick", "temperature": "cold"}, needs_power=True, tags=("laundry", "child", "pets")),
   toggle("set_auto_detergent", "Auto detergent dosing", "Doses detergent automatically.", "auto_detergent", needs_power=False,
          tags=("laundry",)),
   report("get_status", "Cycle status", "Program and status.", ("status", "program", "water_temperature")))

_t("dryer", "Smart Dryer", "Heat-pump dryer.", {"status": "idle", "program": "normal", "wrinkle_prevent": False},
   action("start_cycle", "Start drying", "Starts a drying program at a dryness level.",
          {"program": P("str", choices=("normal", "delicates", "heavy", "air_dry")), "dryness": P("str", choices=("less", "normal", "more"))},
          lambda s, a: s.update(status="running", program=a["program"]) or dict(a), {"program": "normal", "dryness": "normal"},
          needs_power=True, tags=("laundry",)),
   toggle("set_wrinkle_prevent", "Wrinkle prevent", "Tumbles periodically after the cycle.", "wrinkle_prevent", needs_power=False,
          tags=("laundry", "work")))


def _vacuum_clean(state: dict, args: dict) -> Any:
    state.update(status="cleaning", mode=args["mode"], rooms=list(args["rooms"] or ["all"]))
    return {"status": "cleaning", "mode": args["mode"], "rooms": state["rooms"]}


_t("robot_vacuum", "Robot Vacuum", "Robot vacuum and mop.",
   {"status": "docked", "mode": "vacuum", "rooms": [], "suction": "standard", "battery": 100, "schedule": None},
   action("start_cleaning", "Start cleaning", "Cleans rooms (all when none are given) in a mode.",
          {"rooms": P("list", opt=True), "mode": P("str", opt=True, choices=("vacuum", "mop", "vacuum_and_mop"), default="vacuum")},
          _vacuum_clean, {"rooms": ["Living Room"], "mode": "vacuum"}, tags=("cleaning", "pets", "dust")),
   action("return_to_dock", "Return to dock", "Sends the robot back to its dock.", {},
          lambda s, a: s.update(status="docked") or {"status": "docked"}, {}, tags=("quiet",)),
   setter("set_suction", "Suction power", "Sets the suction level.", "suction", P("str", choices=("quiet", "standard", "max", "pet_hair")),
          "pet_hair", needs_power=False, tags=("pets", "dust")),
   setter("schedule_cleaning", "Scheduled cleaning", "Schedules a daily cleaning at HH:MM.", "schedule", P("time"), "10:00",
          arg="time", needs_power=False, tags=("cleaning", "work")),
   power=False)


# ---------------------------------------------------------------- climate & air
def _thermo_sensors(state: dict, args: dict) -> Any:
    state["active_sensor_room"] = args["room"]
    return {"active_sensor_room": args["room"], "room_temperature_f": 68 + _digest(args["room"]) % 6}


def _thermo_schedule(state: dict, args: dict) -> Any:
    state["schedule"] = {**state["schedule"], args["period"]: args["temperature_f"]}
    return {"schedule": state["schedule"]}


_t("thermostat", "Smart Thermostat", "Learning thermostat with remote room sensors.",
   {"power": "on", "mode": "auto", "target_temperature_f": 70, "current_temperature_f": 68, "learning": False,
    "active_sensor_room": "", "schedule": {"wake": 70, "away": 62, "home": 70, "sleep": 66}},
   setter("set_mode", "HVAC mode", "Sets the HVAC mode.", "mode", P("str", choices=("heat", "cool", "auto", "off")), "heat",
          needs_power=False, tags=("cold", "hot", "energy")),
   setter("set_target_temperature", "Target temperature", "Sets the target temperature in F (50..90).", "target_temperature_f",
          P("int", lo=50, hi=90), 71, arg="temperature_f", needs_power=False, tags=("cold", "hot", "comfort")),
   action("use_remote_sensors", "Remote room sensors", "Uses the remote sensor in a room to control temperature.",
          {"room": P("str")}, _thermo_sensors, {"room": "Nursery"}, tags=("child", "elderly", "sleep", "comfort")),
   toggle("set_learning", "Learning algorithms for schedule automation",
          "Learns the household's schedule and adjusts setpoints automatically.", "learning", needs_power=False,
          tags=("energy", "work", "routine")),
   action("set_schedule", "Schedule setpoints", "Sets the setpoint for a schedule period.",
          {"period": P("str", choices=("wake", "away", "home", "sleep")), "temperature_f": P("int", lo=50, hi=90)},
          _thermo_schedule, {"period": "sleep", "temperature_f": 65}, tags=("sleep", "energy", "routine")),
   report("get_status", "Status", "Mode and temperatures.", ("mode", "target_temperature_f", "current_temperature_f")),
   power=False)

_t("air_purifier", "Air Purifier", "HEPA air purifier.", {"mode": "auto", "fan_speed": 2, "pm25": 12},
   setter("set_mode", "Purification mode", "Sets auto, sleep, turbo or allergen mode.", "mode",
          P("str", choices=("auto", "sleep", "turbo", "allergen")), "allergen", tags=("allergy", "pets", "dust", "health")),
   setter("set_fan_speed", "Fan speed", "Sets the fan speed (1..5).", "fan_speed", P("int", lo=1, hi=5), 3, tags=("dust", "odor")),
   report("get_air_quality", "Air quality readout", "PM2.5 reading.", ("pm25",), tags=("allergy", "health", "dust")))

_t("humidifier", "Smart Humidifier", "Ultrasonic humidifier.", {"target_humidity": 45, "mist_level": 2},
   setter("set_target_humidity", "Target humidity", "Sets the target relative humidity (30..70 %).", "target_humidity",
          P("int", lo=30, hi=70), 50, tags=("dry", "health", "child")),
   setter("set_mist_level", "Mist level", "Sets the mist level (1..3).", "mist_level", P("int", lo=1, hi=3), 2, tags=("dry",)))

_t("dehumidifier", "Smart Dehumidifier", "Compressor dehumidifier.", {"target_humidity": 50, "fan_speed": "low"},
   setter("set_target_humidity", "Target humidity", "Sets the target relative humidity (30..70 %).", "target_humidity",
          P("int", lo=30, hi=70), 45, tags=("humid", "health")),
   setter("set_fan_speed", "Fan speed", "Sets the fan speed.", "fan_speed", P("str", choices=("low", "high")), "high",
          tags=("humid",)))

_t("air_conditioner", "Smart Air Conditioner", "Split AC unit.", {"mode": "cool", "target_temperature_f": 74, "swing": False},
   setter("set_mode", "AC mode", "Sets the AC mode.", "mode", P("str", choices=("cool", "dry", "fan", "auto")), "cool", tags=("hot", "humid")),
   setter("set_target_temperature", "Target temperature", "Sets the target in F (60..86).", "target_temperature_f",
          P("int", lo=60, hi=86), 72, arg="temperature_f", tags=("hot", "comfort")),
   toggle("set_swing", "Swing", "Oscillates the louvers.", "swing", tags=("hot",)))

_t("ceiling_fan", "Smart Ceiling Fan", "Ceiling fan with light.", {"speed": 0, "direction": "forward", "light": False},
   setter("set_speed", "Fan speed", "Sets the speed (0..6).", "speed", P("int", lo=0, hi=6), 3, tags=("hot", "comfort")),
   setter("set_direction", "Direction", "Forward (summer) or reverse (winter).", "direction", P("str", choices=("forward", "reverse")),
          "reverse", tags=("cold", "hot")),
   toggle("set_light", "Fan light", "Turns the light on or off.", "light"))

_t("space_heater", "Smart Space Heater", "Ceramic heater with tip-over switch.", {"heat_level": "low", "timer_minutes": 0},
   setter("set_heat", "Heat level", "Heats at a level (turns the heater on).", "heat_level", P("str", choices=("low", "high")),
          "low", needs_power=False, also={"power": "on"}, hazard="heat", tags=("cold", "elderly")),
   setter("set_timer", "Auto-off timer", "Turns off after N minutes.", "timer_minutes", P("int", lo=0, hi=720), 60,
          arg="minutes", tags=("safety", "sleep")))


# ---------------------------------------------------------------- lighting & power
_t("smart_light", "Smart Light", "Dimmable colour bulb group.",
   {"brightness": 0, "color_temperature_k": 2700, "color": "white", "schedule": None},
   setter("set_brightness", "Dim Brightness", "Sets brightness 0..100 (turns the light on).", "brightness",
          P("int", lo=0, hi=100), 30, needs_power=False, also={"power": "on"}, tags=("sleep", "comfort", "reading")),
   setter("set_color_temperature", "Color temperature", "Sets white temperature (2200..6500 K).", "color_temperature_k",
          P("int", lo=2200, hi=6500), 2700, tags=("sleep", "work", "reading")),
   setter("set_color", "Color scene", "Sets a colour.", "color", P("str", choices=("white", "warm", "red", "blue", "green", "purple")),
          "warm", tags=("party", "movies")),
   setter("set_schedule", "Wake-up light schedule", "Fades the light on at HH:MM.", "schedule", P("time"), "06:45", arg="time",
          needs_power=False, tags=("early_riser", "sleep", "routine")))

_t("smart_plug", "Smart Plug", "Plug with energy metering.", {"energy_kwh_today": 0.4},
   report("energy_report", "Energy monitoring", "Energy used today.", ("power", "energy_kwh_today"), tags=("energy",)),
   setter("set_schedule", "Plug schedule", "Turns on daily at HH:MM.", "schedule", P("time"), "18:00", arg="time",
          needs_power=False, tags=("routine", "energy")))

_t("smart_blinds", "Smart Blinds", "Motorised blinds.", {"position": 0},
   setter("set_position", "Blind position", "Opens to 0..100 %.", "position", P("int", lo=0, hi=100), 50, needs_power=False,
          tags=("sleep", "hot", "privacy")),
   action("open", "Open blinds", "Fully opens the blinds.", {}, lambda s, a: s.update(position=100) or {"position": 100}, {},
          tags=("early_riser", "sunny")),
   action("close", "Close blinds", "Fully closes the blinds.", {}, lambda s, a: s.update(position=0) or {"position": 0}, {},
          tags=("privacy", "sleep", "movies")),
   power=False)


# ---------------------------------------------------------------- security & access
def _unlock(state: dict, args: dict) -> Any:
    state["locked"] = False
    state["access_log"] = (state.get("access_log", []) + [f"unlocked by {args['user']}"])[-10:]
    return {"locked": False}


_t("door_lock", "Smart Door Lock", "Keypad deadbolt with auto-lock.", {"locked": True, "auto_lock_minutes": 0, "access_log": []},
   action("lock", "Lock door", "Locks the door.", {}, lambda s, a: s.update(locked=True) or {"locked": True}, {},
          tags=("security", "child", "night")),
   action("unlock", "Unlock door", "Unlocks the door for a user.", {"user": P("str")}, _unlock, {"user": "guest"},
          hazard="unlock", tags=("guests",)),
   setter("set_auto_lock", "Auto-lock", "Locks automatically after N minutes (0 = off).", "auto_lock_minutes", P("int", lo=0, hi=60),
          5, arg="minutes", needs_power=False, tags=("security", "child", "elderly")),
   report("get_access_log", "Access log", "Recent lock and unlock events.", ("locked", "access_log"), tags=("security",)),
   power=False)


def _garage(state: dict, args: dict) -> Any:
    if args["action"] == "close" and state["obstruction"]:
        raise FeatureError("garage door sensor reports an obstruction; cannot close")
    state["door"] = "open" if args["action"] == "open" else "closed"
    return {"door": state["door"]}


_t("garage_door_opener", "Garage Door Opener", "Wi-Fi garage door opener.", {"door": "closed", "obstruction": False},
   action("operate_door", "Operate door", "Opens or closes the garage door.", {"action": P("str", choices=("open", "close"))},
          _garage, {"action": "close"}, hazard="open", hazard_when=("action", "open"), tags=("security", "car", "work")),
   report("get_status", "Door status", "Door position and obstruction sensor.", ("door", "obstruction"), tags=("security",)),
   power=False)

_t("doorbell_camera", "Video Doorbell", "Doorbell camera with quick replies.", {"motion_alerts": True, "last_reply": ""},
   action("snapshot", "Live view snapshot", "Returns a snapshot of the porch.", {},
          lambda s, a: {"snapshot": "porch_snapshot.jpg"}, {}, tags=("security", "deliveries")),
   toggle("set_motion_alerts", "Motion alerts", "Enables porch motion alerts.", "motion_alerts", needs_power=False,
          tags=("security", "deliveries")),
   setter("quick_reply", "Quick replies", "Plays a recorded reply to a visitor.", "last_reply", P("str"), "Please leave it at the door",
          arg="message", needs_power=False, tags=("deliveries", "work")),
   power=False)

_t("security_camera", "Indoor Security Camera", "Pan-tilt indoor camera.", {"recording": "motion", "privacy_mode": False},
   action("snapshot", "Snapshot", "Returns a snapshot.", {}, lambda s, a: {"snapshot": "camera_snapshot.jpg"}, {},
          needs_power=True, tags=("security", "pets")),
   setter("set_recording", "Recording mode", "Sets the recording mode.", "recording", P("str", choices=("off", "motion", "continuous")),
          "motion", tags=("security", "pets", "elderly")),
   toggle("set_privacy_mode", "Privacy mode", "Turns the lens away while people are home.", "privacy_mode", tags=("privacy",)))

_t("smoke_detector", "Smoke and CO Detector", "Connected smoke/CO alarm.", {"alarm": False, "battery_percent": 88, "last_test": ""},
   action("self_test", "Self test", "Runs the alarm self test.", {},
          lambda s, a: s.update(last_test="passed") or {"result": "passed", "battery_percent": s["battery_percent"]}, {},
          tags=("safety", "maintenance")),
   action("silence_alarm", "Silence alarm", "Silences a nuisance alarm.", {}, lambda s, a: s.update(alarm=False) or {"alarm": False}, {},
          tags=("cooking",)),
   report("get_status", "Status", "Alarm and battery.", ("alarm", "battery_percent"), tags=("safety",)),
   power=False)

_t("water_valve", "Leak Detector and Shut-off Valve", "Water leak sensor with motorised valve.", {"valve": "open", "leak_detected": False},
   setter("set_valve", "Shut-off valve", "Opens or closes the main water valve.", "valve", P("str", choices=("open", "closed")),
          "closed", arg="position", needs_power=False, tags=("safety", "travel")),
   report("leak_status", "Leak status", "Leak sensor and valve position.", ("valve", "leak_detected"), tags=("safety",)),
   power=False)

_t("water_heater", "Smart Water Heater", "Tank water heater.", {"temperature_f": 120, "vacation_mode": False},
   setter("set_temperature", "Water temperature", "Sets the tank temperature (100..140 F).", "temperature_f",
          P("int", lo=100, hi=140), 120, needs_power=False, tags=("child", "energy")),
   toggle("set_vacation_mode", "Vacation mode", "Keeps water just above freezing while away.", "vacation_mode", needs_power=False,
          tags=("travel", "energy")),
   power=False)


# ---------------------------------------------------------------- outdoor, pets, family
_t("sprinkler", "Smart Sprinkler", "Eight-zone irrigation controller.", {"running_zone": 0, "rain_delay_hours": 0, "schedule": None},
   action("run_zone", "Run zone", "Waters a zone for minutes.", {"zone": P("int", lo=1, hi=8), "minutes": P("int", lo=1, hi=60)},
          lambda s, a: s.update(running_zone=a["zone"]) or dict(a), {"zone": 2, "minutes": 10}, tags=("garden",)),
   setter("set_rain_delay", "Rain delay", "Skips watering for N hours.", "rain_delay_hours", P("int", lo=0, hi=72), 24,
          arg="hours", needs_power=False, tags=("garden", "rain")),
   setter("set_schedule", "Watering schedule", "Waters daily at HH:MM.", "schedule", P("time"), "05:30", arg="time",
          needs_power=False, tags=("garden", "routine")),
   power=False)


def _feed(state: dict, args: dict) -> Any:
    if state["food_level_percent"] < 5 * args["portions"]:
        raise FeatureError("food hopper nearly empty; refill before dispensing")
    state["food_level_percent"] -= 5 * args["portions"]
    return {"dispensed_portions": args["portions"], "food_level_percent": state["food_level_percent"]}


_t("pet_feeder", "Automatic Pet Feeder", "Timed pet feeder with camera.", {"food_level_percent": 80, "schedule": []},
   action("dispense", "Dispense food", "Dispenses 1..5 portions now.", {"portions": P("int", lo=1, hi=5)}, _feed, {"portions": 1},
          tags=("pets", "travel", "work")),
   setter("set_schedule", "Feeding schedule", "Sets feeding times (HH:MM list).", "schedule", P("list", lo=1, hi=6), ["07:00", "18:00"],
          arg="times", needs_power=False, tags=("pets", "routine")),
   report("food_level", "Food level", "Hopper food level.", ("food_level_percent",), tags=("pets",)),
   power=False)

_t("litter_box", "Self-cleaning Litter Box", "Automatic litter box.", {"waste_level_percent": 30, "clean_delay_minutes": 7},
   action("start_clean", "Clean now", "Runs a cleaning cycle.", {},
          lambda s, a: s.update(waste_level_percent=0) or {"waste_level_percent": 0}, {}, tags=("pets", "odor")),
   setter("set_clean_delay", "Clean delay", "Waits N minutes after use (3..30).", "clean_delay_minutes", P("int", lo=3, hi=30), 7,
          arg="minutes", needs_power=False, tags=("pets",)),
   report("waste_level", "Waste level", "Drawer fill level.", ("waste_level_percent",), tags=("pets", "odor")),
   power=False)

_t("aquarium_controller", "Aquarium Controller", "Lighting, feeding and water monitor.", {"light": False, "temperature_f": 77, "ph": 7.2},
   toggle("set_light", "Tank light", "Turns the tank light on or off.", "light", needs_power=False, tags=("pets",)),
   action("feed", "Auto feed", "Feeds 1..3 portions.", {"portions": P("int", lo=1, hi=3)}, lambda s, a: dict(a), {"portions": 1},
          tags=("pets", "travel")),
   report("water_parameters", "Water parameters", "Temperature and pH.", ("temperature_f", "ph"), tags=("pets",)),
   power=False)

_t("baby_monitor", "Smart Baby Monitor", "Camera monitor with lullabies.", {"night_light": False, "lullaby": "", "cry_alert": True,
                                                                         "room_temperature_f": 70, "room_humidity": 42},
   setter("play_lullaby", "Play lullaby", "Plays a lullaby.", "lullaby", P("str", choices=("brahms", "twinkle", "white_noise", "rain")),
          "white_noise", arg="track", needs_power=False, tags=("child", "sleep")),
   toggle("set_night_light", "Night light", "Turns the night light on or off.", "night_light", needs_power=False, tags=("child", "sleep")),
   report("get_room_conditions", "Room conditions", "Nursery temperature and humidity.", ("room_temperature_f", "room_humidity"),
          tags=("child",)),
   toggle("set_cry_alert", "Cry detection alerts", "Alerts parents when crying is detected.", "cry_alert", needs_power=False,
          tags=("child",)),
   power=False)

_t("smart_bed", "Smart Bed", "Adjustable bed with sleep tracking.", {"firmness": 50, "head_elevation": 0, "warming_level": 0,
                                                                   "last_sleep_score": 78},
   setter("set_firmness", "Firmness", "Sets firmness 0..100.", "firmness", P("int", lo=0, hi=100), 60, needs_power=False, tags=("sleep",)),
   setter("set_head_elevation", "Head elevation", "Raises the head 0..60 degrees.", "head_elevation", P("int", lo=0, hi=60), 20,
          needs_power=False, tags=("sleep", "health", "elderly")),
   setter("set_warming", "Bed warming", "Warms the bed (0..10).", "warming_level", P("int", lo=0, hi=10), 3, needs_power=False,
          tags=("cold", "sleep")),
   report("sleep_report", "Sleep report", "Last night's sleep score.", ("last_sleep_score",), tags=("sleep", "health")),
   power=False)

_t("ev_charger", "EV Charger", "Level-2 home charger.", {"charging": False, "target_percent": 80, "schedule": None},
   setter("start_charging", "Start charging", "Charges to a target percentage.", "target_percent", P("int", lo=50, hi=100), 80,
          needs_power=False, also={"charging": True}, tags=("car", "work")),
   action("stop_charging", "Stop charging", "Stops charging.", {}, lambda s, a: s.update(charging=False) or {"charging": False}, {},
          tags=("car", "energy")),
   setter("schedule_charging", "Off-peak charging", "Starts charging daily at HH:MM.", "schedule", P("time"), "23:00", arg="time",
          needs_power=False, tags=("car", "energy", "night")),
   power=False)

_t("treadmill", "Smart Treadmill", "Connected treadmill.", {"status": "idle", "speed_mph": 0.0, "last_workout_minutes": 0},
   action("start_workout", "Start workout", "Starts a program at a speed.",
          {"program": P("str", choices=("walk", "jog", "intervals", "hill")), "speed_mph": P("float", lo=0.5, hi=12)},
          lambda s, a: s.update(status="running", speed_mph=a["speed_mph"]) or dict(a), {"program": "walk", "speed_mph": 3.0},
          needs_power=True, tags=("fitness",)),
   action("stop", "Stop", "Stops the belt.", {}, lambda s, a: s.update(status="idle", speed_mph=0.0) or {"status": "idle"}, {}),
   report("workout_summary", "Workout summary", "Last workout duration.", ("last_workout_minutes",), tags=("fitness", "health")))


# ---------------------------------------------------------------- media & assistants
def _speaker_responses(state: dict, args: dict) -> Any:
    return {"responses": list(state["responses"])[-args["n"]:]}


def _speaker_spatial(state: dict, args: dict) -> Any:
    presets = ("balanced", "bass_boost", "vocal", "wide")
    state["eq"] = presets[_digest(state.get("room", "")) % len(presets)]
    return {"eq": state["eq"], "calibrated": True}


def _speaker_scan(state: dict, args: dict) -> Any:
    found = [f"{args['protocol']}-device-{_digest(args['protocol']) % 100:02d}"]
    state["mesh_devices"] = sorted(set(state["mesh_devices"]) | set(found))
    return {"protocol": args["protocol"], "found": found}


def _speaker_play(state: dict, args: dict) -> Any:
    state["now_playing"] = args["query"]
    return {"now_playing": args["query"], "volume": state["volume"]}


_t("speaker", "Smart Speaker", "Voice-assistant speaker with hub support.",
   {"power": "on", "volume": 4, "now_playing": "", "dolby_atmos": False, "eq": "balanced", "mesh_devices": [],
    "responses": ["remind me to water the plants", "what's the weather tomorrow"], "notifications": [], "query_history": []},
   action("collect_user_response", "Collect user response",
          "Returns the last N responses the user gave to the speaker's requests.", {"n": P("int", opt=True, lo=1, hi=20, default=1)},
          _speaker_responses, {"n": 2}, tags=("assistant",)),
   _assistant("speaker"),
   action("calibrate_spatial_audio", "Spatial/Room-Sensing Audio",
          "Analyses room acoustics with the microphones and adjusts the equalizer for spatial audio.", {}, _speaker_spatial, {},
          needs_power=True, tags=("music", "movies")),
   action("scan_for_devices", "Matter/Thread/Wi-Fi 6E Hub Support", "Scans for new devices over Matter or Thread to add to the mesh.",
          {"protocol": P("str", choices=("matter", "thread"))}, _speaker_scan, {"protocol": "matter"}, tags=("tech",)),
   toggle("set_dolby_atmos", "High-Fidelity Audio with Dolby Atmos support",
          "Toggles high-definition codecs and Dolby Atmos rendering for supported media.", "dolby_atmos", tags=("music", "movies")),
   notifier("speak", "Generate notification for the user", "Generates an audio notification for the user after completing a task.",
            needs_power=True, tags=("notification", "elderly", "safety")),
   setter("set_volume", "Volume", "Sets the volume 0..10.", "volume", P("int", lo=0, hi=10), 5, tags=("music", "quiet")),
   action("play_music", "Play music", "Plays music matching a query.", {"query": P("str")}, _speaker_play, {"query": "jazz"},
          needs_power=True, tags=("music", "party", "relax")),
   power=True)


def _tv_voice(state: dict, args: dict) -> Any:
    cmd = args["command"].strip().lower()
    if cmd == "turn on":
        state["power"] = "on"
    elif cmd == "turn off":
        state["power"] = "off"
    elif cmd in ("volume up", "volume down"):
        state["volume"] = max(0, min(100, state["volume"] + (5 if cmd.endswith("up") else -5)))
    elif cmd.startswith("open "):
        state["app"] = args["command"].strip()[5:]
    elif cmd.startswith("play "):
        state["playing"] = args["command"].strip()[5:]
    else:
        raise FeatureError(f"unrecognised voice command {args['command']!r} (try 'Turn on', 'Volume up', 'Open Netflix', 'Play Jazz')")
    return {"executed": args["command"], "power": state["power"], "volume": state["volume"], "app": state["app"], "playing": state["playing"]}


def _tv_search(state: dict, args: dict) -> Any:
    apps = ("Netflix", "Prime Video", "Disney+", "Live TV")
    return {"query": args["query"], "results": [{"title": args["query"], "app": apps[_digest(args["query"], i) % 4]} for i in range(2)]}


def _tv_calibrate(state: dict, args: dict) -> Any:
    state["picture_mode"] = "calibrated"
    return {"picture_mode": "calibrated", "sound_mode": "adaptive"}


_t("tv", "Smart TV", "4K smart TV with assistant and ambient mode.",
   {"volume": 20, "app": "", "playing": "", "ambient_mode": "", "multi_view": [], "overlay": [], "picture_mode": "standard",
    "notifications": [], "query_history": []},
   action("universal_search", "Universal Content Search",
          "Searches all installed streaming apps and live TV for a movie, show or actor.", {"query": P("str")}, _tv_search,
          {"query": "nature documentary"}, needs_power=True, tags=("movies",)),
   action("voice_command", "Hands-free Voice Control",
          "Executes commands like 'Turn on', 'Volume up', 'Open Netflix' or 'Play Jazz' without a remote.", {"command": P("str")},
          _tv_voice, {"command": "Volume up"}, tags=("elderly", "movies", "accessibility")),
   setter("show_dashboard_overlay", "Smart Home Dashboard Overlay",
          "Shows the status of other smart devices (e.g. doorbell camera, thermostat) without interrupting playback.", "overlay",
          P("list", lo=1, hi=6), ["doorbell_camera", "thermostat"], arg="devices", tags=("security", "child", "deliveries")),
   setter("set_ambient_mode", "Ambient Art Mode",
          "Switches to a low-power mode showing artwork, photos or weather when not in active use.", "ambient_mode",
          P("str", choices=("artwork", "photos", "weather")), "artwork", arg="content", tags=("energy", "art", "relax")),
   setter("set_multi_view", "Multi-View / Split Screen", "Splits the screen to show two sources at once.", "multi_view",
          P("list", lo=2, hi=2), ["Game", "YouTube tutorial"], arg="sources", tags=("gaming", "sports")),
   action("calibrate_av", "AI Picture/Sound Calibration",
          "Uses the remote's microphone and light sensors to optimise audio and video for the room.", {}, _tv_calibrate, {},
          needs_power=True, tags=("movies", "fitness")),
   notifier("display_notification", "Generate notification for the user to be displayed on TV",
            "Generates a visual + audio notification on the TV, e.g. step-by-step recipes.", needs_power=True,
            tags=("notification", "cooking", "elderly")),
   _assistant("tv"),
   setter("set_volume", "Volume", "Sets the volume 0..100.", "volume", P("int", lo=0, hi=100), 25, tags=("movies", "quiet")),
   power=True)

_t("smart_display", "Smart Display", "Kitchen smart display.", {"screen": "clock", "notifications": [], "photo_frame": False},
   notifier("show_notification", "Show Notification", "Shows a notification (e.g. first-aid guidance) on screen.", needs_power=False,
            tags=("notification", "safety", "elderly", "child")),
   setter("show_recipe", "Step-by-step recipes", "Displays a recipe for a request.", "screen", P("str"), "banana smoothie",
          arg="request", tags=("cooking",)),
   setter("video_call", "Video call", "Starts a video call with a contact.", "screen", P("str"), "Grandma", arg="contact",
          tags=("family", "elderly")),
   toggle("set_photo_frame", "Photo frame", "Shows family photos when idle.", "photo_frame", tags=("family", "art")),
   power=True)


# ---------------------------------------------------------------- state validation
def state_schema(type_: str) -> dict[str, Param | type]:
    """Per state key: a feature's Param when a setter-like feature controls it, else the default's type."""
    t = CATALOGUE[type_]
    schema: dict[str, Param | type] = {}
    for key, value in t.default_state.items():
        schema[key] = type(value) if value is not None else object
    for f in t.features.values():
        if len(f.params) == 1:
            (pname, param), = f.params.items()
            # a one-argument feature whose example lands on a state key controls that key
            probe = copy.deepcopy(t.default_state)
            probe["power"] = "on"
            try:
                f.run(probe, f.bind(f.example))
            except FeatureError:
                continue
            for key in t.default_state:
                if probe.get(key) == f.bind(f.example)[pname] and key not in ("power",):
                    schema[key] = param
    if "power" in t.default_state:
        schema["power"] = Param("str", choices=("on", "off"))
    return schema


def validate_state(type_: str, state: dict[str, Any], partial: bool = False) -> list[str]:
    """Problems with ``state`` for ``type_``, each starting with the key name."""
    if type_ not in CATALOGUE:
        return [f"<type>: unknown appliance type {type_!r}"]
    if type_ not in _SCHEMAS:
        _SCHEMAS[type_] = state_schema(type_)
    schema = _SCHEMAS[type_]
    problems = []
    for key, value in state.items():
        if key not in schema:
            problems.append(f"{key}: unknown state key for {type_} (known: {sorted(schema)})")
            continue
        rule = schema[key]
        if value == CATALOGUE[type_].default_state.get(key) or value is None or value in ("", []):
            continue  # the default or an "unset" marker is always a valid state
        if isinstance(rule, Param):
            try:
                rule.check(key, value)
            except FeatureError as exc:
                problems.append(f"{key}: {exc}")
        elif rule is float and isinstance(value, (int, float)) and not isinstance(value, bool):
            continue
        elif rule is not object and value is not None and not isinstance(value, rule):
            problems.append(f"{key}: expected {rule.__name__}, got {type(value).__name__}")
    return problems


_SCHEMAS: dict[str, dict] = {}


def complete_state(type_: str, state: dict[str, Any]) -> dict[str, Any]:
    """The type's default state overlaid with ``state`` (deep copies, so households never share lists)."""
    return copy.deepcopy(CATALOGUE[type_].default_state) | copy.deepcopy(state)

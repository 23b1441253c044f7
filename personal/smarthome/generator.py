"""Seeded synthetic households following the seed's staged construction (Sec. 3.1):
occupants (single / family / roommates) with personas, hobbies, lifestyle and preferences,
then pets, then 5-12 appliances (the five mandatory ones first), then memories with times
and subjects, context events, weather, the current situation and a video transcript in the
seed's transcript schema. Same seed, same household. No LLM and no downloads.
"""
from __future__ import annotations

import random
from typing import Any

from personal.smarthome.appliances import CATALOGUE, MANDATORY, complete_state
from personal.smarthome.household import Household, parse_household

FIRST = {
    "Female": ["Emily", "Susan", "Maria", "Aiko", "Priya", "Grace", "Hannah", "Olivia", "Fatima", "Lucia", "Nora", "Chloe"],
    "Male": ["James", "David", "Stephen", "Kenji", "Omar", "Lucas", "Ethan", "Mateo", "Arjun", "Samuel", "Leo", "Noah"],
}
LAST = ["Carter", "Nguyen", "Okafor", "Schmidt", "Rossi", "Tanaka", "Patel", "Garcia", "Kim", "Hughes", "Novak", "Silva"]
OCCUPATIONS = ["nurse", "software engineer", "teacher", "chef", "accountant", "graphic designer", "electrician",
               "pharmacist", "architect", "journalist", "retired engineer", "physiotherapist", "barista", "lawyer"]
HOBBIES = ["cooking", "yoga", "gardening", "gaming", "reading", "jazz music", "running", "movies", "painting", "baking",
           "board games", "photography", "hiking", "knitting"]
LIFESTYLES = ["early riser", "night owl", "heavy cooking", "tech-savvy", "active", "works from home", "energy conscious",
              "frequent traveller"]
PREFERENCES = ["keeps the house at {t}F", "likes quiet mornings", "prefers dim warm lighting in the evening",
               "wants coffee ready at {h}:30", "likes background music while cooking", "prefers the blinds open in the morning"]
PET_NAMES = ["Bella", "Denali", "Milo", "Luna", "Pepper", "Biscuit", "Kiwi", "Shadow", "Nemo", "Sheldon"]
ANIMALS = ["cat", "dog", "hamster", "lizard", "guinea pig", "rabbit", "bird", "fish", "turtle"]
OCCUPANCIES = ("single", "family", "roommate")
LAYOUTS = ["1-bedroom apartment", "2-bedroom apartment", "3-bedroom house", "2-storey townhouse", "4-bedroom house"]
LOCATION = {
    "refrigerator": "Kitchen", "freezer": "Garage", "wine_cooler": "Kitchen", "oven": "Kitchen", "microwave": "Kitchen",
    "stove": "Kitchen", "kitchen_hood": "Kitchen", "dishwasher": "Kitchen", "coffee_maker": "Kitchen", "kettle": "Kitchen",
    "toaster": "Kitchen", "air_fryer": "Kitchen", "rice_cooker": "Kitchen", "slow_cooker": "Kitchen", "blender": "Kitchen",
    "water_dispenser": "Kitchen", "washer": "Laundry Room", "dryer": "Laundry Room", "robot_vacuum": "Living Room",
    "thermostat": "Hallway", "air_purifier": "Bedroom", "humidifier": "Bedroom", "dehumidifier": "Basement",
    "air_conditioner": "Living Room", "ceiling_fan": "Bedroom", "space_heater": "Office", "smart_light": "Living Room",
    "smart_plug": "Office", "smart_blinds": "Living Room", "door_lock": "Entrance", "garage_door_opener": "Garage",
    "doorbell_camera": "Entrance", "security_camera": "Living Room", "smoke_detector": "Hallway", "water_valve": "Basement",
    "water_heater": "Basement", "sprinkler": "Backyard", "pet_feeder": "Kitchen", "litter_box": "Laundry Room",
    "aquarium_controller": "Living Room", "baby_monitor": "Nursery", "smart_bed": "Bedroom", "ev_charger": "Garage",
    "treadmill": "Basement", "speaker": "Living Room", "tv": "Living Room", "smart_display": "Kitchen",
}
ACTIVITY = {
    "refrigerator": "check what was left for dinner", "oven": "bake a lasagna", "microwave": "reheat leftovers",
    "stove": "cook a stir fry", "coffee_maker": "brew coffee before work", "tv": "watch a documentary", "speaker": "play jazz",
    "thermostat": "raise the temperature", "washer": "wash the bedding", "robot_vacuum": "clean up pet hair",
    "air_purifier": "clear pollen from the bedroom", "treadmill": "run intervals", "smart_light": "dim the lights for a movie",
    "door_lock": "let in a delivery", "garage_door_opener": "leave for work", "kettle": "make green tea",
    "pet_feeder": "feed the pet while away", "smart_bed": "raise the head of the bed", "baby_monitor": "play white noise",
    "dishwasher": "run the dishes overnight", "air_fryer": "make crispy vegetables", "smart_display": "follow a recipe",
}
SITUATIONS = [
    ("07:50", "{a} has just left for work through the garage; {b} is doing yoga in the living room with music playing."),
    ("18:20", "{a} is cooking dinner in the kitchen while {b} watches TV in the living room."),
    ("22:40", "{a} is getting ready for bed; the rest of the house is quiet."),
    ("13:05", "{a} is working from home in the office; the kitchen is empty."),
]


def _member(rng: random.Random, hid: str, n: int, role: str, age: int, last: str, used: set[str]) -> dict[str, Any]:
    gender = rng.choice(["Female", "Male"])
    first = rng.choice([f for f in FIRST[gender] if f not in used])  # unique first names keep name-based questions unambiguous
    used.add(first)
    name = f"{first} {last}"
    hobbies = rng.sample(HOBBIES, 2)
    lifestyle = rng.choice(LIFESTYLES) if age >= 16 else "active"
    occupation = rng.choice(OCCUPATIONS) if age >= 22 else ("student" if age >= 6 else "none")
    pref = rng.choice(PREFERENCES).format(t=rng.randint(66, 73), h=rng.randint(6, 8))
    events = [{"date": f"{2026 - rng.randint(1, 6)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
               "description": d} for d in rng.sample(
        ([f"Started working as a {occupation}"] if age >= 22 else []) + ["Moved into this home", "Ran a first half marathon", "Recovered from knee surgery",
         "Graduated from college", "Got married", "Took up " + hobbies[0]], rng.randint(1, 3))]
    return {"member_id": f"{hid}_{n}", "name": name, "role": role, "age": age, "gender": gender, "occupation": occupation,
            "persona": f"{name.split()[0]} is a {age}-year-old {occupation} who enjoys {hobbies[0]} and {hobbies[1]}.",
            "hobbies": hobbies, "lifestyle": lifestyle, "preference": pref, "major_events": events}


def _members(rng: random.Random, hid: str, occupancy: str) -> list[dict[str, Any]]:
    last = rng.choice(LAST)
    used: set[str] = set()
    if occupancy == "single":
        return [_member(rng, hid, 1, "self", rng.randint(24, 82), last, used)]
    if occupancy == "roommate":
        base = rng.randint(21, 35)
        return [_member(rng, hid, i + 1, "roommate", base + rng.randint(0, 6), rng.choice(LAST), used) for i in range(rng.randint(2, 4))]
    parents = [_member(rng, hid, 1, "parent", rng.randint(30, 50), last, used)]
    if rng.random() < 0.8:
        parents.append(_member(rng, hid, 2, "parent", parents[0]["age"] + rng.randint(-4, 4), last, used))
    kids = [_member(rng, hid, len(parents) + i + 1, "child", rng.randint(1, 17), last, used) for i in range(rng.randint(1, 3))]
    out = parents + kids
    if rng.random() < 0.25:
        out.append(_member(rng, hid, len(out) + 1, "grandparent", rng.randint(68, 88), last, used))
    return out


def _appliances(rng: random.Random, members: list[dict], pets: list[dict]) -> list[dict[str, Any]]:
    extras = [t for t in CATALOGUE if t not in MANDATORY]
    weights = {t: 1.0 for t in extras}
    for t in ("pet_feeder", "litter_box", "aquarium_controller"):
        weights[t] = 4.0 if pets else 0.0
    weights["baby_monitor"] = 4.0 if any(m["age"] < 4 for m in members) else 0.0
    for t in ("oven", "stove", "dishwasher", "washer", "robot_vacuum", "door_lock", "smart_light", "coffee_maker"):
        weights[t] = 3.0
    chosen: list[str] = list(MANDATORY)
    count = rng.randint(5, 12)
    while len(chosen) < count:
        pool = [t for t in extras if t not in chosen and weights[t] > 0]
        chosen.append(rng.choices(pool, [weights[t] for t in pool])[0])
    out = []
    for t in chosen:
        state = complete_state(t, {})
        if "power" in state and t not in ("refrigerator", "thermostat"):
            state["power"] = rng.choice(["on", "off"])
        out.append({"appliance": {"name": t.replace("_", "-"), "type": t, "state": state}, "location": LOCATION[t]})
    return out


def _memories(rng: random.Random, members: list[dict], appliances: list[dict], pets: list[dict]) -> list[dict[str, Any]]:
    names = [a["appliance"]["type"] for a in appliances if a["appliance"]["type"] in ACTIVITY]
    out = []
    for m in members:
        for _ in range(rng.randint(2, 4)):
            t = rng.choice(names)
            day = f"2026-{rng.randint(1, 10):02d}-{rng.randint(1, 28):02d}T{rng.randint(6, 23):02d}:{rng.choice(['00', '15', '30', '45'])}"
            out.append({"memory": f"{m['name'].split()[0]} used the {t.replace('_', ' ')} to {ACTIVITY[t]}.",
                        "subjects": [m["member_id"]], "additional_information": f"appliance: {t.replace('_', '-')}",
                        "time": day})
        out.append({"memory": f"{m['name'].split()[0]} mentioned wanting more time for {m['hobbies'][0]}.",
                    "subjects": [m["member_id"]], "additional_information": f"hobby: {m['hobbies'][0]}",
                    "time": f"2026-{rng.randint(1, 10):02d}-{rng.randint(1, 28):02d}T20:00"})
    for p in pets:
        out.append({"memory": f"{p['name']} the {p['animal']} had a check-up at the vet.", "subjects": [p["name"]],
                    "additional_information": "pet care", "time": f"2026-{rng.randint(1, 10):02d}-15T10:00"})
    out.append({"memory": "The household agreed to save energy by turning devices off at night.", "subjects": ["household"],
                "additional_information": "house rule", "time": "2026-01-02T19:00"})
    return out


def _context(rng: random.Random, members: list[dict], appliances: list[dict]) -> dict[str, Any]:
    hh, summary = rng.choice(SITUATIONS if len(members) > 1 else SITUATIONS[2:])  # the first two need two people
    a, b = members[0]["name"].split()[0], members[-1]["name"].split()[0]
    present = [m["member_id"] for m in members if rng.random() < 0.7] or [members[-1]["member_id"]]
    if "left for work" in summary:
        present = [m["member_id"] for m in members[1:]]
    kids = [m for m in members if m["age"] < 13]
    roll = rng.random()
    if roll < 0.2:  # situations the plan safety layer must notice
        hh, summary, present = "10:30", "Everyone has left for the day; the house is empty.", []
    elif roll < 0.35 and kids and len(kids) < len(members):
        hh, summary = "15:40", f"{kids[0]['name'].split()[0]} is home alone after school; the adults are still at work."
        present = [kids[0]["member_id"]]
    kitchen = [x for x in appliances if x["location"] == "Kitchen"]
    events = [{"description": f"Motion detected in the {rng.choice(['Kitchen', 'Living Room', 'Hallway'])}",
               "sensors": [{"sensor": {"name": "motion-1", "type": "motion", "status": "active"}, "location": "Hallway"}],
               "appliances": [], "time": f"2026-11-14T{hh}"}]
    if kitchen:
        k = rng.choice(kitchen)
        events.append({"description": f"The {k['appliance']['name']} was used {rng.randint(5, 50)} minutes ago",
                       "sensors": [], "appliances": [k], "time": f"2026-11-14T{hh}"})
    out_t = rng.randint(20, 95)
    weather = {"outdoor": {"rain": rng.choice(["none", "light", "heavy"]), "snow": "none" if out_t > 35 else "light",
                           "sunny": rng.choice(["yes", "no"]), "temperature": f"{out_t}F", "wind": f"{rng.randint(0, 25)} mph"},
               "indoor": {"dust": rng.choice(["low", "moderate", "high"]), "humidity": f"{rng.randint(25, 70)}%",
                          "odor": rng.choice(["none", "cooking", "pet"]), "temperature": f"{rng.randint(64, 78)}F"}}
    situation = {"time": f"2026-11-14T{hh}", "summary": summary.format(a=a, b=b), "members_present": present}
    return {"events": events, "weather": weather, "situation": situation}


def _transcript(rng: random.Random, hid: str, members: list[dict], appliances: list[dict]) -> dict[str, Any]:
    rooms = sorted({a["location"] for a in appliances})
    zones = [{"zone_id": f"z{i + 1}", "label": r, "relative_position": ["left", "center", "right", "back"][i % 4]}
             for i, r in enumerate(rooms[:4])]
    landmarks = [{"landmark_id": "l1", "type": "counter", "description": "kitchen counter by the window", "zone_id": "z1"},
                 {"landmark_id": "l2", "type": "table", "description": "small dining table", "zone_id": zones[-1]["zone_id"]}]
    m1 = members[0]
    ev = [("00:00.000", "00:12.000", "activity", f"{m1['member_id']} enters the kitchen and opens the refrigerator.", ""),
          ("00:12.000", "00:40.500", "activity", f"{m1['member_id']} prepares a snack at the counter.", "cutting sounds"),
          ("00:40.500", "00:55.000", "appliance", f"{m1['member_id']} starts the microwave.", "microwave beeps"),
          ("01:10.000", "01:20.000", "door", "A door is heard closing, followed by the beep of an electronic lock.", "door closing")]
    events = [{"event_id": f"e{i + 1}", "ts_start": s, "ts_end": e, "event_type": t, "actors": [m1["member_id"]],
               "targets": [], "description": d, "audio": au} for i, (s, e, t, d, au) in enumerate(ev)]
    return {
        "datapoint_id": f"{hid}_video",
        "video_path": "",
        "video_description": {"timebase": {"timestamp_format": "MM:SS.mmm", "start_offset_seconds": 0},
                              "scene": {"summary": f"{m1['name'].split()[0]} prepares a snack in the kitchen, heats it in the "
                                                   "microwave and later someone leaves through the front door.",
                                        "environment_type": "home", "location_label": "Kitchen",
                                        "lighting": {"overall": "bright", "sources_visible": ["window", "ceiling light"]},
                                        "camera": {"motion": "static", "viewpoint": "corner, elevated", "notes": ""},
                                        "layout": {"zones": zones, "landmarks": landmarks}}},
        "entities": {
            "members": [{"member_id": m["member_id"], "appearance": f"{m['gender'].lower()}, {rng.choice(['red', 'grey', 'blue', 'green'])} "
                         f"{rng.choice(['sweater', 't-shirt', 'hoodie'])}", "initial_location": "Kitchen"} for m in members],
            "pets": [],
            "appliances": [{"appliance_id": a["appliance"]["name"], "type": a["appliance"]["type"], "location": a["location"],
                            "initial_state": {"power": a["appliance"]["state"].get("power", "n/a")},
                            "description": f"{CATALOGUE[a['appliance']['type']].title} in the {a['location'].lower()}"}
                           for a in appliances],
            "objects": [{"object_id": "o1", "label": "mug", "category": "kitchenware", "initial_location": "counter",
                         "initial_state": "empty", "description": "white ceramic mug"},
                        {"object_id": "o2", "label": "plate", "category": "kitchenware", "initial_location": "table",
                         "initial_state": "clean", "description": "blue plate"}],
            "events": events,
            "entity_state_timelines": {"members": [{"member_id": m1["member_id"], "states": [
                {"ts": "00:00.000", "state": "standing", "trigger_event_ids": ["e1"]}]}], "pets": [], "appliances": [], "objects": []},
        },
        "captions": {"global": "A short kitchen scene with a snack being prepared.",
                     "segments": [{"ts_start": s, "ts_end": e, "caption": d} for s, e, _, d, _ in ev],
                     "events": [{"event_id": f"e{i + 1}", "caption": d} for i, (_, _, _, d, _) in enumerate(ev)]},
        "quality": {"notes": "synthetic", "consistency_checks": {"entity_ids_consistent": True, "all_state_changes_timestamped": True,
                                                                  "no_unverifiable_inferences": True}},
    }


def generate_household(seed: int, occupancy: str | None = None, with_video: bool = True) -> Household:
    """A validated household; ``occupancy`` is single | family | roommate (random by default)."""
    rng = random.Random(seed)
    hid = f"hh{seed:04d}"
    occupancy = occupancy or rng.choice(["single", "family", "family", "roommate"])
    if occupancy not in OCCUPANCIES:
        raise ValueError(f"occupancy {occupancy!r}: expected one of {OCCUPANCIES}")
    members = _members(rng, hid, occupancy)
    pets = [{"name": n, "animal": rng.choice(ANIMALS), "age": rng.randint(1, 12)}
            for n in rng.sample(PET_NAMES, rng.choice([0, 0, 1, 2]) if occupancy != "family" else rng.choice([0, 1, 2]))]
    appliances = _appliances(rng, members, pets)
    sensors = [{"sensor": {"name": "motion-1", "type": "motion", "status": "active"}, "location": "Hallway"},
               {"sensor": {"name": "front-door-contact", "type": "contact", "status": "closed"}, "location": "Entrance"},
               {"sensor": {"name": "climate-1", "type": "temperature_humidity", "status": "ok"}, "location": "Living Room"}]
    doc = {"household_id": hid, "household_size": len(members), "occupancy_type": occupancy, "layout": rng.choice(LAYOUTS),
           "pets": pets, "members": members, "appliances": appliances, "sensors": sensors,
           "memories": _memories(rng, members, appliances, pets), "context": _context(rng, members, appliances)}
    if with_video:
        doc["video_transcript"] = _transcript(rng, hid, members, appliances)
    return parse_household(doc, source=f"generated household seed {seed}")

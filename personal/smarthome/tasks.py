"""Task generation without an LLM, where the answer is computable from the household.

- Information Grounding (IG): templated questions, each with an ID-based and (where a
  member is named) a name-based variant, a ground-truth answer computed directly from the
  household, and an answer program (``personal.smarthome.programs``) that derives the same
  answer through the tools. Difficulty = number of reasoning steps in the program.
- Multiple Choice (MC): the IG question with the correct answer and four hard distractors of
  the same semantic type drawn from the household (other members' values, other rooms, ...).
- Counterfactual (CF): for each IG item a pair of single-factor edits to the household — one
  that changes the answer, one that does not — with the new answer recomputed on the edited
  household (so ``answer_changed`` is verified, not asserted).
- Feature Recommendation (FR): 10 candidate features of owned appliances with 3
  HIGHLY_RELEVANT / 3 RELEVANT / 4 LESS_RELEVANT labels scored from household evidence
  (hobbies, lifestyle, preferences, ages, pets, weather) matched to feature tags.
- Plan Generation (PG): the current situation plus the household's appliances and features.
"""
from __future__ import annotations

import copy
import random
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Optional

from personal.smarthome.appliances import CATALOGUE
from personal.smarthome.generator import LOCATION, OCCUPATIONS
from personal.smarthome.household import Household, parse_household
from personal.smarthome.programs import difficulty
from personal.smarthome.plans import safety_conditions

ROOMS = sorted(set(LOCATION.values()))


@dataclass
class Task:
    task_id: str
    household_id: str
    family: str  # IG | MC | CF | FR | PG
    template: str
    question: str
    answer_variants: list[str] = field(default_factory=list)
    program: list[dict[str, Any]] = field(default_factory=list)
    difficulty: str = ""
    variant: str = "id"  # id | name
    choices: dict[str, str] = field(default_factory=dict)  # MC: letter -> option
    answer_letter: str = ""
    counterfactual: dict[str, Any] = field(default_factory=dict)  # CF: change, edit, answer_changed, original_answer
    candidates: list[str] = field(default_factory=list)  # FR: feature ids "appliance.method"
    labels: dict[str, str] = field(default_factory=dict)  # FR: feature id -> relevance
    ideal_ranking: list[str] = field(default_factory=list)  # FR
    situation: str = ""  # PG

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Item:
    """One IG item before it is expanded into IG/MC/CF tasks."""

    template: str
    question: str
    program: list[dict[str, Any]]
    gt: Callable[[Household], str]
    personalized_question: Optional[str] = None
    personalized_program: Optional[list[dict[str, Any]]] = None
    distractors: Callable[[Household, str, random.Random], list[str]] | None = None
    cf_changed: Callable[[Household, random.Random], tuple[str, list[dict]]] | None = None


# ---------------------------------------------------------------- edits (single-factor counterfactuals)
def apply_edits(h: Household, edits: list[dict[str, Any]]) -> Household:
    """A validated copy of ``h`` with each edit ``{"path": [...], "value"|"append": ...}`` applied."""
    doc = copy.deepcopy(h.to_json())
    for e in edits:
        target = doc
        for key in e["path"][:-1]:
            target = target[key]
        last = e["path"][-1]
        if "append" in e:
            target[last].append(copy.deepcopy(e["append"]))
        else:
            target[last] = copy.deepcopy(e["value"])
    return parse_household(doc, source="counterfactual household")


def _unchanged_edit(h: Household, rng: random.Random) -> tuple[str, list[dict]]:
    old = h.context.weather.indoor.temperature or "70F"
    new = f"{int(''.join(c for c in old if c.isdigit()) or 70) + rng.choice([4, 6, 8])}F"
    return f"Assume the indoor temperature were {new} instead of {old}.", [
        {"path": ["context", "weather", "indoor", "temperature"], "value": new}]


# ---------------------------------------------------------------- program snippets
def _resolve_member(name: str, field_: str) -> list[dict]:
    """profile -> member info of everyone -> the named member's field (3 steps)."""
    return [{"tool": "get_household_profile", "args": {}},
            {"tool": "get_household_member_info", "args": {"member_ids": {"$": 0, "path": ["member_ids"]}}},
            {"op": "find", "src": {"$": 1}, "key": "name", "value": name, "field": field_}]


def _everyone() -> list[dict]:
    return [{"tool": "get_household_profile", "args": {}},
            {"tool": "get_household_member_info", "args": {"member_ids": {"$": 0, "path": ["member_ids"]}}}]


def _idx(h: Household, mid: str) -> int:
    return [m.member_id for m in h.members].index(mid)


def _pad(correct: str, pool: list[str], rng: random.Random, n: int = 4) -> list[str]:
    out: list[str] = []
    for v in pool:
        if v != correct and v not in out and v.lower() != correct.lower():
            out.append(v)
    rng.shuffle(out)
    return out[:n]


# ---------------------------------------------------------------- templates
def t_member_attr(h: Household, rng: random.Random, attr: str) -> list[Item]:
    items = []
    for m in h.members:
        mid, name = m.member_id, m.name
        word = {"occupation": "occupation", "age": "age"}[attr]

        def gt(hh: Household, mid=mid) -> str:
            return str(getattr(hh.member(mid), attr))

        def distract(hh: Household, ans: str, r: random.Random, mid=mid) -> list[str]:
            if attr == "age":
                a = int(ans)
                pool = [str(x) for x in (a + 1, a - 1, a + 2, a - 2, a + 3, a + 5) if x >= 0]
                return _pad(ans, [str(o.age) for o in hh.members if o.member_id != mid] + pool, r)
            return _pad(ans, [o.occupation for o in hh.members if o.member_id != mid] + OCCUPATIONS, r)

        def cf(hh: Household, r: random.Random, mid=mid, name=name) -> tuple[str, list[dict]]:
            i = _idx(hh, mid)
            if attr == "age":
                return f"Assume {name} were 4 years older.", [{"path": ["members", i, "age"], "value": hh.members[i].age + 4}]
            new = r.choice([o for o in OCCUPATIONS if o != hh.members[i].occupation])
            return f"Assume {name} worked as a {new} instead.", [{"path": ["members", i, "occupation"], "value": new}]

        id_prog = [{"tool": "get_household_member_info", "args": {"member_ids": [mid]}},
                   {"op": "get", "src": {"$": 0}, "path": [0, attr]}]
        name_prog = _resolve_member(name, attr)
        if attr == "age":
            id_prog.append({"op": "to_str", "src": {"$": 1}})
            name_prog.append({"op": "to_str", "src": {"$": 2}})
        items.append(Item(f"member_{attr}", f"What is the {word} of member {mid}?", id_prog, gt,
                          f"What is {name}'s {word}?", name_prog, distract, cf))
    return items


def t_appliance_location(h: Household, rng: random.Random) -> list[Item]:
    items = []
    for p in rng.sample(h.appliances, min(3, len(h.appliances))):
        name = p.appliance.name

        def gt(hh: Household, name=name) -> str:
            return hh.appliance(name).location

        def distract(hh: Household, ans: str, r: random.Random) -> list[str]:
            return _pad(ans, sorted({a.location for a in hh.appliances}) + ROOMS, r)

        def cf(hh: Household, r: random.Random, name=name) -> tuple[str, list[dict]]:
            i = hh.appliance_names().index(name)
            new = r.choice([x for x in ROOMS if x != hh.appliances[i].location])
            return f"Assume the {name} had been moved to the {new}.", [{"path": ["appliances", i, "location"], "value": new}]

        prog = [{"tool": "get_owned_appliances", "args": {}},
                {"tool": "get_appliances", "args": {"appliance_names": [name]}},
                {"op": "get", "src": {"$": 1}, "path": [name, "location"]}]
        items.append(Item("appliance_location", f"In which room is the {name}?", prog, gt, None, None, distract, cf))
    return items


def t_appliance_power(h: Household, rng: random.Random) -> list[Item]:
    powered = [p for p in h.appliances if "power" in p.appliance.state]
    items = []
    for p in rng.sample(powered, min(2, len(powered))):
        name = p.appliance.name

        def gt(hh: Household, name=name) -> str:
            return str(hh.appliance(name).appliance.state["power"])

        def cf(hh: Household, r: random.Random, name=name) -> tuple[str, list[dict]]:
            i = hh.appliance_names().index(name)
            new = "off" if hh.appliances[i].appliance.state["power"] == "on" else "on"
            return f"Assume someone had switched the {name} {new}.", [
                {"path": ["appliances", i, "appliance", "state", "power"], "value": new}]

        prog = [{"tool": "get_owned_appliances", "args": {}},
                {"tool": "get_appliances", "args": {"appliance_names": [name]}},
                {"op": "get", "src": {"$": 1}, "path": [name, "state", "power"]}]
        items.append(Item("appliance_power", f"Is the {name} currently on or off?", prog, gt, None, None, None, cf))
    return items


def t_pet_count(h: Household, rng: random.Random) -> list[Item]:
    def gt(hh: Household) -> str:
        return str(len(hh.pets))

    def distract(hh: Household, ans: str, r: random.Random) -> list[str]:
        n = int(ans)
        return _pad(ans, [str(x) for x in (n + 1, n + 2, n + 3, n - 1, n + 4) if x >= 0], r)

    def cf(hh: Household, r: random.Random) -> tuple[str, list[dict]]:
        return "Assume the household had also adopted a rabbit named Clover.", [
            {"path": ["pets"], "append": {"name": "Clover", "animal": "rabbit", "age": 1}}]

    prog = [{"tool": "get_household_profile", "args": {}}, {"op": "count", "src": {"$": 0, "path": ["pets"]}},
            {"op": "to_str", "src": {"$": 1}}]
    return [Item("pet_count", "How many pets does the household have?", prog, gt, None, None, distract, cf)]


def t_appliances_in_room(h: Household, rng: random.Random) -> list[Item]:
    rooms = sorted({a.location for a in h.appliances if sum(b.location == a.location for b in h.appliances) >= 2})
    items = []
    for room in rooms[:2]:
        def gt(hh: Household, room=room) -> str:
            return ", ".join(sorted(a.appliance.name for a in hh.appliances if a.location.lower() == room.lower()))

        def distract(hh: Household, ans: str, r: random.Random, room=room) -> list[str]:
            inside = ans.split(", ")
            outside = [a.appliance.name for a in hh.appliances if a.appliance.name not in inside]
            opts = [", ".join(sorted(inside[:k] + inside[k + 1:])) for k in range(len(inside))]
            opts += [", ".join(sorted(inside + [o])) for o in outside]
            opts += [", ".join(sorted(inside[1:] + [o])) for o in outside]
            return _pad(ans, [o for o in opts if o], r)

        def cf(hh: Household, r: random.Random, room=room) -> tuple[str, list[dict]]:
            names = [a.appliance.name for a in hh.appliances if a.location.lower() == room.lower()]
            name = sorted(names)[0]
            i = hh.appliance_names().index(name)
            new = r.choice([x for x in ROOMS if x.lower() != room.lower()])
            return f"Assume the {name} had been moved to the {new}.", [{"path": ["appliances", i, "location"], "value": new}]

        prog = [{"tool": "get_appliances_by_location", "args": {"locations": [room]}},
                {"op": "pluck", "src": {"$": 0}, "key": "appliance_name"}, {"op": "sort_join", "src": {"$": 1}}]
        items.append(Item("appliances_in_room", f"Which appliances are in the {room}?", prog, gt, None, None, distract, cf))
    return items


def _names(hh: Household) -> list[str]:
    return [m.name for m in hh.members]


def t_oldest(h: Household, rng: random.Random) -> list[Item]:
    ages = sorted(m.age for m in h.members)
    if len(ages) < 2 or ages[-1] == ages[-2]:
        return []

    def gt(hh: Household) -> str:
        return max(hh.members, key=lambda m: m.age).name

    def distract(hh: Household, ans: str, r: random.Random) -> list[str]:
        from personal.smarthome.generator import FIRST
        last = ans.split()[-1]
        return _pad(ans, _names(hh) + [f"{f} {last}" for f in FIRST["Female"] + FIRST["Male"]], r)

    def cf(hh: Household, r: random.Random) -> tuple[str, list[dict]]:
        young = min(hh.members, key=lambda m: m.age)
        old = max(m.age for m in hh.members)
        return f"Assume {young.name} were {old + 3} years old.", [{"path": ["members", _idx(hh, young.member_id), "age"], "value": old + 3}]

    prog = _everyone() + [{"op": "argmax", "src": {"$": 1}, "key": "age", "field": "name"}]
    return [Item("oldest_member", "Who is the oldest member of the household?", prog, gt, None, None, distract, cf)]


def t_hobby_members(h: Household, rng: random.Random) -> list[Item]:
    hobbies = sorted({x for m in h.members for x in m.hobbies})
    items = []
    for hobby in rng.sample(hobbies, min(2, len(hobbies))):
        def gt(hh: Household, hobby=hobby) -> str:
            return ", ".join(sorted(m.name for m in hh.members if hobby in m.hobbies)) or "none"

        def distract(hh: Household, ans: str, r: random.Random) -> list[str]:
            inside = [n for n in ans.split(", ") if n != "none"]
            outside = [n for n in _names(hh) if n not in inside]
            opts = [", ".join(sorted(inside + [o])) for o in outside] + [", ".join(sorted([o])) for o in outside]
            opts += [", ".join(sorted(inside[:k] + inside[k + 1:])) for k in range(len(inside))]
            from personal.smarthome.generator import FIRST
            last = _names(hh)[0].split()[-1]
            opts += [f"{f} {last}" for f in FIRST["Female"] + FIRST["Male"]]
            return _pad(ans, [o for o in opts if o], r)

        def cf(hh: Household, r: random.Random, hobby=hobby) -> tuple[str, list[dict]]:
            lacking = [m for m in hh.members if hobby not in m.hobbies]
            if lacking:
                m = lacking[0]
                return f"Assume {m.name} had also taken up {hobby}.", [
                    {"path": ["members", _idx(hh, m.member_id), "hobbies"], "append": hobby}]
            m = hh.members[0]
            return f"Assume {m.name} had given up {hobby}.", [
                {"path": ["members", 0, "hobbies"], "value": [x for x in m.hobbies if x != hobby]}]

        prog = _everyone() + [{"op": "filter_contains", "src": {"$": 1}, "key": "hobbies", "value": hobby},
                              {"op": "pluck", "src": {"$": 2}, "key": "name"}, {"op": "sort_join", "src": {"$": 3}}]
        items.append(Item("hobby_members", f"Which household members enjoy {hobby}?", prog, gt, None, None, distract, cf))
    return items


def t_age_gap(h: Household, rng: random.Random) -> list[Item]:
    if len(h.members) < 2:
        return []

    def gt(hh: Household) -> str:
        return str(max(m.age for m in hh.members) - min(m.age for m in hh.members))

    def distract(hh: Household, ans: str, r: random.Random) -> list[str]:
        n = int(ans)
        return _pad(ans, [str(x) for x in (n + 2, n - 2, n + 5, n - 1, n + 1, n + 10) if x >= 0], r)

    def cf(hh: Household, r: random.Random) -> tuple[str, list[dict]]:
        old = max(hh.members, key=lambda m: m.age)
        return f"Assume {old.name} were 5 years older.", [{"path": ["members", _idx(hh, old.member_id), "age"], "value": old.age + 5}]

    prog = _everyone() + [{"op": "max", "src": {"$": 1}, "key": "age"}, {"op": "min", "src": {"$": 1}, "key": "age"},
                          {"op": "diff", "a": {"$": 2}, "b": {"$": 3}}, {"op": "to_str", "src": {"$": 4}}]
    return [Item("age_gap", "What is the age difference in years between the oldest and the youngest household member?",
                 prog, gt, None, None, distract, cf)]


def t_earliest_event(h: Household, rng: random.Random) -> list[Item]:
    items = []
    for m in h.members:
        dates = sorted(e.date for e in m.major_events)
        if not dates or (len(dates) > 1 and dates[0] == dates[1]):
            continue
        mid, name = m.member_id, m.name

        def gt(hh: Household, mid=mid) -> str:
            return min(hh.member(mid).major_events, key=lambda e: e.date).description

        def distract(hh: Household, ans: str, r: random.Random) -> list[str]:
            pool = [e.description for o in hh.members for e in o.major_events]
            pool += ["Moved into this home", "Got married", "Graduated from college", "Ran a first half marathon",
                     "Recovered from knee surgery", "Adopted a dog"]
            return _pad(ans, pool, r)

        def cf(hh: Household, r: random.Random, mid=mid, name=name) -> tuple[str, list[dict]]:
            first = min(e.date for e in hh.member(mid).major_events)
            year = int(first[:4]) - 1
            return f"Assume {name} had also started learning the piano on {year}-03-01.", [
                {"path": ["members", _idx(hh, mid), "major_events"], "append": {"date": f"{year}-03-01",
                                                                            "description": "Started learning the piano"}}]

        id_prog = [{"tool": "get_household_member_major_events", "args": {"member_id": mid}},
                   {"op": "argmin", "src": {"$": 0, "path": ["major_events"]}, "key": "date", "field": "description"}]
        name_prog = _resolve_member(name, "member_id") + [
            {"tool": "get_household_member_major_events", "args": {"member_id": {"$": 2}}},
            {"op": "argmin", "src": {"$": 3, "path": ["major_events"]}, "key": "date", "field": "description"}]
        items.append(Item("earliest_major_event", f"What was the earliest major life event of member {mid}?", id_prog, gt,
                          f"What was {name}'s earliest major life event?", name_prog, distract, cf))
    return rng.sample(items, min(2, len(items)))


def t_room_count(h: Household, rng: random.Random) -> list[Item]:
    p = rng.choice(h.appliances)
    name = p.appliance.name

    def gt(hh: Household) -> str:
        loc = hh.appliance(name).location.lower()
        return str(sum(a.location.lower() == loc for a in hh.appliances))

    def distract(hh: Household, ans: str, r: random.Random) -> list[str]:
        n = int(ans)
        return _pad(ans, [str(x) for x in (n + 1, n - 1, n + 2, n + 3, n - 2) if x >= 1], r)

    def cf(hh: Household, r: random.Random) -> tuple[str, list[dict]]:
        loc = hh.appliance(name).location
        other = [a for a in hh.appliances if a.location != loc]
        if other:
            o = other[0]
            return f"Assume the {o.appliance.name} had been moved to the {loc}.", [
                {"path": ["appliances", hh.appliance_names().index(o.appliance.name), "location"], "value": loc}]
        o = next(a for a in hh.appliances if a.appliance.name != name)
        new = next(x for x in ROOMS if x != loc)
        return f"Assume the {o.appliance.name} had been moved to the {new}.", [
            {"path": ["appliances", hh.appliance_names().index(o.appliance.name), "location"], "value": new}]

    prog = [{"tool": "get_owned_appliances", "args": {}},
            {"tool": "get_appliances", "args": {"appliance_names": [name]}},
            {"op": "get", "src": {"$": 1}, "path": [name, "location"]},
            {"tool": "get_appliances_by_location", "args": {"locations": [{"$": 2}]}},
            {"op": "count", "src": {"$": 3}}, {"op": "to_str", "src": {"$": 4}}]
    return [Item("room_appliance_count", f"How many appliances, the {name} included, are in the same room as the {name}?",
                 prog, gt, None, None, distract, cf)]


def _appliance_memories(hh: Household, name: str, subject: str | None = None):
    tag = f"appliance: {name}"
    return [m for m in hh.memories if m.additional_information == tag and (subject is None or subject in m.subjects)]


def t_last_user_age(h: Household, rng: random.Random) -> list[Item]:
    items = []
    for name in sorted({m.additional_information[len("appliance: "):] for m in h.memories
                        if m.additional_information.startswith("appliance: ")}):
        mems = _appliance_memories(h, name)
        times = sorted(m.time for m in mems)
        if len(times) > 1 and times[-1] == times[-2]:
            continue

        def gt(hh: Household, name=name) -> str:
            last = max(_appliance_memories(hh, name), key=lambda m: m.time)
            return str(hh.member(last.subjects[0]).age)

        def distract(hh: Household, ans: str, r: random.Random) -> list[str]:
            n = int(ans)
            return _pad(ans, [str(m.age) for m in hh.members] + [str(x) for x in (n + 1, n - 1, n + 2, n + 4, n - 3) if x >= 0], r)

        def cf(hh: Household, r: random.Random, name=name) -> tuple[str, list[dict]]:
            last = max(_appliance_memories(hh, name), key=lambda m: m.time)
            m = hh.member(last.subjects[0])
            return f"Assume {m.name} were 3 years older.", [{"path": ["members", _idx(hh, m.member_id), "age"], "value": m.age + 3}]

        prog = [{"tool": "get_household_memories", "args": {"search_string": f"used the {name.replace('-', ' ')}", "num_memories": 500}},
                {"op": "filter_eq", "src": {"$": 0}, "key": "additional_information", "value": f"appliance: {name}"},
                {"op": "argmax", "src": {"$": 1}, "key": "time", "field": "subjects"},
                {"op": "first", "src": {"$": 2}},
                {"tool": "get_household_member_info", "args": {"member_ids": [{"$": 3}]}},
                {"op": "get", "src": {"$": 4}, "path": [0, "age"]}, {"op": "to_str", "src": {"$": 5}}]
        items.append(Item("last_user_age", f"How old is the household member who most recently used the {name}?",
                          prog, gt, None, None, distract, cf))
    return rng.sample(items, min(2, len(items)))


def t_member_recent_room(h: Household, rng: random.Random) -> list[Item]:
    items = []
    for m in h.members:
        mems = [x for x in h.memories if m.member_id in x.subjects and x.additional_information.startswith("appliance: ")]
        times = sorted(x.time for x in mems)
        if not mems or (len(times) > 1 and times[-1] == times[-2]):
            continue
        mid, name = m.member_id, m.name

        def last_app(hh: Household, mid=mid) -> str:
            mm = [x for x in hh.memories if mid in x.subjects and x.additional_information.startswith("appliance: ")]
            return max(mm, key=lambda x: x.time).additional_information[len("appliance: "):]

        def gt(hh: Household, last_app=last_app) -> str:
            return hh.appliance(last_app(hh)).location

        def distract(hh: Household, ans: str, r: random.Random) -> list[str]:
            return _pad(ans, sorted({a.location for a in hh.appliances}) + ROOMS, r)

        def cf(hh: Household, r: random.Random, last_app=last_app) -> tuple[str, list[dict]]:
            app = last_app(hh)
            i = hh.appliance_names().index(app)
            new = r.choice([x for x in ROOMS if x != hh.appliances[i].location])
            return f"Assume the {app} had been moved to the {new}.", [{"path": ["appliances", i, "location"], "value": new}]

        def tail(k: int) -> list[dict]:  # k = index of the member-id step (or literal)
            mid_ref = mid if k < 0 else {"$": k}
            b = 0 if k < 0 else k + 1
            return [{"tool": "get_member_memories", "args": {"member_id": mid_ref, "search_string": "used the appliance",
                                                              "num_memories": 500}},
                    {"op": "filter_contains", "src": {"$": b}, "key": "additional_information", "value": "appliance: "},
                    {"op": "argmax", "src": {"$": b + 1}, "key": "time", "field": "additional_information"},
                    {"op": "strip_prefix", "src": {"$": b + 2}, "prefix": "appliance: "},
                    {"tool": "get_owned_appliances", "args": {}},
                    {"tool": "get_appliances", "args": {"appliance_names": [{"$": b + 3}]}},
                    {"op": "values", "src": {"$": b + 5}}, {"op": "get", "src": {"$": b + 6}, "path": [0, "location"]}]

        items.append(Item("recent_appliance_room", f"In which room is the appliance that member {mid} used most recently?",
                          tail(-1), gt, f"In which room is the appliance that {name} used most recently?",
                          _resolve_member(name, "member_id") + tail(2), distract, cf))
    return rng.sample(items, min(2, len(items)))


TEMPLATES: list[Callable[[Household, random.Random], list[Item]]] = [
    lambda h, r: t_member_attr(h, r, "occupation"), lambda h, r: t_member_attr(h, r, "age"),
    t_appliance_location, t_appliance_power, t_pet_count, t_appliances_in_room, t_oldest, t_hobby_members,
    t_age_gap, t_earliest_event, t_room_count, t_last_user_age, t_member_recent_room,
]


def generate_items(h: Household, seed: int = 0) -> list[Item]:
    rng = random.Random(f"{h.household_id}:{seed}")
    items = [it for t in TEMPLATES for it in t(h, rng)]
    for it in items:  # each item's program must reproduce its ground truth on this household
        it.gt(h)
    return items


# ---------------------------------------------------------------- reactive tasks
LETTERS = "ABCDE"


def reactive_tasks(h: Household, seed: int = 0, max_items: int | None = None) -> list[Task]:
    rng = random.Random(f"{h.household_id}:tasks:{seed}")
    items = generate_items(h, seed)
    if max_items is not None and len(items) > max_items:
        items = rng.sample(items, max_items)
    tasks: list[Task] = []
    for k, it in enumerate(items):
        ans = it.gt(h)
        base = f"{h.household_id}-{k:02d}-{it.template}"
        variants = [("id", it.question, it.program)]
        if it.personalized_question:
            variants.append(("name", it.personalized_question, it.personalized_program))
        for var, q, prog in variants:
            tasks.append(Task(f"{base}-IG-{var}", h.household_id, "IG", it.template, q, [ans], prog, difficulty(prog), var))
        if it.distractors:
            wrong = it.distractors(h, ans, rng)
            if len(wrong) == 4:
                opts = wrong + [ans]
                rng.shuffle(opts)
                choices = dict(zip(LETTERS, opts))
                letter = LETTERS[opts.index(ans)]
                for var, q, prog in variants:
                    tasks.append(Task(f"{base}-MC-{var}", h.household_id, "MC", it.template, q, [letter, ans], prog,
                                      difficulty(prog), var, choices, letter))
        if it.cf_changed:
            for kind, (change, edits) in (("changed", it.cf_changed(h, rng)), ("unchanged", _unchanged_edit(h, rng))):
                new = it.gt(apply_edits(h, edits))
                q, prog = variants[-1][1], variants[-1][2]
                tasks.append(Task(f"{base}-CF-{kind}", h.household_id, "CF", it.template, q, [new], prog, difficulty(prog),
                                  variants[-1][0], counterfactual={"change": change, "edit": edits, "answer_changed": new != ans,
                                                                   "expected": kind, "original_answer": ans}))
    # keep only counterfactuals whose verified effect matches their kind
    return [t for t in tasks if t.family != "CF" or t.counterfactual["answer_changed"] == (t.counterfactual["expected"] == "changed")]


# ---------------------------------------------------------------- feature recommendation
HOBBY_TAGS = {"cooking": ("cooking",), "baking": ("cooking",), "yoga": ("fitness", "relax"), "running": ("fitness",),
              "hiking": ("fitness",), "jazz music": ("music",), "movies": ("movies",), "gaming": ("gaming",),
              "gardening": ("garden",), "reading": ("reading",), "painting": ("art",), "photography": ("art",),
              "board games": ("family",), "knitting": ("relax",)}
LIFESTYLE_TAGS = {"early riser": ("early_riser", "coffee"), "night owl": ("night",), "heavy cooking": ("cooking",),
                  "tech-savvy": ("tech", "assistant"), "active": ("fitness",), "works from home": ("work",),
                  "energy conscious": ("energy",), "frequent traveller": ("travel",)}
PREFERENCE_TAGS = {"quiet": ("quiet",), "coffee": ("coffee", "early_riser"), "music": ("music", "cooking"),
                   "dim warm": ("sleep", "relax"), "blinds": ("early_riser", "sunny"), "keeps the house": ("comfort",)}


def evidence_tags(h: Household) -> dict[str, float]:
    """Tag -> weight from explicit household fields (each occurrence adds 1)."""
    w: dict[str, float] = {}

    def add(tags: tuple[str, ...], amount: float = 1.0) -> None:
        for t in tags:
            w[t] = w.get(t, 0.0) + amount

    for m in h.members:
        for hobby in m.hobbies:
            add(HOBBY_TAGS.get(hobby, ()))
        add(LIFESTYLE_TAGS.get(m.lifestyle, ()))
        for key, tags in PREFERENCE_TAGS.items():
            if key in m.preference:
                add(tags)
        if m.age < 13:
            add(("child",))
        if m.age >= 65:
            add(("elderly", "accessibility"))
    if h.pets:
        add(("pets",), len(h.pets))
    wo, wi = h.context.weather.outdoor, h.context.weather.indoor
    t_out = int("".join(c for c in wo.temperature if c.isdigit()) or 60)
    hum = int("".join(c for c in wi.humidity if c.isdigit()) or 45)
    if t_out < 45:
        add(("cold",), 2)
    if t_out > 80:
        add(("hot",), 2)
    if hum > 55:
        add(("humid",), 2)
    if hum < 35:
        add(("dry",), 2)
    if wi.dust == "high":
        add(("dust", "allergy"), 2)
    if wi.odor != "none":
        add(("odor",))
    if wo.rain in ("light", "heavy"):
        add(("rain",))
    return w


def feature_scores(h: Household) -> dict[str, float]:
    w = evidence_tags(h)
    out = {}
    for p in h.appliances:
        for f in CATALOGUE[p.appliance.type].features.values():
            out[f"{p.appliance.name}.{f.method}"] = sum(w.get(t, 0.0) for t in f.tags)
    return out


def fr_task(h: Household, seed: int = 0) -> Task | None:
    rng = random.Random(f"{h.household_id}:fr:{seed}")
    scores = feature_scores(h)
    ranked = sorted(scores, key=lambda f: (-scores[f], f))
    top: list[str] = []
    for level in sorted({v for v in scores.values() if v > 0}, reverse=True):
        tied = [f for f in ranked if scores[f] == level]
        top += rng.sample(tied, min(3 - len(top), len(tied)))  # a sample of a tied level; the rest stay out
        if len(top) == 3:
            break
    if len(top) < 3:
        return None
    top.sort(key=lambda f: (-scores[f], f))  # ideal order; ties (same evidence) broken by id
    mid_pool = [f for f in ranked if 0 < scores[f] < scores[top[-1]]]
    low_pool = [f for f in ranked if scores[f] == 0]
    if len(mid_pool) < 3 or len(low_pool) < 4:
        return None
    mid = rng.sample(mid_pool, 3)
    low = rng.sample(low_pool, 4)
    labels = {f: "HIGHLY_RELEVANT" for f in top} | {f: "RELEVANT" for f in mid} | {f: "LESS_RELEVANT" for f in low}
    candidates = top + mid + low
    rng.shuffle(candidates)
    ideal = top + sorted(mid, key=lambda f: (-scores[f], f)) + sorted(low)
    sit = h.context.situation.summary if h.context.situation else ""
    return Task(f"{h.household_id}-FR", h.household_id, "FR", "feature_ranking",
                "Rank these appliance features from most to least relevant for this household right now.",
                candidates=candidates, labels=labels, ideal_ranking=ideal, situation=sit)


def pg_task(h: Household) -> Task:
    sit = h.context.situation
    text = sit.summary if sit else "An ordinary day at home."
    conds = [c for c, on in safety_conditions(h).items() if on]
    return Task(f"{h.household_id}-PG", h.household_id, "PG", "plan_generation",
                "Generate up to 3 programs (1-5 steps each) of appliance actions that help the household now.",
                situation=text + (f" [safety: {', '.join(conds)}]" if conds else ""))


def household_tasks(h: Household, seed: int = 0, max_items: int | None = None) -> list[Task]:
    tasks = reactive_tasks(h, seed, max_items)
    fr = fr_task(h, seed)
    if fr:
        tasks.append(fr)
    tasks.append(pg_task(h))
    return tasks

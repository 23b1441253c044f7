"""PersonalHomeBench household schema (seed, Appendix H) as validated models.

The seed's schema is followed field by field. Three places deviate, each on purpose:
- ``members[].major_events`` holds ``{date, description}`` (the schema text repeats the
  pet fields there by mistake; the persona-generation prompt defines date + description).
- ``ApplianceObject`` / ``SensorObject`` are left open in the seed; here an appliance is
  ``{name, type, state}`` (type from the catalogue) and a sensor ``{name, type, status}``.
- ``context.situation`` (optional) carries the current time, a summary and which members
  are at home — the "current situation" the seed's task prompts refer to, needed by the
  plan safety layer. ``video_transcript`` (optional) holds the seed's video-transcript schema.

``load_household`` / ``parse_household`` raise ``HouseholdError`` whose message names the
field path of every problem, e.g. ``members[1].age: Input should be a valid integer``.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError


class HouseholdError(ValueError):
    """A household document does not match the schema; the message names the field paths."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class Pet(_Model):
    name: str
    animal: str
    age: int = Field(ge=0, le=100)


class MajorEvent(_Model):
    date: str
    description: str


class Member(_Model):
    member_id: str = Field(min_length=1)
    name: str = Field(min_length=1)
    role: str
    age: int = Field(ge=0, le=130)
    gender: str
    occupation: str
    persona: str = ""
    hobbies: list[str] = Field(default_factory=list)
    lifestyle: str = ""
    preference: str = ""
    major_events: list[MajorEvent] = Field(default_factory=list)


class ApplianceObject(_Model):
    name: str = Field(min_length=1)  # unique in the household, used by every tool
    type: str = Field(min_length=1)  # catalogue type, e.g. "refrigerator"
    state: dict[str, Any] = Field(default_factory=dict)


class PlacedAppliance(_Model):
    appliance: ApplianceObject
    location: str


class SensorObject(_Model):
    name: str = Field(min_length=1)
    type: str
    status: Any = None


class PlacedSensor(_Model):
    sensor: SensorObject
    location: str


class Memory(_Model):
    memory: str = Field(min_length=1)
    subjects: list[str] = Field(default_factory=list)  # member ids (or "household")
    additional_information: str = ""
    time: str = ""  # ISO date or datetime


class ContextEvent(_Model):
    description: str
    sensors: list[PlacedSensor] = Field(default_factory=list)
    appliances: list[PlacedAppliance] = Field(default_factory=list)
    time: str = ""  # optional extension: lets events be sorted by time


class OutdoorWeather(_Model):
    rain: str = ""
    snow: str = ""
    sunny: str = ""
    temperature: str = ""
    wind: str = ""


class IndoorWeather(_Model):
    dust: str = ""
    humidity: str = ""
    odor: str = ""
    temperature: str = ""


class Weather(_Model):
    outdoor: OutdoorWeather = Field(default_factory=OutdoorWeather)
    indoor: IndoorWeather = Field(default_factory=IndoorWeather)


class Situation(_Model):
    time: str = ""
    summary: str = ""
    members_present: list[str] = Field(default_factory=list)


class Context(_Model):
    events: list[ContextEvent] = Field(default_factory=list)
    weather: Weather = Field(default_factory=Weather)
    situation: Optional[Situation] = None


# -- video transcript (seed Appendix H, "Video Transcript Schema") ----------------------
class Timebase(_Model):
    timestamp_format: str = "MM:SS.mmm"
    start_offset_seconds: int = 0


class Lighting(_Model):
    overall: str = ""
    sources_visible: list[str] = Field(default_factory=list)


class Camera(_Model):
    motion: str = ""
    viewpoint: str = ""
    notes: str = ""


class Zone(_Model):
    zone_id: str
    label: str
    relative_position: str = ""


class Landmark(_Model):
    landmark_id: str
    type: str
    description: str = ""
    zone_id: str = ""


class Layout(_Model):
    zones: list[Zone] = Field(default_factory=list)
    landmarks: list[Landmark] = Field(default_factory=list)


class Scene(_Model):
    summary: str = ""
    environment_type: str = ""
    location_label: str = ""
    lighting: Lighting = Field(default_factory=Lighting)
    camera: Camera = Field(default_factory=Camera)
    layout: Layout = Field(default_factory=Layout)


class VideoDescription(_Model):
    timebase: Timebase = Field(default_factory=Timebase)
    scene: Scene = Field(default_factory=Scene)


class EntityMember(_Model):
    member_id: str
    appearance: str = ""
    initial_location: str = ""


class EntityPet(_Model):
    pet_id: str
    species: str = ""
    initial_location: str = ""
    description: str = ""


class EntityAppliance(_Model):
    appliance_id: str
    type: str = ""
    location: str = ""
    initial_state: dict[str, Any] = Field(default_factory=dict)
    description: str = ""


class EntityObject(_Model):
    object_id: str
    label: str = ""
    category: str = ""
    initial_location: str = ""
    initial_state: str = ""
    description: str = ""


class VideoEvent(_Model):
    event_id: str
    ts_start: str
    ts_end: str
    event_type: str = ""
    actors: list[str] = Field(default_factory=list)
    targets: list[str] = Field(default_factory=list)
    description: str = ""
    audio: str = ""


class TimelineState(_Model):
    ts: str
    state: str
    trigger_event_ids: list[str] = Field(default_factory=list)


class MemberTimeline(_Model):
    member_id: str
    states: list[TimelineState] = Field(default_factory=list)


class PetTimeline(_Model):
    pet_id: str
    states: list[TimelineState] = Field(default_factory=list)


class ApplianceTimeline(_Model):
    appliance_id: str
    states: list[TimelineState] = Field(default_factory=list)


class ObjectTimeline(_Model):
    object_id: str
    states: list[TimelineState] = Field(default_factory=list)


class Timelines(_Model):
    members: list[MemberTimeline] = Field(default_factory=list)
    pets: list[PetTimeline] = Field(default_factory=list)
    appliances: list[ApplianceTimeline] = Field(default_factory=list)
    objects: list[ObjectTimeline] = Field(default_factory=list)


class Entities(_Model):
    members: list[EntityMember] = Field(default_factory=list)
    pets: list[EntityPet] = Field(default_factory=list)
    appliances: list[EntityAppliance] = Field(default_factory=list)
    objects: list[EntityObject] = Field(default_factory=list)
    events: list[VideoEvent] = Field(default_factory=list)
    entity_state_timelines: Timelines = Field(default_factory=Timelines)


class Segment(_Model):
    ts_start: str
    ts_end: str
    caption: str


class EventCaption(_Model):
    event_id: str
    caption: str


class Captions(_Model):
    global_: str = Field(default="", alias="global")
    segments: list[Segment] = Field(default_factory=list)
    events: list[EventCaption] = Field(default_factory=list)
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class ConsistencyChecks(_Model):
    entity_ids_consistent: bool = True
    all_state_changes_timestamped: bool = True
    no_unverifiable_inferences: bool = True


class Quality(_Model):
    notes: str = ""
    consistency_checks: ConsistencyChecks = Field(default_factory=ConsistencyChecks)


class VideoTranscript(_Model):
    datapoint_id: str
    video_path: str = ""
    video_description: VideoDescription = Field(default_factory=VideoDescription)
    entities: Entities = Field(default_factory=Entities)
    captions: Captions = Field(default_factory=Captions)
    quality: Quality = Field(default_factory=Quality)


class Household(_Model):
    household_id: str = Field(min_length=1)
    household_size: int = Field(ge=1)
    occupancy_type: str  # single | family | roommate
    layout: str
    pets: list[Pet] = Field(default_factory=list)
    members: list[Member] = Field(min_length=1)
    appliances: list[PlacedAppliance] = Field(default_factory=list)
    sensors: list[PlacedSensor] = Field(default_factory=list)
    memories: list[Memory] = Field(default_factory=list)
    context: Context = Field(default_factory=Context)
    video_transcript: Optional[VideoTranscript] = None

    # -- lookups used by tools, tasks and plans ------------------------------------
    def member(self, member_id: str) -> Member:
        for m in self.members:
            if m.member_id == member_id:
                return m
        raise KeyError(member_id)

    def appliance(self, name: str) -> PlacedAppliance:
        for a in self.appliances:
            if a.appliance.name == name:
                return a
        raise KeyError(name)

    def appliance_names(self) -> list[str]:
        return [a.appliance.name for a in self.appliances]

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


def _loc_to_path(loc: tuple) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "<root>"


def _format_errors(exc: ValidationError, source: str) -> str:
    lines = [f"{_loc_to_path(tuple(e['loc']))}: {e['msg']}" for e in exc.errors()]
    return f"{source}: invalid household:\n  " + "\n  ".join(lines)


def check_references(h: Household) -> list[str]:
    """Cross-field checks pydantic cannot express; each problem names its field path."""
    from personal.smarthome.appliances import CATALOGUE, validate_state

    problems: list[str] = []
    ids = [m.member_id for m in h.members]
    for i, mid in enumerate(ids):
        if ids.index(mid) != i:
            problems.append(f"members[{i}].member_id: duplicate id {mid!r}")
    if h.household_size != len(h.members):
        problems.append(f"household_size: is {h.household_size} but members lists {len(h.members)}")
    names = h.appliance_names()
    for i, placed in enumerate(h.appliances):
        a = placed.appliance
        if names.index(a.name) != i:
            problems.append(f"appliances[{i}].appliance.name: duplicate name {a.name!r}")
        if a.type not in CATALOGUE:
            problems.append(f"appliances[{i}].appliance.type: unknown appliance type {a.type!r}")
            continue
        for msg in validate_state(a.type, a.state, partial=True):
            problems.append(f"appliances[{i}].appliance.state.{msg}")
    known_subjects = set(ids) | {"household"} | {p.name for p in h.pets}
    for i, mem in enumerate(h.memories):
        for j, s in enumerate(mem.subjects):
            if s not in known_subjects:
                problems.append(f"memories[{i}].subjects[{j}]: unknown subject {s!r}")
    if h.context.situation:
        for j, mid in enumerate(h.context.situation.members_present):
            if mid not in ids:
                problems.append(f"context.situation.members_present[{j}]: unknown member {mid!r}")
    return problems


def parse_household(data: Any, source: str = "household") -> Household:
    """Validate a household document (dict) and fill appliance default states."""
    from personal.smarthome.appliances import complete_state

    if not isinstance(data, dict):
        raise HouseholdError(f"{source}: expected a JSON object, got {type(data).__name__}")
    try:
        h = Household.model_validate(data)
    except ValidationError as exc:
        raise HouseholdError(_format_errors(exc, source)) from None
    problems = check_references(h)
    if problems:
        raise HouseholdError(f"{source}: invalid household:\n  " + "\n  ".join(problems))
    for placed in h.appliances:
        placed.appliance.state = complete_state(placed.appliance.type, placed.appliance.state)
    return h


def load_household(path: str | Path) -> Household:
    path = Path(path)
    from personal.files import read_json

    data = read_json(path, HouseholdError)
    return parse_household(data, source=str(path))


def save_household(h: Household, path: str | Path) -> None:
    Path(path).write_text(json.dumps(h.to_json(), indent=2))

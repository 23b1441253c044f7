"""PersonalHomeTools (seed, Appendix I.3/L): every tool with the seed's exact name and
signature, and a tool-call executor that validates calls and reports the seed's typed
errors so agents can self-correct:

- INVALID_TOOL_NAME: no tool by that name.
- MISSING_ARGUMENTS / UNEXPECTED_ARGUMENTS: required argument absent / argument not in the schema.
- UPSTREAM_FORMAT_ERROR: the call's arguments are not a JSON object (e.g. prose around JSON).
- EXECUTION_ERROR: the call is well formed but cannot run: unknown member or appliance,
  a change the safety layer refuses (``personal.smarthome.safety``: heat / unlock / open while
  nobody is home or a child is alone; message ``refused: …``), a skipped prerequisite (appliance used before it was discovered with get_owned_appliances /
  get_appliances_by_location, a feature needing the appliance on), wrong argument types,
  a feature rejecting its arguments.
- EMPTY_OUTPUT: the tool ran but found nothing (no matching memories, no appliances there,
  no video transcript).
"""
from __future__ import annotations

import base64
import copy
import io
import json
import re
import threading
from collections import deque
from dataclasses import asdict, dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any, Dict, List, Optional

from personal.smarthome import jsonin
from personal.smarthome.appliances import CATALOGUE, validate_state
from personal.smarthome.features import FeatureError
from personal.smarthome.household import Household
from personal.smarthome.memory import MemoryIndex
from personal.smarthome.safety import SafetyPolicy


class ErrorType(str, Enum):
    INVALID_TOOL_NAME = "INVALID_TOOL_NAME"
    MISSING_ARGUMENTS = "MISSING_ARGUMENTS"
    UNEXPECTED_ARGUMENTS = "UNEXPECTED_ARGUMENTS"
    EXECUTION_ERROR = "EXECUTION_ERROR"
    UPSTREAM_FORMAT_ERROR = "UPSTREAM_FORMAT_ERROR"
    EMPTY_OUTPUT = "EMPTY_OUTPUT"


ERROR_TYPES = [e.value for e in ErrorType]


class ToolError(Exception):
    def __init__(self, kind: ErrorType, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


def _exec_error(message: str) -> ToolError:
    return ToolError(ErrorType.EXECUTION_ERROR, message)


def _empty(message: str) -> ToolError:
    return ToolError(ErrorType.EMPTY_OUTPUT, message)


def _seconds(ts: Any) -> float:
    """'MM:SS.mmm', 'HH:MM:SS', or a number of seconds -> seconds."""
    if isinstance(ts, (int, float)) and not isinstance(ts, bool):
        return float(ts)
    if not isinstance(ts, str) or not ts.strip():
        raise _exec_error(f"timestamp {ts!r}: expected seconds or MM:SS.mmm")
    parts = ts.strip().split(":")
    try:
        total = 0.0
        for p in parts:
            total = total * 60 + float(p)
        return total
    except ValueError:
        raise _exec_error(f"timestamp {ts!r}: expected seconds or MM:SS.mmm") from None


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) >= 3}


class PersonalHomeTools:
    """The toolbox over one household. Appliance tools act on (and change) ``household``."""

    def __init__(self, household: Household, memory_index: MemoryIndex | None = None,
                 video_path: str | Path | None = None, require_discovery: bool = True) -> None:
        self.household = household
        self.memory = memory_index or MemoryIndex()
        self.video_path = Path(video_path) if video_path else None
        self.require_discovery = require_discovery
        self.discovered: set[str] = set()
        self.state_version = 0  # bumped on every appliance state change (MQTT mirrors publish on it)

    # -- helpers ----------------------------------------------------------------------
    def _member(self, member_id: str):
        try:
            return self.household.member(member_id)
        except KeyError:
            known = [m.member_id for m in self.household.members]
            raise _exec_error(f"unknown member_id {member_id!r}; call get_household_profile for valid ids {known}") from None

    def _appliance(self, name: str):
        try:
            placed = self.household.appliance(name)
        except KeyError:
            raise _exec_error(f"appliance {name!r} is not in this household; call get_owned_appliances for the valid names") from None
        if self.require_discovery and name not in self.discovered:
            raise _exec_error(f"appliance {name!r} used before it was retrieved; call get_owned_appliances or "
                              "get_appliances_by_location first")
        return placed

    def _video(self):
        vt = self.household.video_transcript
        if vt is None:
            raise _empty("this household has no video transcript")
        return vt

    # -- household information -------------------------------------------------------
    def get_household_profile(self) -> Dict:
        h = self.household
        return {"household_id": h.household_id, "household_size": h.household_size, "occupancy_type": h.occupancy_type,
                "layout": h.layout, "pets": [p.model_dump() for p in h.pets], "member_ids": [m.member_id for m in h.members]}

    def get_household_member_info(self, member_ids: List[str]) -> List[Dict]:
        return [self._member(mid).model_dump(exclude={"major_events"}) for mid in member_ids]

    def get_household_member_major_events(self, member_id: str) -> Dict:
        m = self._member(member_id)
        if not m.major_events:
            raise _empty(f"no major events recorded for {member_id}")
        return {"member_id": member_id, "major_events": [e.model_dump() for e in m.major_events]}

    def get_household_memories(self, search_string: str, num_memories: int) -> List[Dict]:
        return self.memory.search(self.household.memories, search_string, num_memories)

    def get_member_memories(self, member_id: str, search_string: str, num_memories: int) -> List[Dict]:
        self._member(member_id)
        return self.memory.search(self.household.memories, search_string, num_memories, subject=member_id)

    # -- appliances ---------------------------------------------------------------------
    def get_owned_appliances(self) -> List[Dict]:
        self.discovered.update(self.household.appliance_names())
        return [{"appliance_name": a.appliance.name, "type": a.appliance.type} for a in self.household.appliances]

    def get_appliances(self, appliance_names: List[str]) -> dict:
        out = {}
        for name in appliance_names:
            placed = self._appliance(name)
            out[name] = {"type": placed.appliance.type, "location": placed.location, "state": copy.deepcopy(placed.appliance.state)}
        return out

    def get_appliances_by_location(self, locations: List[str]) -> List[Dict]:
        wanted = {loc.strip().lower() for loc in locations}
        found = [a for a in self.household.appliances if a.location.lower() in wanted]
        self.discovered.update(a.appliance.name for a in found)
        return [{"appliance_name": a.appliance.name, "type": a.appliance.type, "location": a.location} for a in found]

    def get_appliance_features(self, appliance_names: List[str]) -> str:
        out = {}
        for name in appliance_names:
            t = CATALOGUE[self._appliance(name).appliance.type]
            out[name] = [f.describe() for f in t.features.values()]
        return json.dumps(out, indent=1)

    def run_appliance_feature(self, appliance_name: str, feature_method: str, feature_kwargs: dict) -> Any:
        placed = self._appliance(appliance_name)
        t = CATALOGUE[placed.appliance.type]
        state = copy.deepcopy(placed.appliance.state)  # applied only if the feature succeeds
        try:
            result = t.call(state, feature_method, feature_kwargs)
        except FeatureError as exc:
            raise _exec_error(f"{appliance_name}: {exc}") from None
        if state != placed.appliance.state:
            placed.appliance.state = state
            self.state_version += 1
        return result

    def update_appliance(self, appliance_name: str, state: dict) -> None:
        placed = self._appliance(appliance_name)
        problems = validate_state(placed.appliance.type, state)
        if problems:
            raise _exec_error(f"{appliance_name}: invalid state: " + "; ".join(problems))
        placed.appliance.state = {**placed.appliance.state, **copy.deepcopy(state)}
        self.state_version += 1
        return None

    # -- context ---------------------------------------------------------------------------
    def get_contextual_event_descriptions(self, compact: bool = False, sort_by_time: bool = False, indent: str = "  ") -> str:
        ctx = self.household.context
        events = list(ctx.events)
        if sort_by_time:
            events.sort(key=lambda e: e.time)
        lines = []
        if ctx.situation and ctx.situation.summary:
            lines.append(f"Current situation ({ctx.situation.time}): {ctx.situation.summary}")
        for e in events:
            head = f"- {e.time + ': ' if e.time else ''}{e.description}"
            lines.append(head)
            if not compact:
                for s in e.sensors:
                    lines.append(f"{indent}sensor {s.sensor.name} ({s.sensor.type}) in {s.location}: {s.sensor.status}")
                for a in e.appliances:
                    lines.append(f"{indent}appliance {a.appliance.name} in {a.location}")
        w = ctx.weather
        lines.append(f"Weather outdoor: {json.dumps(w.outdoor.model_dump())}; indoor: {json.dumps(w.indoor.model_dump())}")
        return "\n".join(lines)

    # -- video understanding (over the seed's video-transcript schema) ------------------------
    def get_scene_summary(self) -> str:
        summary = self._video().video_description.scene.summary
        if not summary:
            raise _empty("the video transcript has no scene summary")
        return summary

    def get_layout_zones(self) -> List:
        zones = [z.model_dump() for z in self._video().video_description.scene.layout.zones]
        if not zones:
            raise _empty("no layout zones in the video transcript")
        return zones

    def get_landmarks_in_house(self) -> List:
        marks = [m.model_dump() for m in self._video().video_description.scene.layout.landmarks]
        if not marks:
            raise _empty("no landmarks in the video transcript")
        return marks

    def get_members_appearance(self, member_ids: List[str]) -> Dict[str, str]:
        seen = {m.member_id: m.appearance for m in self._video().entities.members}
        for mid in member_ids:
            self._member(mid)
        return {mid: seen[mid] for mid in member_ids if mid in seen}

    def get_appliance_descriptions(self, appliance_names: List[str]) -> Dict[str, str]:
        vt = self.household.video_transcript
        from_video = {a.appliance_id: a.description for a in vt.entities.appliances} if vt else {}
        out = {}
        for name in appliance_names:
            placed = self._appliance(name)
            out[name] = from_video.get(name) or f"{CATALOGUE[placed.appliance.type].description} ({placed.location})"
        return out

    def get_object_information(self) -> str:
        objs = self._video().entities.objects
        if not objs:
            raise _empty("no objects in the video transcript")
        flat = {f"{o.object_id}.{k}": v for o in objs for k, v in o.model_dump().items() if k != "object_id"}
        return json.dumps(flat)

    def extract_captions(self, start: Optional[str] = None, end: Optional[str] = None, query: Optional[str] = None,
                         return_text: bool = False, join_with: str = "\n") -> List[Dict[str, Any]] | str:
        lo = _seconds(start) if start is not None else float("-inf")
        hi = _seconds(end) if end is not None else float("inf")
        segs = [s.model_dump() for s in self._video().captions.segments
                if _seconds(s.ts_end) >= lo and _seconds(s.ts_start) <= hi]
        if query:
            q = _words(query)
            segs = [s for s in segs if q & _words(s["caption"])]
        if not segs:
            raise _empty("no caption segments match the time range/query")
        if return_text:
            return join_with.join(f"{s['ts_start']}-{s['ts_end']} | {s['caption']}" for s in segs)
        return segs

    def extract_event_captions(self, num_events: int = 5, query: Optional[str] = None) -> List[Dict]:
        caps = [c.model_dump() for c in self._video().captions.events]
        if query:
            q = _words(query)
            caps = sorted([c for c in caps if q & _words(c["caption"])], key=lambda c: -len(q & _words(c["caption"])))
        else:
            caps = caps[::-1]  # most recent first
        caps = caps[:max(0, num_events)]
        if not caps:
            raise _empty("no event captions match")
        return [{"caption": c["caption"]} for c in caps]

    def inspect_video_segment(self, start: float, end: float) -> Dict:
        vt = self._video()
        if end <= start or start < 0:
            raise _exec_error(f"invalid segment [{start}, {end}] s: need 0 <= start < end")
        source = str(self.video_path) if self.video_path else (vt.video_path or f"{vt.datapoint_id}.mp4")
        return {"video_handle": f"{source}#t={start:g},{end:g}", "start": start, "end": end,
                "events": [e.model_dump() for e in vt.entities.events if _seconds(e.ts_end) >= start and _seconds(e.ts_start) <= end]}

    def get_audio_events(self, start: Optional[str] = None, end: Optional[str] = None, query: Optional[str] = None) -> list:
        lo = _seconds(start) if start is not None else float("-inf")
        hi = _seconds(end) if end is not None else float("inf")
        out = [{"ts_start": e.ts_start, "ts_end": e.ts_end, "audio": e.audio} for e in self._video().entities.events
               if e.audio and _seconds(e.ts_end) >= lo and _seconds(e.ts_start) <= hi]
        if query:
            q = _words(query)
            out = [a for a in out if q & _words(a["audio"])]
        if not out:
            raise _empty("no audio events match")
        return out

    def extract_frames(self, start: Optional[int] = None, end: Optional[int] = None, fps: str = 2) -> List[Dict]:
        if start is None and end is None:
            raise _exec_error("extract_frames needs at least one of start, end")
        if self.video_path is None:
            raise _exec_error("no video file is attached to this household (frames need a video file)")
        try:
            rate = float(fps)
        except (TypeError, ValueError):
            raise _exec_error(f"fps {fps!r} is not a number") from None
        frames = _read_frames(self.video_path, float(start or 0), float(end) if end is not None else None, rate)
        if not frames:
            raise _empty("no frames in the requested range")
        return frames


MAX_FRAMES = 300


def _read_frames(path: Path, start: float, end: float | None, fps: float) -> list[dict]:
    """Frames sampled at ``fps`` in [start, end] s as PNG/base64: any video FFmpeg decodes (PyAV),
    else an animated image via Pillow (GIF/WebP/APNG), or a folder of numbered images (10 fps)."""
    if fps <= 0:
        raise _exec_error("fps must be positive")
    if path.is_dir():
        from PIL import Image

        files = sorted(p for p in path.iterdir() if p.suffix.lower() in (".png", ".jpg", ".jpeg"))
        timed = ((i / 10.0, Image.open(p)) for i, p in enumerate(files))
    elif not path.exists():
        raise _exec_error(f"video file {path} does not exist")
    else:
        timed = _decode_video(path)
    out, next_t = [], start
    for t, frame in timed:
        if end is not None and t > end + 1e-9:
            break
        if t + 1e-9 < next_t:
            continue
        buf = io.BytesIO()
        frame.convert("RGB").save(buf, format="PNG")
        out.append({"t": round(t, 3), "png_base64": base64.b64encode(buf.getvalue()).decode()})
        next_t = t + 1.0 / fps
        if len(out) >= MAX_FRAMES:
            break
    return out


def _decode_video(path: Path):
    """(time s, PIL image) pairs in order; PyAV (FFmpeg) first, Pillow's animated formats as fallback."""
    try:
        import av
    except ImportError:
        av = None
    if av is not None:
        try:
            container = av.open(str(path))
        except av.error.FFmpegError:
            container = None
        if container is not None:
            def frames():
                with container:
                    for frame in container.decode(video=0):
                        yield float(frame.time or 0.0), frame.to_image()
            return frames()
    from PIL import Image, ImageSequence

    try:
        img = Image.open(path)
    except (OSError, ValueError) as exc:
        raise _exec_error(f"cannot read video {path}: {exc}") from None

    def pil_frames():
        t = 0.0
        for frame in ImageSequence.Iterator(img):
            yield t, frame.copy()
            t += frame.info.get("duration", 100) / 1000.0
    return pil_frames()


# ---------------------------------------------------------------- tool specs
@dataclass(frozen=True)
class Arg:
    name: str
    type: str  # json type: string | integer | number | boolean | array | object
    required: bool = True
    description: str = ""


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    args: tuple[Arg, ...] = ()
    none_ok: bool = False  # returning None is the tool's normal result (update_appliance)

    def openai(self) -> dict[str, Any]:
        props = {}
        for a in self.args:
            prop: dict[str, Any] = {"type": a.type.split("|") if "|" in a.type else a.type, "description": a.description}
            if a.type == "array":
                prop["items"] = {"type": "string"}
            props[a.name] = prop
        return {"type": "function", "function": {"name": self.name, "description": self.description,
                                                   "parameters": {"type": "object", "properties": props,
                                                                  "required": [a.name for a in self.args if a.required]}}}


_S = "string"
TOOL_SPECS: list[ToolSpec] = [
    ToolSpec("get_household_profile", "Returns high level information about the household including household_size, "
             "occupancy_type, layout, pets, member_ids which can be used with other tools."),
    ToolSpec("get_household_member_info", "Returns profiles for the requested member_ids (name, role, age, etc).",
             (Arg("member_ids", "array"),)),
    ToolSpec("get_household_member_major_events", "Returns major life events for a single member (dates + descriptions).",
             (Arg("member_id", _S),)),
    ToolSpec("get_household_memories", "Searches household-level memories by a natural-language query; returns top matches.",
             (Arg("search_string", _S), Arg("num_memories", "integer"))),
    ToolSpec("get_member_memories", "Searches memories tied to one member_id by a natural-language query.",
             (Arg("member_id", _S), Arg("search_string", _S), Arg("num_memories", "integer"))),
    ToolSpec("get_owned_appliances", "Lists all appliance names in the household."),
    ToolSpec("get_appliances", "Returns detailed states for the specified appliances (keyed by appliance name).",
             (Arg("appliance_names", "array"),)),
    ToolSpec("get_appliances_by_location", 'Lists appliances filtered to specific locations (e.g., ["Kitchen"]).',
             (Arg("locations", "array"),)),
    ToolSpec("get_appliance_features", "Lists the features that are available for this appliance object, and parameters.",
             (Arg("appliance_names", "array"),)),
    ToolSpec("run_appliance_feature", "Run the selected feature method for the appliance with feature kwargs.",
             (Arg("appliance_name", _S), Arg("feature_method", _S), Arg("feature_kwargs", "object"))),
    ToolSpec("update_appliance", "Used to update the state of the appliance keyed by the name.",
             (Arg("appliance_name", _S), Arg("state", "object")), none_ok=True),
    ToolSpec("get_contextual_event_descriptions", "Returns a textual description of current contextual household events, "
             "optionally compacted, time-sorted, and formatted with indentation.",
             (Arg("compact", "boolean", False), Arg("sort_by_time", "boolean", False), Arg("indent", _S, False))),
    ToolSpec("get_scene_summary", "Returns a high-level natural language summary of the current household scene as "
             "indicated in the source video."),
    ToolSpec("get_layout_zones", "Returns a list of spatial zones or areas defined within the household layout. e.g. kitchen."),
    ToolSpec("get_landmarks_in_house", "Returns a list of notable landmarks or fixed reference points (e.g. counter) within the house."),
    ToolSpec("get_members_appearance", "Returns appearance descriptions for the specified household members, keyed by member ID.",
             (Arg("member_ids", "array"),)),
    ToolSpec("get_appliance_descriptions", "Returns natural language descriptions of the specified appliances, keyed by appliance name.",
             (Arg("appliance_names", "array"),)),
    ToolSpec("get_object_information", "Returns flattened JSON (as text) containing information about multiple objects "
             "(e.g. mug etc.) in the environment."),
    ToolSpec("extract_captions", "Extracts segments within an optional time range, returning structured captions or joined "
             "text. This contains timestamps of events. The segments are optionally filtered by query.",
             (Arg("start", _S, False), Arg("end", _S, False), Arg("query", _S, False), Arg("return_text", "boolean"),
              Arg("join_with", _S, False))),
    ToolSpec("extract_event_captions", "Returns captions for the most relevant or recent events, optionally filtered by a "
             "query. This will be just text, not timestamps.", (Arg("num_events", "integer", False), Arg("query", _S, False))),
    ToolSpec("inspect_video_segment", "Generates a clipped video when start and end are provided; Returns a handle to the "
             "uploaded video file. The start and end input timestamps must be in seconds.",
             (Arg("start", "number"), Arg("end", "number"))),
    ToolSpec("get_audio_events", "Extracts audio events segments within an optional time range. This contains timestamps of "
             "events. The audio events are optionally filtered by query.",
             (Arg("start", _S, False), Arg("end", _S, False), Arg("query", _S, False))),
    ToolSpec("extract_frames", "Extracts encoded frames between the start and end timestamps at the fps. At least one of the "
             "timestamps is required. You should use at maximum 300 frames.",
             (Arg("start", "integer", False), Arg("end", "integer", False), Arg("fps", "string|number", False))),
]
SPECS = {s.name: s for s in TOOL_SPECS}
VIDEO_TOOLS = {"get_scene_summary", "get_layout_zones", "get_landmarks_in_house", "get_members_appearance",
               "get_object_information", "extract_captions", "extract_event_captions", "inspect_video_segment",
               "get_audio_events", "extract_frames"}


def _type_ok(kind: str, value: Any) -> bool:
    if value is None:
        return True  # optional arguments may be passed as null
    if "|" in kind:  # a union, e.g. extract_frames' fps ("fps: str=2" in the seed)
        return any(_type_ok(k, value) for k in kind.split("|"))
    if kind == "string":
        return isinstance(value, str)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "array":
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    if kind == "object":
        return isinstance(value, dict)
    return True


@dataclass
class ToolResult:
    tool: str
    arguments: Any
    ok: bool
    output: Any = None
    error_type: str | None = None
    message: str = ""

    def for_agent(self) -> str:
        """The text an agent sees: the output as JSON, or an explicit typed error."""
        if self.ok:
            return self.output if isinstance(self.output, str) else json.dumps(self.output, default=str)
        return json.dumps({"error": {"type": self.error_type, "message": self.message}})

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _preview(value: Any, limit: int = 200) -> str:
    """A value as short JSON for an error message (an argument may be 20 MiB)."""
    text = json.dumps(value, default=str)
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} characters)"


def parse_arguments(raw: Any) -> dict[str, Any]:
    """Tool-call arguments as an object; raise UPSTREAM_FORMAT_ERROR for anything else."""
    if raw is None or raw == "":
        return {}
    if isinstance(raw, str):
        try:
            raw = jsonin.loads(raw)
        except json.JSONDecodeError as exc:
            raise ToolError(ErrorType.UPSTREAM_FORMAT_ERROR, f"arguments are not valid JSON ({exc.msg} at char {exc.pos})") from None
        except ValueError as exc:  # nested too deep, a 5000-digit number
            raise ToolError(ErrorType.UPSTREAM_FORMAT_ERROR, f"arguments: {exc}") from None
    if not isinstance(raw, dict):
        raise ToolError(ErrorType.UPSTREAM_FORMAT_ERROR, f"arguments must be a JSON object, got {type(raw).__name__}")
    return raw


LOG_VALUE_CHARS = 2000  # a bounded log keeps arguments / outputs up to this size as JSON, else a preview


@dataclass
class ToolExecutor:
    """Validates and runs tool calls against a PersonalHomeTools instance; keeps a call log.

    ``log_limit=None`` keeps every call whole (one task's transcript, the agents read it);
    a long-lived service (the appliance node, the MQTT mirror) passes ``log_limit=N``: the log is
    then a ring buffer of the last N calls with large arguments / outputs replaced by a preview,
    and ``calls`` / ``error_counts()`` still count every call."""

    tools: PersonalHomeTools
    allowed: set[str] | None = None  # restrict the tool list (e.g. text-only evaluation)
    log: list[ToolResult] = field(default_factory=list)
    safety: SafetyPolicy = field(default_factory=SafetyPolicy)  # every appliance change goes through it
    log_limit: int | None = None

    def __post_init__(self) -> None:
        self._lock = threading.RLock()
        self.calls = 0
        self._errors = {e: 0 for e in ERROR_TYPES}
        if self.log_limit is not None:
            self.log = deque(self.log, maxlen=max(0, self.log_limit))

    def specs(self) -> list[ToolSpec]:
        return [s for s in TOOL_SPECS if self.allowed is None or s.name in self.allowed]

    def call(self, name: str, arguments: Any = None) -> ToolResult:
        with self._lock:
            result = self._call(name, arguments)
            self.calls += 1
            if result.error_type:
                self._errors[result.error_type] += 1
            self.log.append(result if self.log_limit is None else _compact(result))
            return result

    def _call(self, name: str, arguments: Any) -> ToolResult:
        spec = SPECS.get(name) if (self.allowed is None or name in self.allowed) else None
        if spec is None:
            names = [s.name for s in self.specs()]
            return ToolResult(name, arguments, False, None, ErrorType.INVALID_TOOL_NAME.value,
                              f"no tool named {name!r}; available tools: {names}")
        try:
            args = parse_arguments(arguments)
            self._check(spec, args)
            self._check_safety(name, args)
            output = getattr(self.tools, name)(**args)
        except ToolError as exc:
            return ToolResult(name, arguments, False, None, exc.kind.value, _clip_message(exc.message))
        except (FeatureError, KeyError, ValueError, TypeError) as exc:
            return ToolResult(name, arguments, False, None, ErrorType.EXECUTION_ERROR.value, _clip_message(f"{name}: {exc}"))
        if output is None and spec.none_ok:
            return ToolResult(name, args, True, {"status": "ok"})
        if output is None or output == [] or output == {} or output == "":
            return ToolResult(name, args, False, None, ErrorType.EMPTY_OUTPUT.value, f"{name} returned no results for {args}")
        return ToolResult(name, args, True, output)

    @staticmethod
    def _check(spec: ToolSpec, args: dict[str, Any]) -> None:
        known = {a.name for a in spec.args}
        extra = sorted(set(args) - known)
        if extra:
            raise ToolError(ErrorType.UNEXPECTED_ARGUMENTS, f"{spec.name} got unexpected arguments {extra}; accepted: {sorted(known)}")
        missing = [a.name for a in spec.args if a.required and args.get(a.name) is None]
        if missing:
            raise ToolError(ErrorType.MISSING_ARGUMENTS, f"{spec.name} is missing required arguments {missing}")
        for a in spec.args:
            if a.name in args and not _type_ok(a.type, args[a.name]):
                raise ToolError(ErrorType.EXECUTION_ERROR,
                                f"{spec.name}: argument {a.name!r} must be of type {a.type}, got {_preview(args[a.name])}")
        for key in [k for k, v in args.items() if v is None]:
            del args[key]  # null optional arguments take the tool's default

    def _check_safety(self, name: str, args: dict[str, Any]) -> None:
        """Refuse a hazardous appliance change while a safety condition holds (the plans' rules)."""
        if name not in ("run_appliance_feature", "update_appliance"):
            return
        h = self.tools.household
        try:
            placed = h.appliance(args["appliance_name"])
        except KeyError:
            return  # the tool itself reports the unknown appliance
        a = placed.appliance
        if name == "run_appliance_feature":
            refusal = self.safety.feature_refusal(h, a.type, args["feature_method"], args["feature_kwargs"])
        else:
            refusal = self.safety.state_refusal(h, a.type, a.state, {**a.state, **args["state"]})
        if refusal:
            raise ToolError(ErrorType.EXECUTION_ERROR, f"{args['appliance_name']}: {refusal}")

    def error_counts(self) -> dict[str, int]:
        """Typed errors of every call so far (a bounded log forgets calls, these counts do not)."""
        return dict(self._errors)


MAX_MESSAGE_CHARS = 2000  # error messages quote the offending value: never the whole of a 20 MiB one


def _clip_message(text: str) -> str:
    return text if len(text) <= MAX_MESSAGE_CHARS else f"{text[:MAX_MESSAGE_CHARS]}… ({len(text)} characters)"


def _compact(result: ToolResult) -> ToolResult:
    """A log entry of bounded size: arguments / output over LOG_VALUE_CHARS as JSON become a preview."""
    return ToolResult(result.tool, _small(result.arguments), result.ok, _small(result.output), result.error_type,
                      result.message if len(result.message) <= LOG_VALUE_CHARS else _preview(result.message, LOG_VALUE_CHARS))


def _small(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, str) and len(value) <= LOG_VALUE_CHARS:
        return value
    text = json.dumps(value, default=str)
    return value if len(text) <= LOG_VALUE_CHARS else _preview(value, LOG_VALUE_CHARS)

"""Plan Generation programs: parsing, step-by-step execution, validity and a safety layer.

A plan is a list of programs ``{"program_id", "steps": [{"step_id", "appliance",
"feature", "category", "args", "rationale"}]}`` (the seed's PG output format); the seed's
flat form — a list of steps each carrying ``program_id`` — is accepted too. Plans are
parsed as JSON only; nothing in a plan is ever evaluated as code.

Each program runs on a fresh copy of the household (the seed resets the environment per
program); steps inside a program share state, so a step that needs an appliance on fails
unless an earlier step turned it on. Validity (seed Eq. 11) is the share of steps that are
executable — a known appliance, a known feature or toolbox function, well-formed arguments.

Safety layer (``personal.smarthome.safety``, the same rules the ``ToolExecutor`` applies to
tool calls and MQTT commands): steps that heat, unlock or open (oven, stove, space heater, door
lock, garage door), by a feature or by ``update_appliance_status``, are refused while a
configured safety condition holds — ``nobody_home`` (no member present) or ``child_alone`` (only
members under 13 present). A refused step is well formed (it counts as valid) but is not
executed; refusals are reported separately.
"""
from __future__ import annotations

import copy
import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

from personal.smarthome import jsonin
from personal.smarthome.appliances import CATALOGUE
from personal.smarthome.features import FeatureError, P, Param
from personal.smarthome.household import Household, Memory, Member, Pet
from personal.smarthome.safety import CHILD_AGE, SafetyPolicy, safety_conditions  # noqa: F401 - re-exported
from personal.smarthome.tools import ErrorType

CATEGORIES = ("ACCIDENT_RESPONSE", "ROUTINE", "ANOMALY", "WELL_BEING")


class PlanFormatError(ValueError):
    """The plan text is not a JSON list/object of programs."""


# ---------------------------------------------------------------- toolbox (seed's PG toolbox table)
def _tb_update_user(h: Household, a: dict) -> Any:
    user = Member.model_validate({**h.member(a["user"]["member_id"]).model_dump(), **a["user"]}) \
        if isinstance(a["user"], dict) and a["user"].get("member_id") in [m.member_id for m in h.members] else None
    if user is None:
        raise FeatureError("update_user_information: user.member_id must name a household member")
    h.members = [user if m.member_id == user.member_id else m for m in h.members]
    return user.model_dump()


def _tb_update_memories(h: Household, a: dict) -> Any:
    if a["household_id"] != h.household_id:
        raise FeatureError(f"update_memories: household_id {a['household_id']!r} is not {h.household_id!r}")
    mems = [Memory.model_validate(m) for m in a["memories"]]
    h.memories = h.memories + mems
    return None


def _tb_sensor(h: Household, a: dict) -> Any:
    for s in h.sensors:
        if s.sensor.name == a["sensor_name"] and s.location.lower() == a["sensor_location"].lower():
            s.sensor.status = a["status"]
            return s.model_dump()
    raise FeatureError(f"no sensor {a['sensor_name']!r} in {a['sensor_location']!r}")


def _tb_appliance(h: Household, a: dict) -> Any:
    from personal.smarthome.appliances import validate_state

    for p in h.appliances:
        if p.appliance.name == a["appliance_name"] and p.location.lower() == a["appliance_location"].lower():
            if not isinstance(a["status"], dict):
                raise FeatureError("update_appliance_status: status must be an object of state keys")
            problems = validate_state(p.appliance.type, a["status"])
            if problems:
                raise FeatureError("; ".join(problems))
            p.appliance.state = {**p.appliance.state, **a["status"]}
            return p.model_dump()
    raise FeatureError(f"no appliance {a['appliance_name']!r} in {a['appliance_location']!r}")


def _tb_pet(h: Household, a: dict) -> Any:
    if a["household_id"] != h.household_id:
        raise FeatureError(f"update_pet_information: household_id {a['household_id']!r} is not {h.household_id!r}")
    pet = Pet.model_validate(a["pet"])
    h.pets = [pet if p.name == pet.name else p for p in h.pets] + ([] if any(p.name == pet.name for p in h.pets) else [pet])
    return pet.model_dump()


def _tb_routine(h: Household, a: dict) -> Any:
    """A routine of ``"<appliance>.<feature>"`` steps (or toolbox functions), each of which must name an
    appliance of this household and one of its features (method or title): ``["os.system"]`` is not a
    routine, and accepting it inflated plan validity."""
    from personal.smarthome.appliances import CATALOGUE

    for k, f in enumerate(a["functions"]):
        if not isinstance(f, str) or not f.strip():
            raise FeatureError(f"create_routine: functions[{k}] must be '<appliance>.<feature>', got {f!r}")
        appliance, _, feature = f.strip().rpartition(".")
        if not appliance:
            if f.strip() in TOOLBOX and f.strip() != "create_routine":
                continue
            raise FeatureError(f"create_routine: functions[{k}] {f!r} is not '<appliance>.<feature>' nor a toolbox function")
        placed = next((p for p in h.appliances if p.appliance.name.lower() == appliance.lower()), None)
        if placed is None:
            raise FeatureError(f"create_routine: functions[{k}] {f!r}: the household has no appliance {appliance!r}")
        CATALOGUE[placed.appliance.type].feature(feature)  # FeatureError naming the known features
    name = "routine_" + "_".join(re.sub(r"\W+", "", f.split(".")[-1]) for f in a["functions"])[:60]
    return name


@dataclass(frozen=True)
class ToolboxFunction:
    name: str
    params: dict[str, Param]
    run: Callable[[Household, dict], Any]


_OBJ = Param("str")  # placeholder; object-typed args are checked by the function itself
TOOLBOX = {f.name: f for f in [
    ToolboxFunction("update_user_information", {"user": _OBJ}, _tb_update_user),
    ToolboxFunction("update_memories", {"household_id": P("str"), "memories": _OBJ}, _tb_update_memories),
    ToolboxFunction("update_sensor_status", {"sensor_name": P("str"), "sensor_location": P("str"), "status": _OBJ}, _tb_sensor),
    ToolboxFunction("update_appliance_status", {"appliance_name": P("str"), "appliance_location": P("str"), "status": _OBJ},
                    _tb_appliance),
    ToolboxFunction("update_pet_information", {"pet": _OBJ, "household_id": P("str")}, _tb_pet),
    ToolboxFunction("create_routine", {"functions": P("list", lo=1, hi=20)}, _tb_routine),
]}


def _bind_toolbox(fn: ToolboxFunction, args: dict) -> dict:
    extra = sorted(set(args) - set(fn.params))
    if extra:
        raise FeatureError(f"{fn.name}: unexpected arguments {extra}", "unexpected")
    missing = [k for k in fn.params if args.get(k) is None]
    if missing:
        raise FeatureError(f"{fn.name}: missing required arguments {missing}", "missing")
    return {k: (p.check(k, args[k]) if p is not _OBJ else args[k]) for k, p in fn.params.items()}


# ---------------------------------------------------------------- parsing
def parse_plan(plan: Any) -> list[dict[str, Any]]:
    """Programs from a plan (list/dict or JSON text, ```json fences allowed)."""
    if isinstance(plan, str):
        text = re.sub(r"^\s*```(?:json)?\s*|\s*```\s*$", "", plan.strip())
        try:
            plan = jsonin.loads(text)
        except json.JSONDecodeError as exc:
            raise PlanFormatError(f"plan is not valid JSON: {exc.msg} at char {exc.pos}") from None
        except ValueError as exc:  # nested too deep, a 5000-digit number
            raise PlanFormatError(f"plan: {exc}") from None
    if isinstance(plan, dict):
        plan = plan.get("programs", [plan])
    if not isinstance(plan, list):
        raise PlanFormatError(f"plan must be a list of programs, got {type(plan).__name__}")
    programs: dict[str, dict] = {}
    for i, item in enumerate(plan):
        if not isinstance(item, dict):
            raise PlanFormatError(f"plan[{i}]: expected an object, got {type(item).__name__}")
        pid = str(item.get("program_id") or f"program_{i}")
        prog = programs.setdefault(pid, {"program_id": pid, "steps": []})
        if "steps" in item:
            if not isinstance(item["steps"], list):
                raise PlanFormatError(f"plan[{i}].steps: expected a list")
            prog["steps"].extend(item["steps"])
        else:  # flat form: the item is itself a step
            prog["steps"].append({k: v for k, v in item.items() if k != "program_id"})
    return list(programs.values())


# ---------------------------------------------------------------- execution
@dataclass
class StepResult:
    program_id: str
    step_id: str
    appliance: Any
    feature: Any
    status: str  # ok | invalid | refused
    error_type: str | None = None
    message: str = ""
    result: Any = None


@dataclass
class PlanReport:
    steps: list[StepResult] = field(default_factory=list)
    format_error: str = ""

    @property
    def total(self) -> int:
        return len(self.steps)

    @property
    def validity(self) -> float:
        """Share of executable steps (refused-by-safety steps are executable, hence valid); 0 for an unparseable plan."""
        if not self.steps:
            return 0.0
        return sum(s.status != "invalid" for s in self.steps) / len(self.steps)

    @property
    def refusals(self) -> list[StepResult]:
        return [s for s in self.steps if s.status == "refused"]

    @property
    def failures(self) -> list[StepResult]:
        return [s for s in self.steps if s.status == "invalid"]

    def to_dict(self) -> dict[str, Any]:
        return {"validity": self.validity, "total_steps": self.total, "format_error": self.format_error,
                "refusals": len(self.refusals), "failures": len(self.failures), "steps": [asdict(s) for s in self.steps]}


_KIND_TO_ERROR = {"missing": ErrorType.MISSING_ARGUMENTS, "unexpected": ErrorType.UNEXPECTED_ARGUMENTS,
                  "unknown_feature": ErrorType.INVALID_TOOL_NAME}


def _resolve_appliance(h: Household, name: str):
    key = re.sub(r"[\s_]+", "-", name.strip().lower())
    for p in h.appliances:
        if p.appliance.name.lower() == key:
            return p
    matches = [p for p in h.appliances if p.appliance.type.replace("_", "-") == key]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise FeatureError(f"appliance {name!r} is ambiguous: {[m.appliance.name for m in matches]}")
    raise FeatureError(f"the household has no appliance {name!r} (owned: {h.appliance_names()})")


class PlanExecutor:
    def __init__(self, household: Household, safety: SafetyPolicy | None = None) -> None:
        self.household = household
        self.safety = safety or SafetyPolicy()

    def execute(self, plan: Any, in_place: bool = False) -> PlanReport:
        """Validate and run ``plan``; with ``in_place`` the programs run one after another on the
        household itself (controlling the home) instead of on per-program copies (evaluation)."""
        report = PlanReport()
        try:
            programs = parse_plan(plan)
        except PlanFormatError as exc:
            report.format_error = str(exc)
            return report
        for prog in programs:
            world = self.household if in_place else copy.deepcopy(self.household)  # environment reset per program
            for j, step in enumerate(prog["steps"]):
                report.steps.append(self._step(world, prog["program_id"], j, step))
        return report

    def _step(self, h: Household, pid: str, j: int, step: Any) -> StepResult:
        if not isinstance(step, dict):
            return StepResult(pid, str(j), None, None, "invalid", ErrorType.UPSTREAM_FORMAT_ERROR.value, "step is not an object")
        sid = str(step.get("step_id", j))
        res = StepResult(pid, sid, step.get("appliance"), step.get("feature"), "invalid")
        problem = self._format_problem(step)
        if problem:
            res.error_type, res.message = ErrorType.UPSTREAM_FORMAT_ERROR.value, problem
            return res
        args = step.get("args") or {}
        try:
            if step["appliance"].strip().lower() in ("toolbox", "system", "system memory"):
                fn = TOOLBOX.get(step["feature"])
                if fn is None:
                    raise FeatureError(f"toolbox has no function {step['feature']!r} (functions: {sorted(TOOLBOX)})", "unknown_feature")
                bound = _bind_toolbox(fn, args)
                refusal = self._toolbox_refusal(h, fn.name, bound)
                if refusal:
                    res.status, res.message = "refused", refusal
                    return res
                res.result = fn.run(h, bound)
            else:
                placed = _resolve_appliance(h, step["appliance"])
                t = CATALOGUE[placed.appliance.type]
                feature = t.feature(step["feature"])
                feature.bind(args)  # a malformed step is invalid before it can be refused
                refusal = self.safety.feature_refusal(h, placed.appliance.type, feature.method, args)
                if refusal:
                    res.status, res.message = "refused", refusal
                    return res
                state = copy.deepcopy(placed.appliance.state)
                res.result = t.call(state, feature.method, args)
                placed.appliance.state = state
        except FeatureError as exc:
            res.error_type = _KIND_TO_ERROR.get(exc.kind, ErrorType.EXECUTION_ERROR).value
            res.message = str(exc)
            return res
        except (ValueError, TypeError, KeyError) as exc:  # pydantic validation of toolbox objects, etc.
            res.error_type, res.message = ErrorType.EXECUTION_ERROR.value, f"{type(exc).__name__}: {exc}"
            return res
        res.status = "ok"
        return res

    def _toolbox_refusal(self, h: Household, name: str, args: dict) -> str | None:
        """``update_appliance_status`` writes state directly: the same state rules as ``update_appliance``."""
        if name != "update_appliance_status" or not isinstance(args.get("status"), dict):
            return None
        for p in h.appliances:
            if p.appliance.name == args["appliance_name"] and p.location.lower() == str(args["appliance_location"]).lower():
                return self.safety.state_refusal(h, p.appliance.type, p.appliance.state, {**p.appliance.state, **args["status"]})
        return None

    @staticmethod
    def _format_problem(step: dict) -> str:
        if not isinstance(step.get("appliance"), str) or not step["appliance"].strip():
            return "step.appliance must be a non-empty string"
        if not isinstance(step.get("feature"), str) or not step["feature"].strip():
            return "step.feature must be a non-empty string"
        if "args" in step and step["args"] is not None and not isinstance(step["args"], dict):
            return "step.args must be an object"
        cats = step.get("category", [])
        cats = [cats] if isinstance(cats, str) else cats
        if not isinstance(cats, list) or any(c not in CATEGORIES for c in cats):
            return f"step.category must be a list drawn from {list(CATEGORIES)}, got {step.get('category')!r}"
        return ""

"""Typed feature-level appliance methods: parameters, validation and the small builders
the catalogue (``personal.smarthome.appliances``) is written with.

A feature is data: a method name, the seed's feature title, typed parameters and a
``run(state, args) -> result`` function that may change the appliance state. Results are
deterministic functions of (state, args). Nothing here evaluates strings as code.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

KINDS = ("int", "float", "str", "bool", "list", "time")


class FeatureError(Exception):
    """A feature call was rejected; ``kind`` is missing | unexpected | invalid | prerequisite | unknown_feature."""

    def __init__(self, message: str, kind: str = "invalid") -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class Param:
    kind: str  # one of KINDS; "time" is an "HH:MM" string, "list" a list of strings
    required: bool = True
    choices: tuple = ()
    lo: float | None = None
    hi: float | None = None
    default: Any = None
    doc: str = ""

    def check(self, name: str, value: Any) -> Any:
        """Return the value (ints widened to float where a float is asked) or raise FeatureError."""
        k = self.kind
        if k == "bool":
            if not isinstance(value, bool):
                raise FeatureError(f"argument {name!r}: expected a boolean, got {value!r}")
        elif k in ("int", "float"):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise FeatureError(f"argument {name!r}: expected {'an integer' if k == 'int' else 'a number'}, got {value!r}")
            if k == "int" and not float(value).is_integer():
                raise FeatureError(f"argument {name!r}: expected an integer, got {value!r}")
            value = int(value) if k == "int" else float(value)
            if (self.lo is not None and value < self.lo) or (self.hi is not None and value > self.hi):
                raise FeatureError(f"argument {name!r}: {value} is outside [{self.lo}, {self.hi}]")
        elif k in ("str", "time"):
            if not isinstance(value, str) or not value.strip():
                raise FeatureError(f"argument {name!r}: expected a non-empty string, got {value!r}")
            if k == "time" and not _is_hhmm(value):
                raise FeatureError(f"argument {name!r}: expected a time as HH:MM, got {value!r}")
        elif k == "list":
            if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
                raise FeatureError(f"argument {name!r}: expected a list of strings, got {value!r}")
            if self.lo is not None and len(value) < self.lo or self.hi is not None and len(value) > self.hi:
                raise FeatureError(f"argument {name!r}: expected between {self.lo} and {self.hi} items, got {len(value)}")
            if self.choices:
                bad = [v for v in value if v not in self.choices]
                if bad:
                    raise FeatureError(f"argument {name!r}: {bad} not among {list(self.choices)}")
            return list(value)
        if self.choices and value not in self.choices:
            raise FeatureError(f"argument {name!r}: {value!r} is not one of {list(self.choices)}")
        return value

    def schema(self) -> dict[str, Any]:
        """JSON-schema-like description (shown to agents by get_appliance_features)."""
        types = {"int": "integer", "float": "number", "str": "string", "bool": "boolean", "list": "array", "time": "string"}
        out: dict[str, Any] = {"type": types[self.kind], "required": self.required}
        if self.choices:
            out["enum"] = list(self.choices)
        if self.lo is not None or self.hi is not None:
            out["range"] = [self.lo, self.hi]
        if self.kind == "time":
            out["format"] = "HH:MM"
        if not self.required and self.default is not None:
            out["default"] = self.default
        if self.doc:
            out["description"] = self.doc
        return out


def _is_hhmm(text: str) -> bool:
    parts = text.split(":")
    return len(parts) == 2 and all(p.isdigit() and len(p) == 2 for p in parts) and int(parts[0]) < 24 and int(parts[1]) < 60


Runner = Callable[[dict, dict], Any]


@dataclass(frozen=True)
class Feature:
    method: str  # snake_case name used by run_appliance_feature
    title: str  # the feature's name as the seed's API reference writes it
    doc: str
    params: dict[str, Param]
    run: Runner
    example: dict[str, Any] = field(default_factory=dict)  # valid arguments (tests, reference plans)
    needs_power: bool = False  # prerequisite: the appliance must be on
    hazard: str = ""  # "heat" | "unlock" | "open": checked by the plan safety layer
    hazard_when: tuple[str, Any] | None = None  # only hazardous when args[key] == value
    tags: tuple[str, ...] = ()  # evidence tags used to label Feature Recommendation items

    def bind(self, args: dict[str, Any]) -> dict[str, Any]:
        """Validate arguments: unknown/missing names, types, ranges, choices; fill defaults."""
        if not isinstance(args, dict):
            raise FeatureError(f"feature {self.method!r}: arguments must be an object, got {type(args).__name__}")
        unknown = sorted(set(args) - set(self.params))
        if unknown:
            raise FeatureError(f"feature {self.method!r}: unexpected arguments {unknown} (accepted: {sorted(self.params)})",
                               "unexpected")
        bound: dict[str, Any] = {}
        for name, p in self.params.items():
            if name in args and args[name] is not None:
                bound[name] = p.check(name, args[name])
            elif p.required:
                raise FeatureError(f"feature {self.method!r}: missing required argument {name!r}", "missing")
            else:
                bound[name] = p.default
        return bound

    def is_hazardous(self, args: dict[str, Any]) -> bool:
        if not self.hazard:
            return False
        if self.hazard_when is None:
            return True
        key, value = self.hazard_when
        return args.get(key) == value

    def describe(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "title": self.title,
            "description": self.doc,
            "parameters": {k: p.schema() for k, p in self.params.items()},
            **({"requires": "power on"} if self.needs_power else {}),
        }


# -- builders -------------------------------------------------------------------------
def P(kind: str, *, opt: bool = False, choices=(), lo=None, hi=None, default=None, doc="") -> Param:
    return Param(kind, not opt, tuple(choices), lo, hi, default, doc)


def power_feature() -> Feature:
    def run(state: dict, args: dict) -> Any:
        state["power"] = args["state"]
        return {"power": state["power"]}

    return Feature("set_power", "Power on/off", "Turns the appliance on or off.",
                   {"state": P("str", choices=("on", "off"))}, run, {"state": "on"}, tags=("energy",))


def setter(method: str, title: str, doc: str, key: str, param: Param, example: Any, *,
           needs_power: bool = True, arg: str | None = None, tags=(), also: dict | None = None, **kw) -> Feature:
    """A feature that sets one state key from one argument (``also`` sets fixed keys too)."""
    arg = arg or key

    def run(state: dict, args: dict) -> Any:
        state[key] = args[arg]
        for k, v in (also or {}).items():
            state[k] = v
        return {key: state[key]}

    return Feature(method, title, doc, {arg: param}, run, {arg: example}, needs_power=needs_power, tags=tuple(tags), **kw)


def toggle(method: str, title: str, doc: str, key: str, *, needs_power: bool = True, tags=(), **kw) -> Feature:
    return setter(method, title, doc, key, P("bool"), True, needs_power=needs_power, arg="enabled", tags=tags, **kw)


def report(method: str, title: str, doc: str, keys: tuple[str, ...], *, tags=()) -> Feature:
    def run(state: dict, args: dict) -> Any:
        return {k: state.get(k) for k in keys}

    return Feature(method, title, doc, {}, run, {}, tags=tuple(tags))


def notifier(method: str, title: str, doc: str, *, needs_power: bool = False, channel: str = "notifications",
             tags=("notification",)) -> Feature:
    def run(state: dict, args: dict) -> Any:
        entry = args["message"] if not args.get("title") else f"{args['title']}: {args['message']}"
        state[channel] = (list(state.get(channel, [])) + [entry])[-5:]
        return {"delivered": True, "message": entry}

    return Feature(method, title, doc, {"message": P("str"), "title": P("str", opt=True)}, run,
                   {"message": "Dinner is ready"}, needs_power=needs_power, tags=tuple(tags))


def action(method: str, title: str, doc: str, params: dict[str, Param], run: Runner, example: dict, **kw) -> Feature:
    kw["tags"] = tuple(kw.get("tags", ()))
    return Feature(method, title, doc, params, run, example, **kw)

"""Graphs as data: which nodes run, with which parameters and remappings.

A graph is declared once here and started two ways:
``ros2 launch personal <graph>.launch.py`` (through ``personal.launch_support``)
and ``personal launch <graph>`` (the project's own runner, ``personal.runner``).

Registering a graph: add a module ``personal/graphs/<name>.py`` that defines
``GRAPH = Graph(...)`` (or ``GRAPHS = [...]`` for several) and a launch file
``launch/<name>.launch.py``. Modules are discovered automatically; they must
only build data (no heavy imports).

Node parameter values may be ``Arg("name")`` markers that refer to a graph
argument; they are filled from ``name:=value`` on either command line.

Arguments are ``name: (default, description[, check])``. The default's type types the
argument; ``check`` — ``Range`` for numbers (floats must also be finite), ``Choice`` for
strings from a closed set — says which values are valid. Values are checked before any node
starts, by the runner (``argument_values``) and by the launch files (``launch_support``);
every numeric argument declares a Range (test/test_graph_arguments.py).
"""
from __future__ import annotations

import importlib
import math
import pkgutil
from dataclasses import dataclass, field
import string
from typing import Any, Mapping

import yaml


@dataclass(frozen=True)
class Arg:
    """Reference to a graph argument, used as a node parameter value."""

    name: str


@dataclass(frozen=True)
class Template:
    """A string built from graph arguments, e.g. ``Template("{ns}/mobile_base/cmd_vel")``.

    Usable as a node namespace, either side of a remapping, or a parameter value, so a
    graph can be rewired (robot namespace, camera prefix) from ``name:=value`` alone."""

    text: str

    def names(self) -> list[str]:
        return [field for _, field, _, _ in string.Formatter().parse(self.text) if field]

    def render(self, values: Mapping[str, Any]) -> str:
        return self.text.format(**values)

    def parts(self) -> list[str | Arg]:
        """Literal text and ``Arg`` pieces, in order (for launch substitutions)."""
        out: list[str | Arg] = []
        for literal, field_name, _, _ in string.Formatter().parse(self.text):
            if literal:
                out.append(literal)
            if field_name:
                out.append(Arg(field_name))
        return out


@dataclass(frozen=True)
class Select:
    """A value picked by the value of ``key`` (an argument name or a Template over Choice arguments),
    e.g. ``Select("base", {"create3": "mobile_base/odom", "kobuki": "odom"})``: profiles as data.
    Options may refer to arguments (``"{ns}/odom"``); with ``passthrough`` a key that is not an
    option is the value itself (``map_frame:=map``), else every value the key takes must be one."""

    key: "str | Template"
    options: Mapping[str, str]
    passthrough: bool = False

    def key_template(self) -> "Template":
        return self.key if isinstance(self.key, Template) else Template("{" + self.key + "}")

    def option_names(self) -> list[str]:
        return sorted({n for v in self.options.values() for n in Template(v).names()})

    def render(self, values: Mapping[str, Any]) -> str:
        k = self.key_template().render(values)
        if k in self.options:
            return Template(self.options[k]).render(values)
        if self.passthrough:
            return k
        raise GraphError(f"no value for {self.key_template().text!r} = {k!r} (known: {', '.join(self.options)})")


@dataclass(frozen=True)
class Range:
    """Valid numbers of an argument: ``low <= value <= high`` (``low < value`` with
    ``low_open``); None = unbounded. Floats must be finite. Lists are checked element-wise."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False

    def check(self, name: str, value: Any) -> None:
        for v in value if isinstance(value, (list, tuple)) else [value]:
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise GraphError(f"argument {name!r}: expected a number, got {v!r}")
            if isinstance(v, float) and not math.isfinite(v):
                raise GraphError(f"argument {name!r}: {v} is not a finite number")
            if self.low is not None and (v <= self.low if self.low_open else v < self.low) or \
                    self.high is not None and v > self.high:
                raise GraphError(f"argument {name!r}: {v!r} is out of range (valid: {self.text()})")

    def text(self) -> str:
        low = None if self.low is None else f"{'>' if self.low_open else '>='} {self.low:g}"
        high = None if self.high is None else f"<= {self.high:g}"
        return " and ".join(t for t in (low, high) if t) or "any finite number"


def positive(high: float | None = None) -> Range:
    return Range(0, high, low_open=True)


def at_least(low: float, high: float | None = None) -> Range:
    return Range(low, high)


SEED = Range(0, 2**31 - 1)
PORT = Range(1, 65535)


@dataclass(frozen=True)
class FileName:
    """An argument that becomes one file or folder name (``map_name``, ``run_name``): the one rule of
    :func:`personal.paths.path_component` (no separator, ``..``, absolute path, NUL); empty allowed
    with ``allow_empty`` (the node then picks its default name)."""

    allow_empty: bool = True

    def check(self, name: str, value: Any) -> None:
        from personal.paths import UnsafeIdError, path_component

        if self.allow_empty and value == "":
            return
        try:
            path_component(value, f"argument {name!r}:")
        except UnsafeIdError as exc:
            raise GraphError(str(exc)) from None

    def text(self) -> str:
        return "one file name (no '/', '..', NUL)"


@dataclass(frozen=True)
class Choice:
    """Valid strings of an argument; with ``multiple`` a comma-separated list of them."""

    options: tuple[str, ...]
    multiple: bool = False
    allow_empty: bool = False

    def check(self, name: str, value: Any) -> None:
        items = [v.strip() for v in str(value).split(",") if v.strip()] if self.multiple else [value]
        if not items and not self.allow_empty:
            raise GraphError(f"argument {name!r}: expected {self.text()}, got an empty value")
        bad = [v for v in items if v not in self.options and not (self.allow_empty and v == "")]
        if bad:
            raise GraphError(f"argument {name!r}: {', '.join(map(repr, bad))} not in {self.text()}")

    def text(self) -> str:
        return ("a comma-separated list of " if self.multiple else "one of ") + " | ".join(self.options)


@dataclass(frozen=True)
class KeyValues:
    """Valid ``NAME=NUMBER,...`` strings: each NAME one of ``ranges``, its number inside its Range."""

    ranges: Mapping[str, Range]

    def check(self, name: str, value: Any) -> None:
        for item in (t.strip() for t in str(value).split(",")):
            if not item:
                continue
            key, sep, raw = item.partition("=")
            if not sep or key.strip() not in self.ranges:
                raise GraphError(f"argument {name!r}: {item!r} is not NAME=VALUE with NAME one of {', '.join(self.ranges)}")
            try:
                number = float(raw)
            except ValueError:
                raise GraphError(f"argument {name!r}: {item!r}: {raw!r} is not a number") from None
            self.ranges[key.strip()].check(f"{name}: {key.strip()}", number)

    def text(self) -> str:
        return "NAME=VALUE,... with " + ", ".join(f"{k} {r.text()}" for k, r in self.ranges.items())


# the camera model's presets and overridable fields (personal/sim/sensor_model.py PRESETS and
# OVERRIDE_RANGES, declared here as data: graph modules import no library code; test_sensor_model
# keeps the two equal)
SENSOR_PRESETS = ("ideal", "d435", "d435-harsh")
SENSOR_OVERRIDES = KeyValues({
    "hfov_deg": Range(20.0, 150.0), "height_m": Range(0.1, 2.5), "pitch_deg": Range(-60.0, 60.0), "fps": Range(1.0, 120.0),
    "min_range_m": Range(0.05, 3.0), "subpixel": Range(0.0, 2.0), "noise_corr_px": Range(0.0, 10.0),
    "edge_invalid": Range(0.0, 1.0), "dark_invalid": Range(0.0, 1.0), "specular_invalid": Range(0.0, 1.0),
    "rgb_noise": Range(0.0, 64.0), "exposure": Range(0.0, 0.9), "white_balance": Range(0.0, 0.5), "jitter": Range(0.0, 0.5),
    "exposure_ms": Range(0.0, 100.0), "turn_rate_dps": Range(1.0, 360.0), "odom_drift": Range(0.0, 0.5),
    "odom_yaw_drift_deg": Range(0.0, 20.0), "ir_shadow": Range(0.0, 1.0), "quantise": Range(0.0, 1.0),
})
SENSOR_ARGUMENTS = {
    "sensor": ("ideal", "camera model of the simulator: ideal (the renderer's exact frames) | d435 (RealSense D435 depth "
                        "noise, IR shadow, holes, 1 mm steps, colour noise / exposure / white balance / turn blur) | "
                        "d435-harsh (docs/simulator.md)", Choice(SENSOR_PRESETS)),
    "sensor_overrides": ("", "override fields of the preset, e.g. hfov_deg=69,height_m=1.25,pitch_deg=-10 (empty = none)",
                         SENSOR_OVERRIDES),
    "sensor_seed": (0, "seed of the camera model's noise (same seed, same frames)", Range(0, 2**31 - 1)),
}


def resolve_value(value: Any, values: Mapping[str, Any]) -> Any:
    if isinstance(value, Arg):
        return values[value.name]
    if isinstance(value, (Template, Select)):
        return value.render(values)
    return value


def referenced_arguments(value: Any) -> list[str]:
    if isinstance(value, Arg):
        return [value.name]
    if isinstance(value, Template):
        return value.names()
    if isinstance(value, Select):
        return value.key_template().names() + value.option_names()
    return []


@dataclass
class NodeSpec:
    name: str
    executable: str  # console script registered in setup.py NODES (for ros2 launch)
    module: str  # python module with main() (for the runner: python -m <module>)
    namespace: str | Template = ""
    parameters: dict[str, Any] = field(default_factory=dict)
    remappings: list[tuple[str | Template, str | Template]] = field(default_factory=list)
    required: bool = False  # the graph stops when this node exits
    # (argument, value): the node runs only when that graph argument has that value (e.g. viz:=foxglove)
    when: tuple[str, str] | None = None


@dataclass
class ResolvedNode:
    """A NodeSpec with every ``Arg`` replaced by a concrete value."""

    spec: NodeSpec
    parameters: dict[str, Any]
    namespace: str = ""
    remappings: list[tuple[str, str]] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.spec.name


class GraphError(ValueError):
    pass


# Every graph gets these arguments and a ``viz`` node that runs with viz:=foxglove (docs/viz.md).
VIZ_ARGUMENTS = {
    "viz": ("none", "live view: none | foxglove (a Foxglove WebSocket server streams the graph's topics; docs/viz.md)",
            Choice(("none", "foxglove"))),
    "viz_port": (8765, "port of the viz:=foxglove WebSocket server (0 = any free port)", Range(0, 65535)),
}


# Evaluation graphs that shard (personal.runs.shard, docs/scaling.md) take these; the runner's
# coordinator consumes them (a shard's child graph always runs with workers:=1).
SHARD_ARGUMENTS = {
    "workers": (1, "shards run at once, each a child graph on its own ROS domain (1 = one graph, no sharding; "
                   "personal launch only)", Range(1, 4096)),
    "cluster": ("local", "where shards run: local (child graphs on this machine) | dask (tasks on a Dask cluster; "
                         "needs requirements-cluster.txt)", Choice(("local", "dask"))),
    "scheduler": ("", "cluster:=dask: the scheduler, tcp://host:port (default: $DASK_SCHEDULER_ADDRESS)"),
    "shard_timeout_s": (7200.0, "a shard's child graph is stopped (and the shard failed) after this", Range(1.0, 1e7)),
}


def check_unsharded(values: Mapping[str, Any]) -> None:
    """Launch files run one graph: sharding is the runner's (``personal launch``)."""
    if int(values.get("workers", 1)) != 1 or values.get("cluster", "local") != "local":
        raise GraphError("workers:=N / cluster:=dask shard the evaluation into child graphs: start it with "
                         "`personal launch`, not `ros2 launch`")


def viz_node(namespace: str | Template = "", remappings: list | None = None, parameters: dict | None = None) -> NodeSpec:
    return NodeSpec(name="viz", executable="viz_node", module="nodes.viz_node", namespace=namespace,
                    parameters={"port": Arg("viz_port"), **(parameters or {})}, remappings=list(remappings or []),
                    when=("viz", "foxglove"))


@dataclass
class Graph:
    name: str
    description: str
    nodes: list[NodeSpec]
    # argument name -> (default value, description[, Range | Choice]); the default's type types the argument
    arguments: dict[str, tuple] = field(default_factory=dict)
    # the live-view node's namespace / remappings / parameters (viz_node's keywords); None: no live view
    live_view: dict | None = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.live_view is not None and not any(n.name == "viz" for n in self.nodes):
            self.arguments = {**self.arguments, **{k: v for k, v in VIZ_ARGUMENTS.items() if k not in self.arguments}}
            self.nodes = [*self.nodes, viz_node(**self.live_view)]
        names = [n.name for n in self.nodes]
        dupes = {n for n in names if names.count(n) > 1}
        if dupes:
            raise GraphError(f"graph {self.name!r}: duplicate node names {sorted(dupes)}")
        for node in self.nodes:
            uses = [(f"parameter {k!r}", v) for k, v in node.parameters.items()]
            uses += [("namespace", node.namespace)] + [("remapping", v) for pair in node.remappings for v in pair]
            if node.when is not None:
                uses.append(("condition", Arg(node.when[0])))
            for where, value in uses:
                for arg in referenced_arguments(value):
                    if arg not in self.arguments:
                        raise GraphError(
                            f"graph {self.name!r}: node {node.name!r} {where} "
                            f"refers to undeclared argument {arg!r}"
                        )
        for name, (default, *_rest) in self.arguments.items():  # the defaults must be valid too
            try:
                self.check_argument(name, default)
            except GraphError as exc:
                raise GraphError(f"graph {self.name!r}: default of {exc}") from None

    def argument_default(self, name: str) -> Any:
        return self.arguments[name][0]

    def argument_description(self, name: str) -> str:
        return self.arguments[name][1]

    def argument_check(self, name: str) -> "Range | Choice | KeyValues | None":
        spec = self.arguments[name]
        return spec[2] if len(spec) > 2 else None

    def check_argument(self, name: str, value: Any) -> None:
        """GraphError naming the argument when ``value`` is outside its declared range."""
        check = self.argument_check(name)
        if check is not None:
            check.check(name, value)

    def argument_values(self, overrides: Mapping[str, str] | None = None) -> dict[str, Any]:
        """Defaults updated with ``overrides`` (strings from ``name:=value``), typed like the default."""
        values = {k: spec[0] for k, spec in self.arguments.items()}
        for key, text in (overrides or {}).items():
            if key not in self.arguments:
                known = ", ".join(sorted(self.arguments)) or "none"
                raise GraphError(f"graph {self.name!r} has no argument {key!r} (arguments: {known})")
            values[key] = coerce_argument(key, text, self.argument_default(key))
            self.check_argument(key, values[key])
        return values

    def resolve(self, overrides: Mapping[str, str] | None = None) -> list[ResolvedNode]:
        """The nodes that run with these arguments (``when`` conditions applied), every ``Arg`` filled."""
        values = self.argument_values(overrides)
        return [
            ResolvedNode(
                spec=n,
                parameters={k: resolve_value(v, values) for k, v in n.parameters.items()},
                namespace=resolve_value(n.namespace, values),
                remappings=[(resolve_value(a, values), resolve_value(b, values)) for a, b in n.remappings],
            )
            for n in self.nodes
            if n.when is None or str(values[n.when[0]]) == n.when[1]
        ]


def coerce_argument(name: str, text: Any, default: Any) -> Any:
    """Parse ``text`` as YAML (like ROS does for ``-p``) and check it against the default's type."""
    if not isinstance(text, str):
        return text
    if isinstance(default, str):
        return text
    try:
        value = yaml.safe_load(text) if text != "" else None
    except yaml.YAMLError as exc:
        raise GraphError(f"argument {name!r}: cannot parse {text!r}: {exc}") from None
    if isinstance(default, bool):
        ok = isinstance(value, bool)
    elif isinstance(default, int):
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif isinstance(default, float):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        value = float(value) if ok else value
    elif isinstance(default, list):
        ok = isinstance(value, list) and len(value) == len(default) and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)
        value = [float(v) for v in value] if ok and all(isinstance(v, float) for v in default) else value
    else:
        ok = True
    if not ok:
        kind = f"a list of {len(default)} numbers" if isinstance(default, list) else type(default).__name__
        raise GraphError(f"argument {name!r}: expected {kind}, got {text!r}")
    return value


def parse_assignments(items: list[str]) -> dict[str, str]:
    """``["split:=hard", "seed:=3"]`` -> ``{"split": "hard", "seed": "3"}``."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition(":=")
        if not sep or not key:
            raise GraphError(f"expected name:=value, got {item!r}")
        out[key] = value
    return out


# -- registry -------------------------------------------------------------------

_GRAPHS: dict[str, Graph] | None = None


def _discover() -> dict[str, Graph]:
    graphs: dict[str, Graph] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        found = list(getattr(module, "GRAPHS", [])) + ([module.GRAPH] if hasattr(module, "GRAPH") else [])
        for graph in found:
            if graph.name in graphs:
                raise GraphError(f"graph {graph.name!r} defined twice (second in {module.__name__})")
            graphs[graph.name] = graph
    return graphs


def all_graphs() -> dict[str, Graph]:
    global _GRAPHS
    if _GRAPHS is None:
        _GRAPHS = _discover()
    return _GRAPHS


def get_graph(name: str) -> Graph:
    graphs = all_graphs()
    if name not in graphs:
        raise GraphError(f"unknown graph {name!r} (known: {', '.join(sorted(graphs)) or 'none'})")
    return graphs[name]


def __getattr__(attr: str):  # lazy ``GRAPHS`` so graph modules can import this package
    if attr == "GRAPHS":
        return all_graphs()
    raise AttributeError(attr)

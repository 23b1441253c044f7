"""Every graph has a launch file, and it builds exactly the graph's nodes.

launch / launch_ros are not installable from PyPI, so fake modules that record
constructor arguments are injected into sys.modules while each launch file runs.
"""
import ast
import importlib.util
import sys
import types
from typing import List
from pathlib import Path

import pytest

from personal.graphs import GRAPHS, Arg, Graph, GraphError, NodeSpec, Select, Template, parse_assignments

ROOT = Path(__file__).resolve().parents[1]


class Recorded:
    def __init__(self, *args, **kwargs):
        self.args, self.kwargs = args, kwargs


def _fake_modules():
    kinds = {
        "launch": ["LaunchDescription"],
        "launch.actions": ["DeclareLaunchArgument", "Shutdown", "OpaqueFunction", "SetEnvironmentVariable"],
        "launch.substitutions": ["LaunchConfiguration", "PythonExpression"],
        "launch.condition": ["Condition"],  # not launch.conditions' LaunchConfigurationEquals (deprecated)
        "launch_ros": [],
        "launch_ros.actions": ["Node"],
        "launch_ros.parameter_descriptions": ["ParameterValue"],
    }
    mods = {}
    for modname, classes in kinds.items():
        mod = types.ModuleType(modname)
        for cls in classes:
            setattr(mod, cls, type(cls, (Recorded,), {}))
        mods[modname] = mod
    # a launch context is a dict of argument texts here: perform() looks its name up
    mods["launch.substitutions"].LaunchConfiguration.perform = lambda self, context: context[self.args[0]]
    return mods


def _load_launch(path: Path, monkeypatch):
    for name, mod in _fake_modules().items():
        monkeypatch.setitem(sys.modules, name, mod)
    spec = importlib.util.spec_from_file_location(f"launch_file_{path.stem.replace('.', '_')}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.generate_launch_description()


def _setup_nodes() -> dict[str, str]:
    tree = ast.parse((ROOT / "setup.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "NODES" for t in node.targets):
            return ast.literal_eval(node.value)
    raise AssertionError("setup.py has no NODES dict")


def test_graphs_are_registered():
    assert "sim" in GRAPHS


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_launch_file_matches_graph(name, monkeypatch):
    graph = GRAPHS[name]
    path = ROOT / "launch" / f"{name}.launch.py"
    assert path.is_file(), f"graph {name!r} has no launch file {path}"
    desc = _load_launch(path, monkeypatch)
    actions = desc.args[0]
    declared = {a.args[0]: a.kwargs for a in actions if type(a).__name__ == "DeclareLaunchArgument"}
    nodes = [a.kwargs for a in actions if type(a).__name__ == "Node"]
    assert set(declared) == set(graph.arguments)
    for arg, (default, description, *_) in graph.arguments.items():
        assert declared[arg]["description"] == description
        assert isinstance(declared[arg]["default_value"], str)
    assert [n["name"] for n in nodes] == [n.name for n in graph.nodes]
    # the argument check runs before any node, on the values as given
    kinds = [type(a).__name__ for a in actions]
    check = actions[kinds.index("OpaqueFunction")].kwargs["function"]
    assert kinds.index("OpaqueFunction") < kinds.index("Node")
    texts = {a: declared[a]["default_value"] for a in declared}
    assert check(texts) == []
    numeric = [a for a, (d, *_) in graph.arguments.items() if isinstance(d, (int, float)) and not isinstance(d, bool)]
    if numeric:  # the error names the argument; the exit code is the runner's (2), not launch's 1
        with pytest.raises(SystemExit) as stop:
            check({**texts, numeric[0]: "1e400" if isinstance(graph.arguments[numeric[0]][0], float) else "-99999999"})
        assert stop.value.code == 2 and isinstance(stop.value.__cause__, GraphError)
        assert f"argument {numeric[0]!r}" in str(stop.value.__cause__)
    for rec, spec in zip(nodes, graph.nodes):
        assert rec["package"] == "personal"
        assert rec["executable"] == spec.executable
        assert _as_text(rec["namespace"]) == _template_text(spec.namespace)
        assert [(_as_text(a), _as_text(b)) for a, b in rec["remappings"]] == [
            (_template_text(a), _template_text(b)) for a, b in spec.remappings]
        assert "on_exit" in rec  # any node's exit ends the launch (a dead non-required node is a failure)
        assert ("required node" in rec["on_exit"].kwargs["reason"]) == spec.required
        assert ("condition" in rec) == (spec.when is not None)
        if spec.when is not None:  # Condition(predicate): true exactly when the argument has the value
            predicate = rec["condition"].kwargs["predicate"]
            assert predicate({**texts, spec.when[0]: spec.when[1]}) and not predicate({**texts, spec.when[0]: "other"})
        (params,) = rec["parameters"]
        assert set(params) == set(spec.parameters)
        for key, value in spec.parameters.items():
            if isinstance(value, (Template, Select)):
                assert _as_text(params[key]) == _template_text(value)
            elif isinstance(value, Arg):
                sub = params[key]
                assert type(sub).__name__ == "ParameterValue"
                assert sub.args[0].args[0] == value.name  # LaunchConfiguration(<argument>)
                default = graph.arguments[value.name][0]
                expected = List[float] if isinstance(default, list) else type(default)
                assert sub.kwargs["value_type"] == expected
            else:
                assert params[key] == value


def test_launch_files_set_the_runners_environment_where_the_user_has_not(monkeypatch):
    """issue 27, finding 6: under ros2 launch the Fast DDS profile and OMP_WAIT_POLICY were missing."""
    from personal.ros_env import FASTDDS_PROFILE, graph_defaults

    for name in graph_defaults():
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")  # the user's own choice stays
    actions = _load_launch(ROOT / "launch" / "explore.launch.py", monkeypatch).args[0]
    env = {a.args[0]: a.args[1] for a in actions if type(a).__name__ == "SetEnvironmentVariable"}
    assert env == {"FASTDDS_DEFAULT_PROFILES_FILE": str(FASTDDS_PROFILE), "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST",
                   "PYTHONUNBUFFERED": "1"}
    assert FASTDDS_PROFILE.is_file()
    kinds = [type(a).__name__ for a in actions]
    assert max(i for i, k in enumerate(kinds) if k == "SetEnvironmentVariable") < kinds.index("Node")


def _as_text(value) -> str:
    """Recorded launch value -> template text ("{arg}" for each LaunchConfiguration)."""
    if isinstance(value, list):
        return "".join(_as_text(v) for v in value)
    if type(value).__name__ == "LaunchConfiguration":
        return "{" + value.args[0] + "}"
    if type(value).__name__ == "PythonExpression":  # a Select: <options dict>['<key>']
        return "select:" + _as_text(value.args[0])
    return value


def _template_text(value) -> str:
    if isinstance(value, Select):
        key = "'" + value.key_template().text + "'"
        fmt = "".join(f"{n}='{{{n}}}', " for n in value.option_names())
        return f"select:{dict(value.options)!r}.get({key}, {key if value.passthrough else 'None'}).format({fmt})"
    return value.text if isinstance(value, Template) else value


def test_templates_resolve_in_namespaces_remaps_and_parameters():
    g = Graph("g", "", [NodeSpec("a", "a", "m", namespace=Template("{ns}"), parameters={"p": Template("{ns}/x")},
                                 remappings=[("cmd_vel", Template("/{ns}/{cam}/cmd_vel"))])],
              arguments={"ns": ("locobot", ""), "cam": ("camera", "")})
    (node,) = g.resolve(parse_assignments(["cam:=camera/camera"]))
    assert node.namespace == "locobot" and node.parameters["p"] == "locobot/x"
    assert node.remappings == [("cmd_vel", "/locobot/camera/camera/cmd_vel")]
    with pytest.raises(GraphError, match="remapping refers to undeclared argument 'nope'"):
        Graph("g", "", [NodeSpec("a", "a", "m", remappings=[("x", Template("{nope}"))])])


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_graph_nodes_are_console_scripts(name):
    """`ros2 launch` starts `executable`, the runner `python -m module`: they must be the same node."""
    nodes = _setup_nodes()
    for spec in GRAPHS[name].nodes:
        assert spec.executable in nodes, f"{spec.executable} missing from setup.py NODES"
        assert nodes[spec.executable] == f"{spec.module}:main"
        assert importlib.util.find_spec(spec.module) is not None, f"no module {spec.module}"


def test_every_launch_file_has_a_graph():
    for path in (ROOT / "launch").glob("*.launch.py"):
        assert path.name.removesuffix(".launch.py") in GRAPHS, f"{path.name} has no graph"


def test_arguments_resolve_typed():
    nodes = GRAPHS["sim"].resolve(parse_assignments(["split:=hard", "scenes:=3", "rate:=5", "use_sim_time:=true"]))
    params = nodes[0].parameters
    assert params["split"] == "hard" and params["scenes"] == 3 and params["rate"] == 5.0
    assert params["publish_clock"] is True and params["episodes_dir"] == ""


@pytest.mark.parametrize(
    "items, message",
    [
        (["nope:=1"], "has no argument 'nope'"),
        (["scenes:=many"], "argument 'scenes': expected int"),
        (["use_sim_time:=2"], "argument 'use_sim_time': expected bool"),
        (["split=hard"], "expected name:=value"),
    ],
)
def test_bad_arguments(items, message):
    with pytest.raises(GraphError, match=message):
        GRAPHS["sim"].resolve(parse_assignments(items))


def test_graph_validation():
    with pytest.raises(GraphError, match="undeclared argument 'x'"):
        Graph("g", "", [NodeSpec("a", "a", "m", parameters={"p": Arg("x")})])
    with pytest.raises(GraphError, match="duplicate node names"):
        Graph("g", "", [NodeSpec("a", "a", "m"), NodeSpec("a", "b", "m")])


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_launch_file_with_real_launch_ros(name):
    """Where launch_ros is installed (a full ROS), the launch file must build with the real classes."""
    pytest.importorskip("launch_ros")
    path = ROOT / "launch" / f"{name}.launch.py"
    spec = importlib.util.spec_from_file_location(f"real_launch_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.generate_launch_description().entities


# keys package.xml once named that ros/rosdistro's rosdep/base.yaml and python.yaml do not define
# (checked at rosdistro 8468e88, 2026-08): `rosdep install` stopped on them even online
NOT_ROSDEP_KEYS = {"libusb-1.0-0", "python3-mcap-pip", "python3-mcap-ros2-support-pip",
                   "python3-sentence-transformers-pip", "python3-openpi-client-pip"}


def test_package_xml_names_only_rosdep_keys_and_docs_give_the_pip_rest():
    import xml.etree.ElementTree as ET

    keys = {e.text for e in ET.parse(ROOT / "package.xml").getroot() if e.tag.endswith("depend")}
    assert not keys & NOT_ROSDEP_KEYS, keys & NOT_ROSDEP_KEYS
    assert {"libusb-1.0", "mcap-ros2-support"} <= keys  # rosdistro's names for what those meant
    setup = (ROOT / "docs" / "setup.md").read_text()
    assert "pip install sentence-transformers openpi-client" in setup  # no rosdep key exists for these


@pytest.mark.parametrize("items", [[], ["base:=kobuki", "camera:=rs_launch", "realsense:=4.54", "ns:=r1", "map_frame:=map"]])
def test_select_in_a_launch_file_evaluates_to_the_graph_value(items, monkeypatch):
    """A Select (profile table) becomes a PythonExpression; evaluated with the launch arguments' texts
    it gives what the runner resolves (the locobot graph's base / camera profiles)."""
    graph = GRAPHS["locobot"]
    desc = _load_launch(ROOT / "launch" / "locobot.launch.py", monkeypatch)
    nodes = [a.kwargs for a in desc.args[0] if type(a).__name__ == "Node"]
    values = graph.argument_values(parse_assignments(items))
    texts = {k: str(v) for k, v in values.items()}

    def evaluate(value):
        if isinstance(value, list):
            return "".join(evaluate(v) for v in value)
        if type(value).__name__ == "LaunchConfiguration":
            return texts[value.args[0]]
        if type(value).__name__ == "PythonExpression":
            return str(eval(evaluate(value.args[0])))  # noqa: S307 - the launch file's own expression
        return value

    resolved = {n.name: n for n in graph.resolve(parse_assignments(items))}
    checked = 0
    for rec, spec in zip(nodes, graph.nodes):
        if spec.when is not None and values.get(spec.when[0]) != spec.when[1]:
            continue
        for (a, b), (ra, rb) in zip(rec["remappings"], resolved[spec.name].remappings):
            assert (evaluate(a), evaluate(b)) == (ra, rb)
            checked += isinstance(b, list) and any(type(v).__name__ == "PythonExpression" for v in b)
        for key, value in spec.parameters.items():
            if isinstance(value, Select):
                assert evaluate(rec["parameters"][0][key]) == resolved[spec.name].parameters[key]
                checked += 1
    assert checked >= 10

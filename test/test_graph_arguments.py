"""Graph arguments declare their valid values and are checked before any node starts (issue 15, finding 7)."""
from __future__ import annotations

import math
import subprocess
import sys

import pytest

from personal.graphs import GRAPHS, Arg, Choice, Graph, GraphError, NodeSpec, Range, parse_assignments


def _numeric(default) -> bool:
    if isinstance(default, list):
        return bool(default) and all(isinstance(v, (int, float)) for v in default)
    return isinstance(default, (int, float)) and not isinstance(default, bool)


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_every_numeric_argument_declares_a_range(name):
    graph = GRAPHS[name]
    missing = [a for a, (d, _, *check) in graph.arguments.items() if _numeric(d) and not (check and isinstance(check[0], Range))]
    assert not missing, f"graph {name}: numeric arguments without a Range: {missing}"
    for arg, (default, *_) in graph.arguments.items():
        graph.check_argument(arg, default)  # every default is valid


@pytest.mark.parametrize("graph, items, message", [
    ("pan_eval", ["max_steps:=-1"], r"argument 'max_steps': -1 is out of range \(valid: >= 1"),  # was a CodecError in the evaluator
    ("pog_eval", ["resolution:=0"], r"argument 'resolution': 0.0 is out of range \(valid: > 0"),  # was a ZeroDivisionError
    ("pog_eval", ["resolution:=.nan"], "is not a finite number"),
    ("pog_eval", ["resolution:=.inf"], "is not a finite number"),
    ("pog_eval", ["resolution:=1e400"], "argument .resolution.: expected float"),
    ("pog_eval", ["scenes:=0"], "argument 'scenes'"),
    ("pog_eval", ["splits:=easy,impossible"], r"'impossible' not in a comma-separated list of easy \| medium \| hard"),
    ("pog_eval", ["map_source:=nowhere"], "argument 'map_source'"),
    ("pog_eval", ["methods:="], "argument 'methods': expected a comma-separated list"),
    ("sim", ["rate:=0"], "argument 'rate'"),
    ("sim", ["split:=hardest"], "argument 'split'"),
    ("explore", ["max_steps:=0"], "argument 'max_steps'"),
    ("locobot", ["max_linear:=50"], "argument 'max_linear'"),
    ("locobot", ["base:=roomba"], r"argument 'base': 'roomba' not in one of create3 \| kobuki"),
    ("locobot", ["camera:=kinect"], "argument 'camera'"),
    ("locobot", ["realsense:=4.56"], r"argument 'realsense': '4.56' not in one of 4.55 \| 4.54"),
    ("locobot", ["camera_pose:=guess"], "argument 'camera_pose'"),
    ("home_eval", ["mqtt_port:=70000"], "argument 'mqtt_port'"),
    ("perm_eval", ["prefs:=speed_up,fly"], "'fly' not in"),
    ("aiv_eval", ["min_coverage:=1.5"], "argument 'min_coverage'"),
])
def test_out_of_range_values_are_refused_naming_the_argument(graph, items, message):
    with pytest.raises(GraphError, match=message):
        GRAPHS[graph].resolve(parse_assignments(items))


def test_valid_values_pass_typed():
    (grounding, evaluator) = GRAPHS["pog_eval"].resolve(parse_assignments(["resolution:=0.25", "splits:=hard,easy", "top_k:=5"]))
    assert evaluator.parameters["resolution"] == 0.25 and evaluator.parameters["splits"] == "hard,easy"
    assert grounding.parameters["top_k"] == 5
    (base, *_) = GRAPHS["locobot"].resolve(parse_assignments(["base:=kobuki"]))
    assert base.parameters["base"] == "kobuki" and ("odom", "odom") in base.remappings


def test_list_arguments_are_checked_per_element():
    g = Graph("g", "", [NodeSpec("a", "a", "m", parameters={"xyz": Arg("xyz")})],
              arguments={"xyz": ([0.0, 0.0, 0.88], "a point", Range(-5.0, 5.0))})
    assert g.argument_values(parse_assignments(["xyz:=[0.1, 0, 1]"]))["xyz"] == [0.1, 0.0, 1.0]
    with pytest.raises(GraphError, match="argument 'xyz': nan is not a finite number"):
        g.resolve(parse_assignments(["xyz:=[0, .nan, 0.88]"]))
    with pytest.raises(GraphError, match="argument 'xyz': expected a list of 3 numbers"):
        g.resolve(parse_assignments(["xyz:=[0, 0]"]))


def test_checks_and_bad_defaults():
    assert Range(0, 1).text() == ">= 0 and <= 1" and Range(0, low_open=True).text() == "> 0"
    Range(0, 1).check("x", [0.0, 1.0])
    with pytest.raises(GraphError, match="not a finite number"):
        Range().check("x", math.inf)
    Choice(("a", "b"), multiple=True).check("x", "a, b,a")
    with pytest.raises(GraphError, match="default of argument 'n'"):
        Graph("g", "", [NodeSpec("a", "a", "m", parameters={"n": Arg("n")})], arguments={"n": (0, "", Range(1))})


def test_launch_refuses_before_starting_any_node(tmp_path):
    """`personal launch` and `personal bag record <graph>` check the values before they start a process."""
    out = subprocess.run([sys.executable, "-m", "personal", "launch", "pan_eval", "max_steps:=-1"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "argument 'max_steps': -1 is out of range" in out.stderr, out
    assert "started" not in out.stdout
    bag = subprocess.run([sys.executable, "-m", "personal", "bag", "record", "explore", "-o", str(tmp_path / "bag"),
                          "-a", "max_steps:=0"], capture_output=True, text=True, timeout=120)
    assert bag.returncode == 2 and "argument 'max_steps'" in bag.stderr, bag
    assert not (tmp_path / "bag").exists()


def test_select_picks_a_profile_value():
    from personal.graphs import Select, Template

    g = Graph("g", "", [NodeSpec("a", "a", "m", namespace=Template("{ns}"),
                                 parameters={"frame": Select("frame", {"odom": "{ns}/odom"}, passthrough=True)},
                                 remappings=[("odom", Select("base", {"create3": "mobile_base/odom", "kobuki": "odom"}))])],
              arguments={"ns": ("locobot", ""), "frame": ("odom", ""), "base": ("create3", "", Choice(("create3", "kobuki")))})
    (a,) = g.resolve(parse_assignments(["ns:=r2"]))
    assert a.parameters["frame"] == "r2/odom" and a.remappings == [("odom", "mobile_base/odom")]
    (a,) = g.resolve(parse_assignments(["base:=kobuki", "frame:=map"]))
    assert a.parameters["frame"] == "map" and a.remappings == [("odom", "odom")]
    with pytest.raises(GraphError, match="refers to undeclared argument 'nope'"):
        Graph("h", "", [NodeSpec("a", "a", "m", parameters={"p": Select("nope", {"x": "y"})})])
    with pytest.raises(GraphError, match="no value for '{k}' = 'z'"):
        Select("k", {"x": "y"}).render({"k": "z"})

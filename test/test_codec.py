"""The JSON-over-String codec: round trips and every rejection path."""
import json
import math

import pytest

from personal.interfaces.codec import CodecError, MessageRegistry, canonical_type, decode, default_registry, encode, find_msg_dir

ALL_TYPES = """\
uint8 RED=1
uint8 GREEN=2
bool flag
int8 i8
uint8 u8
int32 i32
uint64 u64
float32 f32
float64 f64
byte b
char c
string s
string<=5 short
int32[3] fixed
float64[<=2] bounded
string[] names
string<=3[<=2] tags
geometry_msgs/Point p
geometry_msgs/Point[] ps
Inner inner
std_msgs/Header header
int32 with_default 7
float64[] list_default [1.5, 2.5]
string greeting "hi"
"""


@pytest.fixture(scope="module")
def reg(tmp_path_factory):
    d = tmp_path_factory.mktemp("msg")
    (d / "AllTypes.msg").write_text(ALL_TYPES)
    (d / "Inner.msg").write_text("int16 v\nstring[<=2] w []\n")
    (d / "Broken.msg").write_text("int32 x\nnot a valid line at all\n")
    return MessageRegistry.from_dir(d, package="t")


def good():
    return {
        "flag": True, "i8": -128, "u8": 255, "i32": -5, "u64": 2**64 - 1, "f32": 1.5, "f64": 3,
        "b": 0, "c": 65, "s": "any length string", "short": "abcde", "fixed": [1, 2, 3],
        "bounded": [0.5], "names": ["a", "b"], "tags": ["abc"], "p": {"x": 1.0, "y": 2.0, "z": 3.0},
        "ps": [{"x": 0, "y": 0, "z": 0}] * 3, "inner": {"v": -3},
        "header": {"stamp": {"sec": 1, "nanosec": 2}, "frame_id": "map"},
    }


def test_round_trip_fills_defaults(reg):
    text = reg.encode("t/AllTypes", good())
    doc = json.loads(text)
    assert doc["type"] == "t/msg/AllTypes"
    kind, data = reg.decode(text, expected_type="t/msg/AllTypes")
    assert kind == "t/msg/AllTypes"
    assert data["with_default"] == 7 and data["list_default"] == [1.5, 2.5] and data["greeting"] == "hi"
    assert data["inner"] == {"v": -3, "w": []}
    assert data["f64"] == 3.0 and isinstance(data["f64"], float)
    assert data["ps"][2] == {"x": 0.0, "y": 0.0, "z": 0.0}
    assert reg.decode(reg.encode("t/AllTypes", data))[1] == data


def test_nan_and_inf_floats_round_trip(reg):
    payload = {**good(), "f64": float("nan"), "f32": float("inf")}
    _, data = reg.decode(reg.encode("t/AllTypes", payload))
    assert math.isnan(data["f64"]) and data["f32"] == float("inf")


def test_constants(reg):
    assert reg.constants("t/AllTypes") == {"RED": 1, "GREEN": 2}


@pytest.mark.parametrize(
    "change, message",
    [
        ({"flag": 1}, "AllTypes.flag: expected bool, got 1"),
        ({"i8": -129}, "AllTypes.i8: -129 is out of range for int8"),
        ({"u8": 256}, "AllTypes.u8: 256 is out of range for uint8"),
        ({"u64": -1}, "AllTypes.u64: -1 is out of range for uint64"),
        ({"i32": 1.5}, "AllTypes.i32: expected int32, got 1.5"),
        ({"i32": True}, "AllTypes.i32: expected int32, got True"),
        ({"i32": "3"}, "AllTypes.i32: expected int32, got '3'"),
        ({"f32": 1e39}, "AllTypes.f32: 1e+39 is out of range for float32"),
        ({"f64": "abc"}, "AllTypes.f64: expected float64, got 'abc'"),
        ({"f64": False}, "AllTypes.f64: expected float64, got False"),
        ({"b": 300}, "AllTypes.b: 300 is out of range for byte"),
        ({"c": "A"}, "AllTypes.c: expected char, got 'A'"),
        ({"s": 5}, "AllTypes.s: expected string, got 5"),
        ({"short": "abcdef"}, "AllTypes.short: string of length 6 exceeds the bound 5"),
        ({"fixed": [1, 2]}, "AllTypes.fixed: fixed-size array needs exactly 3 elements, got 2"),
        ({"fixed": 1}, "AllTypes.fixed: expected an array of int32, got 1"),
        ({"bounded": [1.0, 2.0, 3.0]}, "AllTypes.bounded: array has 3 elements, more than the bound 2"),
        ({"names": ["a", 2]}, "AllTypes.names[1]: expected string, got 2"),
        ({"tags": ["abcd"]}, "AllTypes.tags[0]: string of length 4 exceeds the bound 3"),
        ({"tags": ["a", "b", "c"]}, "AllTypes.tags: array has 3 elements, more than the bound 2"),
        ({"p": [1, 2, 3]}, "AllTypes.p: expected an object for geometry_msgs/msg/Point, got [1, 2, 3]"),
        ({"p": {"x": 1.0, "y": 2.0}}, "AllTypes.p.z: missing required field (float64)"),
        ({"p": {"x": 1, "y": 2, "z": 3, "w": 4}}, "AllTypes.p.w: unknown field of geometry_msgs/msg/Point"),
        ({"ps": [{"x": 0, "y": 0, "z": 0}, {"x": "abc", "y": 0, "z": 0}]}, "AllTypes.ps[1].x: expected float64, got 'abc'"),
        ({"inner": {"v": 1, "w": ["a", "b", "c"]}}, "AllTypes.inner.w: array has 3 elements"),
        ({"header": {"stamp": {"sec": 1}, "frame_id": ""}}, "AllTypes.header.stamp.nanosec: missing required field"),
        ({"RED": 1}, "AllTypes.RED: is a constant (=1), not a field"),
        ({"bogus": 1}, "AllTypes.bogus: unknown field"),
    ],
)
def test_rejections_name_the_field(reg, change, message):
    with pytest.raises(CodecError) as err:
        reg.encode("t/AllTypes", {**good(), **change})
    assert message in str(err.value)


def test_missing_required_field(reg):
    payload = good()
    del payload["i32"]
    with pytest.raises(CodecError, match=r"AllTypes\.i32: missing required field \(int32\)"):
        reg.encode("t/AllTypes", payload)


def test_payload_must_be_an_object(reg):
    with pytest.raises(CodecError, match="AllTypes: expected an object"):
        reg.encode("t/AllTypes", [1, 2])


@pytest.mark.parametrize(
    "text, message",
    [
        ("{not json", "not valid JSON"),
        ('["type", "data"]', 'expected {"type": ..., "data": {...}}'),
        ('{"type": "t/msg/Inner"}', 'expected {"type": ..., "data": {...}}'),
        ('{"type": "t/msg/Inner", "data": {"v": 1}, "x": 1}', 'expected {"type": ..., "data": {...}}'),
        ('{"type": 5, "data": {}}', "type: expected a string"),
        ('{"type": "a/b/c/d", "data": {}}', "malformed message type name"),
        ('{"type": "t/msg/Nope", "data": {}}', "unknown message type t/msg/Nope"),
        ('{"type": "t/msg/Inner", "data": {"v": 99999}}', "Inner.v: 99999 is out of range for int16"),
        ('{"type": "t/msg/Broken", "data": {"x": 1}}', "Broken.msg: cannot parse"),
    ],
)
def test_decode_rejections(reg, text, message):
    with pytest.raises(CodecError) as err:
        reg.decode(text)
    assert message in str(err.value)


def test_decode_checks_expected_type(reg):
    text = reg.encode("t/msg/Inner", {"v": 1})
    with pytest.raises(CodecError, match="expected a t/msg/AllTypes message, got t/msg/Inner"):
        reg.decode(text, expected_type="t/AllTypes")


def test_canonical_type_names():
    assert canonical_type("EpisodeDescriptor") == "personal/msg/EpisodeDescriptor"
    assert canonical_type("geometry_msgs/Point") == "geometry_msgs/msg/Point"
    assert canonical_type("personal/msg/AgentState") == "personal/msg/AgentState"
    with pytest.raises(CodecError):
        canonical_type("a//b")


# -- the project's own messages ------------------------------------------------------


def test_project_messages_parse_and_round_trip():
    reg = default_registry()
    assert find_msg_dir().name == "msg"
    assert {"personal/msg/EpisodeDescriptor", "personal/msg/DiscreteAction", "personal/msg/AgentState",
            "personal/msg/EpisodeResult"} <= set(reg.types())
    assert reg.constants("DiscreteAction") == {
        "STOP": 0, "MOVE_FORWARD": 1, "TURN_LEFT": 2, "TURN_RIGHT": 3, "LOOK_UP": 4, "LOOK_DOWN": 5}
    action = decode(encode("DiscreteAction", {"action": 3, "request_id": "r1"}), "personal/msg/DiscreteAction")
    assert action == ("personal/msg/DiscreteAction", {"action": 3, "request_id": "r1"})
    point = {"x": 1.0, "y": -2.0, "z": 0.0}
    descriptor = {
        "episode_id": "3", "scene_id": "home_0", "split": "hard", "query": "Find one of Lisa's mugs.",
        "summary": "Lisa owns the red mug.", "extracted_summary": ["Lisa owns the red mug"], "owner": "Lisa",
        "object_category": "mug", "target_object_ids": ["mug_1", "mug_4"], "description": ["the red mug", "x"],
        "target_positions": [point, point], "start_position": point, "start_yaw": 0.5, "geodesic_distance": 4.2,
    }
    _, data = decode(encode("EpisodeDescriptor", descriptor))
    assert data["floor_id"] == 0 and data["index"] == 0 and data["target_positions"][1] == point
    _, state = decode(encode("AgentState", {"episode_id": "3", "position": point, "yaw": 0.0}))
    assert state["collided"] is False and state["step"] == 0
    result = {"episode_id": "3", "scene_id": "home_0", "split": "hard", "success": True, "spl": 0.8,
              "distance_to_goal": 0.4, "path_length": 5.0, "geodesic_distance": 4.0, "steps": 30,
              "predicted_object_ids": ["mug_1"]}
    assert decode(encode("EpisodeResult", result))[1]["failure_reason"] == ""
    with pytest.raises(CodecError, match=r"DiscreteAction\.action: 256 is out of range for uint8"):
        encode("DiscreteAction", {"action": 256})

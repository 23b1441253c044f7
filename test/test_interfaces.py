"""The typed interfaces built from msg/ (and tf2_msgs) by the bootstrap: every .msg is a class,
serialisation round-trips exactly, field checks are on in tests, the graph names the types
``personal/msg/<Type>`` with a RIHS01 hash, and dict conversion names bad fields."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

pytest.importorskip("rclpy")
from rclpy.serialization import deserialize_message, serialize_message  # noqa: E402

import personal.msg  # noqa: E402
from personal.interfaces.convert import MessageFieldError, from_dict, to_dict  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
MSG_NAMES = sorted(p.stem for p in (ROOT / "msg").glob("*.msg"))
_INT_RANGES = {"int8": 127, "uint8": 255, "int16": 32767, "uint16": 65535, "int32": 2**31 - 1,
               "uint32": 2**32 - 1, "int64": 2**63 - 1, "uint64": 2**64 - 1, "octet": 255}


def _sample(slot, name: str, k: int):
    """A non-default value for a field of rosidl slot type ``slot``."""
    from personal.interfaces.convert import _nested_class

    if hasattr(slot, "value_type"):  # sequence (two elements) / fixed-size array
        return [_sample(slot.value_type, name, k + i) for i in range(getattr(slot, "size", 2))]
    nested = _nested_class(slot)
    if nested is not None:
        return _filled(nested, k)
    t = getattr(slot, "typename", "string")
    if t == "boolean":
        return k % 2 == 0
    if t in _INT_RANGES:
        return min(_INT_RANGES[t], 3 + k)
    if t in ("float", "double"):
        return 0.25 + k
    return f"{name}-{k} ünï"


def _filled(cls, k: int = 0):
    msg = cls()
    for i, (field, slot) in enumerate(zip(cls.get_fields_and_field_types(), cls.SLOT_TYPES)):
        setattr(msg, field, _sample(slot, field, k + i))
    return msg


def test_every_msg_file_is_a_generated_class():
    assert len(MSG_NAMES) >= 17
    missing = [n for n in MSG_NAMES if not hasattr(personal.msg, n)]
    assert not missing, f"msg/ files without a generated class (bootstrap not re-run?): {missing}"


@pytest.mark.parametrize("name", MSG_NAMES)
def test_serialisation_round_trips_exactly(name):
    cls = getattr(personal.msg, name)
    msg = _filled(cls)
    assert msg != cls()
    back = deserialize_message(serialize_message(msg), cls)
    assert back == msg
    assert to_dict(back) == to_dict(msg)


def test_tf2_msgs_tfmessage_is_built_under_its_own_name():
    from geometry_msgs.msg import TransformStamped
    from tf2_msgs.msg import TFMessage

    t = TransformStamped()
    t.header.frame_id, t.child_frame_id = "odom", "base_link"
    t.transform.rotation.w = 1.0
    msg = TFMessage(transforms=[t])
    assert deserialize_message(serialize_message(msg), TFMessage) == msg
    assert TFMessage.__module__.startswith("tf2_msgs.msg")


def test_field_checks_are_on_in_tests():
    from personal.msg import DiscreteAction

    with pytest.raises(AssertionError):
        DiscreteAction(action=256)
    with pytest.raises(AssertionError):
        DiscreteAction(request_id=7)


def test_from_dict_names_the_field():
    from personal.msg import EpisodeDescriptor

    with pytest.raises(MessageFieldError, match=r"EpisodeDescriptor.target_positions\[1\].x"):
        from_dict(EpisodeDescriptor, {"target_positions": [{"x": 1.0}, {"x": "abc"}]})
    with pytest.raises(MessageFieldError, match=r"EpisodeDescriptor.colour: unknown field"):
        from_dict(EpisodeDescriptor, {"colour": "red"})
    ep = from_dict(EpisodeDescriptor, {"episode_id": "e1", "target_positions": [{"x": 1.0, "y": 2.0, "z": 0.5}],
                                       "geodesic_distance": math.nan})
    assert ep.target_positions[0].y == 2.0 and math.isnan(ep.geodesic_distance)
    assert ep.floor_id == 0 and ep.count == 0  # .msg defaults kept


def test_type_description_hashes_are_installed():
    """rosidl writes each type's description and RIHS01 hash next to the .msg (share/personal/msg)."""
    import sys

    share = Path(sys.prefix) / "share" / "personal" / "msg"
    doc = json.loads((share / "EpisodeDescriptor.json").read_text())
    hashes = {h["type_name"]: h["hash_string"] for h in doc["type_hashes"]}
    assert hashes["personal/msg/EpisodeDescriptor"].startswith("RIHS01_")


def test_graph_reports_typed_topics(ros_context):
    from conftest import wait_for
    from personal.msg import AgentState, EpisodeDescriptor

    node = ros_context.make_node("typed_probe")
    node.create_publisher(EpisodeDescriptor, "typed_probe/episode", 1)
    got = []
    node.create_subscription(AgentState, "typed_probe/state", got.append, 1)
    pub = node.create_publisher(AgentState, "typed_probe/state", 1)
    types = wait_for(lambda: dict(node.get_topic_names_and_types()).get("/typed_probe/episode"), 10)
    assert types == ["personal/msg/EpisodeDescriptor"]
    infos = node.get_publishers_info_by_topic("/typed_probe/episode")
    assert [i.topic_type for i in infos] == ["personal/msg/EpisodeDescriptor"]
    if hasattr(infos[0], "topic_type_hash"):  # Jazzy and newer
        assert str(infos[0].topic_type_hash).startswith("RIHS01_")
    wait_for(lambda: pub.get_subscription_count() > 0, 10)
    pub.publish(from_dict(AgentState, {"episode_id": "e", "position": {"x": 1.0, "y": 2.0, "z": 0.0}, "yaw": 0.5}))
    wait_for(lambda: got, 10)
    assert isinstance(got[0], AgentState) and got[0].position.y == 2.0


def test_interbotix_xs_msgs_are_built_under_their_own_names():
    """JointGroupCommand / JointSingleCommand from the verbatim upstream .msg (interfaces/interbotix_xs_msgs):
    the package and type names the robot's xs_sdk subscribes with (personal/robot/conventions.py)."""
    import sys

    from interbotix_xs_msgs.msg import JointGroupCommand, JointSingleCommand

    from personal.robot import conventions as C

    msg = JointGroupCommand(name=C.CAMERA_GROUP, cmd=[0.0, 0.5])
    back = deserialize_message(serialize_message(msg), JointGroupCommand)
    assert back.name == "camera" and list(back.cmd) == [0.0, 0.5]
    assert JointGroupCommand.get_fields_and_field_types() == {"name": "string", "cmd": "sequence<float>"}
    assert JointSingleCommand.get_fields_and_field_types() == {"name": "string", "cmd": "float"}
    for cls, type_name in ((JointGroupCommand, C.JOINT_GROUP_TYPE), (JointSingleCommand, C.JOINT_SINGLE_TYPE)):
        assert cls.__module__.startswith("interbotix_xs_msgs.msg")
        share = Path(sys.prefix) / "share" / "interbotix_xs_msgs" / "msg"
        if (share / f"{cls.__name__}.json").exists():  # built here (a full ROS install has its own)
            doc = json.loads((share / f"{cls.__name__}.json").read_text())
            assert doc["type_hashes"][0]["type_name"] == type_name
            assert doc["type_hashes"][0]["hash_string"].startswith("RIHS01_")

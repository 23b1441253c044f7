"""Feature-map wire format: round trip, the mapping node's publisher format, bad descriptors."""
import json

import numpy as np
import pytest

from personal.grounding.map_wire import MapWireError, map_from_wire, map_to_wire, parse_descriptor
from personal.grounding.pipeline import MapView


def view():
    rng = np.random.default_rng(0)
    f = rng.standard_normal((4, 5, 8)).astype(np.float32)
    c = rng.random((4, 5)).astype(np.float32)
    c[0, 0] = 0.0
    return MapView.from_arrays(f, c, (-1.0, 2.0), 0.5, "enc-x")


def test_round_trip():
    v = view()
    data, layout, desc = map_to_wire(v, scene_id="s1")
    back = map_from_wire(data, [s for _, s, _ in layout], parse_descriptor(json.dumps(desc)))
    np.testing.assert_array_equal(back.features, v.features)
    assert (back.valid == v.valid).all() and not back.valid[0, 0]
    assert back.origin == (-1.0, 2.0) and back.resolution == 0.5 and back.encoder == "enc-x"


def test_reads_the_mapping_nodes_format():
    from personal.mapping.feature_map import FeatureMap
    from personal.mapping.ros_io import feature_map_to_wire

    fm = FeatureMap(8, 0.5, encoder="enc-y", bounds=(0.0, 0.0, 2.0, 1.5))
    fm.integrate(np.array([[0.2, 0.3], [1.7, 1.2]]), np.array([1.0, 2.0]), np.eye(8, dtype=np.float32)[:2],
                 np.array([0, 1]))
    flat, layout, desc = feature_map_to_wire(fm, "s2")
    v = map_from_wire(flat, [s for _, s, _ in layout], parse_descriptor(json.dumps(desc)))
    assert v.valid.sum() == 2 and v.encoder == "enc-y"
    np.testing.assert_allclose(v.features, fm.embeddings)
    assert v.origin == fm.geometry.origin


def test_bad_descriptors_name_the_field():
    with pytest.raises(MapWireError, match="not JSON"):
        parse_descriptor("{oops")
    with pytest.raises(MapWireError, match="'resolution'"):
        parse_descriptor({"origin": [0, 0], "shape": [1, 1, 1]})
    data, layout, desc = map_to_wire(view())
    with pytest.raises(MapWireError, match="needs"):
        map_from_wire(data[:-3], [4, 5, 9], desc)


@pytest.mark.parametrize("field, value", [
    ("shape", "abc"), ("shape", 5), ("shape", [1, 2]), ("shape", [1, -2, 3]), ("shape", [1.5, 2, 3]), ("shape", None),
    ("origin", "xy"), ("origin", [0.0]), ("origin", [float("nan"), 0.0]), ("origin", [0.0, float("inf")]),
    ("resolution", 0), ("resolution", -1.0), ("resolution", float("nan")), ("resolution", "0.5"), ("resolution", None),
])
def test_malformed_descriptor_fields_raise_map_wire_errors_only(field, value):
    """issue 15, finding 3: shape "abc" or 5 raised ValueError / TypeError, which killed the grounding node and the
    POG evaluator (they caught MapWireError only)."""
    _, _, desc = map_to_wire(view())
    with pytest.raises(MapWireError, match=f"'{field}'"):
        parse_descriptor({**desc, field: value})
    data, layout, _ = map_to_wire(view())
    with pytest.raises(MapWireError, match=f"'{field}'"):
        map_from_wire(data, [s for _, s, _ in layout], {**desc, field: value})


def test_non_finite_map_values_are_refused():
    data, layout, desc = map_to_wire(view())
    desc = {**desc, "data_crc32": 0}  # a publisher that sends no checksum: the values are checked all the same
    data = data.copy()
    data[3] = np.nan
    with pytest.raises(MapWireError, match="1 non-finite"):
        map_from_wire(data, [s for _, s, _ in layout], desc)


def test_assembler_reports_a_mismatch_only_when_it_outlasts_the_grace_period():
    from personal.grounding.map_wire import MapAssembler

    data, layout, desc = map_to_wire(view(), scene_id="s1")
    dims = [s for _, s, _ in layout]
    asm = MapAssembler(grace_s=1.0)
    assert asm.array(data, dims, now=0.0) is None  # no descriptor yet
    small = {**desc, "shape": [2, 5, 8]}  # the next update's descriptor arrives first: a race, not an error
    assert asm.descriptor(small, now=0.1) is None and asm.overdue(0.5) is None
    assert asm.descriptor(desc, now=0.6).features.shape == (4, 5, 8) and asm.overdue(5.0) is None
    assert asm.array(data[:-9], [4, 5, 8], now=6.0) is None  # a wrong-size array, and nothing fixes it
    assert asm.overdue(6.5) is None
    reason = asm.overdue(7.1)
    assert reason and "needs" in reason and "not used" in reason
    assert asm.overdue(9.0) is None  # said once


def test_assembler_never_pairs_one_scenes_descriptor_with_another_scenes_array_of_the_same_shape():
    """Two households' maps of one shape: the array of the next map can arrive before its descriptor
    (two topics); paired by shape alone it was stored as the previous scene's map (issue 29's race:
    12 episodes of one household grounded on the next one's map under load)."""
    from personal.grounding.map_wire import MapAssembler

    a, other = view(), view()
    other.features[:] = -other.features  # same shape, other content
    data_a, layout, desc_a = map_to_wire(a, scene_id="s0")
    data_b, _, desc_b = map_to_wire(other, scene_id="s1")
    dims = [s for _, s, _ in layout]
    asm = MapAssembler(grace_s=1.0)
    assert asm.descriptor(desc_a, now=0.0) is None and asm.array(data_a, dims, now=0.0) is not None
    assert asm.array(data_b, dims, now=0.1) is None  # s1's array with s0's descriptor: not a map
    got = asm.descriptor(desc_b, now=0.2)
    assert got is not None and asm.desc["scene_id"] == "s1"
    np.testing.assert_array_equal(got.features, other.features)
    with pytest.raises(MapWireError, match="not the one its descriptor describes"):
        map_from_wire(data_b, dims, desc_a)
    # a publisher that sends no checksum (0) is paired by shape as before
    assert map_from_wire(data_b, dims, {**desc_a, "data_crc32": 0}).features.shape == (4, 5, 8)


def test_descriptor_travels_as_a_typed_message():
    pytest.importorskip("rclpy")
    from rclpy.serialization import deserialize_message, serialize_message

    from personal.grounding.map_wire import descriptor_from_msg, descriptor_to_fields
    from personal.interfaces.convert import from_dict
    from personal.msg import FeatureMapDescriptor

    view = MapView.from_arrays(np.random.default_rng(0).random((4, 5, 3), dtype=np.float32), np.ones((4, 5)),
                               (1.5, -2.0), 0.25, "oracle-captions-minilm")
    data, layout, desc = map_to_wire(view, scene_id="s1")
    msg = deserialize_message(serialize_message(from_dict(FeatureMapDescriptor, descriptor_to_fields(desc))),
                              FeatureMapDescriptor)
    back = descriptor_from_msg(msg)
    assert (back["shape"], back["origin"], back["resolution"]) == ([4, 5, 3], [1.5, -2.0], 0.25)
    assert back["encoder"] == {"name": "oracle-captions-minilm", "dim": 3} and back["scene_id"] == "s1"
    again = map_from_wire(data, [s for _, s, _ in layout], parse_descriptor(back))
    assert np.array_equal(again.features, view.features)
    with pytest.raises(MapWireError, match="empty shape"):
        descriptor_from_msg(FeatureMapDescriptor())

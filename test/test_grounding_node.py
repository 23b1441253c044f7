"""Grounding node over ROS: map on the topics, queries in, per-method results + markers out;
malformed / unanswerable queries never kill it."""
import array

import numpy as np
import pytest

from conftest import wait_for
from personal.grounding.map_wire import map_to_wire
from personal.grounding.pipeline import MapView

pytestmark = pytest.mark.timeout(120)

SUMMARY = ("Clara owns the white bed in the bedroom. Tom owns the red bed in the bedroom. "
           "Tom owns the green lamp in the bedroom.")
CAPTIONS = {(2, 2): "the white bed", (7, 7): "the red bed", (2, 7): "the green lamp"}


def oracle_map():
    from personal.models.base import make_encoder

    enc = make_encoder("oracle")
    f = np.tile(enc.encode_text(["floor"])[0], (10, 10, 1)).astype(np.float32)
    for (r, c), cap in CAPTIONS.items():
        f[r, c] = enc.encode_text([cap])[0]
    return MapView.from_arrays(f, np.ones((10, 10)), (0.0, 0.0), 1.0, enc.name)


def test_grounding_node_round_trip(ros_context):
    from rclpy.parameter import Parameter
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from std_msgs.msg import Float32MultiArray, MultiArrayDimension
    from visualization_msgs.msg import MarkerArray

    from nodes.grounding_node import GroundingNode
    from personal.grounding.map_wire import descriptor_to_fields
    from personal.interfaces.convert import from_dict, to_dict
    from personal.msg import FeatureMapDescriptor, GroundingQuery, GroundingResult

    node = ros_context.add_node(GroundingNode(context=ros_context.context, parameter_overrides=[
        Parameter("methods", value="centre,qs,rpg,rpg-owner")]))
    latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    io = ros_context.make_node("grounding_test_io")
    results, markers = [], []
    io.create_subscription(GroundingResult, "grounding/result", lambda m: results.append(to_dict(m)), 50)
    io.create_subscription(MarkerArray, "grounding/markers", markers.append, 10)
    map_pub = io.create_publisher(Float32MultiArray, "feature_map", latched)
    desc_pub = io.create_publisher(FeatureMapDescriptor, "feature_map/descriptor", latched)
    query_pub = io.create_publisher(GroundingQuery, "grounding/query", 50)

    data, layout, desc = map_to_wire(oracle_map(), scene_id="s0")
    msg = Float32MultiArray()
    msg.layout.dim = [MultiArrayDimension(label=lb, size=s, stride=st) for lb, s, st in layout]
    msg.data = array.array("f", data.tobytes())
    map_pub.publish(msg)
    desc_pub.publish(from_dict(FeatureMapDescriptor, descriptor_to_fields(desc)))
    wait_for(lambda: "s0" in node.maps, 15)

    def ask(rid, **kw):
        q = {"request_id": rid, "episode_id": rid, "scene_id": "s0", "summary": SUMMARY, "query": "Find Clara's bed.",
             "owner": "", "methods": [], "seed": 0, **kw}
        query_pub.publish(from_dict(GroundingQuery, q))

    query_pub.publish(GroundingQuery(request_id="", query="Find Clara's bed."))  # no request id: logged and dropped
    query_pub.publish(GroundingQuery(request_id="blank", query="  "))  # no query text: logged and dropped
    ask("good")
    ask("nomap", scene_id="s9")
    ask("badmethod", methods=["qs", "teleport"])
    ask("nobody", query="Find Zed's bed.")
    wait_for(lambda: len(results) >= 4 + 4 + 2 + 4, 30)  # good, nomap, badmethod, nobody: one result per method
    by = {}
    for r in results:
        by.setdefault(r["request_id"], {})[r["method"]] = r

    assert "" not in by and "blank" not in by  # the malformed queries were dropped, not answered
    good = by["good"]
    assert set(good) == {"centre", "qs", "rpg", "rpg-owner"} and all(r["ok"] for r in good.values())
    top = good["rpg-owner"]["points"][0]
    assert (top["x"], top["y"]) == (2.5, 2.5)  # Clara's white bed cell centre
    assert good["rpg-owner"]["owner"] == "Clara" and len(good["rpg-owner"]["phrases"]) == 3
    assert good["qs"]["count"] == 4 and good["qs"]["map_encoder"] == "oracle-captions-minilm"
    assert good["rpg"]["gate_cells"] > 0 and good["qs"]["gate_cells"] == 0 and good["qs"]["observed_cells"] == 100
    assert all(r["failure_code"] == "no_map" and "s9" in r["failure_reason"] for r in by["nomap"].values())
    assert {r["failure_code"] for r in by["badmethod"].values()} == {"method_not_configured"}
    assert by["nobody"]["rpg-owner"]["failure_code"] == "unknown_person" and by["nobody"]["qs"]["ok"]
    wait_for(lambda: markers, 10)
    spheres = [m for m in markers[0].markers if m.type == m.SPHERE]
    assert spheres and all(m.header.frame_id == "map" for m in spheres)
    assert {m.ns for m in spheres} >= {"qs", "rpg", "rpg-owner"}


def test_a_query_flood_is_refused_not_queued_without_bound(ros_context, monkeypatch):
    """More queries than MAX_QUEUED waiting: the next is answered queue_full at once (issue 28, item 3)."""
    import nodes.grounding_node as gn
    from personal.msg import GroundingQuery

    node = gn.GroundingNode(context=ros_context.context)  # not spun: nothing drains the queue here
    try:
        monkeypatch.setattr(gn, "MAX_QUEUED", 3)
        published = []
        monkeypatch.setattr(node, "_publish", published.extend)
        for k in range(5):
            node._on_query(GroundingQuery(request_id=f"q{k}", episode_id=f"e{k}", scene_id="s0", query="Find Clara's bed."))
        assert [q["request_id"] for q in node.queue] == ["q0", "q1", "q2"]
        refused = {p["request_id"] for p in published}
        assert refused == {"q3", "q4"} and all(p["failure_code"] == "queue_full" and not p["ok"] for p in published)
    finally:
        node.destroy_node()

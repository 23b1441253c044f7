"""Navigation node with a real image encoder (a tiny randomly initialised CLIP built here,
no downloads): the task arrives on ``nav/start`` (query + summary, no episode descriptor for
``sync:=live``), frames come from the sim bridge's colour / depth / pose topics, the semantic
topic is never read, and the node drives the bridge with actions.

``sync:=live`` is the real-robot pairing (first frame after each agent_state, first pose
from odometry); the sim bridge stands in for the RealSense + base driver here."""
import pytest

pytest.importorskip("rclpy")
pytest.importorskip("transformers")

from conftest import wait_for  # noqa: E402

pytestmark = pytest.mark.timeout(90)
STEPS = 6


@pytest.fixture(scope="module")
def tiny_clip(tmp_path_factory):
    from test_models_hf import _save_tiny

    return _save_tiny("clip", tmp_path_factory.mktemp("tiny_clip_nav"))


@pytest.mark.parametrize("sync", ["live", "bridge"])
def test_navigation_with_clip_drives_the_bridge(ros_context, tiny_clip, sync):
    from rclpy.parameter import Parameter
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from nodes.navigation_node import NavigationNode
    from personal.interfaces.convert import to_dict
    from personal.msg import DiscreteAction, NavigationRun, NavigationStart
    from sim_bridge.bridge_node import SimBridgeNode

    ctx = ros_context.context
    bridge = ros_context.add_node(SimBridgeNode(context=ctx, parameter_overrides=[
        Parameter("scenes", value=1), Parameter("seed", value=0), Parameter("episodes_per_scene", value=1),
        Parameter("split", value="easy"), Parameter("rate", value=20.0), Parameter("log_every", value=0.0)]))
    nav = ros_context.add_node(NavigationNode(context=ctx, parameter_overrides=[
        Parameter("encoder", value="clip"), Parameter("model_path", value=str(tiny_clip)),
        Parameter("policy", value="value-map-rpg-owner"), Parameter("autostart", value=False),
        Parameter("sync", value=sync), Parameter("map_publish_every", value=0)]))
    assert "camera/semantic/image_raw" not in {s.topic_name.lstrip("/") for s in nav.subscriptions}
    io = ros_context.make_node("clip_nav_io")
    reliable = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
    results, actions = [], []
    io.create_subscription(NavigationRun, "nav/result", lambda m: results.append(to_dict(m)), reliable)
    io.create_subscription(DiscreteAction, "action", lambda m: actions.append(to_dict(m)), reliable)
    start = io.create_publisher(NavigationStart, "nav/start", reliable)
    wait_for(lambda: start.get_subscription_count() > 0 and nav.K is not None, 15)
    # live: any run name (the task is in the command); bridge: the bridge's current episode (its reset state)
    run_id = "kitchen-run" if sync == "live" else bridge.episodes[bridge.index].episode_id
    start.publish(NavigationStart(episode_id=run_id, policy="", max_steps=STEPS, query="Find Lisa's red backpack.",
                                  summary="Lisa owns the red backpack. Tom owns the blue mug."))
    wait_for(lambda: results, 40)
    r = results[0]
    assert r["failure_reason"] == "", r
    assert r["episode_id"] == run_id and r["policy"] == "value-map-rpg-owner" and not r["is_oracle"]
    assert 1 <= r["steps"] <= STEPS and len(actions) == r["steps"]
    assert actions[0]["request_id"] == f"{run_id}:value-map-rpg-owner:1"
    assert r["steps"] == STEPS or r["actions"][-1] == 0  # the budget ran out, or it stopped on a detection
    assert bridge.step_count == r["steps"]  # every action reached the bridge and was executed
    loop = nav.loops.loop_for("value-map-rpg-owner")
    fm = loop.mapper.feature_map
    assert fm.encoder == f"clip:{tiny_clip.name}" and fm.dim == 32
    assert (fm.confidence > 0).sum() > 0  # colour frames were encoded into the map
    assert loop.mapper.timer.frames == r["steps"]  # one observation per action


def test_missing_model_directory_is_answered_not_fatal(ros_context, tmp_path):
    from rclpy.parameter import Parameter
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from nodes.navigation_node import NavigationNode
    from personal.interfaces.convert import to_dict
    from personal.msg import DiscreteAction, NavigationRun, NavigationStart

    missing = tmp_path / "no_such_model"
    ros_context.add_node(NavigationNode(context=ros_context.context, parameter_overrides=[
        Parameter("encoder", value="clip"), Parameter("model_path", value=str(missing)),
        Parameter("autostart", value=False), Parameter("sync", value="live")]))
    io = ros_context.make_node("clip_nav_bad_io")
    reliable = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
    results = []
    io.create_subscription(NavigationRun, "nav/result", lambda m: results.append(to_dict(m)), reliable)
    start = io.create_publisher(NavigationStart, "nav/start", reliable)
    wait_for(lambda: start.get_subscription_count() > 0 and io.count_publishers("nav/result") > 0, 10)
    start.publish(NavigationStart(episode_id="r1", policy="value-map-qs", query="Find the mug."))
    wait_for(lambda: results, 10)
    assert results[0]["steps"] == 0 and "cannot start" in results[0]["failure_reason"]
    assert str(missing) in results[0]["failure_reason"]

"""Navigation node: malformed messages and an unknown policy are logged / answered, never fatal."""
import pytest

from conftest import wait_for

pytestmark = pytest.mark.timeout(60)


def test_navigation_node_survives_bad_input(ros_context):
    from rclpy.parameter import Parameter
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from std_msgs.msg import String

    from nodes.navigation_node import LATCHED, NavigationNode, image_array
    from personal.interfaces.codec import decode, encode

    node = ros_context.add_node(NavigationNode(context=ros_context.context, parameter_overrides=[
        Parameter("autostart", value=False)]))
    io = ros_context.make_node("pan_test_io")
    reliable = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
    results = []
    io.create_subscription(String, "nav/result", lambda m: results.append(decode(m.data, "NavigationRun")[1]), reliable)
    start = io.create_publisher(String, "nav/start", reliable)
    episode = io.create_publisher(String, "episode", LATCHED)
    state = io.create_publisher(String, "agent_state", reliable)
    wait_for(lambda: start.get_subscription_count() > 0 and io.count_publishers("nav/result") > 0, 10)
    start.publish(String(data="{not json"))
    episode.publish(String(data='{"type": "personal/msg/EpisodeDescriptor", "data": {"query": 3}}'))
    state.publish(String(data='{"type": "personal/msg/AgentState", "data": {}}'))
    start.publish(String(data=encode("NavigationStart", {"episode_id": "e0", "policy": "teleport"})))
    wait_for(lambda: results, 10)
    assert results[0]["episode_id"] == "e0" and results[0]["steps"] == 0
    assert "unknown policy" in results[0]["failure_reason"]
    assert node.episode is None and node.latest_state is None  # the malformed ones were dropped

    from sensor_msgs.msg import Image

    bad = Image(height=2, width=2, encoding="bgr8", step=6, data=bytes(12))
    with pytest.raises(ValueError, match="unsupported image encoding"):
        image_array(bad)
    node.on_depth(bad)  # logged, not raised

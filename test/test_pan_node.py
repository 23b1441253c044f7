"""Navigation node: malformed messages and an unknown policy are logged / answered, never fatal."""
import pytest

from conftest import wait_for

pytestmark = pytest.mark.timeout(60)


def test_navigation_node_survives_bad_input(ros_context):
    from rclpy.parameter import Parameter
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from nodes.navigation_node import LATCHED, STATE_QOS, NavigationNode
    from personal.navigation.run import image_array
    from personal.interfaces.convert import to_dict
    from personal.msg import AgentState, EpisodeDescriptor, NavigationRun, NavigationStart

    node = ros_context.add_node(NavigationNode(context=ros_context.context, parameter_overrides=[
        Parameter("autostart", value=False)]))
    io = ros_context.make_node("pan_test_io")
    reliable = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
    results = []
    io.create_subscription(NavigationRun, "nav/result", lambda m: results.append(to_dict(m)), reliable)
    start = io.create_publisher(NavigationStart, "nav/start", reliable)
    episode = io.create_publisher(EpisodeDescriptor, "episode", LATCHED)
    state = io.create_publisher(AgentState, "agent_state", STATE_QOS)
    wait_for(lambda: start.get_subscription_count() > 0 and io.count_publishers("nav/result") > 0
             and episode.get_subscription_count() > 0 and state.get_subscription_count() > 0, 10)
    start.publish(NavigationStart(episode_id="", policy="random-frontier"))  # no episode id: rejected
    start.publish(NavigationStart(episode_id="e9", max_steps=0))  # no budget: rejected
    episode.publish(EpisodeDescriptor(query="Find Ana's box."))  # no episode / scene id: rejected
    bad_state = AgentState(episode_id="e0")
    bad_state.position.x = float("nan")
    state.publish(bad_state)  # a non-finite pose: rejected
    start.publish(NavigationStart(episode_id="e0", policy="teleport"))
    wait_for(lambda: results, 10)
    assert results[0]["episode_id"] == "e0" and results[0]["steps"] == 0
    assert "unknown policy" in results[0]["failure_reason"]
    assert node.episode is None and node.latest_state is None  # the malformed ones were dropped

    from sensor_msgs.msg import Image

    bad = Image(height=2, width=2, encoding="bgr8", step=6, data=bytes(12))
    with pytest.raises(ValueError, match="unsupported image encoding"):
        image_array(bad)
    node.on_image(bad, "depth", "camera/aligned_depth_to_color/image_raw")  # logged, not raised

"""The locobot graph's wiring: the base driver in the robot namespace drives a kinematic
base on the Interbotix topics, and the mapping node listens to the RealSense layout."""
from __future__ import annotations

import pytest

from personal.graphs import get_graph, parse_assignments

rclpy = pytest.importorskip("rclpy")
from geometry_msgs.msg import PoseStamped  # noqa: E402
from std_msgs.msg import String  # noqa: E402

from conftest import wait_for  # noqa: E402
from personal.interfaces.codec import decode, encode  # noqa: E402


def _node(nodes, name):
    return next(n for n in nodes if n.name == name)


def test_remaps_follow_namespace_and_camera_prefix():
    nodes = get_graph("locobot").resolve(parse_assignments(["ns:=robot1", "camera_prefix:=camera/camera"]))
    mapping = _node(nodes, "mapping")
    assert mapping.namespace == "robot1"
    assert ("camera/aligned_depth_to_color/image_raw", "camera/camera/aligned_depth_to_color/image_raw") in mapping.remappings
    driver = _node(nodes, "base_driver")
    assert ("cmd_vel", "mobile_base/cmd_vel") in driver.remappings and driver.namespace == "robot1"


def test_base_driver_drives_interbotix_topics(ros_context, run_node):
    driver = _node(get_graph("locobot").resolve({}), "base_driver")
    run_node("nodes.kinematic_base_node", "kinematic_base",
             remappings=[("cmd_vel", "/locobot/mobile_base/cmd_vel"), ("odom", "/locobot/mobile_base/odom")])
    proc = run_node(driver.spec.module, driver.name, {**driver.parameters, "use_tf": False}, driver.remappings,
                    namespace=driver.namespace)
    probe = ros_context.make_node("probe")
    outcomes, poses = [], []
    probe.create_subscription(String, "/locobot/action_outcome", lambda m: outcomes.append(decode(m.data)[1]), 10)
    probe.create_subscription(PoseStamped, "/locobot/camera/pose", poses.append, 10)
    pub = probe.create_publisher(String, "/locobot/action", 10)
    wait_for(lambda: pub.get_subscription_count() > 0 and len(poses) > 20, timeout=20)
    pub.publish(String(data=encode("DiscreteAction", {"action": 1, "request_id": "real"})))
    wait_for(lambda: outcomes, timeout=15)
    assert outcomes[-1]["status"] == "succeeded", proc.log()
    wait_for(lambda: poses[-1].pose.position.x > 0.2, timeout=5)
    assert poses[-1].pose.position.z == pytest.approx(0.88)

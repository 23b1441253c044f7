"""The locobot graph's wiring: the base driver in the robot namespace drives a kinematic
base on the Interbotix topics, the mapping and navigation nodes listen to the RealSense
layout, and the navigation node drives the base through the base driver's action /
agent_state loop."""
from __future__ import annotations

import pytest

from personal.graphs import get_graph, parse_assignments

rclpy = pytest.importorskip("rclpy")
from geometry_msgs.msg import PoseStamped  # noqa: E402

from conftest import wait_for  # noqa: E402
from personal.interfaces.convert import to_dict  # noqa: E402
from personal.msg import ActionOutcome, DiscreteAction, NavigationRun, NavigationStart  # noqa: E402
from personal.robot import conventions as C  # noqa: E402


def _node(nodes, name):
    return next(n for n in nodes if n.name == name)


@pytest.mark.parametrize("camera, realsense", [("interbotix", "4.55"), ("interbotix", "4.54"), ("rs_launch", "4.55"),
                                               ("rs_launch", "4.54")])
@pytest.mark.parametrize("base", sorted(C.BASES))
def test_profiles_wire_the_drivers_topics(base, camera, realsense):
    """issue 26: the base topics were hard-coded for a Create 3 and the camera prefix was a guess;
    now each profile's topics come from the conventions module."""
    nodes = get_graph("locobot").resolve(parse_assignments(
        ["ns:=robot1", f"base:={base}", f"camera:={camera}", f"realsense:={realsense}"]))
    prefix = C.camera_layout(camera, realsense).prefix
    mapping = _node(nodes, "mapping")
    assert mapping.namespace == "robot1"
    assert ("camera/aligned_depth_to_color/image_raw", f"{prefix}/aligned_depth_to_color/image_raw") in mapping.remappings
    assert mapping.parameters["pose_source"] == "tf" and mapping.parameters["map_frame"] == "robot1/odom"
    driver = _node(nodes, "base_driver")
    assert driver.namespace == "robot1" and driver.parameters["base"] == base
    assert ("cmd_vel", C.BASES[base].cmd_vel_topic) in driver.remappings
    assert ("odom", C.BASES[base].odom_topic) in driver.remappings
    nav = _node(nodes, "navigation")  # shares action / agent_state / camera/pose with the driver (same namespace)
    assert nav.namespace == "robot1" and nav.parameters["sync"] == "live" and not nav.parameters["autostart"]
    assert ("camera/color/image_raw", f"{prefix}/color/image_raw") in nav.remappings
    assert ("odom", C.BASES[base].odom_topic) in nav.remappings
    assert not any(a in ("action", "agent_state", "camera/pose") for a, _ in nav.remappings + driver.remappings)


def test_fixed_camera_pose_is_an_opt_in():
    nodes = get_graph("locobot").resolve(parse_assignments(["camera_pose:=fixed", "map_frame:=map"]))
    assert _node(nodes, "mapping").parameters["pose_source"] == "camera_pose"
    assert _node(nodes, "mapping").parameters["map_frame"] == "map"
    assert _node(nodes, "base_driver").parameters["camera_pose"] == "fixed"


@pytest.mark.parametrize("base", sorted(C.BASES))
def test_base_driver_drives_the_base_topics(ros_context, run_node, base):
    """The driver, as the graph starts it, moves a double of each base on that base's own topics
    (Create 3: best-effort odometry in mobile_base/; Kobuki: reliable odom + commands/velocity)."""
    driver = _node(get_graph("locobot").resolve(parse_assignments([f"base:={base}"])), "base_driver")
    p = C.BASES[base]
    run_node("nodes.kinematic_base_node", "kinematic_base", {"base": base},
             remappings=[("cmd_vel", f"/locobot/{p.cmd_vel_topic}"), ("odom", f"/locobot/{p.odom_topic}")],
             namespace="locobot")
    proc = run_node(driver.spec.module, driver.name, driver.parameters, driver.remappings, namespace=driver.namespace)
    probe = ros_context.make_node("probe")
    outcomes, poses = [], []
    probe.create_subscription(ActionOutcome, "/locobot/action_outcome", lambda m: outcomes.append(to_dict(m)), 10)
    probe.create_subscription(PoseStamped, "/locobot/camera/pose", poses.append, 10)
    pub = probe.create_publisher(DiscreteAction, "/locobot/action", 10)
    wait_for(lambda: pub.get_subscription_count() > 0 and len(poses) > 20, timeout=90)  # two node processes start
    pub.publish(DiscreteAction(action=1, request_id="real"))
    wait_for(lambda: outcomes, timeout=60)
    assert outcomes[-1]["status"] == "succeeded", proc.log()
    wait_for(lambda: poses[-1].pose.position.x > 0.2, timeout=30)
    assert poses[-1].header.frame_id == "locobot/odom"  # a frame TF has (the Create 3's header says "odom")
    from personal.robot.extrinsics import T_root_optical

    assert poses[-1].pose.position.z == pytest.approx(T_root_optical(base)[2, 3], abs=1e-6)  # from TF, the URDF's


class _FakeRealSense:
    """Publishes a small aligned-depth frame (a wall 2 m ahead) and its camera info at 20 Hz,
    stamped with the wall clock like a live camera."""

    def __init__(self, node) -> None:
        import numpy as np
        from rclpy.qos import qos_profile_sensor_data
        from sensor_msgs.msg import CameraInfo, Image

        self.node = node
        self.depth = Image(height=48, width=64, encoding="16UC1", step=128,
                           data=np.full((48, 64), 2000, np.uint16).tobytes())
        self.info = CameraInfo(height=48, width=64, k=[40.0, 0.0, 31.5, 0.0, 40.0, 23.5, 0.0, 0.0, 1.0])
        self.pub_depth = node.create_publisher(Image, "camera/aligned_depth_to_color/image_raw", qos_profile_sensor_data)
        self.pub_info = node.create_publisher(CameraInfo, "camera/color/camera_info", qos_profile_sensor_data)
        node.create_timer(0.05, self.tick)

    def tick(self) -> None:
        stamp = self.node.get_clock().now().to_msg()
        for msg, pub in ((self.depth, self.pub_depth), (self.info, self.pub_info)):
            msg.header.stamp = stamp
            pub.publish(msg)


def test_navigation_drives_the_base_driver_live(ros_context):
    """nav/start with a query → navigation (sync live) → action → base driver → kinematic base →
    odometry → agent_state → the next frame → ... → STOP, with no simulator in the loop."""
    from rclpy.parameter import Parameter
    from rclpy.qos import QoSProfile, ReliabilityPolicy

    from nodes.base_driver_node import BaseDriver
    from nodes.kinematic_base_node import KinematicBaseNode
    from nodes.navigation_node import NavigationNode

    ctx = ros_context.context
    nav_spec = _node(get_graph("locobot").resolve({}), "navigation")
    ros_context.add_node(KinematicBaseNode(context=ctx))
    base = ros_context.nodes[-1]
    ros_context.add_node(BaseDriver(context=ctx, parameter_overrides=[Parameter("camera_pose", value="fixed")]))
    params = {**nav_spec.parameters, "encoder": "none", "policy": "random-frontier", "settle_s": 0.1}
    nav = ros_context.add_node(NavigationNode(context=ctx, parameter_overrides=[
        Parameter(k, value=v) for k, v in params.items()]))
    io = ros_context.make_node("locobot_nav_io")
    _FakeRealSense(io)
    reliable = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
    results = []
    io.create_subscription(NavigationRun, "nav/result", lambda m: results.append(to_dict(m)), reliable)
    start = io.create_publisher(NavigationStart, "nav/start", reliable)
    wait_for(lambda: start.get_subscription_count() > 0 and nav.K is not None and nav.latest_odom is not None, 60)
    start.publish(NavigationStart(episode_id="hall", policy="", max_steps=3, query="Find Lisa's backpack."))
    wait_for(lambda: results, 60)
    r = results[0]
    assert r["failure_reason"] == "" and r["policy"] == "random-frontier", r
    assert r["actions"] == [2, 2, 0] and r["stopped"]  # initial spin, then STOP at the budget's end
    assert r["yaws"][0] == pytest.approx(0.0, abs=0.02)
    assert r["yaws"][-1] == pytest.approx(1.047, abs=0.08)  # two 30° turns, read back from odometry
    assert base.base.yaw == pytest.approx(r["yaws"][-1], abs=0.02)
    assert nav.loops.loop_for("random-frontier").mapper.timer.frames == 3  # one camera frame per action

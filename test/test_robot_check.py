"""``personal robot check`` against the LoCoBot double: started the old docs' way (a separate
``rs_launch.py camera_namespace:=locobot`` whose camera_link tree is not joined to the robot, a
Kobuki base while the graph assumed a Create 3) it reports each fault with its exact fix; started
the new way (Interbotix's camera, the graph's base profile) everything is green."""
from __future__ import annotations

import time

import pytest

rclpy = pytest.importorskip("rclpy")
from rclpy.parameter import Parameter  # noqa: E402

from personal.graphs import get_graph, parse_assignments  # noqa: E402
from personal.robot import conventions as C  # noqa: E402
from personal.robot.check import Endpoint, Observation, diagnose, format_findings, qos_compatible  # noqa: E402

SMALL = {"width": 160, "height": 120, "camera_rate": 10.0, "episode": "synth_00003_easy_005"}


def _check(ros_context, graph_args, **double):
    from nodes.robot_check import RobotCheckProbe
    from sim_bridge.locobot_double import LocobotDouble

    ros_context.add_node(LocobotDouble(context=ros_context.context, namespace="locobot", parameter_overrides=[
        Parameter(k, value=v) for k, v in {**SMALL, **double}.items()]))
    values = get_graph("locobot").argument_values(parse_assignments(graph_args))
    probe = ros_context.add_node(RobotCheckProbe(values, context=ros_context.context))
    time.sleep(4.0)  # discovery + a few frames
    findings = diagnose(values, probe.observation())
    print(format_findings(findings))
    return {f.what.split(" [")[0]: f for f in findings}


def test_old_docs_way_reports_every_fault_with_its_fix(ros_context):
    f = _check(ros_context, ["ns:=locobot"], base="kobuki", camera="rs_launch", realsense="4.55", join_camera=False)
    color = f["/locobot/camera/camera/color/image_raw"]
    assert not color.ok and "camera:=rs_launch realsense:=4.55" in color.fix
    assert not f["/locobot/camera/camera/aligned_depth_to_color/image_raw"].ok
    odom = f["/locobot/mobile_base/odom"]
    assert not odom.ok and "base:=kobuki" in odom.fix
    assert not f["/locobot/mobile_base/cmd_vel"].ok and "base:=kobuki" in f["/locobot/mobile_base/cmd_vel"].fix
    tf = f[f"TF {C.odom_frame('locobot')} -> {C.COLOR_OPTICAL_FRAME}"]
    # rs_launch's camera_link tree is not joined to the URDF's camera_locobot_link
    assert not tf.ok and f"{C.camera_link('locobot')} -> {C.COLOR_FRAME}" in tf.detail
    assert "static_transform_publisher --frame-id camera_locobot_link --child-frame-id camera_link" in tf.fix
    assert not f["clock: image vs odometry stamps"].ok


def test_rs_launch_unjoined_tree_is_named_with_the_static_transform_fix(ros_context):
    f = _check(ros_context, ["camera:=rs_launch", "realsense:=4.55"], camera="rs_launch", realsense="4.55",
               join_camera=False)
    assert f["/locobot/camera/color/image_raw"].ok
    tf = f[f"TF {C.odom_frame('locobot')} -> {C.COLOR_OPTICAL_FRAME}"]
    assert not tf.ok and f"{C.camera_link('locobot')} -> {C.COLOR_FRAME}" in tf.detail
    assert "static_transform_publisher --frame-id camera_locobot_link --child-frame-id camera_link" in tf.fix


@pytest.mark.parametrize("realsense, topic", [("4.54", "/camera/color/image_raw"), ("4.55", "/locobot/camera/color/image_raw")])
def test_rs_launch_layouts_joined_are_green(ros_context, realsense, topic):
    """rs_launch before 4.55 puts the topics at /camera/... (outside the namespace), from 4.55 at
    /<ns>/camera/...; with the deploy docs' static transform the trees join."""
    f = _check(ros_context, ["camera:=rs_launch", f"realsense:={realsense}"], camera="rs_launch", realsense=realsense,
               join_camera=True)
    assert f[topic].ok and all(x.ok for x in f.values()), format_findings(list(f.values()))


def test_aligned_depth_off_is_named(ros_context):
    f = _check(ros_context, [], align_depth=False)
    depth = f["/locobot/camera/camera/aligned_depth_to_color/image_raw"]
    assert not depth.ok and "rs_camera_align_depth:=true" in depth.fix


@pytest.mark.parametrize("base", sorted(C.BASES))
def test_new_way_is_all_green(ros_context, base):
    f = _check(ros_context, [f"base:={base}"], base=base, camera="interbotix", realsense="4.55")
    assert all(x.ok for x in f.values()), format_findings(list(f.values()))
    assert "hash RIHS01_" in f["/locobot/commands/joint_group"].detail  # the xs_sdk side matched our built type


def test_diagnosis_without_ros():
    """The judge alone: encodings, QoS, hashes and rates, from an observation."""
    values = get_graph("locobot").argument_values({})
    depth = "/locobot/camera/camera/aligned_depth_to_color/image_raw"
    obs = Observation(publishers={depth: [Endpoint("sensor_msgs/msg/Image", "RIHS01_x", True)]},
                      rates={depth: 2.0}, encodings={depth: "32FC1"}, local_hashes={"sensor_msgs/msg/Image": "RIHS01_y"})
    d = {f.what.split(" [")[0]: f for f in diagnose(values, obs)}[depth]
    assert not d.ok and "32FC1" in d.detail and "Z16" in d.fix and "below 5 Hz" in d.detail and "hash" in d.detail
    assert qos_compatible(True, False, False, False) and not qos_compatible(False, False, True, False)
    odom = "/locobot/mobile_base/odom"
    skewed = Observation(stamp_offsets={odom: 0.0, depth: 0.35})
    clock = {f.what: f for f in diagnose(values, skewed)}["clock: image vs odometry stamps"]
    assert not clock.ok and "+350 ms" in clock.detail and "chrony" in clock.fix


def test_clock_offset_is_read_from_the_least_delayed_message():
    """A loaded robot computer delays some images (the first after a subscription most): the offset
    comes from the least delayed one, so delay is not read as clock skew, and real skew still is."""
    from personal.robot.check import stamp_offset

    def estimate(skew_s, delays_s):
        est = None
        for k, delay in enumerate(delays_s):
            sent = 100.0 + 0.1 * k
            est = stamp_offset(est, stamp_s=sent + skew_s, receipt_s=sent + delay)
        return est

    first_late = [0.4, 0.03, 0.012, 0.05, 0.011]
    assert estimate(0.0, first_late) == pytest.approx(-0.011)
    assert estimate(0.35, first_late) == pytest.approx(0.339)
    assert estimate(0.0, first_late[:1]) == pytest.approx(-0.4)  # one message: all the probe knows


def test_cli_against_the_double(ros_context):
    """`personal robot check` as an operator runs it: exit 0 and every finding ok for the new way."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    from sim_bridge.locobot_double import LocobotDouble

    ros_context.add_node(LocobotDouble(context=ros_context.context, namespace="locobot", parameter_overrides=[
        Parameter(k, value=v) for k, v in SMALL.items()]))
    proc = subprocess.run([sys.executable, "-m", "personal", "robot", "check", "base:=create3", "--duration", "4",
                           "--json"], cwd=Path(__file__).resolve().parents[1], env=dict(os.environ),
                          capture_output=True, text=True, timeout=180)
    try:  # the findings that are not ok, whole (the tail of the JSON hid which one failed in a loaded CI run)
        failing = [f for f in json.loads(proc.stdout) if not f["ok"]]
    except ValueError:
        failing = proc.stdout[-1500:]
    assert proc.returncode == 0, (failing, proc.stderr[-3000:], ros_context.nodes[-1].frames)
    findings = json.loads(proc.stdout)
    assert len(findings) == 9 and all(f["ok"] for f in findings)
    bad = subprocess.run([sys.executable, "-m", "personal", "robot", "check", "base:=roomba"], capture_output=True,
                         text=True, timeout=60, env=dict(os.environ))
    assert bad.returncode == 2 and "argument 'base'" in bad.stderr

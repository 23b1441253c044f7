"""The ``locobot`` graph, unchanged, against the faithful double of the real LoCoBot stack
(sim_bridge/locobot_double.py: Interbotix + RealSense + Create 3 / Kobuki topics, frames, QoS
and TF from personal/robot/conventions.py): a PAN episode ("find <owner>'s backpack") runs end to
end — nav/start → actions → base driver → the base's own topics → odometry, joint_states, TF →
RealSense frames → mapping and navigation → STOP or budget — in both base profiles."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

rclpy = pytest.importorskip("rclpy")
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.qos import QoSProfile, ReliabilityPolicy  # noqa: E402

from conftest import LoggedProcess, wait_for  # noqa: E402
from personal.interfaces.convert import to_dict  # noqa: E402
from personal.msg import NavigationRun, NavigationStart  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
EPISODE = "synth_00003_easy_005"  # "Find Alice's backpack." (generated scene, seed 3)
SMALL = {"width": 160, "height": 120, "camera_rate": 10.0, "episode": EPISODE}


def start_double(ros_context, **params):
    from sim_bridge.locobot_double import LocobotDouble

    return ros_context.add_node(LocobotDouble(context=ros_context.context, namespace="locobot", parameter_overrides=[
        Parameter(k, value=v) for k, v in {**SMALL, **params}.items()]))


class Graph(LoggedProcess):
    """``personal launch locobot ...`` as an operator starts it (its own process group)."""

    def __init__(self, *assignments: str, env: dict | None = None) -> None:
        super().__init__([sys.executable, "-m", "personal", "launch", "locobot", *assignments], "locobot_graph", env=env)

    def stop(self) -> None:
        super().stop(timeout=20)
        self.remove_log()


@pytest.mark.timeout(400)
@pytest.mark.parametrize("base", ["create3", "kobuki"])
def test_pan_episode_end_to_end_against_the_double(private_ros_context, base):
    # a domain of its own: in a full run this test once saw TF and a result that its own graph had not made
    ros_context, env = private_ros_context
    double = start_double(ros_context, base=base)
    graph = Graph(f"base:={base}", "camera:=interbotix", "realsense:=4.55", "encoder:=lit", "feature_resolution:=0.5",
                  "max_steps:=4", "settle_s:=0.2", env=env)
    try:
        io = ros_context.make_node("operator")
        reliable = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
        results = []
        io.create_subscription(NavigationRun, "/locobot/nav/result", lambda m: results.append(to_dict(m)), reliable)
        start = io.create_publisher(NavigationStart, "/locobot/nav/start", reliable)
        wait_for(lambda: start.get_subscription_count() > 0 or graph.proc.poll() is not None, 240)
        assert graph.proc.poll() is None, graph.log()[-4000:]
        # an operator starts once the driver has a camera pose from TF (under load the double's TF can
        # trail odometry for a while (the driver waits up to TF_WAIT_S for it); a 4-step run may end first)
        graph.wait_for_log("camera pose from TF", 120)
        x0, y0 = double.base.x, double.base.y
        ep = double.episode
        # the navigation node keeps the start and begins once it has a camera frame and odometry
        start.publish(NavigationStart(episode_id=ep.episode_id, policy="", max_steps=4, query=ep.query,
                                      summary=ep.summary, owner=""))
        try:
            wait_for(lambda: results or graph.proc.poll() is not None, 240)
        except TimeoutError:
            graph.dump_stacks()  # where each node is, in the log below
        assert results, graph.log()[-12000:]
        r = results[0]
        assert r["failure_reason"] == "", (r, graph.log()[-4000:])
        assert r["steps"] >= 1 and len(r["actions"]) == r["steps"]
        # the run moved the double's base (on the base's own topics) and read it back from its odometry
        moved = any(a in (1, 2, 3) for a in r["actions"])
        if moved:
            assert (double.base.x, double.base.y) != (x0, y0) or double.base.yaw != 0.0
        assert r["xs"][-1] == pytest.approx(double.base.x, abs=0.05) and r["ys"][-1] == pytest.approx(double.base.y, abs=0.05)
        assert double.frames > 10
        print(f"{base}: {r['steps']} steps, actions {r['actions']}, stopped {r['stopped']}, "
              f"ground-truth goal distance {double.goal_distance():.2f} m")
    finally:
        graph.stop()

"""The sim bridge node, run as a subprocess and observed through rclpy.

The bridge replays a one-episode folder in the toy two-room scene, starting at
(2, 1) facing +x: the wall x = 4 (0.1 m thick) is 1.95 m ahead, the camera 0.88 m high,
so the published depth can be checked against that geometry analytically.
"""
import dataclasses
import gzip
import math
import time

import numpy as np
import pytest

from conftest import wait_for

rclpy = pytest.importorskip("rclpy")

from geometry_msgs.msg import PoseStamped  # noqa: E402
from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.qos import qos_profile_sensor_data  # noqa: E402
from sensor_msgs.msg import CameraInfo, Image  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402

from personal.interfaces.convert import to_dict  # noqa: E402
from personal.msg import AgentState, DiscreteAction, EpisodeDescriptor  # noqa: E402
from personal.world.habitat_format import write_episode_set  # noqa: E402
from personal.sim.backends.base import CameraSpec  # noqa: E402
from sim_bridge.bridge_node import LATCHED, STATE_QOS  # noqa: E402
from personal.sim.toy_scene import two_room_scene  # noqa: E402
from test_bridge_logic import START, toy_episode  # noqa: E402

CAM = CameraSpec()
WALL_FACE_X = 4.0 - 0.05


@pytest.fixture(scope="module")
def bridge(tmp_path_factory):
    from conftest import NodeProcess

    out = tmp_path_factory.mktemp("episodes")
    # geodesic distance left unknown: the bridge must compute it with the simulator
    write_episode_set(out, [two_room_scene()], [dataclasses.replace(toy_episode(), geodesic_distance=math.nan)])
    proc = NodeProcess("sim_bridge.bridge_node", "sim_bridge", {"episodes_dir": str(out), "rate": 15.0}, [])
    proc.wait_for_log("episode 1/1", timeout=60)
    yield proc
    assert proc.stop() == 0, proc.log()


class Listener:
    """Keeps the latest message of each topic."""

    def __init__(self, ros, topics):
        self.node = ros.make_node("bridge_listener")
        self.latest = {}
        self.all = {}
        for topic, (kind, qos) in topics.items():
            self.node.create_subscription(kind, topic, self._store(topic), qos)

    def _store(self, topic):
        def cb(msg):
            self.latest[topic] = msg
            self.all.setdefault(topic, []).append(msg)
        return cb

    def wait(self, *topics, timeout=20.0):
        wait_for(lambda: all(t in self.latest for t in topics), timeout)
        return [self.latest[t] for t in topics]


SENSORS = {
    "camera/color/image_raw": (Image, qos_profile_sensor_data),
    "camera/aligned_depth_to_color/image_raw": (Image, qos_profile_sensor_data),
    "camera/semantic/image_raw": (Image, qos_profile_sensor_data),
    "camera/color/camera_info": (CameraInfo, qos_profile_sensor_data),
    "odom": (Odometry, qos_profile_sensor_data),
    "camera/pose": (PoseStamped, qos_profile_sensor_data),
    "episode": (EpisodeDescriptor, LATCHED),
    "agent_state": (AgentState, STATE_QOS),
}


def call(node, service, timeout=20.0, srv_type=Trigger, **fields):
    client = node.create_client(srv_type, service)
    assert client.wait_for_service(timeout_sec=timeout), f"service {service} not available"
    future = client.call_async(srv_type.Request(**fields))
    wait_for(future.done, timeout)
    return future.result()


def depth_m(msg: Image) -> np.ndarray:
    assert msg.encoding == "16UC1"
    return np.frombuffer(bytes(msg.data), dtype=np.uint16).reshape(msg.height, msg.width) / 1000.0


def states(listener):
    return [to_dict(m) for m in listener.all.get("agent_state", [])]


def test_images_encodings_intrinsics_and_depth_geometry(bridge, ros_context):
    listener = Listener(ros_context, SENSORS)
    assert call(listener.node, "episode/reset").success
    wait_for(lambda: any(s["step"] == 0 for s in states(listener)))
    for topic in list(SENSORS)[:6]:  # only frames published after the reset
        listener.latest.pop(topic, None)
    rgb, depth, ids, info, odom, cam = listener.wait(*list(SENSORS)[:6])
    for img, enc, bpp in ((rgb, "rgb8", 3), (depth, "16UC1", 2), (ids, "32SC1", 4)):
        assert (img.width, img.height, img.encoding) == (640, 480, enc)
        assert img.step == 640 * bpp and len(img.data) == 480 * 640 * bpp
        assert img.header.frame_id == "camera_color_optical_frame"
    K = CAM.intrinsics()
    assert np.allclose(np.array(info.k).reshape(3, 3), K)
    assert np.allclose(np.array(info.p).reshape(3, 4)[:, :3], K) and info.distortion_model == "plumb_bob"
    assert (info.width, info.height) == (640, 480)
    assert (odom.header.frame_id, odom.child_frame_id) == ("map", "base_link")
    assert (odom.pose.pose.position.x, odom.pose.pose.position.y) == pytest.approx(START[:2])
    assert cam.pose.position.z == pytest.approx(CAM.height_m)

    # depth against the scene geometry: the horizon row sees the wall face (planar depth 1.95 m)
    # wherever the ray's lateral offset stays inside the wall span; the bottom row sees the floor.
    d = depth_m(depth)
    fx, cx, cy = K[0, 0], K[0, 2], K[1, 2]
    cols = np.arange(640)
    lateral = START[1] - (cols - cx) / fx * (WALL_FACE_X - START[0])
    on_wall = (lateral > 0.2) & (lateral < 2.6)
    assert on_wall.sum() > 400
    horizon = d[int(round(cy)), on_wall]
    assert np.abs(horizon - (WALL_FACE_X - START[0])).max() <= 0.002
    floor_depth = CAM.height_m * K[1, 1] / (479 - cy)
    assert d[479, 300:340] == pytest.approx(floor_depth, abs=0.002)
    semantic = np.frombuffer(bytes(ids.data), dtype=np.int32).reshape(480, 640)
    assert semantic[int(round(cy)), 320] == 0  # a wall is structure

    desc = to_dict(listener.wait("episode")[0])
    assert desc["target_object_ids"] == ["box_2"] and desc["target_positions"][0] == {"x": 6.0, "y": 1.0, "z": 0.2}
    assert desc["query"] == "Find Ana's box." and desc["count"] == 1
    # the wall x = 4 blocks the straight 3 m to the box's 1 m success region: the path goes
    # through the door at y 2.8-3.8, about 4.5-5 m
    assert 4.0 < desc["geodesic_distance"] < 6.0


def test_action_moves_agent_and_bad_actions_are_survived(bridge, ros_context):
    listener = Listener(ros_context, {k: SENSORS[k] for k in ("odom", "agent_state")})
    pub = listener.node.create_publisher(DiscreteAction, "action", 10)
    assert call(listener.node, "episode/reset").success
    wait_for(lambda: pub.get_subscription_count() > 0)

    def send(action, rid=""):
        pub.publish(DiscreteAction(action=action, request_id=rid))
        if rid:
            return wait_for(lambda: next((s for s in states(listener) if s["request_id"] == rid), None))

    s1 = send(1, "fwd")
    assert (s1["position"]["x"], s1["position"]["y"]) == pytest.approx((START[0] + 0.25, START[1]))
    assert s1["step"] == 1 and not s1["collided"]
    wait_for(lambda: "odom" in listener.latest and listener.latest["odom"].pose.pose.position.x == pytest.approx(2.25))
    s2 = send(2, "left")
    assert s2["yaw"] == pytest.approx(math.radians(30))

    send(9)  # a valid uint8, outside the action space
    log = bridge.wait_for_log("outside the action space")
    assert "topic 'action': rejected message: action 9 is outside the action space (0=STOP" in log
    # still alive and stepping
    s3 = send(0, "stop")
    assert s3["stopped"] and s3["step"] == 3
    pub.publish(DiscreteAction(action=1, request_id="late"))  # after STOP: ignored, no state
    bridge.wait_for_log("episode ended with STOP")
    assert call(listener.node, "episode/next").success  # wraps around to the only episode
    assert bridge.proc.poll() is None


def test_continue_after_stop_takes_actions_but_scores_the_first_stop_only(tmp_path, run_node, ros_context):
    """The assistant graph's bridge: the STOP ends the navigation request (scored once, then), a
    verification's views after it still move the robot and never change the score."""
    from personal.msg import EpisodeResult

    out = tmp_path / "episodes"
    write_episode_set(out, [two_room_scene()], [toy_episode()])
    proc = run_node("sim_bridge.bridge_node", "sim_bridge", {"episodes_dir": str(out), "continue_after_stop": True},
                    namespace="after_stop")  # own namespace: the module's bridge refuses actions after STOP
    proc.wait_for_log("episode 1/1", timeout=60)
    listener = Listener(ros_context, {"/after_stop/agent_state": (AgentState, STATE_QOS),
                                      "/after_stop/episode/result": (EpisodeResult, STATE_QOS)})
    pub = listener.node.create_publisher(DiscreteAction, "/after_stop/action", 10)
    wait_for(lambda: pub.get_subscription_count() > 0)

    def send(action, rid):
        pub.publish(DiscreteAction(action=action, request_id=rid))
        return wait_for(lambda: next((to_dict(m) for m in listener.all.get("/after_stop/agent_state", [])
                                      if m.request_id == rid), None))

    assert send(0, "stop")["stopped"]
    listener.wait("/after_stop/episode/result")
    moved = send(1, "view-1")
    assert moved["step"] == 2 and moved["stopped"] and moved["position"]["x"] == pytest.approx(START[0] + 0.25)
    assert send(0, "stop-again")["step"] == 3
    time.sleep(0.5)  # a second result would follow its state at once
    assert len(listener.all["/after_stop/episode/result"]) == 1  # scored at the first STOP only
    assert "ignored" not in proc.log()


def test_bad_episode_folder_is_logged_and_survived(tmp_path, run_node, ros_context):
    folder = tmp_path / "broken"
    write_episode_set(folder, [two_room_scene()], [toy_episode()])
    content = folder / "easy" / "content" / "toy_two_rooms.json.gz"
    with gzip.open(content, "wt") as f:
        f.write('{"goals_by_category": {}, "episodes": [{"episode_id": 1}]}')
    # own namespace: the module's healthy bridge may still be serving episode/next
    proc = run_node("sim_bridge.bridge_node", "broken_bridge", {"episodes_dir": str(folder), "publish_clock": True},
                    namespace="broken")
    log = proc.wait_for_log("cannot load episodes", timeout=60)
    assert f"{content}: episodes[0]: missing field" in log
    node = ros_context.make_node("probe")
    from rosgraph_msgs.msg import Clock

    clocks = []
    node.create_subscription(Clock, "/clock", clocks.append, 10)
    reply = call(node, "/broken/episode/next")
    assert not reply.success and "no episodes loaded" in reply.message
    wait_for(lambda: len(clocks) >= 2)
    assert clocks[-1].clock.sec * 10**9 + clocks[-1].clock.nanosec > 0
    assert proc.proc.poll() is None


def test_cmd_vel_becomes_discrete_turns(bridge, ros_context):
    from geometry_msgs.msg import Twist

    listener = Listener(ros_context, {"agent_state": SENSORS["agent_state"]})
    assert call(listener.node, "episode/reset").success
    start = wait_for(lambda: next((s for s in reversed(states(listener)) if s["step"] == 0), None))
    pub = listener.node.create_publisher(Twist, "cmd_vel", 10)
    wait_for(lambda: pub.get_subscription_count() > 0)
    twist = Twist()
    twist.angular.z = 2.0  # rad/s: a 30 degree step accumulates in about 0.26 s

    def turned():
        pub.publish(twist)
        return next((s for s in states(listener) if s["request_id"] == "cmd_vel"), None)

    s = wait_for(turned, timeout=10.0, period=0.05)
    assert s["yaw"] == pytest.approx(start["yaw"] + math.radians(30))
    assert (s["position"]["x"], s["position"]["y"]) == pytest.approx(START[:2])
    pub.publish(Twist())  # stop


def test_personal_launch_sim_graph_end_to_end(tmp_path):
    """`personal launch sim` passes every graph argument through --ros-args to a real bridge."""
    import os
    import signal
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    out = tmp_path / "eps"
    write_episode_set(out, [two_room_scene()], [toy_episode()])
    proc = subprocess.Popen(
        [sys.executable, "-m", "personal", "launch", "sim", f"episodes_dir:={out}", "split:=easy", "rate:=5",
         "backend:=synthetic"],
        cwd=root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    lines = []
    try:
        while not any("episode 1/1: toy_0" in line for line in lines):
            line = proc.stdout.readline()
            assert line, "".join(lines)
            lines.append(line)
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        rest, _ = proc.communicate(timeout=30)
    text = "".join(lines) + rest
    assert "[sim_bridge] " in text and f"1 episodes in 1 scenes from {out}" in text
    assert proc.returncode == 130 and "sim_bridge stopped (exit code 0)" in text, text


def test_episode_load_by_id_said_again_loads_nothing_twice(bridge, ros_context):
    """episode/load (personal/srv/LoadEpisode): a new request id (re)loads the episode; the same id said
    again (a reply lost in discovery) is answered as the first and the episode is not reset; an unknown
    episode id or an index outside the list is refused by name; by index it loads too."""
    from personal.srv import LoadEpisode

    listener = Listener(ros_context, {"agent_state": SENSORS["agent_state"]})
    pub = listener.node.create_publisher(DiscreteAction, "action", 10)

    def load(episode_id, request_id, index=-1):
        return call(listener.node, "episode/load", srv_type=LoadEpisode, episode_id=episode_id, request_id=request_id,
                    index=index)

    def forward(rid):
        pub.publish(DiscreteAction(action=1, request_id=rid))
        return wait_for(lambda: next((s for s in states(listener) if s["request_id"] == rid), None))

    episode_id = toy_episode().episode_id
    first = load(episode_id, 41)
    assert first.success and episode_id in first.message
    wait_for(lambda: pub.get_subscription_count() > 0)
    assert forward("load-1")["step"] == 1
    again = load(episode_id, 41)
    assert (again.success, again.message) == (first.success, first.message)
    assert forward("load-2")["step"] == 2  # the repeat did not reset the episode
    assert load(episode_id, 42).success
    assert forward("load-3")["step"] == 1  # a new id loads it afresh
    unknown = load("no-such-episode", 43)
    assert not unknown.success and "no-such-episode" in unknown.message
    assert load("", 44, index=0).success  # by its position in the list
    assert forward("load-4")["step"] == 1
    outside = load("", 45, index=1)
    assert not outside.success and "episode index 1 is outside the bridge's 1 episodes" in outside.message
    assert bridge.proc.poll() is None

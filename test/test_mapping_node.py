"""The mapping node on bridge-like frames (in-process, rclpy), malformed-input survival, and
the explore graph's three processes end to end."""
import math
import time
from pathlib import Path

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy")

from geometry_msgs.msg import PoseStamped  # noqa: E402
from nav_msgs.msg import OccupancyGrid  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy, qos_profile_sensor_data  # noqa: E402
from sensor_msgs.msg import CameraInfo, Image, PointCloud2  # noqa: E402
from std_msgs.msg import Float32MultiArray  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402

from conftest import wait_for  # noqa: E402
from personal.msg import EpisodeDescriptor, FeatureMapDescriptor, MapStatus  # noqa: E402

LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)


@pytest.fixture(scope="module")
def observations():
    from personal.sim.backends.base import Action, AgentState, CameraSpec
    from personal.sim.backends.synthetic import SyntheticBackend
    from personal.sim.toy_scene import two_room_scene

    be = SyntheticBackend(camera=CameraSpec(width=160, height=120))
    be.load_scene(two_room_scene())
    obs = [be.reset(state=AgentState(2.0, 1.0, 0.0, 0.0))]
    for a in (Action.TURN_LEFT, Action.TURN_LEFT, Action.MOVE_FORWARD, Action.TURN_LEFT):
        obs.append(be.step(a))
    return obs


def image(array, encoding, stamp, frame="camera_color_optical_frame"):
    msg = Image()
    msg.header.stamp, msg.header.frame_id = stamp, frame
    msg.height, msg.width = array.shape[:2]
    msg.encoding = encoding
    msg.step = array.nbytes // array.shape[0]
    msg.data = np.ascontiguousarray(array).tobytes()
    return msg


def frame_msgs(obs, stamp):
    from scipy.spatial.transform import Rotation

    K = obs.K
    info = CameraInfo()
    info.header.stamp = stamp
    info.height, info.width = obs.depth.shape
    info.k = K.reshape(-1).tolist()
    pose = PoseStamped()
    pose.header.stamp, pose.header.frame_id = stamp, "map"
    T = obs.T_map_camera
    pose.pose.position.x, pose.pose.position.y, pose.pose.position.z = (float(v) for v in T[:3, 3])
    q = Rotation.from_matrix(T[:3, :3]).as_quat()
    pose.pose.orientation.x, pose.pose.orientation.y, pose.pose.orientation.z, pose.pose.orientation.w = (float(v) for v in q)
    depth = image(np.round(obs.depth * 1000).astype(np.uint16), "16UC1", stamp)
    ids = image(obs.instance_ids.astype(np.int32), "32SC1", stamp)
    return info, pose, depth, ids


class Feeder:
    def __init__(self, ctx):
        self.node = ctx.make_node("test_feeder")
        sd = qos_profile_sensor_data
        n = self.node
        self.info = n.create_publisher(CameraInfo, "camera/color/camera_info", sd)
        self.pose = n.create_publisher(PoseStamped, "camera/pose", sd)
        self.depth = n.create_publisher(Image, "camera/aligned_depth_to_color/image_raw", sd)
        self.ids = n.create_publisher(Image, "camera/semantic/image_raw", sd)
        self.episode = n.create_publisher(EpisodeDescriptor, "episode", LATCHED)
        self.grids, self.status, self.features, self.clouds = [], [], [], []
        n.create_subscription(OccupancyGrid, "map", self.grids.append, LATCHED)
        n.create_subscription(MapStatus, "map/status", self.status.append, 10)
        n.create_subscription(Float32MultiArray, "feature_map", self.features.append, LATCHED)
        n.create_subscription(PointCloud2, "map/cloud", self.clouds.append, 1)
        self.save = n.create_client(Trigger, "map/save")
        self.reset = n.create_client(Trigger, "map/reset")

    def send(self, obs, t, depth=None, pose=None, ids=True, info=None):
        stamp = rclpy.time.Time(seconds=t).to_msg()
        i, p, d, s = frame_msgs(obs, stamp)
        self.info.publish(info or i)
        if ids:
            self.ids.publish(s)
        self.depth.publish(depth or d)
        if pose is not False:
            self.pose.publish(pose or p)

    def wait_matched(self, timeout: float = 60.0) -> None:
        """Until the mapping node subscribes to every sensor topic (best effort: a frame sent
        before that is lost)."""
        wait_for(lambda: all(p.get_subscription_count() > 0 for p in (self.info, self.pose, self.depth)), timeout)

    def call(self, client):
        assert client.wait_for_service(timeout_sec=10.0)
        fut = client.call_async(Trigger.Request())
        return wait_for(lambda: fut.result() if fut.done() else None, 20.0)


def make_mapping(ctx, tmp_path, **params):
    from nodes.mapping_node import MappingNode

    overrides = [Parameter(k, value=v) for k, v in {"maps_dir": str(tmp_path / "maps"), "publish_period": 0.1,
                                                     "stride": 1, **params}.items()]
    return ctx.add_node(MappingNode(context=ctx.context, parameter_overrides=overrides))


def occupied_free(grid):
    data = np.asarray(grid.data, np.int8)
    return int((data == 100).sum()), int((data == 0).sum())


def test_node_maps_bridge_frames_and_survives_bad_input(ros_context, observations, tmp_path):
    node = make_mapping(ros_context, tmp_path, encoder="none")
    feed = Feeder(ros_context)
    feed.wait_matched()
    t = 100.0
    feed.send(observations[0], t)
    wait_for(lambda: feed.status and feed.grids, 10.0)
    st = feed.status[-1]  # typed map/status: the frame's stamp, the base pose under the camera
    assert st.frames == 1 and st.header.stamp.sec == 100 and st.header.frame_id == "map"
    assert math.isfinite(st.x) and math.isfinite(st.yaw)
    occ0, free0 = occupied_free(feed.grids[-1])
    assert occ0 > 0 and free0 > 100
    frames = node.live.frames
    # malformed: wrong depth encoding, depth of the wrong size, zero quaternion, no pose at all
    o = observations[1]
    stamp = rclpy.time.Time(seconds=t + 1).to_msg()
    feed.send(o, t + 1, depth=image(np.zeros((120, 160, 3), np.uint8), "rgb8", stamp))
    feed.send(o, t + 2, depth=image(np.zeros((60, 80), np.uint16), "16UC1", rclpy.time.Time(seconds=t + 2).to_msg()))
    _, bad_pose, _, _ = frame_msgs(o, rclpy.time.Time(seconds=t + 3).to_msg())
    q = bad_pose.pose.orientation
    q.x = q.y = q.z = q.w = 0.0  # not a rotation
    feed.send(o, t + 3, pose=bad_pose)
    feed.send(o, t + 4, pose=False)  # stale: its pose never comes
    wait_for(lambda: node.skips.total >= 3, 10.0)
    assert node.live.frames == frames
    reasons = " | ".join(node.skips.recent)
    assert "depth encoding 'rgb8'" in reasons and "does not match camera_info" in reasons and "quaternion" in reasons
    # still alive and mapping: the next good frames integrate
    for k, o in enumerate(observations[1:], start=5):
        feed.send(o, t + k)
        time.sleep(0.05)
    wait_for(lambda: node.live.frames >= frames + 3, 10.0)
    # the frame without a pose was dropped once newer frames showed it would never match
    wait_for(lambda: any("pose (stale or missing)" in r for r in node.skips.recent), 10.0)
    wait_for(lambda: feed.clouds and feed.clouds[-1].width > 100, 10.0)
    occ1, free1 = occupied_free(feed.grids[-1])
    assert free1 > free0  # turning left revealed more floor
    res = feed.call(feed.save)
    assert res.success and Path(res.message, "occupancy.yaml").exists() and not Path(res.message, "features.yaml").exists()
    assert feed.call(feed.reset).success
    wait_for(lambda: occupied_free(feed.grids[-1]) == (0, 0), 10.0)


def test_node_oracle_feature_map_topics(ros_context, observations, tmp_path):
    from personal.grounding.map_wire import descriptor_from_msg, map_from_wire, parse_descriptor
    from personal.interfaces.convert import from_dict

    node = make_mapping(ros_context, tmp_path, encoder="oracle")
    feed = Feeder(ros_context)
    descriptors = []
    feed.node.create_subscription(FeatureMapDescriptor, "feature_map/descriptor", descriptors.append, LATCHED)
    episode = {"episode_id": "e0", "scene_id": "toy_two_rooms", "split": "easy", "query": "q", "summary": "s",
               "extracted_summary": [], "owner": "o", "object_category": "box", "target_object_ids": [], "description": [],
               "target_positions": [], "start_position": {"x": 2.0, "y": 1.0, "z": 0.0}, "start_yaw": 0.0,
               "floor_id": 0, "geodesic_distance": 1.0, "index": 0, "count": 1}
    feed.episode.publish(from_dict(EpisodeDescriptor, episode))
    wait_for(lambda: node.live.scene_id == "toy_two_rooms" and node.live.encoder.captions, 60.0)
    for k, o in enumerate(observations):
        feed.send(o, 200.0 + k)
        time.sleep(0.05)
    wait_for(lambda: node.live.frames >= 3 and feed.features and descriptors, 60.0)
    assert descriptors[-1].header.frame_id == "map"
    desc = parse_descriptor(descriptor_from_msg(descriptors[-1]))
    assert desc["encoder"]["name"] == "oracle-captions-minilm" and desc["scene_id"] == "toy_two_rooms"
    msg = feed.features[-1]
    view = map_from_wire(msg.data, [d.size for d in msg.layout.dim], desc)
    assert view.features.shape[2] == 384 and view.valid.sum() >= 1
    res = feed.call(feed.save)
    assert res.success and res.message.endswith("toy_two_rooms") and Path(res.message, "features.yaml").exists()


@pytest.mark.timeout(180)
def test_explore_graph_processes_save_maps(run_node, tmp_path):
    maps = tmp_path / "maps"
    bridge = run_node("sim_bridge.bridge_node", "sim_bridge", {"seed": 3, "scenes": 1, "episodes_per_scene": 1,
                                                               "split": "easy", "rate": 10.0})
    mapping = run_node("nodes.mapping_node", "mapping", {"encoder": "none", "maps_dir": str(maps)})
    explore = run_node("nodes.explore_node", "explore", {"max_steps": 12})
    explore.wait_for_log("exploration finished", timeout=150)
    log = explore.wait_for_log("map/save", timeout=30)
    assert "step budget spent; 12 steps" in log
    wait_for(lambda: explore.proc.poll() is not None, 60)
    assert explore.proc.returncode == 0
    saved = maps / "synth_00003"
    assert (saved / "occupancy.yaml").exists() and (saved / "occupancy.pgm").exists() and (saved / "map.yaml").exists()
    assert "skipped input" not in mapping.log()
    assert bridge.proc.poll() is None

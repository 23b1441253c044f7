"""Live view (viz:=foxglove): ROS messages -> Foxglove schemas over foxglove-sdk's WebSocket
server, read back by a client speaking the Foxglove protocol (subscribe, receive, decode with
the advertised protobuf schema). In-process for the conversions; the viz node as a process fed
over ROS (its own domain and a child graph's domain) for the wiring."""
import itertools
import math
import struct

import numpy as np
import pytest

from personal.graphs import GRAPHS, get_graph, parse_assignments

pytestmark = pytest.mark.timeout(120)


# -- ROS messages of every kind the live view forwards --------------------------------------------

def ros_messages():
    from builtin_interfaces.msg import Time
    from geometry_msgs.msg import Point, TransformStamped
    from nav_msgs.msg import OccupancyGrid
    from sensor_msgs.msg import CameraInfo, Image, PointCloud2, PointField
    from tf2_msgs.msg import TFMessage
    from visualization_msgs.msg import Marker, MarkerArray

    from personal.msg import AgentState, AivVerdict, GroundingResult

    stamp = Time(sec=12, nanosec=500)
    rgb = Image(height=2, width=3, encoding="rgb8", step=9, data=list(range(18)))
    rgb.header.stamp, rgb.header.frame_id = stamp, "camera_color_optical_frame"
    depth_m = np.array([[0.5, 1.25, np.nan], [2.0, 0.0, 3.5]], np.float32)
    depth = Image(height=2, width=3, encoding="32FC1", step=12, data=list(depth_m.tobytes()))
    depth.header.frame_id = "camera_color_optical_frame"
    info = CameraInfo(width=3, height=2, distortion_model="plumb_bob")
    info.k = [100.0, 0.0, 1.5, 0.0, 100.0, 1.0, 0.0, 0.0, 1.0]
    pts = np.array([[1.0, 2.0, 0.5], [3.0, -1.0, 1.5]], np.float32)
    cloud = PointCloud2(height=1, width=2, point_step=12, row_step=24, is_dense=True,
                        fields=[PointField(name=n, offset=4 * i, datatype=7, count=1) for i, n in enumerate("xyz")],
                        data=list(pts.tobytes()))
    cloud.header.frame_id = "map"
    grid = OccupancyGrid()
    grid.header.frame_id = "map"
    grid.info.width, grid.info.height, grid.info.resolution = 3, 2, 0.5
    grid.info.origin.position.x = -1.0
    grid.info.origin.orientation.w = 1.0
    grid.data = [0, 100, -1, 50, 0, 0]
    sim = OccupancyGrid(info=grid.info)
    sim.header.frame_id = "map"
    sim.data = [100, 50, -1, 0, 75, 25]  # cosine 1, 0, unknown, -1, 0.5, -0.5
    frontier = Marker(ns="frontiers", id=0, type=Marker.SPHERE_LIST, action=Marker.ADD,
                      points=[Point(x=1.0, y=1.0), Point(x=2.0, y=0.5)])
    frontier.header.frame_id = "map"
    frontier.scale.x = 0.2
    frontier.color.g = frontier.color.a = 1.0
    results = [GroundingResult(request_id="r1", episode_id="ep7", method=m, ok=True, index=i, count=2,
                               points=[Point(x=float(i), y=2.0), Point(x=3.0, y=float(i))], scores=[0.8 - i / 10, 0.4],
                               owner="Lily", phrases=["Lily owns the backpack in the bedroom"]) for i, m in enumerate(("qs", "rpg-owner"))]
    agent = [AgentState(episode_id="ep7", position=Point(x=0.5 * k, y=1.0), yaw=0.1 * k, step=k) for k in range(3)]
    verdict = AivVerdict(request_id="v", episode_index=4, step=2, decision="Yes", forced_decision="Yes", stop=True, vote=0.75,
                         attribute_names=["colour"], attribute_expected=["red"], attribute_status=["Matched"])
    tf = TransformStamped(child_frame_id="base_link")
    tf.header.frame_id = "map"
    tf.transform.translation.x = 1.5
    tf.transform.rotation.w = 1.0
    return dict(rgb=rgb, depth=depth, info=info, cloud=cloud, grid=grid, sim=sim, frontiers=MarkerArray(markers=[frontier]),
                results=results, agent=agent, verdict=verdict, tf=TFMessage(transforms=[tf]))


def check_agent_frames(frames: dict) -> None:
    """The agent's pose is the last of the three states and its path holds all three, in order."""
    pose, path = frames["/agent/pose"][-1], frames["/agent/path"][-1]
    assert pose.schema == "foxglove.PoseInFrame" and pose.message.pose.position.x == 1.0
    assert path.schema == "foxglove.PosesInFrame" and [p.position.x for p in path.message.poses] == [0.0, 0.5, 1.0]


def check_frames(frames: dict, agent: bool = True) -> None:
    """One decoded frame per Foxglove topic, with the content of the ROS message it came from."""
    first = {t: fs[-1].message for t, fs in frames.items()}
    schemas = {t: fs[-1].schema for t, fs in frames.items()}
    img = first["/camera/color/image_raw"]
    assert schemas["/camera/color/image_raw"] == "foxglove.RawImage"
    assert (img.width, img.height, img.encoding, img.frame_id) == (3, 2, "rgb8", "camera_color_optical_frame")
    assert list(img.data) == list(range(18)) and img.timestamp.seconds == 12
    d = first["/camera/aligned_depth_to_color/image_raw"]
    assert d.encoding == "16UC1" and struct.unpack("<6H", d.data) == (500, 1250, 0, 2000, 0, 3500)
    cal = first["/camera/color/camera_info"]
    assert schemas["/camera/color/camera_info"] == "foxglove.CameraCalibration" and list(cal.K)[0] == 100.0 and cal.width == 3
    pc = first["/map/cloud"]
    assert schemas["/map/cloud"] == "foxglove.PointCloud" and pc.point_stride == 12 and [f.name for f in pc.fields] == list("xyz")
    assert np.allclose(np.frombuffer(pc.data, np.float32).reshape(-1, 3), [[1, 2, 0.5], [3, -1, 1.5]])
    occ = first["/map"]
    assert schemas["/map"] == "foxglove.Grid" and occ.column_count == 3 and occ.cell_size.x == 0.5
    assert list(occ.data) == [0, 100, 255, 50, 0, 0] and occ.pose.position.x == -1.0 and occ.fields[0].name == "occupancy"
    heat = np.frombuffer(first["/grounding/similarity"].data, "<f4")
    assert first["/grounding/similarity"].fields[0].name == "similarity"
    assert np.allclose(heat[[0, 1, 3, 4, 5]], [1.0, 0.0, -1.0, 0.5, -0.5]) and math.isnan(heat[2])
    fr = first["/map/frontiers"]
    assert schemas["/map/frontiers"] == "foxglove.SceneUpdate" and len(fr.entities[0].spheres) == 2
    pred = first["/grounding/predictions"]
    assert schemas["/grounding/predictions"] == "foxglove.SceneUpdate"
    assert [e.id for e in pred.entities] == ["prediction/qs", "prediction/rpg-owner"]
    assert [t.text for t in pred.entities[0].texts] == ["qs #1 0.80", "qs #2 0.40"]
    assert pred.entities[1].spheres[0].pose.position.x == 1.0 and pred.deletions  # the previous request is cleared
    if agent:
        check_agent_frames(frames)
    v = first["/aiv/verdicts"]
    assert schemas["/aiv/verdicts"] == "foxglove.Log" and "step 2: Yes (stop)" in v.message and "colour=red:Matched" in v.message
    tf = first["/tf"]
    assert schemas["/tf"] == "foxglove.FrameTransforms"
    assert tf.transforms[0].child_frame_id == "base_link" and tf.transforms[0].translation.x == 1.5


ALL_TOPICS = ["/camera/color/image_raw", "/camera/aligned_depth_to_color/image_raw", "/camera/color/camera_info", "/map/cloud", "/map", "/grounding/similarity",
              "/map/frontiers", "/grounding/predictions", "/agent/pose", "/agent/path", "/aiv/verdicts", "/tf"]


def log_every_topic(server, stop) -> None:
    """Log one message of every forwarded kind every 50 ms until ``stop`` (the server only sends to
    subscribers: keep logging until the client has them)."""
    from personal.viz import convert as cv

    m = ros_messages()
    while not stop.is_set():
        server.log("/camera/color/image_raw", cv.image(m["rgb"]))
        server.log("/camera/aligned_depth_to_color/image_raw", cv.image(m["depth"]))
        server.log("/camera/color/camera_info", cv.camera_calibration(m["info"]))
        server.log("/map/cloud", cv.point_cloud(m["cloud"]))
        server.log("/map", cv.occupancy_grid(m["grid"]))
        server.log("/grounding/similarity", cv.similarity_grid(m["sim"]))
        server.log("/map/frontiers", cv.marker_array(m["frontiers"]))
        server.log("/grounding/predictions", cv.predictions(m["results"]))
        a = m["agent"][-1]
        server.log("/agent/pose", cv.agent_pose(a.position.x, a.position.y, a.yaw))
        server.log("/agent/path", cv.agent_path([(s.position.x, s.position.y, s.yaw) for s in m["agent"]]))
        server.log("/aiv/verdicts", cv.log(cv.verdict_text(m["verdict"]), "verifier"))
        server.log("/tf", cv.transforms(m["tf"]))
        stop.wait(0.05)


def test_every_schema_round_trips_through_the_foxglove_protocol():
    """Conversions logged on a real foxglove-sdk server, received and decoded by a protocol client."""
    import threading

    from personal.viz.client import probe
    from personal.viz.server import VizServer

    server = VizServer(port=0)
    try:
        stop = threading.Event()
        thread = threading.Thread(target=log_every_topic, args=(server, stop), daemon=True)
        thread.start()
        got = probe(server.url, ALL_TOPICS, count=1, duration=20)
        stop.set()
        thread.join()
    finally:
        server.stop()
    assert set(got.frames) == set(ALL_TOPICS), f"missing {set(ALL_TOPICS) - set(got.frames)}"
    check_frames(got.frames)


@pytest.mark.parametrize("offered", [["foxglove.websocket.v1"], ["foxglove.sdk.v1"]])
def test_either_foxglove_subprotocol_is_accepted(offered):
    """issue 27, finding 4: a client offering only the published foxglove.websocket.v1 got HTTP 400."""
    import asyncio
    import json

    import websockets

    from personal.viz.server import VizServer

    async def hello(url):
        async with websockets.connect(url, subprotocols=offered, open_timeout=10) as ws:
            return ws.subprotocol, json.loads(await asyncio.wait_for(ws.recv(), 10))

    server = VizServer(port=0)
    try:
        subprotocol, first = asyncio.run(hello(server.url))
    finally:
        server.stop()
    assert subprotocol == offered[0] and first["op"] == "serverInfo"


def test_connected_clients_see_the_server_stop():
    """Through the relay too, a client learns that the live view went away (the graph ended)."""
    import asyncio

    import websockets

    from personal.viz.server import VizServer

    server = VizServer(port=0)

    async def run():
        async with websockets.connect(server.url, subprotocols=["foxglove.websocket.v1"], open_timeout=10) as ws:
            await asyncio.wait_for(ws.recv(), 10)  # serverInfo
            await asyncio.get_running_loop().run_in_executor(None, server.stop)
            with pytest.raises(websockets.ConnectionClosed):
                while True:
                    await asyncio.wait_for(ws.recv(), 10)

    asyncio.run(run())


def test_foxglove_ws_protocol_client_receives_and_decodes_every_channel():
    """The published protocol's own client (npm @foxglove/ws-protocol FoxgloveClient, under node;
    scripts/bootstrap.sh installs both) subscribes to every channel of the live view and decodes each
    message with the advertised protobuf schema."""
    import json
    import shutil
    import subprocess
    import threading
    from pathlib import Path

    from personal.viz.server import VizServer

    node_dir = Path(__file__).resolve().parent / "node"
    assert shutil.which("node") and (node_dir / "node_modules" / "@foxglove" / "ws-protocol").is_dir(), \
        "node or @foxglove/ws-protocol missing: run scripts/bootstrap.sh"
    server = VizServer(port=0)
    try:
        stop = threading.Event()
        thread = threading.Thread(target=log_every_topic, args=(server, stop), daemon=True)
        thread.start()
        proc = subprocess.run(["node", str(node_dir / "foxglove_probe.js"), server.url, "30", "2"],
                              capture_output=True, text=True, timeout=60)
        stop.set()
        thread.join()
    finally:
        server.stop()
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    got = json.loads(proc.stdout)
    assert got["subprotocol"] == "foxglove.websocket.v1" and got["serverInfo"]["name"] == "personal"
    assert not got["errors"], got["errors"]
    topics = got["topics"]
    assert set(topics) == set(ALL_TOPICS) and all(t["count"] >= 2 for t in topics.values()), \
        {k: v["count"] for k, v in topics.items()}
    rgb = topics["/camera/color/image_raw"]
    assert rgb["schemaName"] == "foxglove.RawImage" and rgb["first"]["width"] == 3 and rgb["first"]["encoding"] == "rgb8"
    assert topics["/map"]["first"]["column_count"] == 3 and topics["/camera/color/camera_info"]["first"]["width"] == 3
    assert topics["/tf"]["schemaName"] == "foxglove.FrameTransforms"


def test_a_late_subscriber_gets_the_latest_message():
    """Like a latched ROS topic: a map logged before the app connected is sent on subscribe."""
    from personal.viz import convert as cv
    from personal.viz.client import probe
    from personal.viz.server import VizServer

    server = VizServer(port=0)
    try:
        server.log("/map", cv.occupancy_grid(ros_messages()["grid"]))
        got = probe(server.url, ["/map"], count=1, duration=10)
    finally:
        server.stop()
    assert got.frames["/map"][0].message.column_count == 3


def test_viz_argument_adds_the_viz_node_to_every_graph():
    for name, graph in GRAPHS.items():
        assert "viz" in graph.arguments and "viz_port" in graph.arguments, name
        assert "viz" not in [n.name for n in graph.resolve()], name
        nodes = {n.name: n for n in graph.resolve(parse_assignments(["viz:=foxglove", "viz_port:=9001"]))}
        assert nodes["viz"].parameters["port"] == 9001 and nodes["viz"].spec.module == "nodes.viz_node", name
    loco = {n.name: n for n in get_graph("locobot").resolve(parse_assignments(["viz:=foxglove", "camera:=interbotix", "realsense:=4.55"]))}
    assert loco["viz"].namespace == "locobot"
    assert ("camera/color/image_raw", "camera/camera/color/image_raw") in loco["viz"].remappings
    pog = {n.name: n for n in get_graph("pog_eval").resolve(parse_assignments(["viz:=foxglove"]))}
    assert pog["viz"].parameters["follow_domain_topic"] == "viz/child_domain"


def test_every_graph_has_a_foxglove_layout():
    """Shipped layouts are what personal.viz.layouts builds, and show only topics the viz node sends."""
    import json
    from pathlib import Path

    from personal.viz.layouts import layout_for

    root = Path(__file__).resolve().parents[1] / "viz"
    forwarded = set(ALL_TOPICS) | {"/nav/occupancy", "/grounding/log", "/aiv/capture/rgb", "/perm/agentview_image", "/home/log",
                                   "/memory/objects"}
    for name in GRAPHS:
        text = (root / "layouts" / f"{name}.json").read_text()
        assert text == layout_for(name).to_json() + "\n", f"viz/layouts/{name}.json is stale: python -m personal.viz.layouts"
        topics = set(_layout_topics(json.loads(text)))
        assert topics and topics <= forwarded, (name, topics - forwarded)
    rviz = (root / "personal.rviz").read_text()
    assert "Fixed Frame: map" in rviz and "/grounding/similarity" in rviz and "/map/cloud" in rviz


def _layout_topics(doc):
    if isinstance(doc, dict):
        for k, v in doc.items():
            if k in ("imageTopic", "topicToRender") and isinstance(v, str):
                yield v
            elif k == "topics" and isinstance(v, dict):
                yield from v
            else:
                yield from _layout_topics(v)
    elif isinstance(doc, list):
        for v in doc:
            yield from _layout_topics(v)


@pytest.mark.timeout(90)
def test_viz_node_forwards_ros_topics_and_a_child_domain(ros_context, run_node):
    """The viz node as a process: ROS topics of every kind in, Foxglove frames out; then the topics
    of a child graph on another ROS domain once it is announced on viz/child_domain."""
    import socket

    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
    from geometry_msgs.msg import TransformStamped  # noqa: F401
    from nav_msgs.msg import OccupancyGrid
    from sensor_msgs.msg import CameraInfo, Image, PointCloud2
    from std_msgs.msg import Int32
    from tf2_msgs.msg import TFMessage
    from visualization_msgs.msg import MarkerArray

    from conftest import RosTestContext, wait_for
    from personal.msg import AgentState, AivVerdict, GroundingResult
    from personal.ros_env import claim_domain_id
    from personal.viz.client import probe

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    viz = run_node("nodes.viz_node", "viz", {"port": port, "image_rate_hz": 0.0, "follow_domain_topic": "viz/child_domain"})
    viz.wait_for_log("Foxglove live view on", timeout=40)
    latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    reliable = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
    node = ros_context.make_node("viz_feeder")
    m = ros_messages()
    pubs = [(node.create_publisher(Image, "camera/color/image_raw", qos_profile_sensor_data), m["rgb"]),
            (node.create_publisher(Image, "camera/aligned_depth_to_color/image_raw", qos_profile_sensor_data), m["depth"]),
            (node.create_publisher(CameraInfo, "camera/color/camera_info", qos_profile_sensor_data), m["info"]),
            (node.create_publisher(PointCloud2, "map/cloud", 1), m["cloud"]),
            (node.create_publisher(OccupancyGrid, "map", latched), m["grid"]),
            (node.create_publisher(OccupancyGrid, "grounding/similarity", latched), m["sim"]),
            (node.create_publisher(MarkerArray, "map/frontiers", reliable), m["frontiers"]),
            (node.create_publisher(AivVerdict, "aiv/verdict", reliable), m["verdict"]),
            (node.create_publisher(TFMessage, "/tf", reliable), m["tf"])]
    results = node.create_publisher(GroundingResult, "grounding/result", reliable)
    agent = node.create_publisher(AgentState, "agent_state", reliable)

    rounds = itertools.count()

    def feed():
        for pub, msg in pubs:
            pub.publish(msg)
        for r in m["results"]:
            results.publish(r)
        episode = f"ep7-{next(rounds)}"  # a new episode each round restarts the path: a whole round reads [0, 0.5, 1]
        for a in m["agent"]:
            agent.publish(AgentState(episode_id=episode, position=a.position, yaw=a.yaw, step=a.step))

    timer = node.create_timer(0.2, feed)
    got = probe(f"ws://127.0.0.1:{port}", ALL_TOPICS, count=1, duration=40)
    assert set(got.frames) == set(ALL_TOPICS), f"missing {set(ALL_TOPICS) - set(got.frames)}\n{viz.log()[-3000:]}"
    check_frames({t: fs[:1] for t, fs in got.frames.items()}, agent=False)

    def whole_round_seen() -> bool:  # the first look may join mid-round (under load); a later one sees a whole round
        frames = probe(f"ws://127.0.0.1:{port}", ["/agent/pose", "/agent/path"], count=1, duration=1.5, connect_timeout=5).frames
        try:
            check_agent_frames({t: fs[:1] for t, fs in frames.items()})
        except (AssertionError, KeyError):
            return False
        return True

    wait_for(whole_round_seen, timeout=40, period=0.1)
    node.destroy_timer(timer)

    # a child graph on its own domain (as pog_eval's exploration runs): announced, then viewed
    domain, lock = claim_domain_id()
    child = None
    try:
        announce = node.create_publisher(Int32, "viz/child_domain", latched)
        announce.publish(Int32(data=domain))
        import rclpy
        from rclpy.context import Context

        child = Context()
        rclpy.init(context=child, domain_id=domain)
        child_node = rclpy.create_node("child_camera", context=child)
        image_pub = child_node.create_publisher(Image, "camera/color/image_raw", qos_profile_sensor_data)
        marked = Image(height=1, width=1, encoding="mono8", step=1, data=[42])

        def seen():
            image_pub.publish(marked)
            frames = probe(f"ws://127.0.0.1:{port}", ["/camera/color/image_raw"], count=1, duration=1.5, connect_timeout=5).frames
            return any(f.message.encoding == "mono8" for f in frames.get("/camera/color/image_raw", []))

        wait_for(seen, timeout=40, period=0.1)
        assert "viewing the child graph on ROS domain" in viz.log()
        child_node.destroy_node()
    finally:
        if child is not None:
            rclpy.try_shutdown(context=child)
        lock.close()


def test_memory_summary_becomes_labelled_objects_on_the_map():
    """The assistant layout's /memory/objects: one cube + label per object the memory has seen, at its
    last-seen point, with its owners; unseen objects listed, not drawn; round-trips Foxglove's schema."""
    from foxglove import messages as fm

    from personal.msg import MemoryObject, MemorySummary
    from personal.viz import convert as cv

    seen = MemoryObject(id=3, description="black backpack", category="backpack", owners=["Lily"],
                        provenance=["verification"], confidence=[0.9], seen=True)
    seen.last_seen.header.frame_id = "map"
    seen.last_seen.point.x, seen.last_seen.point.y = 2.5, -1.0
    unseen = MemoryObject(id=4, description="blue mug", owners=["Tom", "Anna"], provenance=["summary", "statement"], seen=False)
    import base64

    from personal.viz.client import message_class

    schema = fm.SceneUpdate.get_schema()  # decoded as a Foxglove client would: with the advertised schema
    decode = message_class({"encoding": schema.encoding, "schema": base64.b64encode(schema.data).decode(),
                            "schemaName": schema.name, "topic": "/memory/objects"}).FromString
    update = decode(cv.memory_objects(MemorySummary(household="h1", people=["Lily", "Tom", "Anna"],
                                                    objects=[seen, unseen])).encode())
    drawn = [e for e in update.entities if e.id.startswith("memory/object/")]
    assert [e.id for e in drawn] == ["memory/object/3"]
    assert drawn[0].texts[0].text == "black backpack — Lily (verification)"
    assert (drawn[0].cubes[0].pose.position.x, drawn[0].cubes[0].pose.position.y) == (2.5, -1.0)
    (listing,) = [e for e in update.entities if e.id == "memory/unseen"]
    meta = {kv.key: kv.value for kv in listing.metadata}
    assert meta["people"] == "Lily, Tom, Anna" and meta["unseen 1"] == "blue mug — Tom (summary), Anna (statement)"
    assert update.deletions  # the previous summary is cleared

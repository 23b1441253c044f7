"""rosbag2's own format, both ways, judged by the peer: rosbags (pure-Python rosbag2 reader and
writer) reads every message of our bags, and our reader reads every message of bags rosbags writes
in version 9 (Jazzy / Kilted) and 8, MCAP and sqlite3. Plus the layout details rosbag2's C++ reader
relies on (personal/bags/rosbag2_layout.py cites the upstream files)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from personal.bags import BagReader, BagWriter
from personal.bags.schema import message_definition

rclpy = pytest.importorskip("rclpy")
pytest.importorskip("rosbags")
from rclpy.serialization import deserialize_message, serialize_message  # noqa: E402
from sensor_msgs.msg import CameraInfo, Image  # noqa: E402

from bag_peers import rosbags_decode_all  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def _image(i: int, encoding="rgb8", step=15) -> Image:
    m = Image(height=4, width=5, encoding=encoding, step=step)
    m.header.frame_id = "camera_color_optical_frame"
    m.header.stamp.sec = i
    m.data = bytes((i + k) % 256 for k in range(4 * step))
    return m


def _locobot_bag(path: Path, n: int = 6) -> Path:
    """What a LoCoBot recording holds: RealSense colour / depth / camera info under the robot
    namespace, the Interbotix base's odometry, tf, and our own interfaces."""
    from nav_msgs.msg import Odometry
    from tf2_msgs.msg import TFMessage
    from geometry_msgs.msg import TransformStamped
    from personal.msg import AgentState, MapStatus

    with BagWriter(path) as w:
        topics = {
            "/locobot/camera/camera/color/image_raw": ("sensor_msgs/msg/Image", lambda i: _image(i)),
            "/locobot/camera/camera/aligned_depth_to_color/image_raw":
                ("sensor_msgs/msg/Image", lambda i: _image(i, "16UC1", 10)),
            "/locobot/camera/camera/color/camera_info":
                ("sensor_msgs/msg/CameraInfo", lambda i: CameraInfo(width=5, height=4, k=[1.0] * 9)),
            "/locobot/mobile_base/odom": ("nav_msgs/msg/Odometry", lambda i: Odometry(child_frame_id="base")),
            "/tf": ("tf2_msgs/msg/TFMessage", lambda i: TFMessage(transforms=[TransformStamped(child_frame_id="x")])),
            "/agent_state": ("personal/msg/AgentState", lambda i: AgentState()),
            "/map/status": ("personal/msg/MapStatus", lambda i: MapStatus(frames=i)),
        }
        for name, (type_name, _) in topics.items():
            w.add_topic(name, type_name)
        for i in range(n):
            for k, (name, (_, make)) in enumerate(topics.items()):
                w.write(name, serialize_message(make(i)), 1_000_000_000 + i * 100_000 + k)
    return path


def test_rosbags_decodes_every_message_of_a_locobot_style_bag(tmp_path):
    bag = _locobot_bag(tmp_path / "locobot")
    assert rosbags_decode_all(bag) == {name: 6 for name in BagReader(bag).topics}


def test_layout_is_rosbag2s(tmp_path):
    """Schema names, channel metadata and the rosbag2 metadata record, as mcap_storage.cpp writes
    and reads them (the C++ reader takes the topic type from the schema name)."""
    from mcap.reader import make_reader

    bag = _locobot_bag(tmp_path / "bag", n=1)
    with open(bag / "bag_0.mcap", "rb") as f:
        reader = make_reader(f)
        summary = reader.get_summary()
        assert reader.get_header().profile == "ros2"
        assert {s.name for s in summary.schemas.values()} >= {"sensor_msgs/msg/Image", "personal/msg/AgentState"}
        for channel in summary.channels.values():
            schema = summary.schemas[channel.schema_id]
            qos = yaml.safe_load(channel.metadata["offered_qos_profiles"])
            assert qos[0]["reliability"] == "reliable" and qos[0]["history"] == "keep_last"  # version 9: names
            assert channel.metadata["topic_type_hash"].startswith("RIHS01_"), schema.name
        (record,) = [m for m in reader.iter_metadata() if m.name == "rosbag2"]
    stored = yaml.safe_load(record.metadata["serialized_metadata"])
    on_disk = yaml.safe_load((bag / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    assert stored == on_disk and stored["version"] == 9
    topic = on_disk["topics_with_message_count"][0]["topic_metadata"]
    assert isinstance(topic["offered_qos_profiles"], list)  # version 9: a list, not a string
    assert topic["type_description_hash"].startswith("RIHS01_")


def _rosbags_bag(path: Path, version: int, storage: str) -> Path:
    """A bag written by rosbags' own writer: an image (best effort, as a camera offers), a latched
    camera info and one of our interfaces, typed from .msg text as rosbags users do."""
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.typesys import Stores, get_typestore, get_types_from_msg
    from rosbags.interfaces import Qos, QosDurability, QosHistory, QosLiveliness, QosReliability, QosTime

    store = get_typestore(Stores.ROS2_KILTED)
    store.register(get_types_from_msg(message_definition("personal/msg/MapStatus"), "personal/msg/MapStatus"))
    forever = QosTime(sec=9223372036, nsec=854775807)

    def qos(reliability, durability):
        return Qos(QosHistory.KEEP_LAST, 5, reliability, durability, forever, forever,
                   QosLiveliness.AUTOMATIC, forever, False)

    plugin = {"mcap": StoragePlugin.MCAP, "sqlite3": StoragePlugin.SQLITE3}[storage]
    with Writer(path, version=version, storage_plugin=plugin) as writer:
        image = writer.add_connection("/camera/color/image_raw", "sensor_msgs/msg/Image", typestore=store,
                                      offered_qos_profiles=[qos(QosReliability.BEST_EFFORT, QosDurability.VOLATILE)])
        info = writer.add_connection("/camera/color/camera_info", "sensor_msgs/msg/CameraInfo", typestore=store,
                                     offered_qos_profiles=[qos(QosReliability.RELIABLE, QosDurability.TRANSIENT_LOCAL)])
        status = writer.add_connection("/map/status", "personal/msg/MapStatus", typestore=store)
        for i in range(50):
            writer.write(image, 1_000 + 10 * i, serialize_message(_image(i)))
            writer.write(info, 1_001 + 10 * i, serialize_message(CameraInfo(width=i)))
            writer.write(status, 1_002 + 10 * i, serialize_message(__import__("personal.msg").msg.MapStatus(frames=i)))
    return path


@pytest.mark.parametrize("version,storage", [(9, "mcap"), (8, "mcap"), (9, "sqlite3")])
def test_our_reader_decodes_every_message_of_a_rosbags_bag(tmp_path, version, storage):
    from personal.msg import MapStatus

    bag = _rosbags_bag(tmp_path / "theirs", version, storage)
    reader = BagReader(bag)
    assert reader.version == version and reader.storage == storage
    types = {"/camera/color/image_raw": Image, "/camera/color/camera_info": CameraInfo, "/map/status": MapStatus}
    decoded = {}
    for msg in reader.messages():
        decoded.setdefault(msg.topic, []).append(deserialize_message(msg.data, types[msg.topic]))
    assert {t: len(v) for t, v in decoded.items()} == {t: 50 for t in types}
    assert [bytes(m.data) for m in decoded["/camera/color/image_raw"]] == [bytes(_image(i).data) for i in range(50)]
    assert [m.frames for m in decoded["/map/status"]] == list(range(50))
    assert reader.verify() == reader.verify(full=True) == {t: 50 for t in types}
    qos = {name: t.qos_profiles[0] for name, t in reader.topics.items() if t.qos_profiles}
    assert qos["/camera/color/image_raw"]["reliability"] == "best_effort"
    assert qos["/camera/color/camera_info"]["durability"] == "transient_local" and qos["/camera/color/camera_info"]["depth"] == 5
    # and the mcap_ros2 decoding path (pog_replay's frame log) works on their bag too
    assert [s.frames for _, s in reader.decoded_messages(["/map/status"])] == list(range(50))


def test_bag_info_on_a_version_9_bag_from_rosbags(tmp_path):
    """issue 27, finding 3: `personal bag info` crashed on version-9 list QoS."""
    bag = _rosbags_bag(tmp_path / "theirs", 9, "mcap")
    proc = subprocess.run([sys.executable, "-m", "personal", "bag", "info", str(bag)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "/camera/color/image_raw | sensor_msgs/msg/Image | 50 msgs | best_effort" in proc.stdout
    assert "metadata version 9" in proc.stdout


def test_our_bag_rewritten_by_rosbags_reads_back(tmp_path):
    """Round trip through the peer: rosbags re-writes our bag (version 9, its own writer) and ours
    reads every message bit for bit."""
    from rosbags.rosbag2 import Reader, StoragePlugin, Writer

    ours = _locobot_bag(tmp_path / "ours")
    theirs = tmp_path / "theirs"
    with Reader(ours) as src, Writer(theirs, version=9, storage_plugin=StoragePlugin.MCAP) as dst:
        conns = {c.id: dst.add_connection(c.topic, c.msgtype, msgdef=c.msgdef.data, rihs01=c.digest,
                                          offered_qos_profiles=c.ext.offered_qos_profiles) for c in src.connections}
        for conn, stamp, raw in src.messages():
            dst.write(conns[conn.id], stamp, raw)
    mine = [(m.topic, m.data) for m in BagReader(ours).messages()]
    back = [(m.topic, m.data) for m in BagReader(theirs).messages()]
    assert sorted(back) == sorted(mine) and len(mine) == 42

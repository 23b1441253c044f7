"""rosbag2 MCAP bags: library round trip, independent reader, bad input, live record/play."""
from __future__ import annotations

import os

import pytest
import yaml

from personal.bags import BagError, BagReader, BagWriter, message_definition

rclpy = pytest.importorskip("rclpy")
from rclpy.serialization import deserialize_message, serialize_message  # noqa: E402
from sensor_msgs.msg import Image  # noqa: E402
from std_msgs.msg import String  # noqa: E402


def _image(i: int) -> Image:
    m = Image(height=4, width=5, encoding="rgb8", step=15)
    m.header.frame_id = "camera_color_optical_frame"
    m.header.stamp.sec = i
    m.data = bytes((i + k) % 256 for k in range(60))
    return m


def _write_bag(path, n=10):
    with BagWriter(path) as w:
        w.add_topic("/camera/color/image_raw", "sensor_msgs/msg/Image")
        w.add_topic("/chatter", "std_msgs/msg/String")
        for i in range(n):
            w.write("/camera/color/image_raw", serialize_message(_image(i)), 1_000_000_000 + i * 1000)
            w.write("/chatter", serialize_message(String(data=f"hello {i}")), 1_000_000_500 + i * 1000)
    return path


def test_schema_has_dependencies_in_rosbag2_layout():
    text = message_definition("sensor_msgs/msg/Image")
    assert text.startswith("# This message contains an uncompressed image")
    assert "=" * 80 + "\nMSG: std_msgs/Header\n" in text
    assert "MSG: builtin_interfaces/Time" in text
    with pytest.raises(LookupError, match="nope_msgs/msg/Thing"):
        message_definition("nope_msgs/msg/Thing")


def test_round_trip_and_metadata(tmp_path):
    bag = _write_bag(tmp_path / "bag")
    meta = yaml.safe_load((bag / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    assert meta["storage_identifier"] == "mcap" and meta["message_count"] == 20
    assert {t["topic_metadata"]["name"]: t["message_count"] for t in meta["topics_with_message_count"]} == {
        "/camera/color/image_raw": 10, "/chatter": 10}
    reader = BagReader(bag)
    msgs = list(reader.messages())
    assert [m.log_time_ns for m in msgs] == sorted(m.log_time_ns for m in msgs)
    images = [deserialize_message(m.data, Image) for m in msgs if m.topic == "/camera/color/image_raw"]
    assert [bytes(im.data) for im in images] == [bytes(_image(i).data) for i in range(10)]
    assert "/chatter | std_msgs/msg/String | 10 msgs" in reader.info_text()


def test_independent_reader_decodes_every_message(tmp_path):
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    bag = _write_bag(tmp_path / "bag")
    counts = {}
    with open(bag / "bag_0.mcap", "rb") as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        for channel in reader.get_summary().channels.values():
            assert channel.message_encoding == "cdr" and "offered_qos_profiles" in channel.metadata
        for schema, channel, message, decoded in reader.iter_decoded_messages():
            assert schema.encoding == "ros2msg"
            counts[channel.topic] = counts.get(channel.topic, 0) + 1
            if channel.topic == "/chatter":
                assert decoded.data.startswith("hello ")
    meta = BagReader(bag)
    assert counts == {name: t.count for name, t in meta.topics.items()}


def test_missing_metadata_is_named(tmp_path):
    bag = _write_bag(tmp_path / "bag")
    (bag / "metadata.yaml").unlink()
    with pytest.raises(BagError, match="metadata.yaml"):
        BagReader(bag)


def test_truncated_bag_reports_file_after_readable_messages(tmp_path):
    bag = _write_bag(tmp_path / "bag", n=200)
    mcap_file = bag / "bag_0.mcap"
    data = mcap_file.read_bytes()
    mcap_file.write_bytes(data[: len(data) // 2])
    got = []
    with pytest.raises(BagError, match="bag_0.mcap"):
        for m in BagReader(bag).messages():
            got.append(m)


@pytest.mark.parametrize("damage", ["truncated", "empty", "not mcap", "fewer messages"])
def test_bag_info_checks_the_mcap_file_not_only_metadata(tmp_path, damage):
    """issue 15, finding 11: `personal bag info` read metadata.yaml only and called a broken file fine."""
    import subprocess
    import sys

    bag = _write_bag(tmp_path / "bag", n=200)
    mcap_file = bag / "bag_0.mcap"
    data = mcap_file.read_bytes()
    if damage == "fewer messages":  # a valid MCAP file that holds other counts than the metadata says
        meta = yaml.safe_load((bag / "metadata.yaml").read_text())
        meta["rosbag2_bagfile_information"]["topics_with_message_count"][1]["message_count"] = 250
        (bag / "metadata.yaml").write_text(yaml.safe_dump(meta))
    else:
        mcap_file.write_bytes({"truncated": data[: len(data) // 2], "empty": b"", "not mcap": b"hello " * 1000}[damage])
    with pytest.raises(BagError, match="bag_0.mcap|metadata.yaml"):
        BagReader(bag).verify()
    out = subprocess.run([sys.executable, "-m", "personal", "bag", "info", str(bag)], capture_output=True, text=True)
    assert out.returncode == 2 and "error:" in out.stderr and ("bag_0.mcap" in out.stderr or "metadata.yaml" in out.stderr), out
    good = _write_bag(tmp_path / "good", n=5)
    assert BagReader(good).verify() == BagReader(good).verify(full=True) == {"/camera/color/image_raw": 5, "/chatter": 5}


def test_writer_refuses_to_overwrite(tmp_path):
    bag = _write_bag(tmp_path / "bag")
    with pytest.raises(FileExistsError):
        BagWriter(bag)


def test_live_record_then_play(tmp_path, ros_context, run_node):
    from conftest import wait_for

    pub_node = ros_context.make_node("talker")
    pub = pub_node.create_publisher(String, "/chatter", 10)
    sent = iter(range(10_000))
    pub_node.create_timer(0.02, lambda: pub.publish(String(data=f"msg {next(sent)}")))

    bag = tmp_path / "rec"
    rec = run_node("nodes.bag_recorder_node", "bag_recorder",
                   {"output": str(bag), "topics": ["/chatter"], "max_messages": 15})
    wait_for(lambda: rec.proc.poll() is not None, timeout=120)  # start-up + discovery: only a bound
    assert rec.proc.returncode == 0, rec.log()
    recorded = [deserialize_message(m.data, String).data for m in BagReader(bag).messages()]
    assert len(recorded) == 15 and all(r.startswith("msg ") for r in recorded)

    got = []
    sub_node = ros_context.make_node("listener")
    sub_node.create_subscription(String, "/replayed", lambda m: got.append(m.data), 50)
    # an exact replay is the player's reliable mode (deep queues; it exits once every message is
    # acknowledged); wait_subscribers only bounds discovery: playback starts as soon as /replayed is matched
    play = run_node("nodes.bag_player_node", "bag_player",
                    {"bag": str(bag), "rate": 4.0, "remap": ["/chatter:=/replayed"], "wait_subscribers": 120.0,
                     "reliable": True})
    wait_for(lambda: play.proc.poll() is not None, timeout=180)
    assert play.proc.returncode == 0, play.log()
    assert "starting playback before every topic has a subscriber" not in play.log()
    wait_for(lambda: len(got) >= 15, timeout=30)
    assert got == recorded
    assert "played 15 messages, skipped 0" in play.log()


def test_record_graph_with_max_messages_stops_the_graph(tmp_path):
    """issue 15, finding 11: `bag record <graph> --max-messages N` stopped the recorder but left the graph running."""
    import subprocess
    import sys

    out = tmp_path / "bag"
    proc = subprocess.run([sys.executable, "-m", "personal", "bag", "record", "sim", "-o", str(out), "-t", "/odom",
                           "--max-messages", "5", "-a", "rate:=5.0"], capture_output=True, text=True, timeout=180)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-3000:]
    assert "required node bag_recorder ended: stopping the graph" in log
    assert BagReader(out).verify() == {"/odom": 5}


def test_rosbags_decodes_every_message_of_a_sim_recording(tmp_path):
    """issue 27, finding 1: rosbags found no schema in our bags (names without /msg/) and read 0 messages.
    Every topic the sim graph publishes, recorded by `bag record sim`, decoded by the peer."""
    import subprocess
    import sys

    pytest.importorskip("rosbags")
    from bag_peers import rosbags_decode_all

    out = tmp_path / "bag"
    proc = subprocess.run([sys.executable, "-m", "personal", "bag", "record", "sim", "-o", str(out),
                           "--max-messages", "60", "-a", "rate:=5.0"], capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    counts = rosbags_decode_all(out)
    assert sum(counts.values()) == 60 and counts == BagReader(out).verify()
    assert any("image" in t for t in counts), counts  # camera images among them, not only small messages


def test_recorder_stopped_mid_burst_keeps_what_it_was_sent(tmp_path, ros_context, run_node):
    """CI, 2026-12-06: a `pog_eval record_dir:=` bag whose metadata.yaml counted 85 messages per topic
    held 76 in its MCAP file. The graph's end SIGINTs the recorder while it still has a backlog; the
    KeyboardInterrupt landed inside the MCAP writer (a chunk written, its index not) and the queue was
    dropped. A stop must drain what was sent, and the file must hold exactly what the metadata says."""
    import signal

    from mcap.reader import make_reader
    from rclpy.qos import QoSProfile, ReliabilityPolicy

    from conftest import wait_for

    pub_node = ros_context.make_node("burst_talker")
    pub = pub_node.create_publisher(Image, "/burst", QoSProfile(depth=200, reliability=ReliabilityPolicy.RELIABLE))
    bag = tmp_path / "rec"
    rec = run_node("nodes.bag_recorder_node", "bag_recorder", {"output": str(bag), "topics": ["/burst"]})
    rec.wait_for_log("recording /burst", timeout=120)
    wait_for(lambda: pub.get_subscription_count() > 0, timeout=60)
    n = 60
    for i in range(n):  # ~300 KB each: the recorder (zstd chunks) falls behind a burst like this
        m = Image(height=240, width=640, encoding="16UC1", step=1280)
        m.header.stamp.sec = i
        m.data = bytes([i % 256]) * (240 * 1280)
        pub.publish(m)
    os.killpg(rec.proc.pid, signal.SIGINT)
    wait_for(lambda: rec.proc.poll() is not None, timeout=30)
    assert rec.proc.returncode == 0, rec.log()
    meta = yaml.safe_load((bag / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    with open(bag / meta["relative_file_paths"][0], "rb") as f:
        in_file = [msg.sequence for _, _, msg in make_reader(f).iter_messages()]
    assert meta["message_count"] == len(in_file) == n, rec.log()[-3000:]
    assert sorted(in_file) == list(range(n))

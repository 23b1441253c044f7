"""Hostile and damaged bags (issue 28, item 8): a corrupt zstd chunk is found by `bag info` and is a
clear error in `info --full` and `play`; a huge log-time gap does not make `play` wait for days and
SIGINT / SIGTERM stop it; the CLI's play / record nodes die with it; relative_file_paths outside the
bag are refused; message types from metadata are never imported as arbitrary modules."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
import yaml

from personal.bags import BagError, BagReader, BagWriter

rclpy = pytest.importorskip("rclpy")
from rclpy.serialization import serialize_message  # noqa: E402
from std_msgs.msg import String  # noqa: E402

from conftest import wait_for  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def _bag(path: Path, stamps_ns: list[int], size: int = 3000) -> Path:
    with BagWriter(path, chunk_size=16 * 1024) as w:
        w.add_topic("/chatter", "std_msgs/msg/String")
        for i, t in enumerate(stamps_ns):
            w.write("/chatter", serialize_message(String(data=f"msg {i} " + "x" * size)), t)
    return path


def _cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "personal", "bag", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)


def _corrupt_a_chunk(bag: Path) -> Path:
    """Overwrite bytes in the middle of the second chunk's zstd data (the file stays well-formed MCAP:
    summary, indexes and footer intact)."""
    from mcap.reader import make_reader

    mcap = next(bag.glob("*.mcap"))
    with open(mcap, "rb") as f:
        index = make_reader(f).get_summary().chunk_indexes[1]
    assert index.compression == "zstd"
    data = bytearray(mcap.read_bytes())
    middle = index.chunk_start_offset + index.chunk_length // 2
    data[middle:middle + 64] = bytes(64 * [0xA5])
    mcap.write_bytes(bytes(data))
    return mcap


def test_corrupt_zstd_chunk_is_reported_by_info_and_refused_by_full_info_and_play(tmp_path):
    bag = _bag(tmp_path / "bag", [1_000_000_000 + i * 1000 for i in range(60)])
    mcap = _corrupt_a_chunk(bag)
    with pytest.raises(BagError, match="corrupt chunk"):
        BagReader(bag).verify()
    with pytest.raises(BagError, match=str(mcap)):
        list(BagReader(bag).messages())
    info = _cli("info", str(bag))
    assert info.returncode == 2 and f"{mcap}: corrupt chunk at byte" in info.stderr, info.stdout + info.stderr
    full = _cli("info", "--full", str(bag))
    assert full.returncode == 2 and str(mcap) in full.stderr and "Traceback" not in full.stderr, full.stderr
    play = _cli("play", str(bag), "--rate", "0")
    assert play.returncode == 2 and str(mcap) in play.stderr and "Traceback" not in play.stderr, play.stderr


def test_player_node_stops_with_a_named_error_on_a_corrupt_chunk(tmp_path, run_node):
    """The graphs (bag_map) start the player node directly, without the CLI's check."""
    bag = _bag(tmp_path / "bag", [1_000_000_000 + i * 1000 for i in range(60)])
    mcap = _corrupt_a_chunk(bag)
    play = run_node("nodes.bag_player_node", "bag_player", {"bag": str(bag), "rate": 0.0})
    wait_for(lambda: play.proc.poll() is not None, timeout=60)
    assert play.proc.returncode == 2 and f"error: {mcap}: truncated or corrupt MCAP file" in play.log(), play.log()


def test_huge_log_time_gap_is_shortened(tmp_path, run_node):
    bag = _bag(tmp_path / "bag", [1_000_000_000, 1_000_000_000 + 10 ** 15, 1_000_000_001 + 10 ** 15], size=10)
    play = run_node("nodes.bag_player_node", "bag_player", {"bag": str(bag), "rate": 1.0, "max_gap_s": 1.0})
    wait_for(lambda: play.proc.poll() is not None, timeout=60)  # 11.6 days before the fix
    assert play.proc.returncode == 0, play.log()
    assert "log-time gap of 1000000.0 s before /chatter: shortened to max_gap_s = 1 s" in play.log()
    assert "played 3 messages" in play.log()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_play_honours_sigint_and_sigterm_while_waiting(tmp_path, ros_context, run_node, sig):
    bag = _bag(tmp_path / "bag", [1_000_000_000, 1_000_000_000 + 10 ** 15], size=10)
    got = []
    ros_context.make_node("listener").create_subscription(String, "/chatter", lambda m: got.append(m.data), 10)
    play = run_node("nodes.bag_player_node", "bag_player",
                    {"bag": str(bag), "rate": 1.0, "max_gap_s": 0.0, "wait_subscribers": 60.0})
    wait_for(lambda: got or play.proc.poll() is not None, timeout=90)
    assert got, play.log()  # the first message is out: the player now waits for the second
    t0 = time.monotonic()
    os.kill(play.proc.pid, sig)
    wait_for(lambda: play.proc.poll() is not None, timeout=10)
    assert time.monotonic() - t0 < 5 and play.proc.returncode == 130, play.log()


def _node_children(proc: subprocess.Popen, module: str) -> list[psutil.Process]:
    try:
        return [c for c in psutil.Process(proc.pid).children(recursive=True) if module in " ".join(c.cmdline())]
    except psutil.NoSuchProcess:
        return []


@pytest.mark.parametrize("command", ["play", "record"])
def test_cli_nodes_die_with_the_cli(tmp_path, command):
    """`bag play` / `bag record` used subprocess.call: a killed CLI left its node running."""
    if command == "play":
        bag = _bag(tmp_path / "bag", [1_000_000_000, 1_000_000_000 + 10 ** 15], size=10)
        args, module = ["play", str(bag), "--max-gap", "0"], "nodes.bag_player_node"
    else:
        args, module = ["record", "/nothing_here", "-o", str(tmp_path / "rec")], "nodes.bag_recorder_node"
    cli = subprocess.Popen([sys.executable, "-m", "personal", "bag", *args], cwd=ROOT, start_new_session=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        (node,) = wait_for(lambda: _node_children(cli, module), timeout=60)
        time.sleep(1.0)  # the node is up (rclpy initialised)
        cli.kill()  # SIGKILL: nothing in the CLI runs
        cli.wait(10)
        psutil.wait_procs([node], timeout=15)
        assert not node.is_running() or node.status() == psutil.STATUS_ZOMBIE, f"{module} outlived its CLI"
    finally:
        for child in _node_children(cli, module):
            child.kill()
        if cli.poll() is None:
            cli.kill()


def test_record_cli_closes_the_bag_on_sigint(tmp_path):
    out = tmp_path / "rec"
    cli = subprocess.Popen([sys.executable, "-m", "personal", "bag", "record", "/nothing_here", "-o", str(out)],
                           cwd=ROOT, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wait_for(lambda: _node_children(cli, "nodes.bag_recorder_node"), timeout=60)
    time.sleep(2.0)
    cli.send_signal(signal.SIGINT)
    log = cli.communicate(timeout=30)[0]
    assert cli.returncode == 0, log
    assert BagReader(out).verify() == {}


@pytest.mark.parametrize("rel", ["../outside.mcap", "/etc/hostname", "sub/../../outside.mcap", "link.mcap"])
def test_relative_file_paths_outside_the_bag_are_refused(tmp_path, rel):
    bag = _bag(tmp_path / "bag", [1_000_000_000 + i for i in range(5)], size=10)
    (tmp_path / "outside.mcap").write_bytes(next(bag.glob("*.mcap")).read_bytes())
    (bag / "link.mcap").symlink_to(tmp_path / "outside.mcap")
    meta_path = bag / "metadata.yaml"
    meta = yaml.safe_load(meta_path.read_text())
    meta["rosbag2_bagfile_information"]["relative_file_paths"] = [rel]
    meta_path.write_text(yaml.safe_dump(meta))
    with pytest.raises(BagError, match=f"{meta_path}: relative_file_paths entry .* outside the bag directory"):
        BagReader(bag)
    play = _cli("play", str(bag))
    assert play.returncode == 2 and "outside the bag directory" in play.stderr and "Traceback" not in play.stderr


def test_message_types_from_metadata_are_never_imported_as_modules(tmp_path, run_node):
    """`this/msg/X` in metadata.yaml made the player run `import this`."""
    bag = _bag(tmp_path / "bag", [1_000_000_000 + i for i in range(3)], size=10)
    meta_path = bag / "metadata.yaml"
    meta_path.write_text(meta_path.read_text().replace("type: std_msgs/msg/String", "type: this/msg/X"))
    probe = subprocess.run([sys.executable, "-c", (
        "import sys\n"
        "from personal.bags import BagReader\n"
        "from personal.bags.remap import import_message_class\n"
        f"reader = BagReader({str(bag)!r})\n"
        "for t in reader.topics.values():\n"
        "    try:\n"
        "        import_message_class(t.type)\n"
        "    except ImportError as e:\n"
        "        print('refused:', e)\n"
        "print('imported this:', 'this' in sys.modules)\n")], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert "refused: this/msg/X is not an installed interface" in probe.stdout, probe.stdout + probe.stderr
    assert "imported this: False" in probe.stdout and "Beautiful is better" not in probe.stdout
    play = run_node("nodes.bag_player_node", "bag_player", {"bag": str(bag), "rate": 0.0})
    wait_for(lambda: play.proc.poll() is not None, timeout=60)
    assert "skipping /chatter: unknown message type this/msg/X" in play.log(), play.log()
    assert "Beautiful is better" not in play.log()

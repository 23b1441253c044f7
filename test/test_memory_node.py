"""The memory node over ROS: a real rclpy service client tells and asks it, the latched summary
follows every change, a kill -9 loses nothing, and a damaged file stops it by name."""
import os
import signal
import time

import pytest

from conftest import wait_for

pytest.importorskip("rclpy")

SUMMARY = ("The blue mug on the kitchen counter belongs to Tom. Lily owns the black backpack under the bed. "
           "The green lamp on the desk is Tom's.")


def _call(node, srv_type, name, tries: int = 4, **fields):
    """One service call; asked again (new client) when unanswered: after a kill -9 the dead server's
    endpoints stay discovered until their lease ends, and a request can go to them alone."""
    for _ in range(tries):
        client = node.create_client(srv_type, name)
        assert client.wait_for_service(timeout_sec=20), f"{name} never came up"
        future = client.call_async(srv_type.Request(**fields))
        try:
            wait_for(future.done, 10 if tries > 1 else 30)
        except TimeoutError:
            continue
        finally:
            node.destroy_client(client)
        return future.result()
    raise AssertionError(f"{name}: no answer in {tries} tries")


def _latest_summary(ros_context):
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

    from personal.msg import MemorySummary

    got = []
    node = ros_context.make_node(f"summary_reader_{len(ros_context.nodes)}")
    qos = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    node.create_subscription(MemorySummary, "memory/summary", got.append, qos)
    return got


def test_memory_node_tells_answers_and_survives_kill_9(ros_context, run_node, tmp_path):
    from personal.srv import MemoryQuery, MemoryTell

    params = {"memory_dir": str(tmp_path), "household": "h7", "summary": SUMMARY}
    proc = run_node("nodes.memory_node", "memory", params)
    proc.wait_for_log("3 learned from the summary")
    client = ros_context.make_node("memory_client")
    summaries = _latest_summary(ros_context)
    wait_for(lambda: summaries and "lamp" in summaries[-1].summary, 20)
    assert summaries[-1].household == "h7" and sorted(summaries[-1].people) == ["Lily", "Tom"]

    told = _call(client, MemoryTell, "memory/tell", tries=1, statement="I gave my lamp to Anna.", speaker="Tom")
    assert told.success and "from Tom to Anna" in told.effects[0], told
    wait_for(lambda: "belongs to Anna" in summaries[-1].summary, 20)
    told = _call(client, MemoryTell, "memory/tell", tries=1, statement="The purple piano is gone.")
    assert not told.success and told.unresolved and "purple piano" in told.unresolved[0]
    told = _call(client, MemoryTell, "memory/tell", tries=1, statement="x" * 5000)
    assert not told.success and "at most" in told.message

    answer = _call(client, MemoryQuery, "memory/query", person="Anna")
    assert [o.description for o in answer.objects] == ["green lamp on the desk"] and list(answer.objects[0].owners) == ["Anna"]
    answer = _call(client, MemoryQuery, "memory/query", description="Lily's backpack")
    assert answer.objects[0].description == "black backpack under the bed" and answer.objects[0].provenance[0] == "summary"

    os.killpg(proc.proc.pid, signal.SIGKILL)
    proc.proc.wait(10)
    again = run_node("nodes.memory_node", "memory", params)
    log = again.wait_for_log("memory of household")
    assert "learned from the summary" not in log  # not seeded twice
    answer = _call(client, MemoryQuery, "memory/query", person="Anna")
    assert [o.description for o in answer.objects] == ["green lamp on the desk"]
    answer = _call(client, MemoryQuery, "memory/query", person="Tom")
    assert [o.description for o in answer.objects] == ["blue mug on the kitchen counter"]


def test_memory_node_refuses_a_damaged_file_by_name(run_node, tmp_path):
    (tmp_path / "h7.sqlite").write_bytes(b"not sqlite" * 500)
    proc = run_node("nodes.memory_node", "memory", {"memory_dir": str(tmp_path), "household": "h7"})
    wait_for(lambda: proc.proc.poll() is not None, 30)
    assert proc.proc.returncode != 0
    assert "h7.sqlite" in proc.log() and "not a readable household memory" in proc.log()
    assert (tmp_path / "h7.sqlite").read_bytes() == b"not sqlite" * 500


def test_summary_follows_writes_of_another_process_and_seeds_from_the_episode(ros_context, run_node, tmp_path):
    """The assistant writes the file directly (FindObject's found pose, rejected candidates): the
    latched summary follows it. ``seed_from_episode``: an empty memory learns the sim episode's summary."""
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

    from personal.memory.store import HouseholdMemory
    from personal.msg import EpisodeDescriptor

    latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    episode = ros_context.make_node("episode_source").create_publisher(EpisodeDescriptor, "episode", latched)
    episode.publish(EpisodeDescriptor(episode_id="ep1", summary=SUMMARY))
    proc = run_node("nodes.memory_node", "memory", {"memory_dir": str(tmp_path), "household": "h8", "seed_from_episode": True,
                                                    "watch_s": 0.2})
    proc.wait_for_log("3 objects learned from episode ep1")
    summaries = _latest_summary(ros_context)
    wait_for(lambda: summaries and "lamp" in summaries[-1].summary, 20)
    with HouseholdMemory(tmp_path / "h8.sqlite", create=False) as mem:  # as the assistant node does
        mug = next(o.id for o in mem.objects() if "mug" in o.description)
        mem.saw(mug, (1.5, 2.5, 0.0), source="verification")
        mem.assert_owner("Anna", mem.add_object("red kettle"), "perception")
    wait_for(lambda: "red kettle belongs to Anna" in summaries[-1].summary, 10)
    seen = next(o for o in summaries[-1].objects if "mug" in o.description)
    assert (seen.last_seen.point.x, seen.last_seen.point.y) == (1.5, 2.5) and seen.seen
    episode.publish(EpisodeDescriptor(episode_id="ep2", summary="The white piano belongs to Tom."))
    time.sleep(1.0)
    assert "ep2" not in proc.log() and "piano" not in summaries[-1].summary  # a memory that holds objects is not seeded again

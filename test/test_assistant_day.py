"""A scripted household day end to end in the simulator (nodes/assistant_day.py, the shipped
``leo-short`` script): a gift told to the memory node, a memory question, FindObject over the
changed memory (the navigation node is sent the memory's summary, naming the new owner), VerifyObject
of what FindObject found after its STOP, one routine step — all through real services and rclpy
action clients — and the report. On a ROS domain of its own: its topics are every assistant test's.

Nodes: sim bridge (seed 2, easy, ``continue_after_stop`` as in the assistant graph), navigation
(ORACLE caption encoder, to keep the run short; the verifier never reads instance ids), memory
(``seed_from_episode``), assistant, appliances."""
import json
import time

import pytest

from conftest import LoggedProcess, only_run, wait_for

pytest.importorskip("rclpy")
pytestmark = pytest.mark.timeout(240)


def _node(env, module, name, params):
    from personal.runner import node_command

    return LoggedProcess(node_command(module, name, parameters=params), name, env=env)


def _listen(ctx):
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

    from personal.msg import MemorySummary, NavigationStart

    node, got = ctx.make_node("day_listener"), {"start": [], "summary": []}
    latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    node.create_subscription(NavigationStart, "nav/start", got["start"].append,
                             QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE))
    node.create_subscription(MemorySummary, "memory/summary", got["summary"].append, latched)
    return got


def test_a_short_day_runs_end_to_end_and_reports_each_step(private_ros_context, tmp_path):
    from personal.assistant.cli import client_command

    ctx, env = private_ros_context
    procs = [_node(env, "sim_bridge.bridge_node", "sim_bridge", {"seed": 2, "scenes": 1, "episodes_per_scene": 1, "split": "easy",
                                                                  "rate": 2.0, "continue_after_stop": True}),
             _node(env, "nodes.navigation_node", "navigation", {"seed": 2, "scenes": 1, "autostart": False, "encoder": "oracle",
                                                                "reject_unsure": True}),
             _node(env, "nodes.memory_node", "memory", {"memory_dir": str(tmp_path), "household": "hh", "seed_from_episode": True,
                                                        "watch_s": 0.2}),
             _node(env, "nodes.assistant_node", "assistant", {"memory_dir": str(tmp_path), "household": "hh"}),
             _node(env, "nodes.appliance_node", "appliance_node", {"seed": 7})]
    got = _listen(ctx)
    try:
        procs[2].wait_for_log("objects learned from episode synth_00002_easy_000", timeout=60)
        procs[3].wait_for_log("assistant ready", timeout=60)
        cmd = client_command(["day", "leo-short", "--out", str(tmp_path / "runs"), "--wait", "60"])
        assert cmd[-5:-4] == ["leo-short"] and "nodes.assistant_day" in cmd  # `personal assistant day` runs this
        day = LoggedProcess(cmd, "assistant_day", env=env)
        wait_for(lambda: day.proc.poll() is not None, 200)
        logs = day.log() + "".join(p.log()[-2500:] for p in procs[1:4])
        assert day.proc.returncode == 0, logs
    finally:
        for p in procs:
            p.stop()
    run = only_run(tmp_path / "runs")
    report = json.loads((run / "day.json").read_text())
    steps = {r["kind"]: r for r in report["records"]}
    assert report["ok"] == report["steps"] == 5
    assert "from Leo to Rosa" in steps["tell"]["outcome"]["effects"][0]
    assert any("Leo → Rosa" in c for c in steps["tell"]["changes"])
    find, verify = steps["find"], steps["verify"]
    assert find["outcome"]["success"] and find["outcome"]["verified"] and len(find["feedback"]) > 20
    assert any("washing machine" in c and "seen at" in c for c in find["changes"])  # the found pose is in the memory
    # FindObject grounded with the memory's summary: the episode's own says the machine is Leo's
    (start,) = got["start"]
    assert "washing machine next to the cabinet in the kitchen belongs to Rosa" in start.summary and "Leo" not in start.summary
    # VerifyObject looked again after FindObject's STOP: views beyond the first need actions the bridge took
    assert verify["outcome"]["status"] == "succeeded" and verify["outcome"]["views"] >= 2, verify
    assert verify["outcome"]["at"] == list(find["outcome"]["xy"])
    assert [f.split(":")[0] for f in verify["feedback"]] == [f"view {k}" for k in range(1, verify["outcome"]["views"] + 1)]
    assert steps["routine"]["outcome"]["done"] == 1
    # the latched summary followed the assistant's direct write of the found pose (gap: it lagged the file)
    machine = [o for o in got["summary"][-1].objects if "washing machine next" in o.description]
    assert machine and machine[0].seen and list(machine[0].owners) == ["Rosa"]
    md = (run / "day.md").read_text()
    assert "**5/5 steps ok**" in md and "Leo → Rosa" in md


class _DroppingClient:
    """A service client whose first ``drop`` requests never get an answer (as when Fast DDS drops a
    response to a client it has not matched yet); later ones are answered at once."""

    class _Future:
        def __init__(self, answer):
            self.answer = answer

        def done(self):
            return self.answer is not None

        def result(self):
            return self.answer

    def __init__(self, drop: int) -> None:
        self.drop, self.sent, self.removed = drop, [], []

    def wait_for_service(self, timeout_sec):
        return True

    def call_async(self, request):
        self.sent.append(request)
        return self._Future(None if len(self.sent) <= self.drop else {"answer to": request})

    def remove_pending_request(self, future):
        self.removed.append(future)


def _day_runner(client, call_timeout_s=0.3):
    from types import SimpleNamespace

    from nodes.assistant_day import DayRunner

    runner = object.__new__(DayRunner)  # no node: the test drives _call alone
    runner.wait_s, runner.call_timeout_s = 1.0, call_timeout_s
    runner.tell_client = runner.query_client = client
    runner.types = {"tell": SimpleNamespace(Request=dict), "query": SimpleNamespace(Request=dict)}
    runner._spin_once = time.sleep  # no executor to spin: the stub's futures are done or never
    return runner


def test_an_unanswered_memory_query_is_sent_again_but_a_statement_is_not():
    from nodes.assistant_day import QUERY_TRIES, Unanswered

    client = _DroppingClient(drop=QUERY_TRIES - 1)
    assert _day_runner(client)._call("query", person="leo") == {"answer to": {"person": "leo"}}
    assert len(client.sent) == QUERY_TRIES and len(client.removed) == QUERY_TRIES - 1  # the dropped ones forgotten

    client = _DroppingClient(drop=QUERY_TRIES)
    with pytest.raises(Unanswered, match=rf"memory/query: no answer within 0.3 s \({QUERY_TRIES} tries\)"):
        _day_runner(client)._call("query")

    client = _DroppingClient(drop=1)  # a statement changes the memory: never sent twice
    with pytest.raises(Unanswered, match=r"memory/tell: no answer within 0.3 s$"):
        _day_runner(client)._call("tell", statement="I bought a new mug")
    assert len(client.sent) == 1

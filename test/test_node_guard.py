"""The one guard of the project (nodes/lifecycle.py): every subscription and service goes through it; a
callback that raises costs one message (warning with topic and reason), never the node; SIGTERM ends
a node even while a callback is blocked."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from conftest import wait_for

ROOT = Path(__file__).resolve().parents[1]


def test_every_subscription_and_service_goes_through_the_guard():
    offenders = []
    for folder in ("nodes", "sim_bridge"):
        for path in (ROOT / folder).rglob("*.py"):
            if path.name == "lifecycle.py":
                continue
            for n, line in enumerate(path.read_text().splitlines(), 1):
                if re.search(r"\.create_(subscription|service)\(|\bActionServer\(", line):
                    offenders.append(f"{path.relative_to(ROOT)}:{n}")
    assert not offenders, f"use nodes.lifecycle.subscribe / serve / serve_action: {offenders}"


def test_an_action_goal_whose_callback_raises_is_aborted_with_the_reason(ros_context):
    from action_msgs.msg import GoalStatus

    from nodes.lifecycle import dropped_messages, serve_action
    from personal.action import VerifyObject

    server = ros_context.make_node("guarded_actions")

    async def broken(handle):
        raise RuntimeError("the verifier crashed")

    serve_action(server, VerifyObject, "guarded/verify", broken)
    client = ros_context.action_client("guarded_action_client", VerifyObject, "guarded/verify")
    assert client.wait_for_server(timeout_sec=10)
    for _ in range(2):  # the server keeps serving after a failed goal
        sent = client.send_goal_async(VerifyObject.Goal(query="a mug"))
        wait_for(sent.done, 10)
        done = sent.result().get_result_async()
        wait_for(done.done, 10)
        assert done.result().status == GoalStatus.STATUS_ABORTED
        assert done.result().result.why == "RuntimeError: the verifier crashed"
    assert dropped_messages(server) == {"guarded/verify": 2}


def test_a_raising_callback_costs_one_message_not_the_node(ros_context, capfd):
    from std_msgs.msg import String
    from std_srvs.srv import Trigger

    from nodes.lifecycle import dropped_messages, serve, subscribe

    node = ros_context.make_node("guarded")
    got = []

    def on_msg(msg):
        if msg.data.startswith("bad"):
            raise ValueError(f"cannot use {msg.data!r}")
        got.append(msg.data)

    def on_srv(request, response):
        raise RuntimeError("service broke")

    subscribe(node, String, "words", on_msg, 50)
    serve(node, Trigger, "poke", on_srv)
    io = ros_context.make_node("guard_io")
    pub = io.create_publisher(String, "words", 50)
    wait_for(lambda: pub.get_subscription_count() > 0)
    for k in range(10):
        pub.publish(String(data=f"bad {k}"))
    pub.publish(String(data="good"))
    wait_for(lambda: got == ["good"])
    client = io.create_client(Trigger, "poke")
    assert client.wait_for_service(timeout_sec=10)
    future = client.call_async(Trigger.Request())
    response = wait_for(lambda: future.result() if future.done() else None)
    assert response.success is False and response.message == "RuntimeError: service broke"
    assert dropped_messages(node) == {"/words": 10, "/poke": 1}
    assert ros_context._thread.is_alive()
    err = capfd.readouterr().err
    assert "[WARN]" in err and "topic '/words': dropped a message (ValueError: cannot use 'bad 0'" in err
    assert err.count("topic '/words': dropped") <= 4  # throttled: 3, then at most one per 5 s


def test_sigterm_ends_a_node_blocked_in_a_callback(tmp_path):
    script = tmp_path / "blocked_node.py"
    script.write_text(textwrap.dedent("""
        import os
        from rclpy.node import Node
        from nodes.lifecycle import run_node

        class Blocked(Node):
            def __init__(self):
                super().__init__("blocked")
                self.create_timer(0.1, self.block)

            def block(self):
                print("blocking", flush=True)
                r, _ = os.pipe()
                os.read(r, 1)  # never returns by itself

        run_node(Blocked)
    """))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout.readline().strip() == "blocking"
    t0 = time.monotonic()
    proc.terminate()
    assert proc.wait(10) == 143 and time.monotonic() - t0 < 5


def test_no_node_logs_through_the_deprecated_warn():
    """rclpy keys a throttled log call by its caller's frame. ``logger.warn`` is a deprecated wrapper
    in Kilted, so every ``warn(...)`` of a process looks like one caller: a ``warn`` with
    ``throttle_duration_sec`` after a plain one raised ValueError ("Requested logging filters cannot
    be changed between calls") — found by the base-driver fuzz test (TF error after "emergency stop
    engaged"). ``warning`` is the method in Humble, Jazzy and Kilted."""
    offenders = [f"{path.relative_to(ROOT)}:{n}" for folder in ("nodes", "sim_bridge", "personal")
                 for path in (ROOT / folder).rglob("*.py")
                 for n, line in enumerate(path.read_text().splitlines(), 1)
                 if re.search(r"(get_logger\(\)|logger)\.warn\(", line)]
    assert not offenders, f"use .warning(...): {offenders}"


@pytest.mark.parametrize("case", ["rcl_shut_down_while_built", "interrupt_during_clean_up"])
def test_a_sigint_that_lands_while_a_node_is_built_or_stopped_is_an_interrupt_not_a_crash(tmp_path, case):
    """The launcher's SIGINT has two halves: rclpy's handler shuts rcl down at once, and Python's
    KeyboardInterrupt comes at the next signal check. Landing while the node was being built, the
    first made an rcl call fail ("context is not valid", CI 2026-12-07) and the second came during
    the clean-up: a traceback and exit -2. Each half, alone, now ends the process as an interrupt."""
    script = tmp_path / "interrupted_node.py"
    script.write_text(textwrap.dedent(f"""
        import rclpy
        from rclpy.node import Node
        from nodes.lifecycle import run_node

        class Interrupted(Node):
            def __init__(self):
                super().__init__("interrupted")
                if "{case}" == "rcl_shut_down_while_built":
                    self.context.try_shutdown()  # what rclpy's SIGINT handler does
                    self.create_timer(0.1, lambda: None)  # raises RCLError: the context is not valid

        def on_exit(node):
            raise KeyboardInterrupt  # Python's half, raised during the clean-up

        run_node(Interrupted, until=lambda n: True, exit_code=lambda n: 0, on_exit=on_exit)
        print("not reached: the node's own process ends in run_node")
    """))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 130, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and "not reached" not in proc.stdout

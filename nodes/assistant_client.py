"""The ROS side of ``personal assistant find|verify|routine|handover``: one goal to a running ``assistant``
graph, its feedback printed line by line, the result, and the project's exit code
(personal/exit_codes.py): 0 the goal succeeded (a VerifyObject verdict, whichever it is, is an
answer); 3 a FindObject, RunRoutine or HandOver goal ended without success (not found, steps
refused, task not done);
1 the goal was aborted (a node did not answer: named in the result) or the action server did not
come up within ``--wait``; 2 the goal was rejected; 130 Ctrl-C (the goal is cancelled first).

Run through ``personal assistant`` (personal/assistant/cli.py), or ``python -m nodes.assistant_client``.
"""
from __future__ import annotations

import argparse
import json
import sys
import time

from personal import exit_codes

ACTIONS = {"find": ("FindObject", "assistant/find_object"), "verify": ("VerifyObject", "assistant/verify_object"),
           "routine": ("RunRoutine", "assistant/run_routine"), "handover": ("HandOver", "assistant/hand_over")}


def _goal(kind: str, action, a):
    if kind == "find":
        return action.Goal(query=a.query, requester=a.requester, max_steps=a.max_steps, verify=a.verify)
    if kind == "verify":
        goal = action.Goal(query=a.query, max_views=a.max_views)
        goal.candidate.header.frame_id = "map"
        goal.candidate.point.x, goal.candidate.point.y, goal.candidate.point.z = a.x, a.y, a.z
        return goal
    if kind == "handover":
        return action.Goal(person=a.person, mission=a.mission, seed=a.seed, preference=a.preference)
    return action.Goal(person=a.person, routine=a.routine, steps_json=a.steps_json)


def feedback_line(kind: str, f) -> str:
    if kind == "find":
        best = f"; best {f.best_candidate} (score {f.best_score:.2f})" if f.best_candidate else ""
        return f"step {f.steps}: {f.status}{best}"
    if kind == "verify":
        return f"view {f.views}: {f.verdict_so_far} (confidence {f.confidence:.2f})"
    if kind == "handover":
        return f"step {f.step}: {f.status}" + (f", holding {f.held}" if f.held else "")
    return f"step {f.step}/{f.total}: {f.appliance}.{f.feature} {f.outcome}"


def result_lines(kind: str, r) -> tuple[list[str], bool]:
    """Printed lines and whether the goal's own outcome is a success."""
    if kind == "find":
        p = r.pose.pose.position
        where = f"at ({p.x:.2f}, {p.y:.2f}) in {r.pose.header.frame_id}" if r.success else "not found"
        return [f"{where}; verified: {r.verified}; confidence {r.confidence:.2f}; {r.steps} steps", f"why: {r.why}"], r.success
    if kind == "verify":
        return [f"verdict: {r.verdict} (confidence {r.confidence:.2f}, {r.views} views)", f"why: {r.why}"], True
    if kind == "handover":
        return [f"prompt: {r.prompt}", f"{r.message}; SA {r.sa:.2f}"], r.success
    return [f"done {r.done}, refused {r.refused}, failed {r.failed}: {r.message}"], r.success


MISSED = " (feedback missed; from the result)"


def missed_steps(kind: str, printed: set[int], r) -> list[str]:
    """RunRoutine steps whose feedback never reached this client, from the result's per-step report.
    Feedback published before discovery has matched the server's feedback writer to this client is
    lost (a fast routine can finish first); the result still has every step."""
    if kind != "routine":
        return []
    rows = json.loads(r.report_json or "[]")
    return [f"step {row['step']}/{r.done + r.refused + r.failed}: {row['appliance']}.{row['feature']} {row['outcome']}{MISSED}"
            for row in rows if row["step"] not in printed]


def exit_code(status: int, success: bool) -> int:
    from action_msgs.msg import GoalStatus

    if status == GoalStatus.STATUS_SUCCEEDED:
        return exit_codes.OK if success else exit_codes.INCOMPLETE
    if status == GoalStatus.STATUS_CANCELED:
        return exit_codes.INTERRUPTED
    return exit_codes.FAILED


def run(kind: str, a) -> int:
    import rclpy
    from rclpy.action import ActionClient

    import personal.action as actions
    from nodes.goals import send_goal, wait_result

    type_name, name = ACTIONS[kind]
    action = getattr(actions, type_name)
    rclpy.init()
    node = rclpy.create_node(f"assistant_cli_{kind}")
    handle = None
    try:
        client = ActionClient(node, action, name)
        if not client.wait_for_server(timeout_sec=a.wait):
            print(f"error: {name} not served within {a.wait:g} s: is the assistant graph running "
                  f"(personal launch assistant)?", file=sys.stderr)
            return exit_codes.FAILED
        printed: set[int] = set()

        def on_feedback(message):
            printed.add(getattr(message.feedback, "step", 0))
            print(feedback_line(kind, message.feedback), flush=True)

        sent = send_goal(node, client, _goal(kind, action, a), on_feedback)
        handle = _until(node, sent)
        if not handle.accepted:
            print(f"error: {name} rejected the goal", file=sys.stderr)
            return exit_codes.BAD_INPUT
        answer = wait_result(node, handle)
        lines, success = result_lines(kind, answer.result)
        print("\n".join(missed_steps(kind, printed, answer.result) + lines), flush=True)
        return exit_code(answer.status, success)
    except KeyboardInterrupt:
        if handle is not None and handle.accepted:
            print("cancelling the goal", file=sys.stderr)
            done = handle.cancel_goal_async()
            deadline = time.monotonic() + 10.0
            while not done.done() and time.monotonic() < deadline:
                rclpy.spin_once(node, timeout_sec=0.1)
        return exit_codes.INTERRUPTED
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


def _until(node, future):
    import rclpy

    while not future.done():
        rclpy.spin_once(node, timeout_sec=0.1)
    return future.result()


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="personal assistant", description=__doc__.split("\n\n")[0])
    p.add_argument("--wait", type=float, default=30.0, help="seconds to wait for the action server")
    sub = p.add_subparsers(dest="kind", required=True)
    f = sub.add_parser("find", help="FindObject: navigate to someone's object")
    f.add_argument("query")
    f.add_argument("--requester", default="")
    f.add_argument("--max-steps", type=int, default=500)
    f.add_argument("--no-verify", dest="verify", action="store_false")
    v = sub.add_parser("verify", help="VerifyObject: is the object at (x, y) the described one?")
    v.add_argument("query")
    v.add_argument("x", type=float)
    v.add_argument("y", type=float)
    v.add_argument("--z", type=float, default=0.0)
    v.add_argument("--max-views", type=int, default=6)
    r = sub.add_parser("routine", help="RunRoutine: a person's routine from the memory")
    r.add_argument("person")
    r.add_argument("routine")
    r.add_argument("--steps-json", default="")
    h = sub.add_parser("handover", help="HandOver: a tabletop task done the way PERSON likes (preferences from the memory)")
    h.add_argument("person")
    h.add_argument("mission", choices=("bin", "mat", "handle"))
    h.add_argument("--seed", type=int, default=0, help="layout seed of the tabletop simulator")
    h.add_argument("--preference", default="", help="preference ids instead of the memory's (comma separated)")
    return p


def main(argv=None) -> None:
    p = parser()
    a = p.parse_args(argv)
    if getattr(a, "max_steps", 1) < 1 or getattr(a, "max_views", 1) < 1:
        p.error("--max-steps and --max-views must be at least 1")
    if getattr(a, "seed", 0) < 0:
        p.error("--seed must be at least 0")
    sys.exit(run(a.kind, a))


if __name__ == "__main__":
    main()

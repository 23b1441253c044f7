"""The ROS side of ``personal assistant day SCRIPT``: a scripted household day (personal.assistant.day)
run against a running ``assistant`` graph — statements and questions to the memory node
(``memory/tell``, ``memory/query``), FindObject / VerifyObject / RunRoutine goals to the assistant
node through rclpy action clients, with their feedback — and a report: ``day.json`` and ``day.md``
in a new run folder under ``--out``, with each step's outcome, timing, feedback and the memory
before and after it (read with ``memory/query``).

Exit code (personal/exit_codes.py): 0 every step succeeded and met what it expected; 3 some did
not (the report says which); 1 a node the day needs did not answer; 2 a bad script or ``--out``;
130 Ctrl-C (the goal in flight is cancelled, the report of the steps so far written).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import datetime, timezone

from personal import exit_codes

ACTIONS = {"find": ("FindObject", "assistant/find_object"), "verify": ("VerifyObject", "assistant/verify_object"),
           "routine": ("RunRoutine", "assistant/run_routine")}
STATUS = {4: "succeeded", 5: "canceled", 6: "aborted"}  # action_msgs/GoalStatus


QUERY_TRIES = 3  # memory/query requests sent before a call counts as unanswered (DayRunner._call)


class Unanswered(RuntimeError):
    """A service or action server the day needs is not there (the message names it)."""


class DayRunner:
    def __init__(self, node, wait_s: float, call_timeout_s: float = 30.0) -> None:
        from rclpy.action import ActionClient

        import personal.action as actions
        from personal.srv import MemoryQuery, MemoryTell

        self.node, self.wait_s, self.call_timeout_s = node, wait_s, call_timeout_s
        self.tell_client = node.create_client(MemoryTell, "memory/tell")
        self.query_client = node.create_client(MemoryQuery, "memory/query")
        self.types = {"tell": MemoryTell, "query": MemoryQuery}
        self.actions = {kind: (getattr(actions, t), ActionClient(node, getattr(actions, t), name))
                        for kind, (t, name) in ACTIONS.items()}
        self.found: tuple[float, float] | None = None  # the last FindObject's pose
        self.in_flight = None  # the goal handle to cancel on Ctrl-C

    # -- services and goals --------------------------------------------------------
    def _spin_until(self, done, timeout_s: float, what: str):
        deadline = time.monotonic() + timeout_s
        while not done():
            if time.monotonic() > deadline:
                raise Unanswered(f"{what}: no answer within {timeout_s:g} s")
            self._spin_once(0.05)

    def _spin_once(self, timeout_s: float) -> None:
        import rclpy

        rclpy.spin_once(self.node, timeout_sec=timeout_s)

    def _call(self, kind: str, **fields):
        """One memory service call. A query only reads, so it is sent again when no answer comes, within
        the same ``call_timeout_s`` (QUERY_TRIES tries): Fast DDS can drop a server's response to a client
        whose reply reader it has not matched yet (the memory node then logs "failed to send response
        (timeout)"), which a loaded machine made happen in a test run. A statement is sent once: it
        changes the memory, and an unanswered one may have been applied."""
        client = self.tell_client if kind == "tell" else self.query_client
        if not client.wait_for_service(timeout_sec=self.wait_s):
            raise Unanswered(f"memory/{kind} not offered within {self.wait_s:g} s: is the memory node running?")
        tries = QUERY_TRIES if kind == "query" else 1
        for _ in range(tries):
            future = client.call_async(self.types[kind].Request(**fields))
            try:
                self._spin_until(future.done, self.call_timeout_s / tries, f"memory/{kind}")
                return future.result()
            except Unanswered:
                client.remove_pending_request(future)  # a late answer to this one is dropped, not mistaken
        raise Unanswered(f"memory/{kind}: no answer within {self.call_timeout_s:g} s"
                         + (f" ({tries} tries)" if tries > 1 else ""))

    def _goal(self, kind: str, goal, cancel_after: int | None):
        from nodes.assistant_client import feedback_line
        from nodes.goals import send_goal, wait_result

        action, client = self.actions[kind]
        if not client.wait_for_server(timeout_sec=self.wait_s):
            raise Unanswered(f"{ACTIONS[kind][1]} not served within {self.wait_s:g} s: is the assistant graph running?")
        lines: list[str] = []
        sent = send_goal(self.node, client, goal, lambda m: lines.append(feedback_line(kind, m.feedback)))
        self._spin_until(sent.done, self.call_timeout_s, f"{ACTIONS[kind][1]} goal")
        handle = self.in_flight = sent.result()
        if not handle.accepted:
            return "rejected", None, lines
        cancelled = []

        def cancel_when_due():
            if cancel_after and len(lines) >= cancel_after and not cancelled:
                handle.cancel_goal_async()
                cancelled.append(True)

        # unbounded here: the goal's own limits (max_steps, nav_timeout_s) end it
        answer = wait_result(self.node, handle, between=cancel_when_due)
        self.in_flight = None
        return STATUS.get(answer.status, f"status {answer.status}"), answer.result, lines

    def memory_objects(self) -> list[dict]:
        answer = self._call("query")
        return [{"id": o.id, "description": o.description, "category": o.category, "owners": list(o.owners),
                 "last_seen": [round(o.last_seen.point.x, 3), round(o.last_seen.point.y, 3)] if o.seen else None}
                for o in answer.objects]

    def wait_for_memory(self) -> int:
        """Objects in the memory once it knows any (the graph seeds it from the episode), or 0 after ``wait_s``."""
        deadline = time.monotonic() + self.wait_s
        while True:
            count = len(self.memory_objects())
            if count or time.monotonic() > deadline:
                return count
            time.sleep(0.5)

    # -- steps ----------------------------------------------------------------------
    def run_step(self, step) -> tuple[dict, list[str]]:
        return getattr(self, f"_{step.kind}")(step)

    def _tell(self, step):
        r = self._call("tell", statement=step.text, speaker=step.options.get("speaker", ""))
        return {"understood": r.success, "message": r.message, "effects": list(r.effects), "unresolved": list(r.unresolved)}, []

    def _ask(self, step):
        r = self._call("query", person=step.options.get("person", ""), description=step.text)
        objects = [o for o in r.objects if o.category != "candidate"]
        return {"count": len(objects), "objects": [o.description for o in objects],
                "owners": list(objects[0].owners) if objects else []}, []

    def _find(self, step):
        action = self.actions["find"][0]
        goal = action.Goal(query=step.text, requester=step.options.get("requester", ""),
                           max_steps=int(step.options.get("max_steps", 500)), verify=bool(step.options.get("verify", True)))
        status, r, lines = self._goal("find", goal, step.options.get("cancel_after"))
        if r is None:
            return {"status": status}, lines
        xy = (round(r.pose.pose.position.x, 3), round(r.pose.pose.position.y, 3)) if r.success else None
        if xy:
            self.found = xy
        return {"status": status, "success": r.success, "verified": r.verified, "confidence": round(r.confidence, 3),
                "xy": xy, "steps": r.steps, "why": r.why}, lines

    def _verify(self, step):
        at = self.found if step.options["at"] == "found" else tuple(step.options["at"])
        if at is None:
            return {"status": "skipped", "why": "no find step before it found anything"}, []
        goal = self.actions["verify"][0].Goal(query=step.text, max_views=int(step.options.get("max_views", 6)))
        goal.candidate.header.frame_id = "map"
        goal.candidate.point.x, goal.candidate.point.y = float(at[0]), float(at[1])
        status, r, lines = self._goal("verify", goal, None)
        if r is None:
            return {"status": status}, lines
        return {"status": status, "verdict": r.verdict, "confidence": round(r.confidence, 3), "views": r.views,
                "why": r.why, "at": list(at)}, lines

    def _routine(self, step):
        steps = step.options.get("steps")
        goal = self.actions["routine"][0].Goal(person=step.options.get("person", ""), routine=step.text,
                                               steps_json=json.dumps(steps) if steps else "")
        status, r, lines = self._goal("routine", goal, None)
        if r is None:
            return {"status": status}, lines
        return {"status": status, "success": r.success, "done": r.done, "refused": r.refused, "failed": r.failed,
                "message": r.message}, lines


def run_day(day, run_dir, wait_s: float, say=print) -> int:
    import rclpy

    from personal.assistant.day import day_exit_code, memory_state, record, write_report

    rclpy.init()
    node = rclpy.create_node("assistant_day")
    runner, records, stopped = DayRunner(node, wait_s), [], ""
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    try:
        say(f"day {day.name!r}: {len(day.steps)} steps; the memory knows {runner.wait_for_memory()} objects")
        for step in day.steps:
            before, t0 = memory_state(runner.memory_objects()), time.monotonic()
            outcome, lines = runner.run_step(step)
            records.append(record(step, outcome, time.monotonic() - t0, lines, before, memory_state(runner.memory_objects())))
            r = records[-1]
            say(f"step {r.step} {r.request}: {'ok' if r.ok else 'NOT OK'} ({r.seconds:.1f} s)"
                + "".join(f"\n  {line}" for line in r.unmet + r.changes))
        code = day_exit_code(records, len(day.steps))
    except Unanswered as exc:
        stopped, code = str(exc), exit_codes.FAILED
        say(f"error: {exc}")
    except KeyboardInterrupt:
        stopped, code = "interrupted (Ctrl-C)", exit_codes.INTERRUPTED
        if runner.in_flight is not None:
            runner.in_flight.cancel_goal_async()
            rclpy.spin_once(node, timeout_sec=1.0)
    finally:
        report = write_report(run_dir, day, records, started, stopped)
        node.destroy_node()
        rclpy.try_shutdown()
    say(f"report: {report}")
    return code


def main(argv=None) -> None:
    from personal.assistant.day import DayScriptError, load_day
    from personal.runs.output import OutputDirError, new_run_dir

    p = argparse.ArgumentParser(prog="personal assistant day", description=__doc__.split("\n\n")[0])
    p.add_argument("script", help="a day script (YAML) or a shipped one's name (personal/assistant/days/)")
    p.add_argument("--out", default="runs/assistant_day", help="the run folder is created under this")
    p.add_argument("--wait", type=float, default=60.0, help="seconds to wait for each service and action server")
    a = p.parse_args(argv)
    try:
        day, run_dir = load_day(a.script), None
        run_dir = new_run_dir(a.out)
    except (DayScriptError, OutputDirError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(exit_codes.BAD_INPUT)
    sys.exit(run_day(day, run_dir, a.wait, say=lambda text: print(text, flush=True)))


if __name__ == "__main__":
    main()

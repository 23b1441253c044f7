"""PInVerify view planner node: drives the episodes, chooses the next view, writes the report.

Waits for ``aiv/dataset`` (``personal/msg/AivDataset``) and loads the same index for labels;
for each episode publishes ``aiv/command`` reset, then after every ``aiv/verdict``
that does not stop, an NBV move (``nbv``: random | fps | llm); it follows
``aiv/observation`` for its own pose history. At the end it writes
``<out_dir>/results_<run_name>.jsonl``, ``metrics.json``, ``report.md`` and plots,
then exits 0 (the graph's required node).
"""
from __future__ import annotations

import time

from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from personal.paths import child_path
from personal.interfaces.convert import from_dict, to_dict
from personal.msg import AivCommand, AivDataset, AivObservation, AivVerdict
from personal.verification.agent import AgentConfig
from personal.runs.output import OutputDirError, ResultLog, run_folder
from personal.verification.reader import DatasetError, load_index
from personal.verification.session import PlannerSession
from nodes.lifecycle import run_until_exit_code, subscribe

RELIABLE = QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE)
LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)


class ViewPlannerNode(Node):
    def __init__(self, **kwargs) -> None:
        super().__init__("aiv_view_planner", **kwargs)
        p = self._declare
        mode = p("mode", "multi", "single | multi")
        self.config = AgentConfig(mode=mode, nbv=p("nbv", "fps", "random | fps | llm") if mode == "multi" else "none",
                                  horizon=p("horizon", 6, "steps per episode"), seed=p("seed", 0, "random-NBV seed"),
                                  min_coverage=p("min_coverage", 0.0, "(for the report) verifier coverage setting"))
        self.limit = p("limit", 0, "evaluate only the first N episodes (0 = all)")
        self.start = p("start", 0, "skip the first N episodes of the index (a sharded run's window, with limit)")
        self.out_dir = p("out_dir", "runs/aiv_eval", "report folder")
        self.run_name = p("run_name", "", "run name in the report (default SV / MV-<nbv>)") or (
            "SV" if mode == "single" else f"MV-{self.config.nbv}")
        self.step_timeout = p("step_timeout_s", 30.0, "seconds to wait for a verdict before giving up")
        self.lenient = p("lenient", False, "accept unknown index/meta fields")
        self.exit_code: int | None = None
        try:  # before any work; each episode's record is written as it finishes
            self.result_log = ResultLog(child_path(run_folder(self.out_dir), f"results_{self.run_name}", "run_name", ".jsonl"))
        except OutputDirError as exc:
            self.get_logger().error(f"cannot write the results: {exc}")
            self.exit_code = 2
        self.session: PlannerSession | None = None
        self.last_sent = 0.0
        self.last_cmd: dict | None = None
        self.resent = False
        self.held_verdict: dict | None = None  # a verdict that came before its observation (other topic)
        self.cmd_pub = self.create_publisher(AivCommand, "aiv/command", RELIABLE)
        subscribe(self, AivDataset, "aiv/dataset", self._on_dataset, LATCHED)
        subscribe(self, AivObservation, "aiv/observation", self._on_obs, RELIABLE)
        subscribe(self, AivVerdict, "aiv/verdict", self._on_verdict, RELIABLE)
        self.create_timer(0.5, self._tick)
        self.t0 = time.monotonic()

    def _declare(self, name, default, description):
        from rcl_interfaces.msg import ParameterDescriptor

        return self.declare_parameter(name, default, ParameterDescriptor(description=description)).value

    def _on_dataset(self, msg: AivDataset) -> None:
        if self.session is not None or self.exit_code is not None:
            return
        ds = to_dict(msg)
        try:
            if ds["error"]:
                raise DatasetError(ds["error"])
            pairs = load_index(ds["index"], strict=not self.lenient)
        except DatasetError as exc:
            self.get_logger().error(f"aiv/dataset: {exc}")
            self.exit_code = 1
            return
        self.session = PlannerSession(pairs, self.config, limit=self.limit or None, on_record=self.result_log.append,
                                      start=self.start)
        self.index = ds["index"]
        self.get_logger().info(f"{self.session.episodes} episodes from {ds['index']}; run {self.run_name}")

    def _ready(self) -> bool:
        # the capture server and the verifier must both be listening before the first command
        return self.cmd_pub.get_subscription_count() > 0 and self.count_subscribers("aiv/observation") >= 2

    def _tick(self) -> None:
        s = self.session
        if s is None or self.exit_code is not None:
            return
        if s.pending is None and not s.finished:
            if self._ready():
                self._send(s.start_next())
            return
        if s.pending is not None and time.monotonic() - self.last_sent > self.step_timeout:
            if self.last_cmd and self.last_cmd["command"] == "reset" and not self.resent:
                # a lost reset is safe to repeat (a move is not: it would cost a second step)
                self.get_logger().warning(f"no verdict for reset {s.pending} within {self.step_timeout} s; resending once")
                self.resent = True
                s.restart_current()
                self.last_sent = time.monotonic()
                self.cmd_pub.publish(from_dict(AivCommand, self.last_cmd))
                return
            self.get_logger().error(f"no verdict for {s.pending} within {self.step_timeout} s; recording the episode as failed")
            self._send(s.on_verdict({"request_id": s.pending, "episode_index": s.current.index, "step": 0,
                                     "decision": "No", "stop": True, "error": "timeout"}))

    def _send(self, cmd: dict | None) -> None:
        s = self.session
        if cmd is None:
            return self._finish()
        done = len(s.records)
        if cmd["command"] == "reset" and done and done % max(1, s.episodes // 10) == 0:
            self.get_logger().info(f"episodes done {done}/{s.episodes} ({time.monotonic() - self.t0:.0f} s)")
        self.last_sent = time.monotonic()
        self.last_cmd, self.resent, self.held_verdict = cmd, False, None
        self.cmd_pub.publish(from_dict(AivCommand, cmd))

    def _on_obs(self, msg: AivObservation) -> None:
        if self.session is None:
            return
        self.session.on_observation(to_dict(msg))
        held = self.held_verdict
        if held is not None and self.session.observed(held["request_id"]):
            self.held_verdict = None
            self._send(self.session.on_verdict(held))

    def _on_verdict(self, msg: AivVerdict) -> None:
        if self.session is None:
            return
        verdict = to_dict(msg)
        if verdict["request_id"] != self.session.pending:
            return
        if not self.session.observed(verdict["request_id"]):
            # the verifier answered before our copy of the observation arrived: the next view depends
            # on it (visited / failed poses), so the verdict waits for it (the step timeout still applies)
            self.held_verdict = verdict
            return
        self._send(self.session.on_verdict(verdict))

    def _finish(self) -> None:
        self.result_log.close()
        m = self.session.write(self.out_dir, self.run_name, notes=[
            f"index: {self.index} ({self.session.episodes} episodes)", "run through the aiv_eval graph (ROS topics)"])
        self.get_logger().info(
            f"aiv_eval done: accuracy {m['accuracy']}, per pair type "
            f"{ {k: v['accuracy'] for k, v in m['per_pair_type'].items()} }, ASD {m['asd']}; report: {self.out_dir}/report.md")
        self.exit_code = 0


def main(args=None) -> None:
    run_until_exit_code(ViewPlannerNode, args)


if __name__ == "__main__":
    main()

"""PAN evaluator node: runs every policy on every episode through the ROS graph and scores it.

For each episode of the bridge's episode source (same parameters, so the same list in the
same order) and each policy in ``methods``: load the episode on the bridge (``episode/load``,
personal/srv/LoadEpisode, said again under the same request id until answered; a new id per run, so
each policy starts the episode afresh), send ``nav/start`` to the navigation node, wait for its
``nav/result`` (personal/msg/NavigationRun), and score the trajectory with the simulator's ground
truth (``personal.navigation.eval.pan``: SR = STOP within 1.0 m of the target object's extent, SPL
with the geodesic shortest path, DTG). At the end it writes ``report.md``,
``summary.json``, ``results.json`` and trajectory plots into a run folder under ``out_dir`` and
exits 0 (it is the graph's required node, so the graph stops).
"""
from __future__ import annotations

import json
import random
import time
from pathlib import Path

from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from std_msgs.msg import String

from personal.paths import child_path
from personal.resend import Resend
from personal.interfaces.convert import to_dict
from personal.msg import NavigationRun, NavigationStart
from personal.srv import LoadEpisode
from personal.navigation.progress import is_progress_of
from personal.navigation.pan_session import PARAMETERS, PanSchedule, load_scored_episodes, report_meta, score_run, unscored
from nodes.goals import call_until_answered
from nodes.lifecycle import run_until_exit_code, subscribe
from nodes.parameters import declare_parameters

COMMAND_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
# nav/start again while the run has made no progress report (personal/resend.py): a lost start used to become a
# failed episode after run_timeout. The navigation node ignores a repeat of the run in progress.
START_RESEND_S = 10.0
# episode/load again under the same request id while unanswered (a reply lost in discovery); the bridge answers a
# repeat as it did the first and loads nothing twice, so a slow answer costs nothing either
LOAD_RESEND_S = 5.0
LOAD_TIMEOUT_S = 30.0


class PanEvaluatorNode(Node):
    def __init__(self, **kwargs) -> None:
        super().__init__("pan_evaluator", **kwargs)
        self.p = declare_parameters(self, PARAMETERS)
        self.exit_code: int | None = None
        self.t0 = time.monotonic()
        from personal.runs.output import RESULTS_LOG, OutputDirError, ResultLog, new_run_dir
        from personal.navigation.policies import parse_policy_list

        try:  # the run folder first: an unwritable out_dir must not be found after the evaluation
            self.run_dir = new_run_dir(self.p["out_dir"])
            self.result_log = ResultLog(self.run_dir / RESULTS_LOG)  # one record per scored run, as it comes
            self.methods = parse_policy_list(self.p["methods"])
            from personal.navigation.eval.pan_run import UPPER_BOUNDS

            if self.p["upper_bound"] not in UPPER_BOUNDS:  # as the graph's Choice, for a node run outside it
                raise ValueError(f"parameter 'upper_bound': {self.p['upper_bound']!r} unknown ({' | '.join(UPPER_BOUNDS)})")
            self.scenes, self.episodes = load_scored_episodes(self.p)
            from personal.sim.sensor_model import sensor_spec

            self.sensor = sensor_spec(self.p["sensor"], self.p["sensor_overrides"], int(self.p["sensor_seed"]))
        except (OutputDirError, ValueError) as exc:  # ValueError: bad methods, EpisodeFormatError naming file + field
            self.get_logger().error(f"cannot start the PAN evaluation: {exc}")
            self.exit_code = 2
            return
        # ground-truth geometry for scoring only (habitat: a second simulator on the same scenes)
        self.sim = self._scoring_backend()
        self.schedule = PanSchedule(len(self.episodes), self.methods)
        self.phase = "wait_graph"
        self.pending = None  # future of a service call
        self.deadline = 0.0
        self.results: list = []
        self.trajectories: dict[str, dict] = {}
        self.cli_load = self.create_client(LoadEpisode, "episode/load")
        self.load_ids = random.getrandbits(40) << 20  # this evaluator's request ids (+ k): none a bridge has seen
        self.pub_start = self.create_publisher(NavigationStart, "nav/start", COMMAND_QOS)
        subscribe(self, NavigationRun, "nav/result", self.on_result, COMMAND_QOS)
        subscribe(self, String, "nav/progress", self.on_progress, COMMAND_QOS)
        self.start_msg: NavigationStart | None = None  # of the run awaited
        self.resend = Resend(START_RESEND_S)  # heard: a progress report of that run came
        self.create_timer(0.1, self.tick)
        self.get_logger().info(f"PAN evaluation: {len(self.episodes)} episodes x {len(self.methods)} policies "
                               f"({', '.join(self.methods)}) -> {self.run_dir}")

    @property
    def habitat(self) -> bool:
        return self.p["backend"] == "habitat"

    def _scoring_backend(self):
        from personal.sim.backends import make_backend

        return make_backend("habitat" if self.habitat else "synthetic")

    # -- the schedule ------------------------------------------------------------------
    def tick(self) -> None:
        if self.exit_code is not None:
            return
        now = time.monotonic()
        if self.phase == "wait_graph":
            if self.cli_load.service_is_ready() and self.pub_start.get_subscription_count() > 0:
                self.phase = "next_run"
            elif now - self.t0 > 120:
                self.get_logger().error("sim bridge services or navigation node not found within 120 s")
                self.exit_code = 3
            return
        if self.phase == "next_run":
            if self.schedule.done():
                self.finish()
                return
            i, _ = self.schedule.current()
            request_id = self.load_ids + self.schedule.k
            request = LoadEpisode.Request(episode_id=self.episodes[i].episode_id, request_id=request_id)
            self.pending = call_until_answered(self, self.cli_load, request, LOAD_RESEND_S)
            self.phase, self.deadline = "wait_service", now + LOAD_TIMEOUT_S
            return
        if self.phase == "wait_service":
            if self.pending.done():
                resp = self.pending.result()
                i, m = self.schedule.current()
                ep = self.episodes[i]
                if resp is None or not resp.success or ep.episode_id not in resp.message:
                    self.get_logger().error(f"bridge did not load {ep.episode_id}: {getattr(resp, 'message', 'no answer')}")
                    self.record(None, failure="bridge could not load the episode")
                    return
                self.start_msg = NavigationStart(episode_id=ep.episode_id, policy=m, max_steps=int(self.p["max_steps"]))
                self.pub_start.publish(self.start_msg)
                self.resend.sent(now)
                self.phase = "wait_result"
                self.deadline = now + float(self.p["run_timeout"])
            elif now > self.deadline:
                self.pending.cancel()  # stop saying it
                self.record(None, failure=f"episode/load did not answer within {LOAD_TIMEOUT_S:g} s")
            return
        if self.phase == "wait_result" and now > self.deadline:
            self.record(None, failure=f"no nav/result within {self.p['run_timeout']} s")
        elif self.phase == "wait_result" and self.resend.due(now):
            self.get_logger().warning(f"no nav/progress {START_RESEND_S:g} s after nav/start for "
                                      f"{self.start_msg.episode_id} {self.start_msg.policy}: sent again")
            self.pub_start.publish(self.start_msg)

    def on_progress(self, msg: String) -> None:
        report = json.loads(msg.data)  # the guard logs and drops one that is not JSON
        start = self.start_msg
        if start is not None and is_progress_of(report, start.episode_id, start.policy):
            self.resend.heard = True

    def on_result(self, msg: NavigationRun) -> None:
        run = to_dict(msg)
        if self.phase != "wait_result":
            return
        i, m = self.schedule.current()
        if run["episode_id"] != self.episodes[i].episode_id or run["policy"] != m:
            return
        self.record(run)

    # -- scoring -------------------------------------------------------------------------
    def record(self, run: dict | None, failure: str = "") -> None:
        i, m = self.schedule.current()
        ep = self.episodes[i]
        try:
            r, poses, info = score_run(self.sim, self.scenes[ep.scene_id], ep, m, run, failure)
        except Exception as exc:  # ground truth unusable for this episode: a recorded failure, not a dead evaluator
            reason = f"scoring failed: {type(exc).__name__}: {exc}"
            self.get_logger().error(f"{ep.episode_id} {m}: {reason}")
            r, poses, info = unscored(ep, m, reason), [], {}
        self.results.append(r)
        self.result_log.append(r.to_dict())
        self.trajectories.setdefault(ep.episode_id, {})[m] = {
            "poses": poses, "success": r.success, "stopped": r.stopped, "detections": info.get("detections", [])}
        self.get_logger().info(f"{self.schedule.progress()} {ep.episode_id} [{ep.split}] {m}: "
                               f"{'SUCCESS' if r.success else 'fail'} steps={r.steps} SPL={r.spl:.2f} DTG={r.dtg:.2f}")
        self.schedule.advance()
        self.phase = "next_run"

    def _upper_bound(self):
        """The ORACLE encoder's explorers on the same episodes, beside a non-oracle run (None: not asked / ORACLE run)."""
        from personal.navigation.eval.pan import PanUpperBound
        from personal.navigation.eval.pan_run import UPPER_BOUND_LABEL, is_oracle_encoder, oracle_encoder_upper_bound

        if self.p["upper_bound"] == "none" or is_oracle_encoder(self.p["encoder"]):
            return None
        self.get_logger().info("PAN upper bound: the value-map explorers with the ORACLE encoder, in-process ...")
        try:
            return oracle_encoder_upper_bound(self.scenes, self.episodes, self.methods, max_steps=int(self.p["max_steps"]),
                                              extractor=self.p["extractor"], backend=self.p["backend"], sensor=self.sensor,
                                              progress=self.get_logger().info)
        except Exception as exc:  # the run's own results are already scored; the report says why the bound is missing
            self.get_logger().error(f"PAN upper bound failed: {type(exc).__name__}: {exc}")
            return PanUpperBound(UPPER_BOUND_LABEL, error=f"{type(exc).__name__}: {exc}")

    def finish(self) -> None:
        from personal.navigation.eval.pan import plot_trajectory, write_report
        from personal.navigation.eval.pan_run import EXPLORERS, LABELS
        from personal.grounding.eval.pog_run import sample_episodes

        meta = report_meta(self.p, self.episodes, self.methods, self.sensor, time.monotonic() - self.t0)
        bound = self._upper_bound()
        if bound is not None:
            meta["upper bound wall time (s)"] = round(time.monotonic() - self.t0 - meta["wall time (s)"], 1)
        if self.habitat:
            import habitat_sim

            meta["simulator"] = (f"habitat_sim {habitat_sim.__version__} from {Path(habitat_sim.__file__).parent} "
                                 "(ground truth: its pathfinder and the episode files' goals)")
        write_report(self.run_dir, self.results, meta, self.methods, LABELS, [m for m in self.methods if m in EXPLORERS],
                     view_points=self.habitat, upper_bound=bound)
        try:
            from personal.sim.bridge_logic import scene_model

            for ep in sample_episodes(self.episodes, int(self.p["sample_plots"])):
                if ep.episode_id in self.trajectories and scene_model(self.scenes[ep.scene_id]) is not None:
                    (self.run_dir / "trajectories").mkdir(parents=True, exist_ok=True)
                    path = child_path(self.run_dir / "trajectories", ep.episode_id, "episode_id", ".png")
                    plot_trajectory(path, scene=scene_model(self.scenes[ep.scene_id]), episode=ep,
                                    runs=self.trajectories[ep.episode_id], labels=LABELS)
        except Exception as exc:  # plots are secondary; the report is written
            self.get_logger().warning(f"trajectory plots failed: {exc}")
        from personal.benchmarks import write_html

        write_html(self.run_dir, "pan", self.get_logger())
        self.get_logger().info(f"PAN evaluation done: {len(self.results)} runs; report: {self.run_dir.resolve() / 'report.md'}")
        print(f"report: {self.run_dir.resolve() / 'report.md'}", flush=True)
        self.result_log.close()
        self.exit_code = 0


def main(args=None) -> None:
    run_until_exit_code(PanEvaluatorNode, args)


if __name__ == "__main__":
    main()

"""PeRM evaluator node: drives the tabletop sim episode by episode, records the oracle trajectory,
scores SR/SA with the preference registry, and writes results.jsonl + report.md (with frame strips).

Publishes ``perm/prompt`` (personal/msg/TaskPrompt, transient local) then ``perm/episode``
(PermEpisode) per rollout; subscribes ``perm/oracle/state`` (TabletopState: the simulator's ground
truth, one per step) and
``perm/agentview_image`` (frames for the strips). Rollouts are deterministic given (mission, seed,
prompt), so tasks sharing them (the no-preference prompt scored for several preferences) share one.
Exits when done (the graph marks it required, so the graph stops with it).
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import Image

from personal.interfaces.convert import to_dict
from personal.interfaces.tabletop import state_dict
from personal.msg import PermEpisode, TabletopState, TaskPrompt
from personal.manipulation.evaluate import eval_tasks, write_results
from personal.resend import Resend
from personal.runs.output import RESULTS_LOG, OutputDirError, ResultLog, run_folder
from personal.manipulation.report import write_report
from personal.manipulation.scoring import score_episode
from personal.manipulation.trajectory import Trajectory
from nodes.lifecycle import run_node, subscribe

LATCHED = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL, reliability=ReliabilityPolicy.RELIABLE)


def _csv(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


class PermEvaluatorNode(Node):
    def __init__(self, **kwargs) -> None:
        super().__init__("perm_evaluator", **kwargs)
        d = self.declare_parameter
        self.tasks = eval_tasks(_csv(d("missions", "bin,mat").value), _csv(d("prefs", "speed_up,prefer_red").value),
                                [int(s) for s in _csv(d("seeds", "0").value)], _csv(d("suites", "none,single").value))
        self.out = Path(d("out_dir", "runs/perm_eval_graph").value)
        from personal.manipulation.distribution import distribution_note

        # the graph passes the policy node's backend / checkpoint and the simulator's backend: the
        # report flags a learned policy evaluated on a simulator it was not trained on
        self.distribution = distribution_note(d("policy", "learned").value, d("backend", "robosuite").value,
                                              d("checkpoint", "").value)
        if self.distribution["in distribution"] is False:
            self.get_logger().warning(self.distribution["note"])
        self.finished = False  # results written
        try:  # before any rollout; each scored episode is appended as it comes
            self.result_log = ResultLog(run_folder(self.out) / RESULTS_LOG)
        except OutputDirError as exc:
            self.get_logger().error(f"cannot write the results: {exc}")
            self.exit_code, self.finished = 2, True
            return
        self.strips = int(d("strips", 2).value)
        self.frame_every = max(1, int(d("frame_every", 20).value))
        self.timeout_s = float(d("episode_timeout", 120.0).value)
        self.start_delay = float(d("start_delay", 2.0).value)
        self.pub_prompt = self.create_publisher(TaskPrompt, "perm/prompt", LATCHED)
        self.pub_episode = self.create_publisher(PermEpisode, "perm/episode", 10)
        self.resend = Resend(5.0)  # perm/episode again until the simulator answers (personal/resend.py)
        subscribe(self, TabletopState, "perm/oracle/state", self._on_state, 100)
        subscribe(self, Image, "perm/agentview_image", self._on_image, 10)
        # one rollout per (mission, seed, prompt)
        self.rollouts: dict[tuple, list] = {}
        for t in self.tasks:
            self.rollouts.setdefault((t.mission, t.seed, t.prompt), []).append(t)
        self.keys = list(self.rollouts)
        # frame strips for rollouts spread over the run (no-preference and preference prompts alike)
        stride = max(1, len(self.keys) // max(self.strips, 1))
        self.sample = set(self.keys[::stride][: self.strips]) if self.strips > 0 else set()
        self.k = -1
        self.results, self.frames = [], {}
        self.unscored: list[str] = []  # tasks whose rollout never got a simulator state: the run is INCOMPLETE
        self.t0 = time.monotonic()
        self.finish_at: float | None = None
        self.stopped = False  # no more episodes
        self.create_timer(0.05, self._tick)
        self.get_logger().info(f"{len(self.tasks)} tasks in {len(self.keys)} rollouts -> {self.out}")

    # -- episode loop ------------------------------------------------------------------------

    def _tick(self) -> None:
        if self.stopped:
            return
        if self.k < 0:
            # start once the simulator and the policy node are both discovered
            ready = self.pub_episode.get_subscription_count() > 0 and self.pub_prompt.get_subscription_count() > 0
            if ready and time.monotonic() - self.t0 >= self.start_delay:
                self._next()
            return
        if self.finish_at is not None and time.monotonic() > self.finish_at:
            self._finish_rollout()  # the last frame did not come
            return
        self.resend.heard = bool(self.records)
        if self.resend.due(time.monotonic()):
            self.get_logger().warning(f"rollout {self.task_id}: no reply from the simulator yet; resending the episode")
            self._send_episode()
        if time.monotonic() - self.last_msg > self.timeout_s:
            self.get_logger().error(f"rollout {self.task_id}: no simulator state for {self.timeout_s:.0f} s"
                                    + ("; scored from the states it got" if self.records else "; not scored (INCOMPLETE RUN)"))
            self._finish_rollout()

    def _next(self) -> None:
        self.k += 1
        if self.k >= len(self.keys):
            self._write()
            return
        mission, seed, prompt = self.keys[self.k]
        self.task_id = self.rollouts[self.keys[self.k]][0].task_id
        self.records: list[dict] = []
        self.strip: list = []
        self.last_msg = time.monotonic()
        self.pub_prompt.publish(TaskPrompt(task_id=self.task_id, prompt=prompt))
        time.sleep(0.05)  # the prompt (latched) lands before the first observation
        self.resend.sent(time.monotonic())
        self._send_episode()

    def _send_episode(self) -> None:
        mission, seed, _ = self.keys[self.k]
        self.pub_episode.publish(PermEpisode(task_id=self.task_id, mission=mission, seed=int(seed)))

    def _on_state(self, msg: TabletopState) -> None:
        if self.stopped or self.k < 0:
            return
        s = state_dict(to_dict(msg))
        if s.get("task_id") != self.task_id or (self.records and s["step"] <= self.records[-1]["step"]):
            return  # a stale message from the previous rollout
        self.records.append(s)
        self.last_msg = time.monotonic()
        if s.get("done"):
            if self.keys[self.k] in self.sample:
                self.finish_at = time.monotonic() + 1.0  # wait for the last frame (it follows the state)
            else:
                self._finish_rollout()

    def _on_image(self, msg: Image) -> None:
        if self.k < 0 or self.stopped or self.keys[self.k] not in self.sample or not self.records:
            return
        step = self.records[-1]["step"]
        last = self.strip[-1][0] if self.strip else -1
        done = self.records[-1].get("done")
        if step != last and (step % self.frame_every == 0 or done):
            img = np.frombuffer(bytes(msg.data), np.uint8).reshape(msg.height, msg.width, 3)
            self.strip.append((step, img.copy()))
        if done and self.finish_at is not None:
            self._finish_rollout()

    def _finish_rollout(self) -> None:
        self.finish_at = None
        tasks = self.rollouts[self.keys[self.k]]
        if not self.records:  # nothing to score: named in the report, and the run exits INCOMPLETE (not 0)
            self.unscored += [t.task_id for t in tasks]
            tasks = []
        else:
            traj = Trajectory.from_states(self.records, self.strip)
        for t in tasks:
            res = score_episode(traj, t.layout, task_id=t.task_id, suite=t.suite, measured=t.measured,
                                prompted=bool(t.prefs), prompt=t.prompt)
            self.results.append(res)
            self.result_log.append(res.to_dict())
            if self.keys[self.k] in self.sample:
                self.frames[t.task_id] = self.strip
            self.get_logger().info(f"[{len(self.results)}/{len(self.tasks)}] {t.task_id} success={int(res.success)} "
                                   f"d={res.d} SA={res.sa:.2f} ({time.monotonic() - self.t0:.0f} s)")
        self._next()

    def _write(self) -> None:
        self.stopped = True
        self.result_log.close()
        write_results(self.results, self.out)
        from personal.manipulation.distribution import headline
        from personal.manipulation.report import write_run_record

        meta = {"graph": "perm_eval", "simulator": self.distribution["simulator"], "policy": self.distribution["policy"],
                "policy distribution": headline(self.distribution),
                "episodes scored": len(self.results), "wall time": f"{time.monotonic() - self.t0:.0f} s"}
        if self.unscored:
            from personal import exit_codes

            meta["INCOMPLETE RUN"] = (f"{len(self.unscored)} of {len(self.tasks)} tasks not scored, no simulator state "
                                      f"within {self.timeout_s:g} s: {', '.join(self.unscored)}")
            self.exit_code = exit_codes.INCOMPLETE
        write_run_record(self.out, meta, self.distribution)
        report = write_report(self.results, self.out, self.frames, meta=meta)
        sr = np.mean([r.success for r in self.results]) if self.results else float("nan")
        self.get_logger().info(f"perm_eval finished: {len(self.results)} results, SR {sr:.2f}; report {report}")
        self.finished = True


def main(args=None) -> None:
    run_node(PermEvaluatorNode, args, until=lambda n: n.finished, exit_code=lambda n: getattr(n, "exit_code", 0))


if __name__ == "__main__":
    main()

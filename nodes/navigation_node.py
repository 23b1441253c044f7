"""Navigation node (PersONAL PAN): drives the agent through the sim bridge (or a real base).

Runs the library's ``NavigationLoop`` (personal/navigation/run.py) step by step: observation ->
the node's own online maps (in-process: action N+1 needs the map of observation N) -> policy ->
collision guard -> ``action``. The next observation is the one answering the action's ``request_id``
(``sync:=bridge``), or the first frame after the executed action plus ``settle_s`` (``sync:=live``).
Subscribes: ``episode``, ``agent_state``, the ``IMAGE_TOPICS`` it needs, ``camera/color/camera_info``,
``camera/pose``, ``odom``, ``nav/start`` (with a ``query``: no episode descriptor needed), ``nav/cancel``.
Publishes: ``action``, ``nav/result``, ``nav/occupancy`` (transient local), ``nav/progress`` (JSON). See docs/navigation.md.
"""
from __future__ import annotations

import json
import time

import numpy as np
from geometry_msgs.msg import PoseStamped
from nav_msgs.msg import OccupancyGrid, Odometry
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
from sensor_msgs.msg import CameraInfo, Image
from std_msgs.msg import String

from personal.interfaces.convert import from_dict, packed, to_dict
from personal.msg import AgentState, DiscreteAction, EpisodeDescriptor, NavigationRun, NavigationStart
from personal.navigation.progress import run_progress
from personal.navigation.run import (
    IMAGE_TOPICS, PARAMETERS, NavRun, PanLoops, Sensing, camera_matrix, command_spec, episode_rejected, episode_spec,
    failed_run, is_reset_state, map_due, non_finite_pose, observation_image, pose_matrix, start_rejected, start_state,
    summary_line, yaw_of,
)
from nodes.lifecycle import run_node, subscribe
from nodes.map_msgs import occupancy_grid
from nodes.parameters import declare_parameters

LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
STATE_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
COMMAND_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)


class NavigationNode(Node):
    def __init__(self, **kwargs) -> None:
        super().__init__("navigation", **kwargs)
        self.p = declare_parameters(self, PARAMETERS)
        self.loops = PanLoops(self.p, self.get_logger())
        self.episode: dict | None = None
        self.run: NavRun | None = None  # the run in progress
        self.latest_state: dict | None = None
        self.K: np.ndarray | None = None
        self.sensing = sense = Sensing(self.p)
        self.oracle_perception, self.feature_key, self.live = sense.oracle_perception, sense.feature_key, sense.live
        if sense.error:
            self.get_logger().error(sense.error)
        self.pairing = sense.pairing(self.p)
        self.latest_odom: tuple[float, float, float, float] | None = None  # x, y, z, yaw
        self.pub_action = self.create_publisher(DiscreteAction, "action", COMMAND_QOS)
        self.pub_result = self.create_publisher(NavigationRun, "nav/result", COMMAND_QOS)
        self.pub_map = self.create_publisher(OccupancyGrid, "nav/occupancy", LATCHED)
        self.pub_progress = self.create_publisher(String, "nav/progress", COMMAND_QOS)
        subscribe(self, String, "nav/cancel", self.on_cancel, COMMAND_QOS)
        subscribe(self, EpisodeDescriptor, "episode", self.on_episode, LATCHED)
        subscribe(self, AgentState, "agent_state", self.on_state, STATE_QOS)
        subscribe(self, NavigationStart, "nav/start", self.on_start, COMMAND_QOS)
        for key in sense.image_keys():
            topic = IMAGE_TOPICS[key]
            subscribe(self, Image, topic, lambda m, k=key, t=topic: self.on_image(m, k, t), qos_profile_sensor_data)
        subscribe(self, CameraInfo, "camera/color/camera_info", self.on_info, qos_profile_sensor_data)
        subscribe(self, PoseStamped, "camera/pose", self.on_pose, qos_profile_sensor_data)
        subscribe(self, Odometry, "odom", self.on_odom, qos_profile_sensor_data)
        self.create_timer(0.5, self.watchdog)
        self.get_logger().info(f"navigation ready: default policy {self.p['policy']!r}, encoder {self.p['encoder']!r}, "
                               f"sync {self.p['sync']!r}, autostart={self.p['autostart']}")

    def on_episode(self, msg: EpisodeDescriptor) -> None:
        if not msg.episode_id or not msg.scene_id:
            return self.get_logger().error(episode_rejected(msg.episode_id, msg.scene_id))
        ep = to_dict(msg)
        new = self.episode is None or ep["episode_id"] != self.episode["episode_id"]
        self.episode = ep
        if new and self.p["autostart"]:
            self.start(ep["episode_id"], self.p["policy"], int(self.p["max_steps"]))

    def on_start(self, msg: NavigationStart) -> None:
        if not msg.episode_id or msg.max_steps < 1:
            return self.get_logger().error(start_rejected(msg.episode_id, msg.max_steps))
        d = to_dict(msg)
        if self.run is not None and self.run.repeated_by(d):
            return self.get_logger().info(f"nav/start for {d['episode_id']} repeats the run in progress: ignored")
        spec = command_spec(d, self.p["floor_z"])
        self.start(d["episode_id"], d["policy"] or self.p["policy"], int(d["max_steps"]), spec, command=d)

    def on_cancel(self, msg: String) -> None:
        if self.run is not None and not self.run.done and msg.data in ("", self.run.episode_id):
            self.finish("cancelled")

    def start(self, episode_id: str, policy: str, max_steps: int, spec=None, command: dict | None = None) -> None:
        if self.run is not None and not self.run.done:
            self.finish("superseded by a new start")
        ep = self.episode
        try:
            loop = self.loops.loop_for(policy)
        except Exception as exc:  # unknown policy, encoder that cannot load...
            self.get_logger().error(f"cannot start {policy!r}: {exc}")
            self.pub_result.publish(from_dict(NavigationRun, failed_run(episode_id, policy, f"cannot start: {exc}")))
            return
        loop.max_steps = max_steps
        self.run = NavRun(episode_id, policy, loop, spec, time.monotonic(), command)
        if spec is None and (ep is None or ep["episode_id"] != episode_id):
            self.get_logger().info(f"start {policy} for {episode_id}: waiting for that episode on 'episode'")
        self._try_begin()

    def _try_begin(self) -> None:
        """Reset the loop once the task (episode or nav/start query) and the step-0 state are in."""
        run, ep = self.run, self.episode
        if run is None or run.started:
            return
        loop, spec = run.loop, run.spec
        if self.sensing.needs_episode(run):
            if ep is None or ep["episode_id"] != run.episode_id:
                return
            try:
                self.loops.prepare(loop, ep, self.oracle_perception)
            except Exception as exc:
                self.get_logger().error(f"episode {ep['episode_id']}: {exc}")
                self.finish(f"setup failed: {exc}")
                return
        if self.live and self.latest_odom is None:
            return  # retried on the next odometry message
        loop.reset(spec or episode_spec(ep))
        run.begin(time.monotonic())
        if self.live:  # the base stands where odometry says; observe from here
            self.pairing.arm(time.monotonic())
            run.state = start_state(run.episode_id, self.latest_odom)
            self.get_logger().info(f"{run.episode_id} {run.policy}: driving for {loop.policy.spec.query!r}")
            self._advance()
            return
        if is_reset_state(self.latest_state, run.episode_id):
            run.state = self.latest_state
            self._advance()

    def _add(self, msg, key: str, value) -> None:
        self.pairing.add(key, (int(msg.header.stamp.sec), int(msg.header.stamp.nanosec)), value, time.monotonic())
        self._advance()

    def on_image(self, msg: Image, key: str, topic: str) -> None:
        if key != self.feature_key and key == "rgb" and (self.run is None or self.run.loop.stop_verifier is None):
            return  # ORACLE encoder: colour only while a run verifies before it stops
        try:
            value = observation_image(msg, key, topic)
        except ValueError as exc:
            self.get_logger().error(str(exc), throttle_duration_sec=5.0)
            return
        self._add(msg, key, value)

    def on_info(self, msg: CameraInfo) -> None:
        try:
            self.K = camera_matrix(msg.k)
        except ValueError as exc:
            self.get_logger().error(f"topic 'camera/color/camera_info': {exc}", throttle_duration_sec=5.0)

    def on_pose(self, msg: PoseStamped) -> None:
        self._add(msg, "pose", pose_matrix(msg.pose))

    def on_odom(self, msg: Odometry) -> None:
        p = msg.pose.pose
        self.latest_odom = (p.position.x, p.position.y, p.position.z, yaw_of(p.orientation))
        if self.live and self.run is not None and not self.run.started and not self.run.done:
            self._try_begin()
            return
        self._add(msg, "odom", (p.position.x, p.position.y, yaw_of(p.orientation)))

    def on_state(self, msg: AgentState) -> None:
        rejected = non_finite_pose(msg.position.x, msg.position.y, msg.position.z, msg.yaw)
        if rejected:
            self.get_logger().error(rejected)
            return
        st = to_dict(msg)
        self.latest_state = st
        run = self.run
        if run is None or run.done:
            return
        if not run.started:
            self._try_begin()
            return
        verdict = run.accept(st, self.live, time.monotonic())
        if verdict is not None and self.live:
            self.pairing.arm(time.monotonic())
        if verdict == "finish":  # STOP answered or budget spent: no observation needed
            self.finish("")
        elif verdict == "observe":
            self._advance()

    def _advance(self) -> None:
        run = self.run
        if run is None or run.done or not run.started or run.state is None or self.K is None:
            return
        st, loop = run.state, run.loop
        group = self.pairing.match(loop.policy.needs_features, (st["position"]["x"], st["position"]["y"], st["yaw"]),
                                   verify=loop.stop_verifier is not None)
        if group is None:
            return
        try:
            frame = run.observation(group.parts, self.K)
        except ValueError as exc:
            self.get_logger().error(str(exc), throttle_duration_sec=5.0)
            return
        self.pairing.arm(None)  # live: this observation is taken; collect again after the next action
        try:
            action = loop.step(frame)
        except Exception as exc:  # a bug in a policy must not take the node down
            self.get_logger().error(f"{run.policy} failed at step {loop.step_count}: {type(exc).__name__}: {exc}")
            self.finish(f"policy error: {exc}")
            return
        request_id = run.took(int(action), time.monotonic())
        self.pub_action.publish(DiscreteAction(action=int(action), request_id=request_id))
        if self.pub_progress.get_subscription_count():  # JSON only for a listener (the assistant)
            self.pub_progress.publish(String(data=json.dumps(run_progress(loop, run.episode_id, run.policy))))
        if loop.mapper is not None and map_due(loop.step_count, int(self.p["map_publish_every"])):
            self.publish_map(loop.mapper)

    def watchdog(self) -> None:
        run = self.run
        what = run.overdue(time.monotonic(), float(self.p["step_timeout"])) if run is not None else None
        if what is not None:
            self.get_logger().error(f"{run.episode_id}: no {what} within {self.p['step_timeout']} s "
                                    f"(awaiting {run.awaiting}); giving the run up")
            self.finish(f"timeout waiting for {what}")

    def finish(self, failure: str) -> None:
        run = self.run
        if run is None or run.done:
            return
        result, info = run.result(failure, time.monotonic())
        self.pub_result.publish(from_dict(NavigationRun, result))
        if run.loop.mapper is not None:
            self.publish_map(run.loop.mapper)
        self.get_logger().info(summary_line(run, result, info, failure))

    def publish_map(self, mapper) -> None:
        f = mapper.occupancy.to_occupancy_grid_msg_fields()
        self.pub_map.publish(occupancy_grid(f, packed("b", np.asarray(f["data"], dtype=np.int8)), str(self.p["map_frame"]),
                                            self.get_clock().now().to_msg()))


def main(args=None) -> None:
    run_node(NavigationNode, args)


if __name__ == "__main__":
    main()

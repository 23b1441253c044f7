"""Navigation node (PersONAL PAN): drives the agent through the sim bridge (or a real base).

Given an episode's summary and query and no prior map, it runs the library's
``NavigationLoop`` step by step: each observation (depth, instance ids, camera pose,
odometry) goes into the node's own online maps (occupancy + feature map, the mapping
library's code), the policy picks an action, the collision guard vets it, and the action is
published on ``action`` (personal/msg/DiscreteAction). The next observation is the one whose
odometry equals the ``agent_state`` that answers the action's ``request_id``.

Why maps are built here rather than read from the mapping node: a 500-step episode needs
the map that includes observation N before action N+1. Reading the mapping node's outputs
would add a second process hop and a second sync point per step and move an H×W×384 feature
map (megabytes) over DDS every step; running the same library code in-process costs ~10 ms a
step and keeps the loop above 20 steps/s on an idle machine.

Subscribes: ``episode`` (EpisodeDescriptor), ``agent_state`` (AgentState),
``camera/aligned_depth_to_color/image_raw``, ``camera/semantic/image_raw`` (only with the
ORACLE caption encoder, ``encoder:=oracle``), ``camera/color/image_raw`` (only with an image
encoder, ``encoder:=lit`` (default) or ``clip|siglip|blip2`` + ``model_path``), ``camera/color/camera_info``,
``camera/pose``, ``odom``, ``nav/start`` (NavigationStart, from the evaluator or a user),
``nav/cancel`` (std_msgs/String: an episode id, or "" for any run: ends the run in progress).
Publishes: ``action``, ``nav/result`` (NavigationRun), ``nav/occupancy``
(nav_msgs/OccupancyGrid, transient local), ``nav/progress`` (std_msgs/String, JSON of
personal.navigation.progress.run_progress after every step: best candidate, verdicts, status).

A ``nav/start`` that carries a ``query`` (and ``summary`` / ``owner``) needs no episode
descriptor: that is how a run starts on a real robot. ``sync:=live`` pairs observations for
live sensors: the base driver (nodes/base_driver_node.py) answers each action with an
``agent_state`` once it has executed it closed-loop, the base then stands still, and the next
frame arriving after that (plus ``settle_s``) is the observation; the first pose is the newest
odometry. ``sync:=bridge`` (default) is the sim bridge's exact pairing (one stamp per observation).
"""
from __future__ import annotations

import json
import math
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
from personal.navigation.run import (
    NavRun, PanLoops, command_spec, episode_spec, failed_run, image_array, pose_matrix, start_state, summary_line, yaw_of,
)
from nodes.lifecycle import run_node, subscribe
from nodes.map_msgs import occupancy_grid

LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
STATE_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
COMMAND_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)

PARAMETERS = {
    "policy": ("value-map-rpg-owner", "default policy: random-frontier | value-map-qs | value-map-rpg | value-map-rpg-owner | oracle"),
    "autostart": (True, "drive every new episode with the default policy (false: wait for nav/start)"),
    "max_steps": (500, "step budget (PersONAL PAN: 500)"),
    "encoder": ("lit", "feature encoder for the value-map explorers: lit (the learned tower, the default) | oracle "
                       "(ground-truth captions, an ORACLE) | clip | siglip | blip2 (dense image features of camera/color/image_raw)"),
    "model_path": ("", "local model directory for clip / siglip / blip2 (never downloaded)"),
    "sync": ("bridge", "observation pairing: bridge (one stamp per observation, odom = agent state) | "
                       "live (real sensors: the first frame after each agent_state)"),
    "settle_s": (0.0, "sync:=live: frames younger than this after the agent_state are skipped, s"),
    "image_slop": (0.02, "sync:=live: depth and colour match when their stamps differ by at most this, s"),
    "map_frame": ("map", "frame_id of nav/occupancy (odom on a robot without localisation)"),
    "floor_z": (0.0, "floor height for runs started by a nav/start query (no episode descriptor), m"),
    "threshold": (-2.0, "value-map detection threshold (cosine); below -1 (default): the encoder's own, chosen on "
                        "validation households (personal/navigation/thresholds.py)"),
    "phrase_floor": (-2.0, "RPG scorers: least ownership-phrase similarity of a detection; below -1 (default): the "
                           "encoder's own"),
    "extractor": ("builtin", "ownership-phrase extractor: builtin | llm"),
    "episodes_dir": ("", "episode source of the bridge (scenes for ORACLE perception / the oracle policy)"),
    "split": ("all", "as the bridge"),
    "scenes": (1, "as the bridge"),
    "seed": (0, "as the bridge"),
    "map_publish_every": (10, "publish nav/occupancy every N steps (0 = only at the end)"),
    "step_timeout": (10.0, "seconds to wait for the bridge's answer before giving the run up"),
    "reject_unsure": (False, "value-map-*+verify: an unsure verdict also rejects the candidate (the search goes on)"),
}


class NavigationNode(Node):
    def __init__(self, **kwargs) -> None:
        super().__init__("navigation", **kwargs)
        from rcl_interfaces.msg import ParameterDescriptor

        for name, (default, description) in PARAMETERS.items():
            self.declare_parameter(name, default, ParameterDescriptor(description=description))
        self.p = {name: self.get_parameter(name).value for name in PARAMETERS}
        self.loops = PanLoops(self.p, self.get_logger())
        self.episode: dict | None = None
        self.run: NavRun | None = None  # the run in progress
        self.latest_state: dict | None = None
        self.K: np.ndarray | None = None
        from personal.navigation.sync import ObservationPairing

        # the ORACLE caption encoder reads instance ids; image encoders read the colour image
        self.oracle_perception = str(self.p["encoder"]).startswith("oracle")
        self.feature_key = "ids" if self.oracle_perception else "rgb"
        self.live = self.p["sync"] == "live"
        if self.p["sync"] not in ("bridge", "live"):
            self.get_logger().error(f"parameter 'sync': {self.p['sync']!r} unknown (bridge | live); using bridge")
        self.pairing = ObservationPairing(self.live, self.feature_key, int(float(self.p["image_slop"]) * 1e9),
                                          float(self.p["settle_s"]))
        self.latest_odom: tuple[float, float, float, float] | None = None  # x, y, z, yaw

        self.pub_action = self.create_publisher(DiscreteAction, "action", COMMAND_QOS)
        self.pub_result = self.create_publisher(NavigationRun, "nav/result", COMMAND_QOS)
        self.pub_map = self.create_publisher(OccupancyGrid, "nav/occupancy", LATCHED)
        self.pub_progress = self.create_publisher(String, "nav/progress", COMMAND_QOS)
        subscribe(self, String, "nav/cancel", self.on_cancel, COMMAND_QOS)
        subscribe(self, EpisodeDescriptor, "episode", self.on_episode, LATCHED)
        subscribe(self, AgentState, "agent_state", self.on_state, STATE_QOS)
        subscribe(self, NavigationStart, "nav/start", self.on_start, COMMAND_QOS)
        images = {"depth": "camera/aligned_depth_to_color/image_raw", "ids": "camera/semantic/image_raw",
                  "rgb": "camera/color/image_raw"}
        # under the ORACLE encoder the colour frame is read only for verify before stop
        for key in ("depth", self.feature_key) + (("rgb",) if self.oracle_perception and not self.live else ()):
            subscribe(self, Image, images[key], lambda m, k=key: self.on_image(m, k, images[k]), qos_profile_sensor_data)
        subscribe(self, CameraInfo, "camera/color/camera_info", self.on_info, qos_profile_sensor_data)
        subscribe(self, PoseStamped, "camera/pose", self.on_pose, qos_profile_sensor_data)
        subscribe(self, Odometry, "odom", self.on_odom, qos_profile_sensor_data)
        self.create_timer(0.5, self.watchdog)
        self.get_logger().info(f"navigation ready: default policy {self.p['policy']!r}, encoder {self.p['encoder']!r}, "
                               f"sync {self.p['sync']!r}, autostart={self.p['autostart']}")

    # -- episode / start -----------------------------------------------------------------
    def on_episode(self, msg: EpisodeDescriptor) -> None:
        if not msg.episode_id or not msg.scene_id:
            self.get_logger().error(f"topic 'episode': rejected message without episode_id / scene_id "
                                    f"({msg.episode_id!r}, {msg.scene_id!r})")
            return
        ep = to_dict(msg)
        new = self.episode is None or ep["episode_id"] != self.episode["episode_id"]
        self.episode = ep
        if new and self.p["autostart"]:
            self.start(ep["episode_id"], self.p["policy"], int(self.p["max_steps"]))

    def on_start(self, msg: NavigationStart) -> None:
        if not msg.episode_id or msg.max_steps < 1:
            self.get_logger().error(f"topic 'nav/start': rejected message: needs an episode_id and max_steps >= 1 "
                                    f"(got {msg.episode_id!r}, {msg.max_steps})")
            return
        d = to_dict(msg)
        spec = command_spec(d, self.p["floor_z"])
        self.start(d["episode_id"], d["policy"] or self.p["policy"], int(d["max_steps"]), spec)

    def on_cancel(self, msg: String) -> None:
        run = self.run
        if run is not None and not run.done and msg.data in ("", run.episode_id):
            self.finish("cancelled")

    def start(self, episode_id: str, policy: str, max_steps: int, spec=None) -> None:
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
        self.run = NavRun(episode_id, policy, loop, spec, time.monotonic())
        if spec is None and (ep is None or ep["episode_id"] != episode_id):
            self.get_logger().info(f"start {policy} for {episode_id}: waiting for that episode on 'episode'")
        self._try_begin()

    def _try_begin(self) -> None:
        """Reset the loop once the task (episode descriptor, or the nav/start query) and the
        step-0 state (the bridge's reset state; live: the newest odometry) are in."""
        run, ep = self.run, self.episode
        if run is None or run.started:
            return
        loop, spec = run.loop, run.spec
        oracle_captions = loop.policy.needs_features and self.oracle_perception
        if spec is None or loop.policy.is_oracle or oracle_captions:  # these read the episode's ground truth
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
            self._arm()
            run.state = start_state(run.episode_id, self.latest_odom)
            self.get_logger().info(f"{run.episode_id} {run.policy}: driving for {loop.policy.spec.query!r}")
            self._advance()
            return
        st = self.latest_state
        if st is not None and st["episode_id"] == run.episode_id and st["request_id"] == "" and st["step"] == 0:
            run.state = st
            self._advance()

    # -- observations --------------------------------------------------------------------
    def _add(self, msg, key: str, value) -> None:
        self.pairing.add(key, (int(msg.header.stamp.sec), int(msg.header.stamp.nanosec)), value, time.monotonic())
        self._advance()

    def _arm(self) -> None:
        self.pairing.arm(time.monotonic())

    def on_image(self, msg: Image, key: str, topic: str) -> None:
        if key != self.feature_key and key == "rgb" and (self.run is None or self.run.loop.stop_verifier is None):
            return  # ORACLE encoder: colour only while a run verifies before it stops
        try:
            if key == "rgb":
                from personal.mapping.ros_io import rgb_from_msg

                value = rgb_from_msg(msg, topic)
            else:
                value = image_array(msg) if key == "depth" else image_array(msg).astype(np.int32, copy=False)
        except ValueError as exc:
            self.get_logger().error(str(exc) if key == "rgb" else f"topic '{topic}': {exc}", throttle_duration_sec=5.0)
            return
        self._add(msg, key, value)

    def on_info(self, msg: CameraInfo) -> None:
        K = np.asarray(msg.k, dtype=float).reshape(3, 3)
        if K[0, 0] > 0 and K[1, 1] > 0:
            self.K = K
        else:
            self.get_logger().error("topic 'camera/color/camera_info': K has non-positive focal lengths", throttle_duration_sec=5.0)

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
        p = msg.position
        if not all(math.isfinite(v) for v in (p.x, p.y, p.z, msg.yaw)):
            self.get_logger().error(f"topic 'agent_state': rejected message with a non-finite pose "
                                    f"({p.x}, {p.y}, {p.z}, yaw {msg.yaw})")
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
            self._arm()
        if verdict == "finish":  # STOP answered or budget spent: no observation needed
            self.finish("")
        elif verdict == "observe":
            self._advance()

    # -- the loop ------------------------------------------------------------------------
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
            from personal.navigation.progress import run_progress

            self.pub_progress.publish(String(data=json.dumps(run_progress(loop, run.episode_id, run.policy))))
        every = int(self.p["map_publish_every"])
        if loop.mapper is not None and every > 0 and loop.step_count % every == 0:
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

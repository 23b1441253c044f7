"""The sim bridge node: a simulator backend replaying PersONAL episodes as ROS topics
(every topic, its encoding and QoS: docs/simulator.md, "The sim bridge's topics").

Publishes the camera (``camera/color/image_raw``, ``camera/aligned_depth_to_color/image_raw``,
``camera/color/camera_info``, ``camera/semantic/image_raw``), ``odom``, ``camera/pose`` and ``/tf``
(sensor-data QoS; only while someone subscribes), ``episode`` (transient local), ``agent_state``
after every reset and action, ``episode/result`` when STOP ends an episode (ground truth: for
evaluators; an agent that reads it or the episode's targets is an ORACLE) and, with
``publish_clock``, ``/clock``. Accepts ``action`` (one discrete step, answered on ``agent_state``
with its ``request_id``), ``cmd_vel`` (integrated into discrete actions) and the services ``episode/next``,
``episode/reset`` (Trigger) and ``episode/load`` (personal/srv/LoadEpisode: by id, safe to say again).
After STOP further actions are refused, or with ``continue_after_stop`` taken but never scored (the
assistant verifies a found object). Bad input is logged as an error naming it; the node keeps running.
"""
from __future__ import annotations

import math
import os
import time

# one BLAS thread (before numpy loads): the renderer's small matrix products gain nothing from more, and
# OpenBLAS threads waiting beside the renderer's own made a 4x4 inverse cost ~8 ms a frame (measured, 2 cores)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import rclpy  # noqa: E402 - after the BLAS setting
from geometry_msgs.msg import Twist
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from std_srvs.srv import Trigger

from personal.interfaces.convert import from_dict
from personal.msg import AgentState, DiscreteAction, EpisodeDescriptor, EpisodeResult
from personal.resend import AnsweredRequests
from personal.srv import LoadEpisode
from personal.sim.backends.base import Action, Observation
from personal.navigation.eval.pan import episode_result
from personal.sim.bridge_logic import (
    PARAMETERS, TwistIntegrator, agent_state, backend_error, bridge_backend, check_action, episode_descriptor,
    episode_index, load_source, result_line, scene_model, tick_rate,
)
from nodes.lifecycle import run_node, serve, subscribe
from nodes.parameters import declare_parameters
from nodes.tf import TfBroadcaster
from sim_bridge import frame_msgs as fm

LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
STATE_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
COMMAND_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)


class SimBridgeNode(Node):
    def __init__(self, **kwargs) -> None:
        super().__init__("sim_bridge", **kwargs)
        self.p = p = declare_parameters(self, PARAMETERS)
        self.scenes: dict = {}
        self.episodes: list = []
        self.index = -1
        self.obs: Observation | None = None
        self.step_count = 0
        self.stopped = False
        self.sim_time_ns = 0
        self.published = 0
        self._count_since = time.monotonic()
        self._last_log = time.monotonic()
        self.twist = TwistIntegrator()
        self.poses: list = []  # (x, y, yaw) at the start and after every action of the episode
        self._last_publish = 0.0  # monotonic time of the last frame sent

        self.pub_episode = self.create_publisher(EpisodeDescriptor, "episode", LATCHED)
        self.pub_state = self.create_publisher(AgentState, "agent_state", STATE_QOS)
        self.pub_result = self.create_publisher(EpisodeResult, "episode/result", STATE_QOS)
        self.pub_clock = self.create_publisher(Clock, "/clock", 10) if p["publish_clock"] else None
        self.tf = TfBroadcaster(self) if p["publish_tf"] else None
        self.frames = fm.FrameSender(self, self.tf, p)  # the camera topics, odom, camera/pose (and /tf)
        subscribe(self, DiscreteAction, "action", self.on_action, COMMAND_QOS)
        subscribe(self, Twist, "cmd_vel", self.on_cmd_vel, COMMAND_QOS)
        serve(self, Trigger, "episode/next", self.on_next)
        serve(self, Trigger, "episode/reset", self.on_reset)
        self.loads = AnsweredRequests()  # episode/load's answers by request id: a repeat loads nothing
        serve(self, LoadEpisode, "episode/load", self.on_load)

        self.backend = None
        try:
            self.backend, spec = bridge_backend(p)
            self.get_logger().info(f"camera: {spec.describe()}")
        except Exception as exc:  # unknown name, habitat missing, ...
            self.get_logger().error(backend_error(exc))
        self._load_source()
        if self.episodes and self.backend is not None:
            self.goto(int(p["start_index"]) % len(self.episodes))
        rate, rate_error = tick_rate(p["rate"])
        if rate_error:
            self.get_logger().error(rate_error)
        self.period_ns = int(1e9 / rate)
        self.create_timer(1.0 / rate, self.tick)
        self.published, self._count_since = 0, time.monotonic()
        self._last_log = self._count_since

    # -- episodes ----------------------------------------------------------------
    def _load_source(self) -> None:
        try:  # EpisodeFormatError / EpisodeSourceError are ValueErrors
            habitat = getattr(self.backend, "scores_with_view_points", False)
            self.scenes, self.episodes, where = load_source(self.p, habitat)
            self.get_logger().info(f"{len(self.episodes)} episodes in {len(self.scenes)} scenes from {where}")
        except (ValueError, OSError) as exc:
            self.get_logger().error(f"cannot load episodes: {exc}")
            self.scenes, self.episodes = {}, []

    def goto(self, index: int) -> tuple[bool, str]:
        if self.backend is None:
            return False, "no simulator backend (see the 'backend' error above)"
        if not self.episodes:
            return False, "no episodes loaded (see the error above)"
        ep = self.episodes[index]
        scene = self.scenes.get(ep.scene_id)
        if scene is None:
            msg = f"episode {ep.episode_id!r}: unknown scene {ep.scene_id!r}"
            self.get_logger().error(msg)
            return False, msg
        try:
            descriptor = episode_descriptor(ep, scene_model(scene), index, len(self.episodes))
            self.backend.load_scene(scene)
            obs = self.backend.reset(ep)
            if math.isnan(descriptor["geodesic_distance"]) and hasattr(self.backend, "episode_goal_distance"):
                # generated episodes leave it to the simulator (start -> success region of the targets)
                descriptor["geodesic_distance"] = float(self.backend.episode_goal_distance(ep))
            episode_msg = from_dict(EpisodeDescriptor, descriptor)
        except Exception as exc:  # any backend failure: report it and stay up for the next request
            msg = f"episode {ep.episode_id!r} (scene {ep.scene_id!r}) failed to load: {type(exc).__name__}: {exc}"
            self.get_logger().error(msg)
            return False, msg
        self.index, self.step_count, self.stopped = index, 0, False
        self.poses = [(obs.state.x, obs.state.y, obs.state.yaw)]
        self.pub_episode.publish(episode_msg)
        self._new_observation(obs, request_id="")
        msg = f"episode {index + 1}/{len(self.episodes)}: {ep.episode_id} in {ep.scene_id} ({ep.split}): {ep.query}"
        self.get_logger().info(msg)
        return True, msg

    def on_next(self, request, response):
        response.success, response.message = (self.goto((self.index + 1) % len(self.episodes)) if self.episodes
                                              else (False, "no episodes loaded"))
        return response

    def on_reset(self, request, response):
        response.success, response.message = self.goto(self.index) if self.index >= 0 else (False, "no episode loaded")
        return response

    def on_load(self, request, response):
        """episode/load: the episode by id or index, once per request id (said again: the first answer)."""
        answer = self.loads.get(request.request_id)
        if answer is None:
            answer = self.goto(episode_index(self.episodes, request.episode_id, request.index))  # bad: the guard answers
            self.loads.put(request.request_id, answer)
        response.success, response.message = answer
        return response

    # -- actions -------------------------------------------------------------------
    def on_action(self, msg: DiscreteAction) -> None:
        try:
            action = check_action(msg.action)
        except ValueError as exc:
            self.get_logger().error(f"topic 'action': rejected message: {exc}")
            return
        self.apply(action, msg.request_id)

    def on_cmd_vel(self, msg: Twist) -> None:
        actions, note = self.twist.update(time.monotonic(), msg.linear.x, msg.angular.z)
        if note:
            self.get_logger().warning(f"topic 'cmd_vel': {note}", throttle_duration_sec=5.0)
        for action in actions:
            self.apply(action, "cmd_vel")

    def apply(self, action: Action, request_id: str) -> None:
        if self.obs is None or self.backend is None:
            self.get_logger().error(f"action {action.name} ignored: no episode loaded")
            return
        after_stop = self.stopped
        if after_stop and not self.p["continue_after_stop"]:
            self.get_logger().error(f"action {action.name} ignored: episode ended with STOP "
                                    "(call episode/next or episode/reset)")
            return
        try:
            obs = self.backend.step(action)
        except Exception as exc:  # the backend failed on this step; the node stays up
            self.get_logger().error(f"action {action.name} failed: {type(exc).__name__}: {exc}")
            return
        self.step_count += 1
        # continue_after_stop: the first STOP ends (and scores) the navigation request; later actions
        # (a verification's views) move the robot, stay stopped=True and never change the score
        self.stopped = after_stop or action == Action.STOP
        if not after_stop:
            self.poses.append((obs.state.x, obs.state.y, obs.state.yaw))
        self._new_observation(obs, request_id)
        if self.stopped and not after_stop:
            self._publish_result()

    def _publish_result(self) -> None:
        ep = self.episodes[self.index]
        try:
            result = episode_result(self.backend, ep, scene_model(self.scenes.get(ep.scene_id)), self.poses,
                                    self.step_count, True)
        except Exception as exc:  # scoring must not take the bridge down
            self.get_logger().error(f"episode {ep.episode_id!r}: cannot score the episode: {type(exc).__name__}: {exc}")
            return
        self.pub_result.publish(from_dict(EpisodeResult, result))
        self.get_logger().info(result_line(ep.episode_id, result))

    # -- publishing ------------------------------------------------------------------
    def _stamp(self):
        if self.pub_clock is not None:
            return rclpy.time.Time(nanoseconds=self.sim_time_ns).to_msg()
        return self.get_clock().now().to_msg()

    def _new_observation(self, obs: Observation, request_id: str) -> None:
        self.obs = obs
        self.frames.new(obs)
        self._publish_frame()
        state = agent_state(self.episodes[self.index].episode_id, obs, self.step_count, self.stopped, request_id)
        self.pub_state.publish(from_dict(AgentState, state))

    def _publish_frame(self) -> None:
        if self.frames.send(self._stamp()):
            self.published += 1
            self._last_publish = time.monotonic()

    def tick(self) -> None:
        if self.pub_clock is not None:
            self.sim_time_ns += self.period_ns
            self.pub_clock.publish(Clock(clock=rclpy.time.Time(nanoseconds=self.sim_time_ns).to_msg()))
        # a stream of at least `rate` Hz: a frame published by an action in the last period counts (re-sending
        # it would only cost both ends a copy of every image: in lock-step exploration most of the bridge's time)
        now = time.monotonic()
        if self.pub_clock is not None or now - self._last_publish >= 0.9 * self.period_ns / 1e9:  # sim time: every tick
            self._publish_frame()
        if self.p["log_every"] > 0 and now - self._last_log >= self.p["log_every"]:
            hz = self.published / max(now - self._count_since, 1e-9)
            where = f"episode {self.index + 1}/{len(self.episodes)}" if self.index >= 0 else "no episode"
            self.get_logger().info(f"published {self.published} frames ({hz:.1f} Hz: rgb, depth, ids, info, odom, "
                                   f"camera pose), {where}, step {self.step_count}")
            self.published, self._count_since, self._last_log = 0, now, now


def main(args=None) -> None:
    run_node(SimBridgeNode, args)


if __name__ == "__main__":
    main()

"""Tabletop simulator node (robosuite Panda, or the kinematic stand-in) for the PeRM evaluation.

Topics (all under the node namespace):
- sub ``perm/episode`` (personal/msg/PermEpisode: task_id, mission, seed): reset to that layout.
- sub ``perm/action`` (std_msgs/Float32MultiArray, 7 values or an Hx7 chunk whose first row is used).
- sub ``perm/stop`` (std_msgs/String: a task id, or "" for whatever runs): end the episode now (a
  cancelled HandOver); one last state with ``done`` and the arm takes no more actions.
- pub ``perm/agentview_image``, ``perm/eye_in_hand_image`` (sensor_msgs/Image rgb8, 128x128, every
  ``image_every`` steps: offscreen EGL rendering on the CPU costs ~50 ms per image).
- pub ``perm/robot_state`` (Float32MultiArray, 8: eef xyz, eef axis-angle, 2 gripper joints).
- pub ``perm/environment_state`` (Float32MultiArray: the object slots of ``learned.features``, each step
  before the robot state): the simulator's stand-in for an object-pose estimator.
- pub ``perm/oracle/layout`` (personal/msg/TabletopLayout, transient local) and ``perm/oracle/state``
  (personal/msg/TabletopState per step: eef, yaw, gripper, held object, object positions, success,
  done). ORACLE: for the evaluator and for oracle policies only.

``lockstep`` (default): one control step per received action, so results do not depend on CPU speed.
Otherwise a ``rate`` Hz timer steps with the latest action (zero-order hold).
"""
from __future__ import annotations

import numpy as np
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import Image
from std_msgs.msg import Float32MultiArray, String

from personal.interfaces.convert import from_dict, packed
from personal.interfaces.tabletop import layout_fields, state_fields
from personal.msg import PermEpisode, TabletopLayout, TabletopState
from personal.manipulation.backends import make_backend
from personal.manipulation.learned.features import environment_state
from personal.manipulation.policies.base import make_observation
from personal.manipulation.suite import make_layout
from nodes.lifecycle import run_node, subscribe

LATCHED = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL, reliability=ReliabilityPolicy.RELIABLE)


def image_msg(img: np.ndarray, frame: str, stamp) -> Image:
    msg = Image()
    msg.header.stamp, msg.header.frame_id = stamp, frame
    msg.height, msg.width = int(img.shape[0]), int(img.shape[1])
    msg.encoding, msg.step = "rgb8", int(img.shape[1] * 3)
    msg.data = packed("B", np.ascontiguousarray(img, dtype=np.uint8))
    return msg


class TabletopSimNode(Node):
    def __init__(self, **kwargs) -> None:
        super().__init__("tabletop_sim", **kwargs)
        p = {
            "backend": self.declare_parameter("backend", "robosuite").value,
            "lockstep": self.declare_parameter("lockstep", True).value,
            "rate": float(self.declare_parameter("rate", 20.0).value),
            "image_every": int(self.declare_parameter("image_every", 1).value),
            "max_steps": int(self.declare_parameter("max_steps", 400).value),
        }
        self.params = p
        self.backend = make_backend(p["backend"])
        self.pub_agent = self.create_publisher(Image, "perm/agentview_image", 10)
        self.pub_wrist = self.create_publisher(Image, "perm/eye_in_hand_image", 10)
        self.pub_state = self.create_publisher(Float32MultiArray, "perm/robot_state", 10)
        self.pub_env = self.create_publisher(Float32MultiArray, "perm/environment_state", 10)
        self.pub_layout = self.create_publisher(TabletopLayout, "perm/oracle/layout", LATCHED)
        self.pub_oracle = self.create_publisher(TabletopState, "perm/oracle/state", 50)
        subscribe(self, PermEpisode, "perm/episode", self._on_episode, 10)
        subscribe(self, Float32MultiArray, "perm/action", self._on_action, 10)
        subscribe(self, String, "perm/stop", self._on_stop, 10)
        self.episode: dict | None = None
        self.step_i = 0
        self.done, self.stopped = True, False
        self.action = np.array([0, 0, 0, 0, 0, 0, -1.0])
        if not p["lockstep"]:
            self.create_timer(1.0 / p["rate"], self._tick)
        self.get_logger().info(f"tabletop sim ready (backend {self.backend.name}, lockstep={p['lockstep']})")

    def _on_episode(self, msg: PermEpisode) -> None:
        ep = {"task_id": msg.task_id, "mission": msg.mission, "seed": int(msg.seed)}
        try:
            layout = make_layout(msg.mission, int(msg.seed))
        except (ValueError, KeyError, TypeError) as exc:
            self.get_logger().error(f"perm/episode: bad episode {ep}: {exc}")
            return
        self.episode, self.layout, self.step_i, self.done, self.stopped = ep, layout, 0, False, False
        obs = self.backend.reset(layout, render=True)
        self.pub_layout.publish(from_dict(TabletopLayout, layout_fields(layout.to_dict(), ep["task_id"])))
        self._publish(obs)
        self.get_logger().info(f"episode {ep.get('task_id', '?')}: reset")

    def _on_stop(self, msg: String) -> None:
        if self.done or self.episode is None or msg.data not in ("", self.episode.get("task_id")):
            return
        self.stopped = True
        self.get_logger().info(f"episode {self.episode.get('task_id', '?')}: stopped at step {self.step_i}")
        self._publish(self.backend.observe(render=True))

    def _on_action(self, msg: Float32MultiArray) -> None:
        a = np.asarray(msg.data, dtype=np.float64)
        if a.size == 0 or a.size % 7 or not np.all(np.isfinite(a)):
            self.get_logger().error(f"perm/action: expected 7 finite values (or Hx7), got {a.size} values; ignored")
            return
        self.action = a.reshape(-1, 7)[0]
        if self.params["lockstep"]:
            self._tick()

    def _tick(self) -> None:
        if self.done or self.episode is None:
            return
        self.step_i += 1
        render = self.params["image_every"] > 0 and self.step_i % self.params["image_every"] == 0
        obs = self.backend.step(self.action, render=render)
        if not render and (self.backend.success() or self.step_i >= self.params["max_steps"]):
            obs = self.backend.observe(render=True)  # the last frame of the episode
        self._publish(obs)

    def _publish(self, obs: dict) -> None:
        # order per step: oracle state, images, robot state (the policy acts on the robot state, so
        # the images and the live object positions of the same step are already there)
        stamp = self.get_clock().now().to_msg()
        success = self.backend.success()
        self.done = success or self.stopped or self.step_i >= self.params["max_steps"]
        s = self.backend.oracle_state()
        self.pub_oracle.publish(from_dict(TabletopState, state_fields({
            "task_id": self.episode.get("task_id", ""), "step": self.step_i, "eef": s.eef_pos.tolist(), "yaw": s.eef_yaw,
            "gripper": s.gripper, "held": s.held, "objects": {k: v.tolist() for k, v in s.objects.items()},
            "success": bool(success), "done": bool(self.done)})))
        if "agentview_image" in obs:
            self.pub_agent.publish(image_msg(obs["agentview_image"], "agentview", stamp))
            self.pub_wrist.publish(image_msg(obs["robot0_eye_in_hand_image"], "robot0_eye_in_hand", stamp))
        if not self.done:  # the policy acts on robot_state; none after the episode ends
            env = environment_state(self.layout, s.objects)
            self.pub_env.publish(Float32MultiArray(data=packed("f", env.astype(np.float32))))
            state = make_observation(obs, "")["observation/state"]
            self.pub_state.publish(Float32MultiArray(data=packed("f", state.astype(np.float32))))


def main(args=None) -> None:
    run_node(TabletopSimNode, args, on_exit=lambda n: n.backend.close())


if __name__ == "__main__":
    main()

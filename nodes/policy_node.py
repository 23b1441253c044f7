"""Policy node: camera images + robot state + prompt in, 7-D delta-EEF actions out; optionally serves
the openpi websocket protocol for its backend.

Topics: sub ``perm/agentview_image``, ``perm/eye_in_hand_image`` (sensor_msgs/Image rgb8),
``perm/robot_state`` (Float32MultiArray, 8), ``perm/environment_state`` (Float32MultiArray, object slots;
the learned policy's object state), ``perm/prompt`` (personal/msg/TaskPrompt), ``perm/oracle/layout``
(TabletopLayout) and ``perm/oracle/state`` (TabletopState; only oracle policies use them); pub
``perm/action`` (Float32MultiArray, 7 values; with
``publish_chunk`` the whole Hx7 chunk) and ``perm/policy/latency_ms`` (Float32, per inference).

``mode``: ``lockstep`` answers each robot_state with one action (the simulator waits for it);
``timer`` publishes at ``rate`` Hz from the latest observation (a real robot's control loop).
Action chunks are executed ``replan`` actions at a time before asking the backend again (openpi style).
Parameters ``backend`` (learned | scripted | openpi | http), ``checkpoint`` (learned; "" = the shipped one),
``host``/``port`` (openpi), ``url`` (http),
``serve_port`` (>= 0: also serve the openpi protocol there; 0 = any free port), ``serve_host``
(default 127.0.0.1), ``serve_max_frame_mb`` (largest request frame, default 32), ``serve_max_connections``
(default 8), ``serve_allowed_origins`` (comma-separated browser Origins; default none).
"""
from __future__ import annotations

import json
import time

import numpy as np
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import Image
from std_msgs.msg import Float32, Float32MultiArray, MultiArrayDimension

from personal.interfaces.convert import packed, to_dict
from personal.interfaces.tabletop import layout_dict, state_dict
from personal.msg import TabletopLayout, TabletopState, TaskPrompt
from personal.manipulation.backends.base import IMAGE_SIZE
from personal.manipulation.policies import ObservationError, make_policy
from personal.manipulation.policies.base import check_actions, validate_observation, wants_oracle_inputs
from nodes.lifecycle import run_node, subscribe

LATCHED = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL, reliability=ReliabilityPolicy.RELIABLE)


def image_from_msg(msg: Image) -> np.ndarray:
    if msg.encoding not in ("rgb8", "bgr8") or msg.step != msg.width * 3:
        raise ObservationError(f"image must be rgb8/bgr8 packed, got encoding {msg.encoding!r} step {msg.step}")
    img = np.frombuffer(bytes(msg.data), np.uint8)
    if img.size != msg.height * msg.width * 3:
        raise ObservationError(f"image data has {img.size} bytes, expected {msg.height * msg.width * 3}")
    img = img.reshape(msg.height, msg.width, 3)
    return img[..., ::-1].copy() if msg.encoding == "bgr8" else img


class PolicyNode(Node):
    def __init__(self, **kwargs) -> None:
        super().__init__("policy", **kwargs)
        d = self.declare_parameter
        self.mode = d("mode", "lockstep").value
        self.replan = max(1, int(d("replan", 5).value))
        self.publish_chunk = bool(d("publish_chunk", False).value)
        backend = d("backend", "learned").value
        checkpoint = d("checkpoint", "").value
        self.policy = make_policy(backend, host=d("host", "127.0.0.1").value, port=int(d("port", 8000).value),
                                  url=d("url", "http://127.0.0.1:8000/act").value, chunk=int(d("chunk", 1).value),
                                  **({"checkpoint": checkpoint} if checkpoint and backend == "learned" else {}))
        self.oracle_inputs = wants_oracle_inputs(self.policy)
        blank = np.zeros((IMAGE_SIZE, IMAGE_SIZE, 3), np.uint8)
        self.images = {"observation/image": blank, "observation/wrist_image": blank}
        self.state: np.ndarray | None = None
        self.env_state: np.ndarray | None = None
        self.prompt, self.layout, self.layout_task = "", None, None
        self.queue: list[np.ndarray] = []
        self.latencies: list[float] = []
        self.errors = 0
        self.pending = False  # a state is waiting for its action (lockstep)
        self.pub_action = self.create_publisher(Float32MultiArray, "perm/action", 10)
        self.pub_latency = self.create_publisher(Float32, "perm/policy/latency_ms", 10)
        subscribe(self, Image, "perm/agentview_image", lambda m: self._on_image("observation/image", m), 10)
        subscribe(self, Image, "perm/eye_in_hand_image", lambda m: self._on_image("observation/wrist_image", m), 10)
        subscribe(self, Float32MultiArray, "perm/robot_state", self._on_state, 10)
        subscribe(self, Float32MultiArray, "perm/environment_state", self._on_env_state, 10)
        subscribe(self, TaskPrompt, "perm/prompt", self._on_prompt, LATCHED)
        subscribe(self, TabletopLayout, "perm/oracle/layout", self._on_layout, LATCHED)
        subscribe(self, TabletopState, "perm/oracle/state", self._on_oracle_state, 10)
        self.objects: str | None = None
        if self.mode == "timer":
            self.create_timer(1.0 / float(d("rate", 20.0).value), self._act)
        self.create_timer(5.0, self._report)
        self.server = None
        serve_port = int(d("serve_port", -1).value)
        if serve_port >= 0:
            from personal.manipulation.policies.server import PolicyServer

            max_mb = float(d("serve_max_frame_mb", 32.0).value)
            origins = [o.strip() for o in str(d("serve_allowed_origins", "").value).split(",") if o.strip()]
            self.server = PolicyServer(self.policy, host=d("serve_host", "127.0.0.1").value, port=serve_port,
                                       max_frame_bytes=int(max_mb * 1024 * 1024),
                                       max_connections=int(d("serve_max_connections", 8).value),
                                       allowed_origins=origins).start()
            self.get_logger().info(f"serving the openpi protocol on {self.server.url}")
        self.get_logger().info(f"policy node ready (backend {self.policy.name}, mode {self.mode})")

    def _on_image(self, key: str, msg: Image) -> None:
        try:
            self.images[key] = image_from_msg(msg)
        except ObservationError as exc:
            self.errors += 1
            self.get_logger().error(f"{key}: malformed image ignored: {exc}")

    def _on_prompt(self, msg: TaskPrompt) -> None:
        if msg.prompt != self.prompt:
            self.prompt, self.queue = msg.prompt, []
            self._retry()

    def _on_layout(self, msg: TabletopLayout) -> None:
        layout = json.dumps(layout_dict(to_dict(msg)))  # the oracle/layout observation the policies read
        # every episode starts afresh, also one repeating the last layout (a HandOver asked twice)
        if (layout, msg.task_id) != (self.layout, self.layout_task):
            self.layout, self.layout_task, self.queue = layout, msg.task_id, []
            self.policy.reset()
            self._retry()

    def _on_oracle_state(self, msg: TabletopState) -> None:
        """Live object positions for oracle policies (closed-loop pushing)."""
        if len(msg.object_names) != len(msg.object_positions):
            self.errors += 1
            self.get_logger().error(f"perm/oracle/state: {len(msg.object_names)} names for "
                                    f"{len(msg.object_positions)} positions; ignored")
            return
        self.objects = json.dumps(state_dict(to_dict(msg))["objects"])

    def _retry(self) -> None:
        """Lockstep: the simulator waits for an answer to its last state; if that inference failed
        (e.g. the layout had not arrived yet), answer now that the context changed."""
        if self.mode == "lockstep" and self.pending:
            self._act()

    def _on_env_state(self, msg: Float32MultiArray) -> None:
        env = np.asarray(msg.data, dtype=np.float32)
        if env.ndim != 1 or env.size == 0 or not np.all(np.isfinite(env)):
            self.errors += 1
            self.get_logger().error(f"perm/environment_state: expected finite values, got {env.size}; ignored")
            return
        self.env_state = env
        self._retry()  # lockstep: a state that arrived before its object state is answered now

    def _on_state(self, msg: Float32MultiArray) -> None:
        state = np.asarray(msg.data, dtype=np.float32)
        if state.shape != (8,) or not np.all(np.isfinite(state)):
            self.errors += 1
            self.get_logger().error(f"perm/robot_state: expected 8 finite values, got {state.tolist()[:10]}; ignored")
            return
        self.state = state
        if self.mode == "lockstep":
            self._act()

    def _observation(self) -> dict:
        obs = {**self.images, "observation/state": self.state, "prompt": self.prompt}
        if self.env_state is not None:
            obs["observation/environment_state"] = self.env_state
        if not self.oracle_inputs:
            return obs
        if self.layout is not None:
            obs["oracle/layout"] = self.layout
        if self.objects is not None:
            obs["oracle/objects"] = self.objects
        return obs

    def _act(self) -> None:
        if self.state is None:
            return
        self.pending = True
        if not self.queue:
            obs = self._observation()
            try:
                validate_observation(obs)
                tic = time.perf_counter()
                chunk = check_actions(self.policy.infer(obs)["actions"])
            except Exception as exc:  # noqa: BLE001 - keep serving; the error is logged and counted
                self.errors += 1
                self.get_logger().error(f"inference failed: {type(exc).__name__}: {exc}")
                return
            ms = (time.perf_counter() - tic) * 1e3
            self.latencies.append(ms)
            self.pub_latency.publish(Float32(data=float(ms)))
            self.queue = list(chunk[: self.replan])
            if self.publish_chunk:
                self._publish(chunk)
        self.pending = False
        action = self.queue.pop(0)
        if not self.publish_chunk:
            self._publish(action[None])

    def _publish(self, actions: np.ndarray) -> None:
        msg = Float32MultiArray(data=packed("f", actions.astype(np.float32).reshape(-1)))
        msg.layout.dim = [MultiArrayDimension(label="chunk", size=len(actions), stride=actions.size),
                          MultiArrayDimension(label="action", size=7, stride=7)]
        self.pub_action.publish(msg)

    def _report(self) -> None:
        if self.latencies:
            lat = np.array(self.latencies)
            self.get_logger().info(f"inference latency: mean {lat.mean():.2f} ms, p95 {np.percentile(lat, 95):.2f} ms "
                                   f"over {len(lat)} calls; errors {self.errors}")
            self.latencies = []

    def destroy_node(self):
        if self.server is not None:
            self.server.stop()
        self.policy.close()
        return super().destroy_node()


def main(args=None) -> None:
    run_node(PolicyNode, args)


if __name__ == "__main__":
    main()

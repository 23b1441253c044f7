"""PInVerify verifier node: per-view attribute evidence, multi-view tracker, decision.

Subscribes ``aiv/observation`` (``personal/msg/AivObservation``) and the capture
images ``aiv/capture/rgb`` / ``aiv/capture/mask`` / ``aiv/capture/depth`` (32FC1 metres; used by
the built-in verifier's shape check), matched by header.frame_id = request id.
Publishes ``aiv/verdict`` (``AivVerdict``) once per observation.
Backends: decomposer builtin | llm, verifier builtin | vlm (OpenAI-compatible endpoints
from PERSONAL_LLM_* / PERSONAL_VLM_* environment variables).
"""
from __future__ import annotations

import time

import numpy as np
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import Image

from personal.interfaces.convert import from_dict, to_dict
from personal.msg import AivObservation, AivVerdict
from personal.verification.agent import AgentConfig
from personal.verification.session import VerifierSession, error_verdict
from nodes.lifecycle import run_node, subscribe

RELIABLE = QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE)
STALE_S = 30.0


ENCODINGS = {"rgb8": (np.uint8, 3), "mono8": (np.uint8, 1), "32FC1": (np.float32, 1)}


def image_array(msg: Image) -> np.ndarray:
    if msg.encoding not in ENCODINGS:
        raise ValueError(f"unsupported image encoding {msg.encoding!r} ({' | '.join(ENCODINGS)})")
    dtype, channels = ENCODINGS[msg.encoding]
    raw = bytes(msg.data)
    if len(raw) != msg.height * msg.step or msg.step < msg.width * channels * np.dtype(dtype).itemsize:
        raise ValueError(f"image data has {len(raw)} bytes, expected {msg.height} rows of {msg.step}")
    rows = np.frombuffer(raw, dtype=np.uint8).reshape(msg.height, msg.step)
    arr = rows[:, : msg.width * channels * np.dtype(dtype).itemsize].copy().view(dtype)
    return arr.reshape(msg.height, msg.width, 3) if channels == 3 else arr.reshape(msg.height, msg.width)


class VerifierNode(Node):
    def __init__(self, **kwargs) -> None:
        super().__init__("aiv_verifier", **kwargs)
        p = self._declare
        config = AgentConfig(mode=p("mode", "multi", "single | multi"), horizon=p("horizon", 6, "steps per episode"),
                             detection=p("detection", "mask", "mask (GT mask) | box (GT box only)"),
                             min_coverage=p("min_coverage", 0.0, "judgeable attribute weight seen before a unanimity stop"))
        self.session = VerifierSession(config, p("decomposer", "builtin", "builtin | llm"), p("verifier", "builtin", "builtin | vlm"))
        self.pending: dict[str, dict] = {}  # request id -> {"obs", "rgb", "mask", "depth", "t"}
        self.pub = self.create_publisher(AivVerdict, "aiv/verdict", RELIABLE)
        subscribe(self, AivObservation, "aiv/observation", self._on_obs, RELIABLE)
        subscribe(self, Image, "aiv/capture/rgb", lambda m: self._on_image(m, "rgb"), RELIABLE)
        subscribe(self, Image, "aiv/capture/mask", lambda m: self._on_image(m, "mask"), RELIABLE)
        subscribe(self, Image, "aiv/capture/depth", lambda m: self._on_image(m, "depth"), RELIABLE)
        self.get_logger().info(f"verifier ready ({config.mode}-view, verifier {self.session.agent.verifier.name})")

    def _declare(self, name, default, description):
        from rcl_interfaces.msg import ParameterDescriptor

        return self.declare_parameter(name, default, ParameterDescriptor(description=description)).value

    def _slot(self, request_id: str) -> dict:
        now = time.monotonic()
        for k in [k for k, v in self.pending.items() if now - v["t"] > STALE_S]:
            del self.pending[k]  # parts of a step that never completed
        return self.pending.setdefault(request_id, {"obs": None, "rgb": None, "mask": None, "depth": None, "t": now})

    def _on_image(self, msg: Image, kind: str) -> None:
        try:
            arr = image_array(msg)
        except ValueError as exc:
            self.get_logger().error(f"aiv/capture/{kind}: {exc}")
            return
        self._slot(msg.header.frame_id)[kind] = arr > 0 if kind == "mask" else arr
        self._try(msg.header.frame_id)

    def _on_obs(self, msg: AivObservation) -> None:
        if not msg.request_id:
            self.get_logger().error(f"aiv/observation: dropped an observation without request_id "
                                    f"(episode {msg.episode_index}, step {msg.step})")
            return
        obs = to_dict(msg)
        self._slot(obs["request_id"])["obs"] = obs
        self._try(obs["request_id"])

    def _try(self, request_id: str) -> None:
        slot = self.pending.get(request_id)
        if slot is None or slot["obs"] is None:
            return
        obs = slot["obs"]
        missing = (slot["rgb"] is None or (obs.get("has_mask") and slot["mask"] is None)
                   or (obs.get("has_depth") and slot["depth"] is None))
        if obs["new_view"] and not obs.get("error") and missing:
            return  # images still on their way
        del self.pending[request_id]
        try:
            verdict = self.session.handle(obs, slot["rgb"], slot["mask"], slot["depth"])
        except Exception as exc:  # a bug costs one episode, not the node
            self.get_logger().error(f"episode {obs['episode_index']} step {obs['step']}: {type(exc).__name__}: {exc}")
            verdict = error_verdict(request_id, obs["episode_index"], obs["step"], f"{type(exc).__name__}: {exc}")
        self.pub.publish(from_dict(AivVerdict, verdict))


def main(args=None) -> None:
    run_node(VerifierNode, args)


if __name__ == "__main__":
    main()

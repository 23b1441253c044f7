"""Live view node: the graph's topics -> a Foxglove WebSocket server (``viz:=foxglove``).

Runs ``foxglove-sdk``'s server (``port``, default 8765; connect the Foxglove app to
``ws://<host>:8765`` and import ``viz/layouts/<graph>.json``) and forwards, in Foxglove's schemas.
A ROS topic keeps its (un-namespaced) name, so one layout serves the live view, ``foxglove_bridge``
on a full ROS install and recorded bags; derived views get names of their own:

  ROS topic (relative, remappable)                 Foxglove topic                     schema
  camera/color/image_raw, aiv/capture/rgb,         the same names, with a leading /   RawImage
    perm/agentview_image
  camera/aligned_depth_to_color/image_raw          (same)                             RawImage (16UC1 mm)
  camera/color/camera_info                         (same)                             CameraCalibration
  map/cloud                                        (same)                             PointCloud
  map, nav/occupancy                               (same)                             Grid (occupancy)
  grounding/similarity                             (same)                             Grid (cosine of cell and query)
  map/frontiers                                    (same)                             SceneUpdate
  grounding/result (+ grounding/query)             /grounding/predictions             SceneUpdate (ranked, scores)
                                                   /grounding/log                     Log (query, phrases, scores)
  agent_state                                      /agent/pose, /agent/path           PoseInFrame, PosesInFrame
  aiv/verdict                                      /aiv/verdicts                      Log
  home/tool_result                                 /home/log                          Log
  memory/summary                                   /memory/objects                    SceneUpdate (objects at last-seen poses, owners)
  /tf, /tf_static                                  /tf                                FrameTransforms

Images are forwarded at most ``image_rate_hz`` per topic (a live view needs no more, and the
graph's own work keeps the CPU). With ``follow_domain_topic`` (pog_eval sets it), the node also
subscribes on the ROS domain an evaluator announces there (std_msgs/Int32; -1 = none) so the
child exploration graph's camera, clouds and maps show up on the same server.
"""
from __future__ import annotations

import threading
import time
from collections import defaultdict
from typing import Any, Callable

from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy, qos_profile_sensor_data

from nodes.lifecycle import run_node, subscribe

RELIABLE = QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE)
LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
TF_STATIC = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
PATH_LIMIT = 5000  # poses kept for /agent/path


class Forwarder:
    """The subscriptions of one ROS domain, forwarding to the shared server."""

    def __init__(self, node: Node, server, image_rate_hz: float, log: Callable[[str], None]) -> None:
        from geometry_msgs.msg import PoseStamped  # noqa: F401 - message modules load here, not at import
        from nav_msgs.msg import OccupancyGrid
        from sensor_msgs.msg import CameraInfo, Image, PointCloud2
        from visualization_msgs.msg import MarkerArray

        from personal.msg import AgentState, AivVerdict, GroundingQuery, GroundingResult, MemorySummary, ToolResult
        from personal.viz import convert as cv
        from tf2_msgs.msg import TFMessage

        self.node, self.server, self.log_error = node, server, log
        self.min_period = 1.0 / image_rate_hz if image_rate_hz > 0 else 0.0
        self.last_sent: dict[str, float] = defaultdict(float)
        self.results: dict[str, list] = {}
        self.queries: dict[str, Any] = {}
        self.path: list[tuple[float, float, float]] = []
        self.episode = None
        self.subs = []
        for ros in ("camera/color/image_raw", "camera/aligned_depth_to_color/image_raw", "aiv/capture/rgb", "perm/agentview_image"):
            self._sub(Image, ros, qos_profile_sensor_data, self._throttled("/" + ros, cv.image))
        self._sub(CameraInfo, "camera/color/camera_info", qos_profile_sensor_data,
                  self._throttled("/camera/color/camera_info", cv.camera_calibration))
        self._sub(PointCloud2, "map/cloud", qos_profile_sensor_data, self._throttled("/map/cloud", cv.point_cloud))
        self._sub(OccupancyGrid, "map", LATCHED, self._forward("/map", cv.occupancy_grid))
        self._sub(OccupancyGrid, "nav/occupancy", LATCHED, self._forward("/nav/occupancy", cv.occupancy_grid))
        self._sub(OccupancyGrid, "grounding/similarity", LATCHED, self._forward("/grounding/similarity", cv.similarity_grid))
        self._sub(MarkerArray, "map/frontiers", RELIABLE, self._forward("/map/frontiers", cv.marker_array))
        self._sub(GroundingQuery, "grounding/query", RELIABLE, self._on_query)
        self._sub(GroundingResult, "grounding/result", RELIABLE, self._on_result)
        self._sub(AgentState, "agent_state", RELIABLE, self._on_agent)
        self._sub(AivVerdict, "aiv/verdict", RELIABLE,
                  self._forward("/aiv/verdicts", lambda m: cv.log(cv.verdict_text(m), "verifier", "error" if m.error else "info")))
        self._sub(ToolResult, "home/tool_result", RELIABLE, self._forward("/home/log", lambda m: cv.log(
            f"{m.tool}: {'ok' if m.ok else m.error_type} {m.message}".strip(), "home", "info" if m.ok else "warning")))
        self._sub(MemorySummary, "memory/summary", LATCHED, self._forward("/memory/objects", cv.memory_objects))
        self._sub(TFMessage, "/tf", RELIABLE, self._forward("/tf", cv.transforms))
        self._sub(TFMessage, "/tf_static", TF_STATIC, self._forward("/tf", cv.transforms))
        self.cv = cv

    def _sub(self, msg_type, topic: str, qos, callback) -> None:
        self.subs.append(subscribe(self.node, msg_type, topic, callback, qos))

    def _forward(self, topic: str, convert) -> Callable[[Any], None]:
        def callback(msg) -> None:
            try:
                self.server.log(topic, convert(msg))
            except Exception as exc:  # a malformed message costs one frame, not the view
                self.log_error(f"{topic}: {type(exc).__name__}: {exc}")
        return callback

    def _throttled(self, topic: str, convert) -> Callable[[Any], None]:
        forward = self._forward(topic, convert)

        def callback(msg) -> None:
            now = time.monotonic()
            if now - self.last_sent[topic] >= self.min_period:
                self.last_sent[topic] = now
                forward(msg)
        return callback

    def _on_query(self, msg) -> None:
        self.queries[msg.request_id] = msg
        self.server.log("/grounding/log", self.cv.log(f"{msg.episode_id}: {msg.query}", "query"))
        while len(self.queries) > 500:
            self.queries.pop(next(iter(self.queries)))

    def _on_result(self, msg) -> None:
        """Collect one request's answers (``count`` methods), then draw them together."""
        got = self.results.setdefault(msg.request_id, [])
        got.append(msg)
        if len(got) < max(int(msg.count), 1):
            return
        del self.results[msg.request_id]
        try:
            self.server.log("/grounding/predictions", self.cv.predictions(got))
            lines = [f"{r.method}: " + (", ".join(f"({p.x:.1f}, {p.y:.1f}) {s:.2f}" for p, s in zip(r.points, r.scores))
                                        if r.ok else f"failed {r.failure_code}") for r in sorted(got, key=lambda r: r.index)]
            phrases = "; ".join(got[0].phrases)
            text = f"{msg.episode_id} owner {got[0].owner or '?'} [{phrases}] | " + " | ".join(lines)
            self.server.log("/grounding/log", self.cv.log(text, "grounding"))
        except Exception as exc:
            self.log_error(f"grounding/result: {type(exc).__name__}: {exc}")
        while len(self.results) > 200:
            self.results.pop(next(iter(self.results)))

    def _on_agent(self, msg) -> None:
        if msg.episode_id != self.episode:
            self.episode, self.path = msg.episode_id, []
        self.path = (self.path + [(msg.position.x, msg.position.y, msg.yaw)])[-PATH_LIMIT:]
        self.server.log("/agent/pose", self.cv.agent_pose(msg.position.x, msg.position.y, msg.yaw))
        self.server.log("/agent/path", self.cv.agent_path(self.path))

    def close(self) -> None:
        for sub in self.subs:
            self.node.destroy_subscription(sub)
        self.subs = []


class ChildDomain:
    """A second rclpy context on another ROS domain, with its own Forwarder, spun in a thread."""

    def __init__(self, domain_id: int, server, image_rate_hz: float, log) -> None:
        import rclpy
        from rclpy.context import Context
        from rclpy.executors import SingleThreadedExecutor

        self.domain_id = domain_id
        self.context = Context()
        rclpy.init(context=self.context, domain_id=domain_id)
        self.node = rclpy.create_node("viz_child", context=self.context)
        self.forwarder = Forwarder(self.node, server, image_rate_hz, log)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.thread = threading.Thread(target=self._spin, daemon=True, name=f"viz_domain_{domain_id}")
        self.thread.start()

    def _spin(self) -> None:
        try:
            self.executor.spin()
        except Exception:  # shut down under us
            pass

    def close(self) -> None:
        import rclpy

        self.executor.shutdown(timeout_sec=2.0)
        self.thread.join(timeout=5.0)
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)


class VizNode(Node):
    def __init__(self, **kwargs) -> None:
        super().__init__("viz", **kwargs)
        from personal.viz.server import VizServer

        host = self._declare("host", "127.0.0.1", "address the Foxglove WebSocket server binds (0.0.0.0: all interfaces)")
        port = self._declare("port", 8765, "Foxglove WebSocket port (0 = any free port)")
        self.image_rate_hz = self._declare("image_rate_hz", 10.0, "most images/point clouds per second forwarded per topic (0 = all)")
        follow = self._declare("follow_domain_topic", "", "std_msgs/Int32 topic announcing a child graph's ROS domain to view too")
        stats_s = self._declare("stats_period_s", 10.0, "log the forwarded message rates this often (0 = never)")
        self.server = VizServer(name=f"personal {self.get_namespace()}".strip(), host=host, port=port)
        self.forwarder = Forwarder(self, self.server, self.image_rate_hz, self._error)
        self.child: ChildDomain | None = None
        if follow:
            from std_msgs.msg import Int32

            subscribe(self, Int32, follow, self._on_domain, LATCHED)
        if stats_s > 0:
            self.create_timer(stats_s, self._stats)
        self.get_logger().info(f"Foxglove live view on {self.server.url} (open it in the Foxglove app: "
                               f"Open connection -> Foxglove WebSocket)")

    def _declare(self, name, default, description):
        from rcl_interfaces.msg import ParameterDescriptor

        return self.declare_parameter(name, default, ParameterDescriptor(description=description)).value

    def _error(self, text: str) -> None:
        self.get_logger().error(text, throttle_duration_sec=5.0)

    def _on_domain(self, msg) -> None:
        if self.child is not None and self.child.domain_id == msg.data:
            return
        if self.child is not None:
            self.child.close()
            self.child = None
        if msg.data >= 0:
            self.child = ChildDomain(int(msg.data), self.server, self.image_rate_hz, self._error)
            self.get_logger().info(f"viewing the child graph on ROS domain {msg.data} too")

    def _stats(self) -> None:
        rates = self.server.stats()
        if rates:
            self.get_logger().info("forwarded msgs/s: " + ", ".join(f"{t} {r:.1f}" for t, r in rates.items()))

    def close(self) -> None:
        if self.child is not None:
            self.child.close()
        self.server.stop()
        # what the live view cost: this process's CPU (the graph's other nodes are untouched by it)
        print(f"[viz] forwarded {sum(self.server.counts.values())} messages on {len(self.server.counts)} topics, "
              f"CPU {time.process_time():.1f} s", flush=True)


def main(args=None) -> None:
    run_node(VizNode, args, on_exit=lambda n: n.close())


if __name__ == "__main__":
    main()

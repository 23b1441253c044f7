"""Personalized Object Grounding node (PersONAL POG).

Subscribes
  ``feature_map`` (std_msgs/Float32MultiArray, [rows, cols, dim+1]: embedding + confidence)
  ``feature_map/descriptor`` (personal/msg/FeatureMapDescriptor: origin, resolution, shape, encoder, scene_id)
  ``grounding/query`` (personal/msg/GroundingQuery)
Publishes
  ``grounding/result`` (personal/msg/GroundingResult, one per method)
  ``grounding/markers`` (visualization_msgs/MarkerArray: ranked predictions per method, map frame)
  ``grounding/similarity`` (nav_msgs/OccupancyGrid, latched: cos(cell, query) of the last query as
  0..100 = cosine -1..1, -1 unobserved; computed only while subscribed)

Maps: the latest map received on the topics (kept per ``scene_id`` of its descriptor),
or — when ``map_dir`` is set — ``<map_dir>/<scene_id>/features.yaml`` loaded on demand.
The algorithm lives in ``personal.grounding.pipeline``; this node only translates.
"""
from __future__ import annotations

import time
from collections import deque

from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from nav_msgs.msg import OccupancyGrid
from std_msgs.msg import Float32MultiArray
from visualization_msgs.msg import MarkerArray

from personal.grounding.map_wire import MapAssembler, descriptor_from_msg
from personal.grounding.methods import make_method, parse_method_list
from personal.grounding.serving import PARAMETERS, llm_options, method_options, refusal, similarity_cells
from personal.grounding.pipeline import (
    CachingExtractor, MapView, TextEmbedder, failed_payloads, ground_query, prefetch_queries, result_payloads,
)
from personal.interfaces.convert import from_dict, to_dict
from personal.msg import FeatureMapDescriptor, GroundingQuery, GroundingResult
from nodes.lifecycle import run_node, subscribe
from nodes.map_msgs import grounding_markers, stamp_header
from nodes.parameters import declare_parameters

RELIABLE = QoSProfile(depth=200, reliability=ReliabilityPolicy.RELIABLE)
LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)

MAX_QUEUED = 1000  # queries waiting for the next drain; more are answered queue_full at once


class GroundingNode(Node):
    def __init__(self, **kwargs) -> None:
        super().__init__("grounding", **kwargs)
        self.p = p = declare_parameters(self, PARAMETERS)
        self.map_dir = p["map_dir"]

        from personal.grounding.extract import make_extractor
        from personal.models.base import make_encoder

        self.methods = {}
        for name in parse_method_list(p["methods"]):
            self.methods[name] = make_method(name, **method_options(name, p))
        encoder, extractor = p["encoder"], p["extractor"]
        self.encoder = make_encoder(encoder, model_path=p["model_path"]) if p["model_path"] else make_encoder(encoder)
        self.extractor = make_extractor(extractor, **llm_options(p)) if extractor == "llm" else make_extractor(extractor)
        self.extractor = CachingExtractor(self.extractor)
        self.embed = TextEmbedder(self.encoder)
        from personal.models.oracle import preload_sentence_model

        preload_sentence_model(self.encoder)  # its text tower loads while the maps are being built
        self.queue: deque[dict] = deque()
        self.maps: dict[str, MapView] = {}
        self.latest_scene: str | None = None
        self.assembler = MapAssembler()

        self.pub = self.create_publisher(GroundingResult, "grounding/result", RELIABLE)
        self.markers = self.create_publisher(MarkerArray, "grounding/markers", 10)
        self.similarity = self.create_publisher(OccupancyGrid, "grounding/similarity", LATCHED)
        subscribe(self, Float32MultiArray, "feature_map", self._on_array, LATCHED)
        subscribe(self, FeatureMapDescriptor, "feature_map/descriptor", self._on_descriptor, LATCHED)
        subscribe(self, GroundingQuery, "grounding/query", self._on_query, RELIABLE)
        self.create_timer(0.01, self._drain)
        self.get_logger().info(
            f"grounding ready: methods {list(self.methods)}, encoder {self.encoder.name}, extractor {extractor}, "
            f"maps from {'topics + ' + self.map_dir if self.map_dir else 'topics'}"
        )

    # -- maps ------------------------------------------------------------------------------
    def _on_descriptor(self, msg: FeatureMapDescriptor) -> None:
        # a malformed descriptor raises MapWireError: the guard of subscribe() logs and drops it
        self._use(self.assembler.descriptor(descriptor_from_msg(msg), time.monotonic()))

    def _on_array(self, msg: Float32MultiArray) -> None:
        self._use(self.assembler.array(msg.data, [d.size for d in msg.layout.dim], time.monotonic()))

    def _use(self, view: MapView | None) -> None:
        if view is None:
            return
        scene = str(self.assembler.desc.get("scene_id", ""))
        if scene not in self.maps:
            self.get_logger().info(f"feature map for scene {scene or '?'}: {view.features.shape}, {int(view.valid.sum())} observed cells")
        self.maps[scene] = view
        self.latest_scene = scene

    def _map_for(self, scene_id: str) -> MapView | None:
        if scene_id in self.maps:
            return self.maps[scene_id]
        if self.map_dir and scene_id:
            from personal.paths import child_path

            path = child_path(self.map_dir, scene_id, "scene_id") / "features.yaml"
            if path.exists():
                from personal.grounding.eval.pog_run import load_saved_map

                self.maps[scene_id] = load_saved_map(path, expected_encoder=self.encoder.name)
                return self.maps[scene_id]
        if not scene_id and self.latest_scene is not None:
            return self.maps[self.latest_scene]
        return None

    # -- queries ---------------------------------------------------------------------------
    def _on_query(self, msg: GroundingQuery) -> None:
        if not msg.request_id or not msg.query.strip():
            self.get_logger().error(f"grounding/query: dropped a query without request_id or query text "
                                    f"(request_id {msg.request_id!r}, episode {msg.episode_id!r})")
            return
        if len(self.queue) >= MAX_QUEUED:  # a flood must not grow the node without bound: refuse, say so
            self.get_logger().warning(f"grounding/query: {len(self.queue)} queries waiting; refused {msg.request_id!r}")
            self._publish(failed_payloads(request_id=msg.request_id, episode_id=msg.episode_id, scene_id=msg.scene_id,
                                          methods=list(self.methods), code="queue_full",
                                          reason=f"{MAX_QUEUED} queries already waiting"))
            return
        self.queue.append(to_dict(msg))

    def _drain(self) -> None:
        """Answer every queued query; their texts are embedded in one batch first."""
        overdue = self.assembler.overdue(time.monotonic())
        if overdue:
            self.get_logger().warning(f"feature_map: array and descriptor do not fit: {overdue}")
        if not self.queue:
            return
        batch = list(self.queue)
        self.queue.clear()
        if len(batch) > 1:
            try:
                prefetch_queries([(q["query"], q["summary"], q["extracted_summary"]) for q in batch], self.extractor,
                                 self.embed, any(m.uses_summary for m in self.methods.values()))
            except Exception as exc:  # only a speed-up: each query is answered (or failed) on its own below
                self.get_logger().warning(f"grounding/query: batch embedding failed ({type(exc).__name__}: {exc})")
        for q in batch:
            try:
                self._answer(q)
            except Exception as exc:  # a bug must cost one query, not the node
                self.get_logger().error(f"{q['episode_id']}: answering raised {type(exc).__name__}: {exc}")
                self._publish(failed_payloads(request_id=q["request_id"], episode_id=q["episode_id"],
                                              scene_id=q["scene_id"], methods=list(self.methods), code="internal_error",
                                              reason=f"{type(exc).__name__}: {exc}"))

    def _answer(self, q: dict) -> None:
        try:
            names = parse_method_list(q["methods"]) if q["methods"] else list(self.methods)
        except ValueError as exc:
            names, unknown = list(q["methods"]), [str(exc)]
        else:
            unknown = [n for n in names if n not in self.methods]
        view, why = None, ""
        if not unknown:
            try:
                view = self._map_for(q["scene_id"])
            except Exception as exc:  # bad saved map: a recorded failure, not a dead node
                why = f"{type(exc).__name__}: {exc}"
            else:
                why = f"no feature map for scene {q['scene_id']!r} (have: {sorted(self.maps) or 'none'})"
        refused = refusal(names, unknown, list(self.methods), view, why, self.encoder.name)
        if refused is not None:
            self._publish(failed_payloads(request_id=q["request_id"], episode_id=q["episode_id"], scene_id=q["scene_id"],
                                          methods=names, code=refused[0], reason=refused[1]))
            return
        t = time.perf_counter()
        try:
            g = ground_query(view, query=q["query"], summary=q["summary"], owner=q["owner"], extractor=self.extractor,
                             encoder=self.encoder, methods=[self.methods[n] for n in names], episode_id=q["episode_id"],
                             seed=int(q["seed"]), embedder=self.embed, extracted_summary=q["extracted_summary"])
        except Exception as exc:  # a bug must cost one query, not the node
            self.get_logger().error(f"{q['episode_id']}: grounding raised {type(exc).__name__}: {exc}")
            self._publish(failed_payloads(request_id=q["request_id"], episode_id=q["episode_id"], scene_id=q["scene_id"],
                                          methods=names, code="internal_error", reason=f"{type(exc).__name__}: {exc}"))
            return
        self._publish(result_payloads(g, request_id=q["request_id"], scene_id=q["scene_id"], map_encoder=view.encoder))
        self._publish_markers(g)
        if view.dim and self.similarity.get_subscription_count():  # computed only while someone looks (viz:=foxglove, RViz)
            self._publish_similarity(view, q["query"])
        self.get_logger().debug(f"{q['episode_id']}: {len(names)} methods in {(time.perf_counter() - t) * 1e3:.1f} ms")

    def _publish(self, payloads: list[dict]) -> None:
        for p in payloads:
            self.pub.publish(from_dict(GroundingResult, p))

    def _publish_similarity(self, view: MapView, query: str) -> None:
        """cos(cell, query) of the map used, as an OccupancyGrid: 0..100 = cosine -1..1, -1 unobserved."""
        sim = view.similarity(self.embed([query])[0])
        msg = stamp_header(OccupancyGrid(), "map", self.get_clock().now().to_msg())
        msg.info.resolution = float(view.resolution)
        msg.info.height, msg.info.width = (int(n) for n in sim.shape)
        msg.info.origin.position.x, msg.info.origin.position.y = (float(v) for v in view.origin)
        msg.info.origin.orientation.w = 1.0
        msg.data = similarity_cells(sim).reshape(-1).tolist()
        self.similarity.publish(msg)

    def _publish_markers(self, g) -> None:
        self.markers.publish(grounding_markers(g.outcomes, "map", self.get_clock().now().to_msg()))


def main(args=None) -> None:
    run_node(GroundingNode, args)


if __name__ == "__main__":
    main()

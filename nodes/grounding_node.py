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
from pathlib import Path

from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from nav_msgs.msg import OccupancyGrid
from std_msgs.msg import Float32MultiArray
from visualization_msgs.msg import Marker, MarkerArray

from personal.grounding.map_wire import MapAssembler, descriptor_from_msg
from personal.grounding.methods import make_method, parse_method_list
from personal.grounding.pipeline import (
    CachingExtractor, MapView, TextEmbedder, failed_payloads, ground_query, prefetch_queries, result_payloads,
)
from personal.interfaces.convert import from_dict, to_dict
from personal.msg import FeatureMapDescriptor, GroundingQuery, GroundingResult
from nodes.lifecycle import run_node, subscribe

RELIABLE = QoSProfile(depth=200, reliability=ReliabilityPolicy.RELIABLE)
LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
COLOURS = [(0.9, 0.2, 0.2), (0.2, 0.6, 0.9), (0.95, 0.75, 0.1), (0.3, 0.8, 0.3), (0.7, 0.3, 0.9), (0.9, 0.5, 0.1)]


MAX_QUEUED = 1000  # queries waiting for the next drain; more are answered queue_full at once


class GroundingNode(Node):
    def __init__(self, **kwargs) -> None:
        super().__init__("grounding", **kwargs)
        p = self._declare
        methods = p("methods", "random,centre,qs,rpg,rpg-owner", "comma-separated registry names")
        encoder = p("encoder", "oracle", "text encoder (must match the map's encoder)")
        model_path = p("model_path", "", "local model directory for encoder clip | siglip | blip2")
        extractor = p("extractor", "builtin", "ownership-phrase extractor: builtin | episode (the query's extracted_summary) | llm")
        self.map_dir = p("map_dir", "", "folder with <scene_id>/features.yaml; empty = maps from the topics only")
        method_params = {
            "top_k": p("top_k", 3, "RPG: peaks per phrase"),
            "nhood": p("nhood", 1, "RPG: dilation radius (cells)"),
            "nms_r": p("nms_r", 1, "RPG: NMS suppression radius (cells)"),
            "backend": p("backend", "numpy", "numpy | torch"),
        }
        common = {"n_predictions": p("n_predictions", 3, "ranked predictions per method"),
                  "pred_sep_m": p("pred_sep_m", 1.0, "min separation of ranked predictions (m)")}
        llm = {k: v for k, v in (("base_url", p("llm_base_url", "", "OpenAI-compatible endpoint (llm extractor)")),
                                 ("model", p("llm_model", "", "chat model (llm extractor)"))) if v}

        from personal.grounding.extract import make_extractor
        from personal.models.base import make_encoder

        self.methods = {}
        for name in parse_method_list(methods):
            extra = method_params if name in ("rpg", "rpg-owner") else ({"backend": method_params["backend"]} if name == "qs" else {})
            self.methods[name] = make_method(name, **common, **extra)
        self.encoder = make_encoder(encoder, model_path=model_path) if model_path else make_encoder(encoder)
        self.extractor = make_extractor(extractor, **llm) if extractor == "llm" else make_extractor(extractor)
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

    def _declare(self, name, default, description):
        from rcl_interfaces.msg import ParameterDescriptor

        return self.declare_parameter(name, default, ParameterDescriptor(description=description)).value

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
        if unknown:
            self._publish(failed_payloads(request_id=q["request_id"], episode_id=q["episode_id"], scene_id=q["scene_id"],
                                          methods=names, code="method_not_configured",
                                          reason=f"methods {unknown} are not configured on this node ({list(self.methods)})"))
            return
        try:
            view = self._map_for(q["scene_id"])
        except Exception as exc:  # bad saved map: a recorded failure, not a dead node
            view, why = None, f"{type(exc).__name__}: {exc}"
        else:
            why = f"no feature map for scene {q['scene_id']!r} (have: {sorted(self.maps) or 'none'})"
        if view is None:
            self._publish(failed_payloads(request_id=q["request_id"], episode_id=q["episode_id"], scene_id=q["scene_id"],
                                          methods=names, code="no_map", reason=why))
            return
        if view.encoder and self.encoder.name not in view.encoder:
            self._publish(failed_payloads(request_id=q["request_id"], episode_id=q["episode_id"], scene_id=q["scene_id"],
                                          methods=names, code="encoder_mismatch",
                                          reason=f"map built with encoder {view.encoder!r}, node encodes text with {self.encoder.name!r}"))
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
        import numpy as np

        sim = view.similarity(self.embed([query])[0])
        msg = OccupancyGrid()
        msg.header.frame_id, msg.header.stamp = "map", self.get_clock().now().to_msg()
        msg.info.resolution = float(view.resolution)
        msg.info.height, msg.info.width = (int(n) for n in sim.shape)
        msg.info.origin.position.x, msg.info.origin.position.y = (float(v) for v in view.origin)
        msg.info.origin.orientation.w = 1.0
        cells = np.where(np.isnan(sim), -1, np.clip(np.rint((np.nan_to_num(sim) + 1.0) * 50.0), 0, 100)).astype(np.int8)
        msg.data = cells.reshape(-1).tolist()
        self.similarity.publish(msg)

    def _publish_markers(self, g) -> None:
        arr = MarkerArray()
        clear = Marker()
        clear.action = Marker.DELETEALL
        arr.markers.append(clear)
        stamp = self.get_clock().now().to_msg()
        for i, o in enumerate(g.outcomes):
            if o.grounding is None:
                continue
            r, gcol, b = COLOURS[i % len(COLOURS)]
            for rank, (x, y) in enumerate(o.grounding.points):
                m = Marker()
                m.header.frame_id, m.header.stamp = "map", stamp
                m.ns, m.id, m.type, m.action = o.method, rank, Marker.SPHERE, Marker.ADD
                m.pose.position.x, m.pose.position.y, m.pose.position.z = float(x), float(y), 0.3
                m.pose.orientation.w = 1.0
                s = 0.4 if rank == 0 else 0.25
                m.scale.x = m.scale.y = m.scale.z = s
                m.color.r, m.color.g, m.color.b, m.color.a = r, gcol, b, 1.0 if rank == 0 else 0.5
                arr.markers.append(m)
            t = Marker()
            t.header.frame_id, t.header.stamp = "map", stamp
            t.ns, t.id, t.type, t.action = o.method + "/label", 0, Marker.TEXT_VIEW_FACING, Marker.ADD
            x, y = o.grounding.points[0]
            t.pose.position.x, t.pose.position.y, t.pose.position.z = float(x), float(y), 0.8
            t.pose.orientation.w = 1.0
            t.scale.z = 0.25
            t.color.r = t.color.g = t.color.b = t.color.a = 1.0
            t.text = f"{o.method} {o.grounding.scores[0]:.2f}" if o.grounding.scores else o.method
            arr.markers.append(t)
        self.markers.publish(arr)


def main(args=None) -> None:
    run_node(GroundingNode, args)


if __name__ == "__main__":
    main()

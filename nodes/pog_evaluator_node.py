"""POG evaluator node: drives every episode's query through the grounding node and
writes the run folder (results.json, summary.json, report.md, PNGs).

Episodes: ``episodes_dir`` (PersONAL folder) or a generated set (``scenes`` × ``splits`` ×
``episodes_per_split`` from ``seed``), loaded here for the ground truth (target footprints).

Maps (``map_source``):
  ``topic``  — wait for the mapping pipeline's map of each scene on
               ``feature_map`` + ``feature_map/descriptor`` (descriptor ``scene_id``);
  ``saved``  — ``<maps_dir>/<scene_id>/features.yaml``, published here for the grounding node;
  ``oracle`` — ORACLE top-down maps built from the scene ground truth, published here;
  ``bag``    — each scene's recorded sensor bag ``<bags_dir>/<scene_id>/`` replayed into a mapping
               node (child graph ``bag_map``); a broken bag or failed replay makes the scene's
               episodes recorded ``bag_error`` failures. ``explore_graph`` with ``record_dir``
               records those bags (personal/grounding/eval/pog_replay.py).
A scene whose map never arrives (``map_timeout_s``) is evaluated on an empty map, so its
episodes become recorded ``empty_map`` failures rather than disappearing; a scene whose scene
model is missing becomes ``scene_missing`` failures, and one whose explore child graph fails
(a node of it died, timeout) ``explore_failed`` failures — and then the run exits 3, not 0.

The run folder is created and checked writable before any work (``personal.runs.output``), and
``results.jsonl`` gets each episode's records as it finishes, so a crash loses at most one.

Progress is logged as "episodes done / total"; at the end the node logs where the report
is and exits 0 (it is the graph's required node: the runner then stops the graph).
Scheduling, bookkeeping, map building and the report's description: personal/grounding/pog_session.py.
"""
from __future__ import annotations

import array
import time

import numpy as np
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import Float32MultiArray

from personal import exit_codes
from personal.runs.output import RESULTS_LOG, OutputDirError, ResultLog, new_run_dir
from personal.grounding.map_wire import MapAssembler, descriptor_from_msg, descriptor_to_fields, map_to_wire
from personal.grounding.pog_session import (
    PARAMETERS, GroundingGate, LazyEmbedder, MapHandoff, PogSession, SceneMaps, config_from, empty_map, load_episodes,
    taken_record_dirs, write_run,
)
from personal.grounding.pipeline import MapView
from personal.interfaces.convert import from_dict, to_dict
from personal.msg import FeatureMapDescriptor, GroundingQuery, GroundingResult
from nodes.lifecycle import run_until_exit_code, subscribe
from nodes.map_msgs import float_array
from nodes.parameters import declare_parameters

RELIABLE = QoSProfile(depth=200, reliability=ReliabilityPolicy.RELIABLE)
LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)


class PogEvaluatorNode(Node):
    def __init__(self, **kwargs) -> None:
        super().__init__("pog_evaluator", **kwargs)
        self.t0 = time.monotonic()
        p = declare_parameters(self, PARAMETERS)
        self.cfg = cfg = config_from(p)
        from personal.sim.sensor_model import sensor_spec

        self.sensor = sensor_spec(cfg.sensor_args["sensor"], cfg.sensor_args["sensor_overrides"],
                                  int(cfg.sensor_args["sensor_seed"]))  # SensorSpecError (a ValueError) names the field
        self.map_timeout, self.query_timeout = p["map_timeout_s"], p["query_timeout_s"]
        self.grounding_wait, self.window, self.sample_maps = p["grounding_wait_s"], p["in_flight"], p["sample_maps"]
        self.exit_code: int | None = None
        self.embedder = LazyEmbedder(cfg.encoder_name, cfg.map_source != "oracle" and bool(self.sample_maps),
                                     self.get_logger())
        self.incomplete: list[str] = []  # why this run is not a full one (failed child graph, no grounding node)
        try:  # before any work: an unwritable out_dir must not be found after the evaluation
            self.run_dir = new_run_dir(p["out_dir"])
            self.result_log = ResultLog(self.run_dir / RESULTS_LOG)
        except OutputDirError as exc:
            self.get_logger().error(f"cannot write the results: {exc}")
            self.exit_code = 2
            return

        topic = cfg.map_source == "topic"
        self.query_pub = self.create_publisher(GroundingQuery, "grounding/query", RELIABLE)
        self.map_pub = self.create_publisher(Float32MultiArray, "feature_map", LATCHED) if not topic else None
        self.desc_pub = self.create_publisher(FeatureMapDescriptor, "feature_map/descriptor", LATCHED) if not topic else None
        subscribe(self, GroundingResult, "grounding/result", lambda m: self.session.answer(to_dict(m)), RELIABLE)
        self._announce_child_domains()
        if topic:
            subscribe(self, FeatureMapDescriptor, "feature_map/descriptor", self._on_descriptor, LATCHED)
            subscribe(self, Float32MultiArray, "feature_map", self._on_array, LATCHED)
        self.assembler = MapAssembler()

        try:
            self.scenes, self.episodes = load_episodes(cfg, self.get_logger())
        except (ValueError, OSError) as exc:  # bad folder or files (EpisodeFormatError names file + field)
            self.get_logger().error(f"cannot load the episode set: {exc}")
            self.exit_code = exit_codes.BAD_INPUT
            return
        except Exception as exc:  # noqa: BLE001 - a bug: say so and stop the graph with an error
            self.get_logger().error(f"cannot load the episode set: {type(exc).__name__}: {exc}")
            self.exit_code = exit_codes.FAILED
            return
        if cfg.record_dir and not self._record_dir_free():
            return
        self.maps: dict[str, MapView] = {}
        self.session = PogSession(self.episodes, self.scenes, cfg.methods, self.window, self.result_log,
                                  self.get_logger(), t0=self.t0)
        self.scene_maps = SceneMaps(cfg, self.scenes, self.episodes, self.run_dir, self.sensor, self.get_logger(),
                                    self.incomplete, on_explore=self.embedder.preload)
        self.gate, self.handoff = GroundingGate(self.grounding_wait), MapHandoff(self.grounding_wait)
        self.get_logger().info(
            f"POG evaluation: {len(self.episodes)} episodes in {len(self.session.scene_order)} scene(s), splits "
            f"{cfg.splits}, methods {cfg.methods}, maps from {cfg.map_source}; run folder {self.run_dir}"
        )
        self.create_timer(0.05, self._tick)

    def _announce_child_domains(self) -> None:
        """Publish each child graph's ROS domain on ``viz/child_domain`` (-1 when it ends): the live
        view (viz:=foxglove) subscribes there too, so the exploration shows on the same server."""
        from std_msgs.msg import Int32

        from personal.runner import watch_child_domains

        pub = self.create_publisher(Int32, "viz/child_domain", LATCHED)
        self._unwatch_domains = watch_child_domains(lambda domain: pub.publish(Int32(data=int(domain))))

    def destroy_node(self) -> None:
        unwatch = getattr(self, "_unwatch_domains", None)
        if unwatch is not None:
            unwatch()
        super().destroy_node()

    def _record_dir_free(self) -> bool:
        cfg = self.cfg
        if cfg.map_source != "explore_graph":
            self.get_logger().warning(f"record_dir is only used with map_source explore_graph (not {cfg.map_source}); ignored")
            cfg.record_dir = ""
            return True
        taken = taken_record_dirs(cfg.record_dir, self.episodes)
        if taken:
            self.get_logger().error(f"record_dir: {', '.join(taken)} already exist; refusing to overwrite recorded bags")
            self.exit_code = 1
            return False
        return True

    # -- maps ---------------------------------------------------------------------------------
    def _on_descriptor(self, msg: FeatureMapDescriptor) -> None:
        # a malformed descriptor raises MapWireError: the guard of subscribe() logs and drops it
        self._use(self.assembler.descriptor(descriptor_from_msg(msg), time.monotonic()))

    def _on_array(self, msg: Float32MultiArray) -> None:
        self._use(self.assembler.array(msg.data, [d.size for d in msg.layout.dim], time.monotonic()))

    def _use(self, view: MapView | None) -> None:
        if view is None:
            return
        sid = str(self.assembler.desc.get("scene_id", "")) or (self.session.next_scene() or "")
        if sid not in self.maps:
            self.get_logger().info(f"map of scene {sid} received: {view.features.shape}, {int(view.valid.sum())} observed cells")
        self.maps[sid] = view

    def _provide_map(self, sid: str) -> bool:
        """True once the grounding node can have scene ``sid``'s map."""
        if sid in self.maps:
            return True
        if self.cfg.map_source == "topic":
            return False
        self.maps[sid] = self.scene_maps.build(sid, self.session.scene_idx)
        self._publish_map(sid)
        self.handoff.sent(time.monotonic())
        return True

    def _publish_map(self, sid: str) -> None:
        if self.map_pub is None:
            return
        data, layout, desc = map_to_wire(self.maps[sid], scene_id=sid)
        self.map_pub.publish(float_array(layout, array.array("f", data.astype(np.float32).tobytes())))
        desc_msg = from_dict(FeatureMapDescriptor, descriptor_to_fields(desc))
        desc_msg.header.frame_id = "map"
        desc_msg.header.stamp = self.get_clock().now().to_msg()
        self.desc_pub.publish(desc_msg)

    # -- main loop ------------------------------------------------------------------------------
    def _tick(self) -> None:
        if self.exit_code is not None:
            return
        now, s = time.monotonic(), self.session
        if s.expire(now, self.query_timeout) and self.query_pub.get_subscription_count() == 0 \
                and not any("grounding node left" in i for i in self.incomplete):
            self.incomplete.append("the grounding node left during the run (queries timed out unanswered)")
        for fields in s.resend_due(now, self.query_timeout / 2):  # no answer at all: sent once more (logged)
            self.query_pub.publish(from_dict(GroundingQuery, fields))
        overdue = self.assembler.overdue(now)
        if overdue:
            self.get_logger().warning(f"feature_map: array and descriptor do not fit: {overdue}")
        if s.idle():
            sid = s.next_scene()
            if sid is None:
                self._finish()
                return
            if not self._provide_map(sid):
                if s.map_overdue(now, self.map_timeout):
                    self.get_logger().error(f"no map of scene {sid} after {self.map_timeout:.0f} s: "
                                            "its episodes are recorded as empty_map failures")
                    self.maps[sid] = empty_map()
                    self._publish_map(sid)
                return
            matched = self.map_pub is not None and self.map_pub.get_subscription_count() > 0 \
                and self.desc_pub.get_subscription_count() > 0
            failed = self.scene_maps.scene_failures.get(sid)  # no map to hand over: its episodes fail now
            if self.cfg.map_source != "topic" and not failed and not self.handoff.arrived(matched, now):
                return
            s.start_scene(sid, now)
            if failed:
                s.fail_queue(*failed, now)
        if s.queue and not self._grounding_ready(now):
            return
        for ep in s.to_send():
            self.query_pub.publish(from_dict(GroundingQuery, s.open(ep, time.monotonic(), self.cfg.seed)))

    def _grounding_ready(self, now: float) -> bool:
        listening = self.query_pub.get_subscription_count() > 0 and self.count_publishers("grounding/result") > 0
        state = self.gate.check(listening, now)
        if state == "gave_up":
            n = len(self.session.queue)
            self.get_logger().error(f"no grounding node after {self.grounding_wait:.0f} s: "
                                    f"{n} episodes recorded as no_grounding_node failures")
            self.incomplete.append(f"no grounding node within {self.grounding_wait:.0f} s ({n} episodes)")
            self.session.fail_queue("no_grounding_node", "the grounding node never subscribed to grounding/query", now)
        elif state == "wait-log":
            self.get_logger().info("waiting for the grounding node (grounding/query subscriber, grounding/result publisher)")
        return state == "ready"

    def _finish(self) -> None:
        s, log = self.session, self.get_logger()
        report = write_run(self.run_dir, self.cfg, s, self.maps, self.scene_maps, self.sensor, self.incomplete,
                           self.embedder, self.sample_maps, log)
        log.info(f"POG evaluation done: {s.done}/{len(self.episodes)} episodes; report: {report}")
        print(f"report: {report}", flush=True)
        self.result_log.close()
        if self.incomplete:
            log.error("run incomplete: " + "; ".join(self.incomplete) + "; exit code 3")
        self.exit_code = 3 if self.incomplete else 0


def main(args=None) -> None:
    run_until_exit_code(PogEvaluatorNode, args)


if __name__ == "__main__":
    main()

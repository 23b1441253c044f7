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
"""
from __future__ import annotations

import array
import time
import uuid
from pathlib import Path

import numpy as np
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import Float32MultiArray, MultiArrayDimension

from personal import exit_codes
from personal.paths import child_path
from personal.runs.output import RESULTS_LOG, OutputDirError, ResultLog, new_run_dir
from personal.grounding.eval.pog import owner_phrases, score_episode, write_report
from personal.grounding.map_wire import MapAssembler, descriptor_from_msg, descriptor_to_fields, map_to_wire
from personal.benchmarks import write_html
from personal.grounding.methods import parse_method_list
from personal.grounding.pipeline import MapView, target_boxes
from personal.interfaces.convert import from_dict, to_dict
from personal.msg import FeatureMapDescriptor, GroundingQuery, GroundingResult
from nodes.lifecycle import run_until_exit_code, subscribe

MAP_SOURCES = ("explore", "explore_graph", "topic", "saved", "oracle", "bag")
UPPER_BOUNDS = ("oracle-topdown", "none")
RELIABLE = QoSProfile(depth=200, reliability=ReliabilityPolicy.RELIABLE)
LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)


class PogEvaluatorNode(Node):
    def __init__(self, **kwargs) -> None:
        super().__init__("pog_evaluator", **kwargs)
        p = self._declare
        self.episodes_dir = p("episodes_dir", "", "PersONAL episode folder; empty = generate")
        self.splits = [s.strip() for s in p("splits", "easy,medium,hard", "comma-separated splits").split(",") if s.strip()]
        self.n_scenes = p("scenes", 3, "generated scenes")
        self.per_split = p("episodes_per_split", 10, "generated episodes per split and scene")
        self.seed = p("seed", 0, "generator seed (same as the sim bridge's)")
        self.methods = parse_method_list(p("methods", "random,centre,qs,rpg,rpg-owner", "methods to evaluate"))
        self.map_source = p("map_source", "explore", "explore | explore_graph | topic | saved | oracle | bag")
        if self.map_source not in MAP_SOURCES:
            raise ValueError(f"parameter map_source: expected {' | '.join(MAP_SOURCES)}, got {self.map_source!r}")
        self.reuse_maps = p("reuse_maps", True, "explore_graph: reuse <maps_dir>/<scene_id>/ when it exists")
        self.explore_steps = p("explore_steps", 2500, "pre-exploration step budget per scene (map_source explore)")
        self.explore_size = (p("explore_width", 320, "explore_graph: rendered image width, px"),
                             p("explore_height", 240, "explore_graph: rendered image height, px"))
        self.explore_info: dict[str, dict] = {}
        # the exploration camera model (explore / explore_graph: the bridge's sensor arguments)
        self.sensor_args = {"sensor": p("sensor", "ideal", "camera model of the exploration: ideal | d435 | d435-harsh"),
                            "sensor_overrides": p("sensor_overrides", "", "preset fields to override"),
                            "sensor_seed": p("sensor_seed", 0, "seed of the camera model's noise")}
        from personal.sim.sensor_model import sensor_spec

        self.sensor = sensor_spec(self.sensor_args["sensor"], self.sensor_args["sensor_overrides"],
                                  int(self.sensor_args["sensor_seed"]))  # SensorSpecError (a ValueError) names the field
        self.map_encoders: set[str] = set()
        self.maps_dir = p("maps_dir", "maps", "saved maps folder (map_source saved)")
        self.record_dir = p("record_dir", "", "explore_graph: record each scene's sensor topics to <record_dir>/<scene_id>/")
        self.bags_dir = p("bags_dir", "bags", "map_source bag: recorded bags <bags_dir>/<scene_id>/")
        self.replay_rate = p("replay_rate", 1.0, "map_source bag: playback rate (1 = recorded timing)")
        self.camera_prefix = p("camera_prefix", "camera", "map_source bag: camera topic prefix (camera/camera = RealSense)")
        self.scene_failures: dict[str, tuple[str, str]] = {}
        self.resolution = p("resolution", 0.5, "cell size of ORACLE maps (m); for the report otherwise")
        self.encoder_name = p("encoder", "lit", "encoder of the maps and of the grounding node's texts")
        self.extractor_name = p("extractor", "builtin", "extractor of the grounding node (for the report)")
        self.upper_bound = p("upper_bound", "oracle-topdown", "oracle-topdown: the report adds the same episodes on "
                             "ORACLE top-down maps as a labelled upper bound (non-oracle runs) | none")
        if self.upper_bound not in UPPER_BOUNDS:
            raise ValueError(f"parameter upper_bound: expected {' | '.join(UPPER_BOUNDS)}, got {self.upper_bound!r}")
        out_root = p("out_dir", "runs/pog_eval", "run folders are created under this")
        self.map_timeout = p("map_timeout_s", 900.0, "wait this long for a scene's map")
        self.query_timeout = p("query_timeout_s", 60.0, "a query without all results after this is a failure")
        self.grounding_wait = p("grounding_wait_s", 180.0, "give up on a grounding node that never appears after this")
        self.window = p("in_flight", 16, "queries in flight at once (the grounding node embeds their texts in one batch)")
        self.sample_maps = p("sample_maps", 6, "episodes drawn as map PNGs")
        self.exit_code: int | None = None
        self._embedder_thread, self._embedder = None, None
        self.t0 = time.monotonic()
        self.incomplete: list[str] = []  # why this run is not a full one (failed child graph, no grounding node)
        try:  # before any work: an unwritable out_dir must not be found after the evaluation
            self.run_dir = new_run_dir(out_root)
            self.result_log = ResultLog(self.run_dir / RESULTS_LOG)
        except OutputDirError as exc:
            self.get_logger().error(f"cannot write the results: {exc}")
            self.exit_code = 2
            return

        self.query_pub = self.create_publisher(GroundingQuery, "grounding/query", RELIABLE)
        self.map_pub = self.create_publisher(Float32MultiArray, "feature_map", LATCHED) if self.map_source != "topic" else None
        self.desc_pub = (self.create_publisher(FeatureMapDescriptor, "feature_map/descriptor", LATCHED)
                         if self.map_source != "topic" else None)
        subscribe(self, GroundingResult, "grounding/result", self._on_result, RELIABLE)
        self._announce_child_domains()
        if self.map_source == "topic":
            subscribe(self, FeatureMapDescriptor, "feature_map/descriptor", self._on_descriptor, LATCHED)
            subscribe(self, Float32MultiArray, "feature_map", self._on_array, LATCHED)
        self.assembler = MapAssembler()

        try:
            self._load_episodes()
        except (ValueError, OSError) as exc:  # bad folder or files (EpisodeFormatError names file + field)
            self.get_logger().error(f"cannot load the episode set: {exc}")
            self.exit_code = exit_codes.BAD_INPUT
            return
        except Exception as exc:  # noqa: BLE001 - a bug: say so and stop the graph with an error
            self.get_logger().error(f"cannot load the episode set: {type(exc).__name__}: {exc}")
            self.exit_code = exit_codes.FAILED
            return
        if self.record_dir and not self._record_dir_free():
            return
        self.maps: dict[str, MapView] = {}
        self.results = []
        self.pending: dict[str, tuple] = {}  # request_id -> (episode, sent_at, {method: payload})
        self.queue: list = []
        self.scene_order = list(dict.fromkeys(e.scene_id for e in self.episodes))
        self.scene_idx = 0
        self.scene_wait_start = time.monotonic()
        self.done = 0
        self.get_logger().info(
            f"POG evaluation: {len(self.episodes)} episodes in {len(self.scene_order)} scene(s), splits {self.splits}, "
            f"methods {self.methods}, maps from {self.map_source}; run folder {self.run_dir}"
        )
        self.create_timer(0.05, self._tick)

    def _preload_query_embedder(self) -> None:
        """Load the sample maps' text encoder on a thread while the explore graph runs (the evaluator
        only waits for it then), not after the last episode."""
        if self._embedder_thread is None and self.map_source != "oracle" and self.sample_maps:
            import threading

            def load() -> None:
                self._embedder = self._query_embedder()
                if self._embedder is not None:  # the text tower too (loaded lazily at the first text otherwise)
                    from personal.models.oracle import load_sentence_model, uses_sentence_model

                    if uses_sentence_model(self._embedder.encoder):
                        load_sentence_model()

            self._embedder_thread = threading.Thread(target=load, daemon=True, name="query-embedder")
            self._embedder_thread.start()

    def _query_embedder(self):
        """The maps' text encoder, for the sample maps' query-similarity background (None: confidence instead)."""
        if self._embedder_thread is not None and threading_current() is not self._embedder_thread:
            self._embedder_thread.join()
            return self._embedder
        if self.map_source == "oracle" or not self.sample_maps:
            return None
        try:
            from personal.grounding.pipeline import TextEmbedder
            from personal.models.base import make_encoder

            return TextEmbedder(make_encoder(self.encoder_name))
        except Exception as exc:  # e.g. clip/siglip without local weights here
            self.get_logger().warning(f"sample maps: no text encoder {self.encoder_name!r} ({exc}); background = confidence")
            return None

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

    def _declare(self, name, default, description):
        from rcl_interfaces.msg import ParameterDescriptor

        return self.declare_parameter(name, default, ParameterDescriptor(description=description)).value

    # -- setup ---------------------------------------------------------------------------------
    def _load_episodes(self) -> None:
        from personal.grounding.eval.pog_run import generate_episode_set, load_episode_folder

        if self.episodes_dir:
            self.scenes, eps, problems = load_episode_folder(self.episodes_dir, self.splits)
            for line in problems:
                self.get_logger().warning(f"episode set: {line} (recorded as a failure)")
        else:
            self.scenes, eps = generate_episode_set(self.n_scenes, self.splits, self.per_split, self.seed)
        self.episodes = eps
        if not eps:
            raise ValueError("the episode set is empty")

    # -- maps ---------------------------------------------------------------------------------
    def _on_descriptor(self, msg: FeatureMapDescriptor) -> None:
        # a malformed descriptor raises MapWireError: the guard of subscribe() logs and drops it
        self._use(self.assembler.descriptor(descriptor_from_msg(msg), time.monotonic()))

    def _on_array(self, msg: Float32MultiArray) -> None:
        self._use(self.assembler.array(msg.data, [d.size for d in msg.layout.dim], time.monotonic()))

    def _use(self, view: MapView | None) -> None:
        if view is None:
            return
        sid = str(self.assembler.desc.get("scene_id", "")) or (self.scene_order[self.scene_idx] if self.scene_idx < len(self.scene_order) else "")
        if sid not in self.maps:
            self.get_logger().info(f"map of scene {sid} received: {view.features.shape}, {int(view.valid.sum())} observed cells")
        self.maps[sid] = view

    def _provide_map(self, sid: str) -> bool:
        """True once the grounding node can have scene ``sid``'s map."""
        if sid in self.maps:
            return True
        if self.map_source == "topic":
            return False
        if sid not in self.scenes and self.map_source != "saved":  # nothing to explore or replay
            reason = f"no scene model for {sid!r} (scenes/{sid}.scene.json) in {self.episodes_dir or 'the generated set'}"
            self.get_logger().error(f"scene {sid}: {reason}; its episodes are recorded as scene_missing failures")
            self.scene_failures[sid] = ("scene_missing", reason)
            view = _empty_map()
        elif self.map_source == "saved":
            from personal.grounding.eval.pog_run import load_saved_map

            path = child_path(self.maps_dir, sid, "scene_id") / "features.yaml"
            if not path.exists():
                self.get_logger().error(f"no saved map {path}; scene {sid} is evaluated on an empty map")
                view = _empty_map()
            else:
                try:
                    view = load_saved_map(path)
                except (ValueError, OSError) as exc:  # a tampered / corrupt map: the scene's failure, not a dead node
                    self.get_logger().error(f"scene {sid}: unusable saved map: {exc}; its episodes are recorded as map_invalid failures")
                    self.scene_failures[sid] = ("map_invalid", str(exc)[:500])
                    self.incomplete.append(f"scene {sid}: unusable saved map: {exc}"[:800])
                    view = _empty_map()
        elif self.map_source == "explore_graph":
            from personal.grounding.eval.pog_run import load_saved_map

            path = child_path(self.maps_dir, sid, "scene_id") / "features.yaml"
            if sid not in self.explore_info:  # not reused or explored yet (a batch explores the later scenes too)
                self._explore_graph_scenes(sid)
            try:
                if sid in self.scene_failures:
                    raise RuntimeError(self.scene_failures[sid][1])
                view = load_saved_map(path)
            except Exception as exc:
                self.get_logger().error(f"scene {sid}: no usable map ({exc}); evaluated on an empty map")
                view = _empty_map()
        elif self.map_source == "bag":
            view = self._replay_scene(sid)
        elif self.map_source == "explore":
            from personal.grounding.eval.pog_run import explore_scene_map

            first = next(e for e in self.episodes if e.scene_id == sid)
            self.get_logger().info(f"pre-exploring scene {sid} ({self.scene_idx + 1}/{len(self.scene_order)}) from {first.episode_id}'s start pose")
            def progress(steps: int) -> None:
                if steps and steps % 250 == 0:
                    self.get_logger().info(f"  {sid}: {steps} exploration steps")

            view, info = explore_scene_map(self.scenes[sid], self.encoder_name, self.resolution, start_episode=first,
                                           max_steps=self.explore_steps, save_dir=self.run_dir / "maps_built" / sid,
                                           progress=progress, sensor=self.sensor)
            self.explore_info[sid] = info
            self.get_logger().info(f"scene {sid} mapped: {info['steps']} steps ({info['stop_reason']}), {info['seconds']} s, "
                                   f"{int(view.valid.sum())} observed cells")
        else:
            from personal.grounding.eval.pog_run import oracle_topdown_map
            from personal.grounding.pipeline import TextEmbedder
            from personal.models.base import make_encoder

            view = oracle_topdown_map(self.scenes[sid], TextEmbedder(make_encoder(self.encoder_name)), self.resolution)
        self.maps[sid] = view
        data, layout, desc = map_to_wire(view, scene_id=sid)
        msg = Float32MultiArray()
        msg.layout.dim = [MultiArrayDimension(label=l, size=s, stride=st) for l, s, st in layout]
        msg.data = array.array("f", data.astype(np.float32).tobytes())
        self.map_pub.publish(msg)
        self.desc_pub.publish(self._descriptor_msg(desc))
        self._map_sent_at = time.monotonic()
        return True

    def _needs_exploring(self, sid: str) -> bool:
        """explore_graph: no reusable saved map of ``sid`` (logs which map is reused or why not)."""
        from personal.grounding.eval.pog_run import reusable_map

        path = Path(self.maps_dir) / sid / "features.yaml"
        reuse, why = reusable_map(path.parent, self.scenes[sid], self.resolution, self.encoder_name, self.explore_size,
                                  self.sensor_args)
        if self.reuse_maps and reuse and not self.record_dir:
            self.get_logger().info(f"scene {sid}: reusing saved map {path} (same scene, resolution and encoder)")
            self.explore_info[sid] = {"reused": str(path)}
            return False
        if self.reuse_maps and path.exists():
            self.get_logger().info(f"scene {sid}: not reusing {path}: {why}")
        return True

    def _explore_graph_scenes(self, sid: str) -> None:
        """Pre-explore ``sid`` — and every later scene without a reusable map, in the same graph (one
        start-up; recorded runs keep one graph and one bag per scene) — and note each one's outcome."""
        from personal.grounding.eval.pog_run import explore_scenes_with_graph, explore_with_graph, remember_map_source

        if not self._needs_exploring(sid):
            return
        batch = [sid]
        if not self.record_dir:
            batch += [s for s in self.scene_order[self.scene_idx + 1:]
                      if s in self.scenes and s not in self.explore_info and self._needs_exploring(s)]
        firsts = {s: next(e for e in self.episodes if e.scene_id == s) for s in batch}
        names = ", ".join(batch)
        self.get_logger().info(f"pre-exploring scene{'s' if len(batch) > 1 else ''} {names} "
                               f"({self.scene_idx + 1}{f'-{self.scene_idx + len(batch)}' if len(batch) > 1 else ''}"
                               f"/{len(self.scene_order)}) with the 'explore' graph (sim bridge + mapping + explore nodes)")
        log = lambda line: self.get_logger().info(f"  [explore {names}] {line}")  # noqa: E731
        self._preload_query_embedder()
        if self.record_dir:
            infos = {sid: explore_with_graph(self.scenes[sid], firsts[sid], self.maps_dir, self.resolution, self.explore_steps,
                                             self.encoder_name, work_dir=self.run_dir / "explore_sets", log=log,
                                             bag_dir=child_path(self.record_dir, sid, "scene_id"), image_size=self.explore_size,
                                             sensor=self.sensor_args)}
        else:
            infos = explore_scenes_with_graph([(self.scenes[s], firsts[s]) for s in batch], self.maps_dir, self.resolution,
                                              self.explore_steps, self.encoder_name, work_dir=self.run_dir / "explore_sets",
                                              log=log, image_size=self.explore_size, sensor=self.sensor_args)
        for s, info in infos.items():
            self.explore_info[s] = info
            path = Path(self.maps_dir) / s / "features.yaml"
            if info["exit_code"] != 0:  # a node of the child graph died, or it timed out
                reason = f"the explore graph exited with code {info['exit_code']}: {info.get('errors', '')}"[:800]
                self.get_logger().error(f"scene {s}: {reason}; its episodes are recorded as explore_failed failures")
                self.scene_failures[s] = ("explore_failed", reason)
                self.incomplete.append(f"scene {s}: {reason}")
            elif path.exists():
                remember_map_source(path.parent, self.scenes[s], self.resolution, self.encoder_name, self.explore_size,
                                    self.sensor_args)
            self.get_logger().info(f"scene {s} mapped by the explore graph: {info}")

    # -- main loop ------------------------------------------------------------------------------
    def _tick(self) -> None:
        if self.exit_code is not None:
            return
        now = time.monotonic()
        self._expire(now)
        overdue = self.assembler.overdue(now)
        if overdue:
            self.get_logger().warning(f"feature_map: array and descriptor do not fit: {overdue}")
        if not self.queue and not self.pending:
            if self.scene_idx >= len(self.scene_order):
                self._finish()
                return
            sid = self.scene_order[self.scene_idx]
            if not self._provide_map(sid):
                if now - self.scene_wait_start > self.map_timeout:
                    self.get_logger().error(f"no map of scene {sid} after {self.map_timeout:.0f} s: its episodes are recorded as empty_map failures")
                    self.maps[sid] = _empty_map()
                    self._publish_empty(sid)
                return
            if self.map_source != "topic" and not self._map_reached_grounding(now):
                return
            self.queue = [e for e in self.episodes if e.scene_id == sid]
            self.scene_idx += 1
            if sid in self.scene_failures:
                self._fail_queue(*self.scene_failures[sid])
            self.scene_wait_start = now
        if self.queue and not self._grounding_ready(now):
            return
        while self.queue and len(self.pending) < self.window:
            self._send(self.queue.pop(0))

    def _map_reached_grounding(self, now: float) -> bool:
        """A latched map reaches a subscriber only once it has matched: wait for the grounding
        node's map subscriptions, then a moment for the transfer, else the first query can
        overtake the map. No grounding node: go on, and _grounding_ready records the failures."""
        matched = self.map_pub.get_subscription_count() > 0 and self.desc_pub.get_subscription_count() > 0
        if matched and getattr(self, "_map_matched_at", None) is None:
            self._map_matched_at = now
        if getattr(self, "_map_matched_at", None) is not None:
            return now - max(self._map_matched_at, getattr(self, "_map_sent_at", 0.0)) >= 0.5
        return now - getattr(self, "_map_sent_at", 0.0) > self.grounding_wait

    def _grounding_ready(self, now: float) -> bool:
        """Queries are volatile: send only once the grounding node listens and answers.
        If it never appears, the queued episodes are recorded as failures (no hang)."""
        if self.query_pub.get_subscription_count() > 0 and self.count_publishers("grounding/result") > 0:
            self._wait_since = None
            return True
        if getattr(self, "_wait_since", None) is None:
            self._wait_since = now
        if now - self._wait_since > self.grounding_wait:
            self.get_logger().error(f"no grounding node after {self.grounding_wait:.0f} s: "
                                    f"{len(self.queue)} episodes recorded as no_grounding_node failures")
            self.incomplete.append(f"no grounding node within {self.grounding_wait:.0f} s ({len(self.queue)} episodes)")
            for ep in self.queue:
                rid = uuid.uuid4().hex[:12]
                self.pending[rid] = (ep, now, {m: _failed(m, "no_grounding_node", "the grounding node never subscribed to grounding/query")
                                               for m in self.methods})
                self._complete(rid)
            self.queue = []
            self._wait_since = None
            return False
        if now - getattr(self, "_last_wait_log", 0.0) > 10.0:
            self._last_wait_log = now
            self.get_logger().info("waiting for the grounding node (grounding/query subscriber, grounding/result publisher)")
        return False

    # -- record / replay (personal/grounding/eval/pog_replay.py) --------------------------------------------
    def _record_dir_free(self) -> bool:
        if self.map_source != "explore_graph":
            self.get_logger().warning(f"record_dir is only used with map_source explore_graph (not {self.map_source}); ignored")
            self.record_dir = ""
            return True
        taken = [str(child_path(self.record_dir, s, "scene_id")) for s in dict.fromkeys(e.scene_id for e in self.episodes)
                 if child_path(self.record_dir, s, "scene_id").exists()]
        if taken:
            self.get_logger().error(f"record_dir: {', '.join(taken)} already exist; refusing to overwrite recorded bags")
            self.exit_code = 1
            return False
        return True

    def _replay_scene(self, sid: str) -> MapView:
        """Scene ``sid``'s map replayed from its bag; on failure an empty map and a recorded failure."""
        from personal.bags import BagError
        from personal.grounding.eval.pog_replay import ReplayError, replay_bag_map

        bag = Path(self.bags_dir) / sid
        first = next(e for e in self.episodes if e.scene_id == sid)
        self.get_logger().info(f"replaying {bag} into the mapping node ({self.scene_idx + 1}/{len(self.scene_order)}, "
                               f"rate {self.replay_rate})")
        try:
            info = replay_bag_map(self.scenes[sid], first, bag, self.run_dir / "replayed_maps", self.resolution,
                                  self.encoder_name, work_dir=self.run_dir / "replay_sets", rate=self.replay_rate,
                                  camera_prefix=self.camera_prefix,
                                  log=lambda line: self.get_logger().info(f"  [replay {sid}] {line}"))
        except (BagError, ReplayError, OSError) as exc:
            self.get_logger().error(f"scene {sid}: {exc}; its episodes are recorded as bag_error failures")
            self.explore_info[sid] = {"bag": str(bag), "error": str(exc)}
            self.scene_failures[sid] = ("bag_error", str(exc))
            return _empty_map()
        self.explore_info[sid] = info
        say = self.get_logger().info if info["frames identical"] and info["map identical to live"] is not False \
            else self.get_logger().error
        say(f"scene {sid} replayed: frames integrated live {info['frames live']}, replayed {info['frames replayed']}; "
            f"map identical to the live map: {info['map identical to live']} ({info['seconds']} s)")
        from personal.grounding.eval.pog_run import load_saved_map

        return load_saved_map(info["map"])

    def _fail_queue(self, code: str, reason: str) -> None:
        now = time.monotonic()
        for ep in self.queue:
            rid = uuid.uuid4().hex[:12]
            self.pending[rid] = (ep, now, {m: _failed(m, code, reason) for m in self.methods})
            self._complete(rid)
        self.queue = []

    def _descriptor_msg(self, desc: dict) -> FeatureMapDescriptor:
        msg = from_dict(FeatureMapDescriptor, descriptor_to_fields(desc))
        msg.header.frame_id = "map"
        msg.header.stamp = self.get_clock().now().to_msg()
        return msg

    def _publish_empty(self, sid: str) -> None:
        if self.map_pub is None:
            return
        data, layout, desc = map_to_wire(self.maps[sid], scene_id=sid)
        msg = Float32MultiArray()
        msg.layout.dim = [MultiArrayDimension(label=l, size=s, stride=st) for l, s, st in layout]
        msg.data = array.array("f", data.astype(np.float32).tobytes())
        self.map_pub.publish(msg)
        self.desc_pub.publish(self._descriptor_msg(desc))

    def _send(self, ep) -> None:
        rid = uuid.uuid4().hex[:12]
        self.pending[rid] = (ep, time.monotonic(), {})
        payload = {"request_id": rid, "episode_id": ep.episode_id, "scene_id": ep.scene_id, "summary": ep.summary,
                   "query": ep.query, "owner": ep.owner, "methods": self.methods, "seed": int(self.seed),
                   "extracted_summary": list(ep.extracted_summary)}
        self.query_pub.publish(from_dict(GroundingQuery, payload))

    def _on_result(self, msg: GroundingResult) -> None:
        r = to_dict(msg)
        entry = self.pending.get(r["request_id"])
        if entry is None:
            return  # another evaluator's request, or one that already timed out
        entry[2][r["method"]] = r
        if all(m in entry[2] for m in self.methods):
            self._complete(r["request_id"])

    def _expire(self, now: float) -> None:
        for rid, (ep, sent, got) in list(self.pending.items()):
            if now - sent > self.query_timeout:
                if self.query_pub.get_subscription_count() == 0 and not any("grounding node left" in i for i in self.incomplete):
                    self.incomplete.append("the grounding node left during the run (queries timed out unanswered)")
                for m in self.methods:
                    got.setdefault(m, _failed(m, "timeout", f"no result from the grounding node within {self.query_timeout:.0f} s"))
                self._complete(rid)

    def _complete(self, rid: str) -> None:
        ep, _, got = self.pending.pop(rid)
        self.map_encoders.update(r.get("map_encoder", "") for r in got.values() if r.get("map_encoder"))
        boxes, gt_failure = target_boxes(ep, self.scenes.get(ep.scene_id))
        first = len(self.results)
        for m in self.methods:
            r = got[m]
            failure = gt_failure or (None if r["ok"] else {"code": r["failure_code"], "reason": r["failure_reason"]})
            pts = [(p["x"], p["y"]) for p in r["points"]] if not gt_failure else []
            self.results.append(score_episode(
                episode_id=ep.episode_id, scene_id=ep.scene_id, split=ep.split, method=m, points=pts,
                scores=r["scores"] if not gt_failure else [], targets=boxes, latency_ms=r.get("latency_ms", float("nan")),
                query=ep.query, owner=r.get("owner", "") or ep.owner, target_object_ids=ep.target_object_ids, failure=failure,
                info={"extract_ms": r.get("extract_ms"), "embed_ms": r.get("embed_ms"), "phrases": len(r.get("phrases", [])),
                      "owner_phrases": owner_phrases(r.get("phrases", []), r.get("owner", "") or ep.owner),
                      **({"gate_cells": r["gate_cells"]} if r.get("gate_cells") else {}),
                      **({"observed_cells": r["observed_cells"]} if r.get("observed_cells") else {})},
            ))
        self.result_log.extend(r.to_dict() for r in self.results[first:])  # on disk before the next episode
        self.done += 1
        total = len(self.episodes)
        if self.done == total or self.done % max(1, total // 20) == 0:
            self.get_logger().info(f"episodes done {self.done}/{total} ({time.monotonic() - self.t0:.0f} s)")

    def _finish(self) -> None:
        from personal.grounding.eval.pog_run import write_sample_maps

        oracle = "oracle" in self.encoder_name.lower() or self.map_source == "oracle"
        meta = {
            "encoder": ", ".join(sorted(self.map_encoders)) or self.encoder_name,
            "encoder_is_oracle": oracle or any("oracle" in e for e in self.map_encoders),
            "extractor": self.extractor_name,
            "map source": {"topic": "mapping node (pre-exploration, feature_map topics)", "saved": f"saved maps ({self.maps_dir})",
                           "explore_graph": f"pre-exploration per scene by the ROS 'explore' graph (sim bridge + mapping node + "
                                            f"frontier explore node), maps saved in {self.maps_dir}",
                           "explore": "pre-exploration per scene: frontier explorer + MapBuilder on the synthetic simulator "
                                      "(160x120 render, 79 deg HFOV), cell features from the encoder",
                           "oracle": "ORACLE top-down map from scene ground truth",
                           "bag": f"recorded sensor bags ({self.bags_dir}/<scene_id>/) replayed into a mapping node "
                                  f"(bag_map graph, rate {self.replay_rate}, camera prefix {self.camera_prefix})"}[self.map_source],
            "pre-exploration": self.explore_info or "n/a",
            "sensor": (self.sensor.describe() if self.map_source in ("explore", "explore_graph")
                       else "n/a (maps not built from simulated frames here)"),
            **({"frames integrated (live / replayed)": {s: f"{i.get('frames live')} / {i.get('frames replayed')}"
                                                        for s, i in self.explore_info.items()},
                "replayed map identical to the live map": {s: i.get("map identical to live") for s, i in self.explore_info.items()}}
               if self.map_source == "bag" else {}),
            **({"recorded bags": self.record_dir} if self.record_dir else {}),
            "map resolution (m)": sorted({round(v.resolution, 3) for v in self.maps.values() if v.dim}) or [self.resolution],
            "observed cells per map": {sid: int(v.valid.sum()) for sid, v in self.maps.items()},
            "episodes": f"{self.episodes_dir or f'generated: {self.n_scenes} scenes x {self.splits} x {self.per_split}, seed {self.seed}'}",
            "episode count": len(self.episodes),
            "wall time (s)": round(time.monotonic() - self.t0, 1),
            "run": f"ROS graph {'pog_replay' if self.map_source == 'bag' else 'pog_eval'} (grounding node + evaluator node)",
            **({"INCOMPLETE RUN": self.incomplete} if self.incomplete else {}),
        }
        write_report(self.run_dir, self.results, meta, self.methods,
                     upper_bound=None if meta["encoder_is_oracle"] else self._upper_bound())
        try:
            write_sample_maps(self.run_dir, self.results, self.episodes, self.scenes, self.maps, self._query_embedder(),
                              self.sample_maps)
        except Exception as exc:  # plots are a nice-to-have; the report is written
            self.get_logger().warning(f"sample map plots failed: {exc}")
        write_html(self.run_dir, "pog", self.get_logger())
        self.get_logger().info(f"POG evaluation done: {self.done}/{len(self.episodes)} episodes; report: {self.run_dir.resolve() / 'report.md'}")
        print(f"report: {self.run_dir.resolve() / 'report.md'}", flush=True)
        self.result_log.close()
        if self.incomplete:
            self.get_logger().error("run incomplete: " + "; ".join(self.incomplete) + "; exit code 3")
        self.exit_code = 3 if self.incomplete else 0


    def _upper_bound(self):
        """The same episodes on ORACLE top-down maps (library, in this process), or None."""
        if self.upper_bound == "none":
            return None
        from personal.grounding.eval.pog import UpperBound
        from personal.grounding.eval.pog_run import oracle_upper_bound

        t0 = time.monotonic()
        try:
            ub = oracle_upper_bound(self.scenes, self.episodes, self.methods, self.resolution, self.extractor_name)
        except Exception as exc:  # the run's own results are written regardless
            self.get_logger().warning(f"ORACLE upper bound failed: {exc}")
            return UpperBound("ORACLE top-down caption maps", error=f"{type(exc).__name__}: {exc}")
        self.get_logger().info(f"ORACLE upper bound (top-down maps) in {time.monotonic() - t0:.1f} s")
        return ub


def threading_current():
    import threading

    return threading.current_thread()


def _failed(method: str, code: str, reason: str) -> dict:
    return {"method": method, "ok": False, "failure_code": code, "failure_reason": reason, "points": [], "scores": [],
            "latency_ms": float("nan"), "owner": ""}


def _empty_map() -> MapView:
    return MapView.from_arrays(np.zeros((1, 1, 1), np.float32), np.zeros((1, 1), np.float32), (0.0, 0.0), 1.0)


def main(args=None) -> None:
    run_until_exit_code(PogEvaluatorNode, args)


if __name__ == "__main__":
    main()

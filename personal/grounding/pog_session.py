"""The POG evaluator's bookkeeping without ROS (nodes/pog_evaluator_node.py is its rclpy shell).

``PogConfig`` holds the evaluator's parameters; ``PogSession`` schedules the episodes scene by
scene, keeps the queries in flight and turns their results (or failures) into scored records;
``GroundingGate`` and ``MapHandoff`` decide when queries may go out; ``SceneMaps`` builds each
scene's map for every ``map_source`` except ``topic``; ``report_meta`` assembles the report's
run description. ``log`` arguments are logger-like (``info`` / ``warning`` / ``error``).
"""
from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from personal.grounding.eval.pog import owner_phrases, score_episode
from personal.grounding.pipeline import MapView, target_boxes
from personal.paths import child_path

MAP_SOURCES = ("explore", "explore_graph", "topic", "saved", "oracle", "bag")
UPPER_BOUNDS = ("oracle-topdown", "none")


@dataclass
class PogConfig:
    """The evaluator's parameters (defaults: the node's)."""

    episodes_dir: str = ""
    splits: list[str] = field(default_factory=lambda: ["easy", "medium", "hard"])
    n_scenes: int = 3
    per_split: int = 10
    seed: int = 0
    methods: list[str] = field(default_factory=lambda: ["random", "centre", "qs", "rpg", "rpg-owner"])
    map_source: str = "explore"
    reuse_maps: bool = True
    explore_steps: int = 2500
    explore_size: tuple[int, int] = (320, 240)
    sensor_args: dict = field(default_factory=lambda: {"sensor": "ideal", "sensor_overrides": "", "sensor_seed": 0})
    maps_dir: str = "maps"
    record_dir: str = ""
    bags_dir: str = "bags"
    replay_rate: float = 1.0
    camera_prefix: str = "camera"
    resolution: float = 0.5
    encoder_name: str = "lit"
    extractor_name: str = "builtin"
    upper_bound: str = "oracle-topdown"
    summary_style: str = "verbatim"

    def __post_init__(self) -> None:
        from personal.world.summary_style import SUMMARY_STYLES

        if self.summary_style not in SUMMARY_STYLES:
            raise ValueError(f"parameter summary_style: expected {' | '.join(SUMMARY_STYLES)}, got {self.summary_style!r}")
        if self.episodes_dir and self.summary_style != "verbatim":
            raise ValueError("parameter summary_style: 'varied' rewrites generated summaries; "
                             f"episodes_dir {self.episodes_dir!r} brings its own (use summary_style:=verbatim)")
        if self.map_source not in MAP_SOURCES:
            raise ValueError(f"parameter map_source: expected {' | '.join(MAP_SOURCES)}, got {self.map_source!r}")
        if self.upper_bound not in UPPER_BOUNDS:
            raise ValueError(f"parameter upper_bound: expected {' | '.join(UPPER_BOUNDS)}, got {self.upper_bound!r}")

    @property
    def is_oracle(self) -> bool:
        return "oracle" in self.encoder_name.lower() or self.map_source == "oracle"


# the evaluator node's parameters: {name: (default, description)}; config_from makes its PogConfig
PARAMETERS = {
    "episodes_dir": ("", "PersONAL episode folder; empty = generate"),
    "splits": ("easy,medium,hard", "comma-separated splits"),
    "scenes": (3, "generated scenes"),
    "episodes_per_split": (10, "generated episodes per split and scene"),
    "seed": (0, "generator seed (same as the sim bridge's)"),
    "methods": ("random,centre,qs,rpg,rpg-owner", "methods to evaluate"),
    "map_source": ("explore", "explore | explore_graph | topic | saved | oracle | bag"),
    "reuse_maps": (True, "explore_graph: reuse <maps_dir>/<scene_id>/ when it exists"),
    "explore_steps": (2500, "pre-exploration step budget per scene (map_source explore)"),
    "explore_width": (320, "explore_graph: rendered image width, px"),
    "explore_height": (240, "explore_graph: rendered image height, px"),
    # the exploration camera model (explore / explore_graph: the bridge's sensor arguments)
    "sensor": ("ideal", "camera model of the exploration: ideal | d435 | d435-harsh"),
    "sensor_overrides": ("", "preset fields to override"),
    "sensor_seed": (0, "seed of the camera model's noise"),
    "maps_dir": ("maps", "saved maps folder (map_source saved)"),
    "record_dir": ("", "explore_graph: record each scene's sensor topics to <record_dir>/<scene_id>/"),
    "bags_dir": ("bags", "map_source bag: recorded bags <bags_dir>/<scene_id>/"),
    "replay_rate": (1.0, "map_source bag: playback rate (1 = recorded timing)"),
    "camera_prefix": ("camera", "map_source bag: camera topic prefix (camera/camera = RealSense)"),
    "resolution": (0.5, "cell size of ORACLE maps (m); for the report otherwise"),
    "encoder": ("lit", "encoder of the maps and of the grounding node's texts"),
    "extractor": ("builtin", "extractor of the grounding node (for the report)"),
    "upper_bound": ("oracle-topdown", "oracle-topdown: the report adds the same episodes on "
                                      "ORACLE top-down maps as a labelled upper bound (non-oracle runs) | none"),
    "summary_style": ("verbatim", "verbatim (summaries quote the generator's captions) | varied (other words); "
                                  "the report adds the other style on the same maps"),
    "out_dir": ("runs/pog_eval", "run folders are created under this"),
    "map_timeout_s": (900.0, "wait this long for a scene's map"),
    "query_timeout_s": (60.0, "a query without all results after this is a failure"),
    "grounding_wait_s": (180.0, "give up on a grounding node that never appears after this"),
    "in_flight": (16, "queries in flight at once (the grounding node embeds their texts in one batch)"),
    "sample_maps": (6, "episodes drawn as map PNGs"),
}


def config_from(p: dict) -> PogConfig:
    """The PogConfig of the node's parameters (ValueError for an unknown map_source / upper_bound / method)."""
    from personal.grounding.methods import parse_method_list

    return PogConfig(
        episodes_dir=p["episodes_dir"], splits=[s.strip() for s in p["splits"].split(",") if s.strip()],
        n_scenes=p["scenes"], per_split=p["episodes_per_split"], seed=p["seed"],
        methods=parse_method_list(p["methods"]), map_source=p["map_source"], reuse_maps=p["reuse_maps"],
        explore_steps=p["explore_steps"], explore_size=(p["explore_width"], p["explore_height"]),
        sensor_args={k: p[k] for k in ("sensor", "sensor_overrides", "sensor_seed")},
        maps_dir=p["maps_dir"], record_dir=p["record_dir"], bags_dir=p["bags_dir"], replay_rate=p["replay_rate"],
        camera_prefix=p["camera_prefix"], resolution=p["resolution"], encoder_name=p["encoder"],
        extractor_name=p["extractor"], upper_bound=p["upper_bound"], summary_style=p["summary_style"])


def failed_result(method: str, code: str, reason: str) -> dict:
    """A grounding result standing for a method that produced none (recorded as a failure)."""
    return {"method": method, "ok": False, "failure_code": code, "failure_reason": reason, "points": [], "scores": [],
            "latency_ms": float("nan"), "owner": ""}


def empty_map() -> MapView:
    return MapView.from_arrays(np.zeros((1, 1, 1), np.float32), np.zeros((1, 1), np.float32), (0.0, 0.0), 1.0)


def load_episodes(cfg: PogConfig, log) -> tuple[dict, list]:
    """(scenes, episodes) of the folder or the generated set; ValueError when it is empty."""
    from personal.grounding.eval.pog_run import generate_episode_set, load_episode_folder

    if cfg.episodes_dir:
        scenes, eps, problems = load_episode_folder(cfg.episodes_dir, cfg.splits)
        for line in problems:
            log.warning(f"episode set: {line} (recorded as a failure)")
    else:
        scenes, eps = generate_episode_set(cfg.n_scenes, cfg.splits, cfg.per_split, cfg.seed,
                                           summary_style=cfg.summary_style)
    if not eps:
        raise ValueError("the episode set is empty")
    return scenes, eps


def taken_record_dirs(record_dir: str, episodes: list) -> list[str]:
    """The scenes' bag folders under ``record_dir`` that already exist (recorded bags are never overwritten)."""
    return [str(child_path(record_dir, s, "scene_id")) for s in dict.fromkeys(e.scene_id for e in episodes)
            if child_path(record_dir, s, "scene_id").exists()]


class PogSession:
    """Scene-by-scene scheduling of the episodes, the queries in flight and the scored records."""

    def __init__(self, episodes: list, scenes: dict, methods: list[str], window: int, result_log, log,
                 t0: float | None = None) -> None:
        self.episodes, self.scenes, self.methods, self.window = episodes, scenes, methods, window
        self.result_log, self.log = result_log, log
        self.scene_order = list(dict.fromkeys(e.scene_id for e in episodes))
        self.scene_idx = 0
        self.queue: list = []
        self.pending: dict[str, tuple] = {}  # request_id -> (episode, sent_at, {method: result})
        self.queries: dict[str, dict] = {}  # request_id -> the GroundingQuery fields sent
        self.resent: set[str] = set()  # request_ids already sent a second time
        self.results: list = []
        self.done = 0
        self.map_encoders: set[str] = set()
        self.t0 = time.monotonic() if t0 is None else t0  # the run's start (progress lines, wall time)
        self.scene_wait_start = time.monotonic()

    # -- scheduling --------------------------------------------------------------------------
    def idle(self) -> bool:
        return not self.queue and not self.pending

    def next_scene(self) -> str | None:
        """The scene whose map is wanted next (None: every scene is done)."""
        return self.scene_order[self.scene_idx] if self.scene_idx < len(self.scene_order) else None

    def map_overdue(self, now: float, timeout: float) -> bool:
        return now - self.scene_wait_start > timeout

    def start_scene(self, sid: str, now: float) -> None:
        self.queue = [e for e in self.episodes if e.scene_id == sid]
        self.scene_idx += 1
        self.scene_wait_start = now

    def to_send(self) -> list:
        """Episodes to query now: the queue's head, up to ``window`` in flight."""
        n = max(0, min(len(self.queue), self.window - len(self.pending)))
        batch, self.queue = self.queue[:n], self.queue[n:]
        return batch

    # -- queries -----------------------------------------------------------------------------
    def open(self, ep, now: float, seed: int) -> dict:
        """Register ``ep``'s query; returns the GroundingQuery fields to publish."""
        rid = uuid.uuid4().hex[:12]
        self.pending[rid] = (ep, now, {})
        self.queries[rid] = {"request_id": rid, "episode_id": ep.episode_id, "scene_id": ep.scene_id, "summary": ep.summary,
                             "query": ep.query, "owner": ep.owner, "methods": self.methods, "seed": int(seed),
                             "extracted_summary": list(ep.extracted_summary)}
        return self.queries[rid]

    def resend_due(self, now: float, after: float) -> list[dict]:
        """The queries to send once more: no result at all ``after`` s after they were sent. Fast DDS can lose
        a message sent as soon as its publisher sees the subscriber; the request id makes a repeat harmless
        (a second answer finds its query done and is ignored)."""
        due = [rid for rid, (_, sent, got) in self.pending.items()
               if not got and now - sent > after and rid not in self.resent and rid in self.queries]
        self.resent.update(due)
        if due:
            self.log.warning(f"grounding/query: no result {after:.0f} s after sending {len(due)} queries; sent once more")
        return [self.queries[rid] for rid in due]

    def answer(self, r: dict) -> None:
        """One method's result; the episode is scored once every method answered."""
        entry = self.pending.get(r["request_id"])
        if entry is None:
            return  # another evaluator's request, or one that already timed out
        entry[2][r["method"]] = r
        if all(m in entry[2] for m in self.methods):
            self._complete(r["request_id"])

    def expire(self, now: float, timeout: float) -> int:
        """Score the queries older than ``timeout`` with ``timeout`` failures; returns how many."""
        old = [rid for rid, (_, sent, _) in self.pending.items() if now - sent > timeout]
        for rid in old:
            got = self.pending[rid][2]
            for m in self.methods:
                got.setdefault(m, failed_result(m, "timeout", f"no result from the grounding node within {timeout:.0f} s"))
            self._complete(rid)
        return len(old)

    def fail_queue(self, code: str, reason: str, now: float) -> None:
        """Record every queued episode as a ``code`` failure of each method."""
        for ep in self.queue:
            rid = uuid.uuid4().hex[:12]
            self.pending[rid] = (ep, now, {m: failed_result(m, code, reason) for m in self.methods})
            self._complete(rid)
        self.queue = []

    def _complete(self, rid: str) -> None:
        ep, _, got = self.pending.pop(rid)
        self.queries.pop(rid, None)
        self.resent.discard(rid)
        self.map_encoders.update(r.get("map_encoder", "") for r in got.values() if r.get("map_encoder"))
        boxes, gt_failure = target_boxes(ep, self.scenes.get(ep.scene_id))
        first = len(self.results)
        for m in self.methods:
            self.results.append(_score(ep, m, got[m], boxes, gt_failure))
        self.result_log.extend(r.to_dict() for r in self.results[first:])  # on disk before the next episode
        self.done += 1
        total = len(self.episodes)
        if self.done == total or self.done % max(1, total // 20) == 0:
            self.log.info(f"episodes done {self.done}/{total} ({time.monotonic() - self.t0:.0f} s)")


def _score(ep, method: str, r: dict, boxes: list, gt_failure: dict | None):
    failure = gt_failure or (None if r["ok"] else {"code": r["failure_code"], "reason": r["failure_reason"]})
    pts = [(p["x"], p["y"]) for p in r["points"]] if not gt_failure else []
    owner = r.get("owner", "") or ep.owner
    return score_episode(
        episode_id=ep.episode_id, scene_id=ep.scene_id, split=ep.split, method=method, points=pts,
        scores=r["scores"] if not gt_failure else [], targets=boxes, latency_ms=r.get("latency_ms", float("nan")),
        query=ep.query, owner=owner, target_object_ids=ep.target_object_ids, failure=failure,
        info={"extract_ms": r.get("extract_ms"), "embed_ms": r.get("embed_ms"), "phrases": len(r.get("phrases", [])),
              "owner_phrases": owner_phrases(r.get("phrases", []), owner),
              **({"gate_cells": r["gate_cells"]} if r.get("gate_cells") else {}),
              **({"observed_cells": r["observed_cells"]} if r.get("observed_cells") else {})},
    )


class GroundingGate:
    """Queries are volatile: they go out only once the grounding node listens and answers; one
    that never appears within ``wait_s`` makes the queued episodes failures (no hang)."""

    def __init__(self, wait_s: float) -> None:
        self.wait_s = wait_s
        self._since: float | None = None
        self._last_log = 0.0

    def check(self, listening: bool, now: float) -> str:
        """'ready', 'wait' (and a log is due: 'wait-log') or 'gave_up'."""
        if listening:
            self._since = None
            return "ready"
        if self._since is None:
            self._since = now
        if now - self._since > self.wait_s:
            self._since = None
            return "gave_up"
        if now - self._last_log > 10.0:
            self._last_log = now
            return "wait-log"
        return "wait"


class MapHandoff:
    """A latched map reaches a subscriber only once it has matched: wait for the grounding node's
    map subscriptions, then a moment for the transfer, else the first query can overtake the map.
    No grounding node within ``wait_s``: go on (the GroundingGate records the failures)."""

    SETTLE_S = 0.5

    def __init__(self, wait_s: float) -> None:
        self.wait_s = wait_s
        self.sent_at = 0.0
        self.matched_at: float | None = None

    def sent(self, now: float) -> None:
        self.sent_at = now

    def arrived(self, matched: bool, now: float) -> bool:
        if matched and self.matched_at is None:
            self.matched_at = now
        if self.matched_at is not None:
            return now - max(self.matched_at, self.sent_at) >= self.SETTLE_S
        return now - self.sent_at > self.wait_s


class LazyEmbedder:
    """The maps' text encoder for the sample maps' query-similarity background (None: confidence
    instead), loadable on a thread while the explore graph runs rather than after the last episode."""

    def __init__(self, encoder_name: str, enabled: bool, log) -> None:
        self.encoder_name, self.enabled, self.log = encoder_name, enabled, log
        self._thread: threading.Thread | None = None
        self._embedder = None

    def preload(self) -> None:
        if self._thread is None and self.enabled:
            def load() -> None:
                self._embedder = self._load()
                if self._embedder is not None:  # the text tower too (loaded lazily at the first text otherwise)
                    from personal.models.oracle import load_sentence_model, uses_sentence_model

                    if uses_sentence_model(self._embedder.encoder):
                        load_sentence_model()

            self._thread = threading.Thread(target=load, daemon=True, name="query-embedder")
            self._thread.start()

    def get(self):
        if self._thread is not None and threading.current_thread() is not self._thread:
            self._thread.join()
            return self._embedder
        return self._load() if self.enabled else None

    def _load(self):
        try:
            from personal.grounding.pipeline import TextEmbedder
            from personal.models.base import make_encoder

            return TextEmbedder(make_encoder(self.encoder_name))
        except Exception as exc:  # e.g. clip/siglip without local weights here
            self.log.warning(f"sample maps: no text encoder {self.encoder_name!r} ({exc}); background = confidence")
            return None


class SceneMaps:
    """Each scene's map from the configured source (not ``topic``: that one arrives on the wire).
    A scene that cannot get one gets an empty map and an entry in ``scene_failures``
    (code, reason); failures that make the run incomplete are appended to ``incomplete``."""

    def __init__(self, cfg: PogConfig, scenes: dict, episodes: list, run_dir: Path, sensor, log,
                 incomplete: list[str], on_explore=None) -> None:
        self.cfg, self.scenes, self.episodes, self.run_dir, self.sensor, self.log = cfg, scenes, episodes, run_dir, sensor, log
        self.incomplete = incomplete
        self.on_explore = on_explore or (lambda: None)  # called before a child explore graph starts
        self.scene_order = list(dict.fromkeys(e.scene_id for e in episodes))
        self.explore_info: dict[str, dict] = {}
        self.scene_failures: dict[str, tuple[str, str]] = {}

    def _first(self, sid: str):
        return next(e for e in self.episodes if e.scene_id == sid)

    def build(self, sid: str, idx: int) -> MapView:
        """Scene ``sid``'s map; ``idx`` is its place in the scene order (for the logs)."""
        src = self.cfg.map_source
        if sid not in self.scenes and src != "saved":  # nothing to explore or replay
            reason = f"no scene model for {sid!r} (scenes/{sid}.scene.json) in {self.cfg.episodes_dir or 'the generated set'}"
            self.log.error(f"scene {sid}: {reason}; its episodes are recorded as scene_missing failures")
            self.scene_failures[sid] = ("scene_missing", reason)
            return empty_map()
        build = {"saved": self._saved, "explore_graph": self._explore_graph, "bag": self._replay,
                 "explore": self._explore, "oracle": self._oracle}[src]
        return build(sid, idx)

    def _saved(self, sid: str, idx: int) -> MapView:
        from personal.grounding.eval.pog_run import load_saved_map

        path = child_path(self.cfg.maps_dir, sid, "scene_id") / "features.yaml"
        if not path.exists():
            self.log.error(f"no saved map {path}; scene {sid} is evaluated on an empty map")
            return empty_map()
        try:
            return load_saved_map(path)
        except (ValueError, OSError) as exc:  # a tampered / corrupt map: the scene's failure, not a dead node
            self.log.error(f"scene {sid}: unusable saved map: {exc}; its episodes are recorded as map_invalid failures")
            self.scene_failures[sid] = ("map_invalid", str(exc)[:500])
            self.incomplete.append(f"scene {sid}: unusable saved map: {exc}"[:800])
            return empty_map()

    def _explore_graph(self, sid: str, idx: int) -> MapView:
        from personal.grounding.eval.pog_run import load_saved_map

        path = child_path(self.cfg.maps_dir, sid, "scene_id") / "features.yaml"
        if sid not in self.explore_info:  # not reused or explored yet (a batch explores the later scenes too)
            self._explore_graph_scenes(sid, idx)
        try:
            if sid in self.scene_failures:
                raise RuntimeError(self.scene_failures[sid][1])
            return load_saved_map(path)
        except Exception as exc:
            self.log.error(f"scene {sid}: no usable map ({exc}); evaluated on an empty map")
            return empty_map()

    def needs_exploring(self, sid: str) -> bool:
        """explore_graph: no reusable saved map of ``sid`` (logs which map is reused or why not)."""
        from personal.grounding.eval.pog_run import reusable_map

        cfg = self.cfg
        path = Path(cfg.maps_dir) / sid / "features.yaml"
        reuse, why = reusable_map(path.parent, self.scenes[sid], cfg.resolution, cfg.encoder_name, cfg.explore_size,
                                  cfg.sensor_args)
        if cfg.reuse_maps and reuse and not cfg.record_dir:
            self.log.info(f"scene {sid}: reusing saved map {path} (same scene, resolution and encoder)")
            self.explore_info[sid] = {"reused": str(path)}
            return False
        if cfg.reuse_maps and path.exists():
            self.log.info(f"scene {sid}: not reusing {path}: {why}")
        return True

    def _explore_graph_scenes(self, sid: str, idx: int) -> None:
        """Pre-explore ``sid`` — and every later scene without a reusable map, in the same graph (one
        start-up; recorded runs keep one graph and one bag per scene) — and note each one's outcome."""
        from personal.grounding.eval.pog_run import explore_scenes_with_graph, explore_with_graph, remember_map_source

        cfg = self.cfg
        if not self.needs_exploring(sid):
            return
        batch = [sid]
        if not cfg.record_dir:
            batch += [s for s in self.scene_order[idx + 1:]
                      if s in self.scenes and s not in self.explore_info and self.needs_exploring(s)]
        firsts = {s: self._first(s) for s in batch}
        names = ", ".join(batch)
        self.log.info(f"pre-exploring scene{'s' if len(batch) > 1 else ''} {names} "
                      f"({idx + 1}{f'-{idx + len(batch)}' if len(batch) > 1 else ''}"
                      f"/{len(self.scene_order)}) with the 'explore' graph (sim bridge + mapping + explore nodes)")
        log = lambda line: self.log.info(f"  [explore {names}] {line}")  # noqa: E731
        self.on_explore()
        common = dict(work_dir=self.run_dir / "explore_sets", log=log, image_size=cfg.explore_size, sensor=cfg.sensor_args)
        if cfg.record_dir:
            infos = {sid: explore_with_graph(self.scenes[sid], firsts[sid], cfg.maps_dir, cfg.resolution, cfg.explore_steps,
                                             cfg.encoder_name, bag_dir=child_path(cfg.record_dir, sid, "scene_id"), **common)}
        else:
            infos = explore_scenes_with_graph([(self.scenes[s], firsts[s]) for s in batch], cfg.maps_dir, cfg.resolution,
                                              cfg.explore_steps, cfg.encoder_name, **common)
        for s, info in infos.items():
            self.explore_info[s] = info
            path = Path(cfg.maps_dir) / s / "features.yaml"
            if info["exit_code"] != 0:  # a node of the child graph died, or it timed out
                reason = f"the explore graph exited with code {info['exit_code']}: {info.get('errors', '')}"[:800]
                self.log.error(f"scene {s}: {reason}; its episodes are recorded as explore_failed failures")
                self.scene_failures[s] = ("explore_failed", reason)
                self.incomplete.append(f"scene {s}: {reason}")
            elif path.exists():
                remember_map_source(path.parent, self.scenes[s], cfg.resolution, cfg.encoder_name, cfg.explore_size,
                                    cfg.sensor_args)
            self.log.info(f"scene {s} mapped by the explore graph: {info}")

    def _replay(self, sid: str, idx: int) -> MapView:
        """Scene ``sid``'s map replayed from its bag; on failure an empty map and a recorded failure."""
        from personal.bags import BagError
        from personal.grounding.eval.pog_replay import ReplayError, replay_bag_map
        from personal.grounding.eval.pog_run import load_saved_map

        cfg = self.cfg
        bag = Path(cfg.bags_dir) / sid
        self.log.info(f"replaying {bag} into the mapping node ({idx + 1}/{len(self.scene_order)}, rate {cfg.replay_rate})")
        try:
            info = replay_bag_map(self.scenes[sid], self._first(sid), bag, self.run_dir / "replayed_maps", cfg.resolution,
                                  cfg.encoder_name, work_dir=self.run_dir / "replay_sets", rate=cfg.replay_rate,
                                  camera_prefix=cfg.camera_prefix,
                                  log=lambda line: self.log.info(f"  [replay {sid}] {line}"))
        except (BagError, ReplayError, OSError) as exc:
            self.log.error(f"scene {sid}: {exc}; its episodes are recorded as bag_error failures")
            self.explore_info[sid] = {"bag": str(bag), "error": str(exc)}
            self.scene_failures[sid] = ("bag_error", str(exc))
            return empty_map()
        self.explore_info[sid] = info
        say = self.log.info if info["frames identical"] and info["map identical to live"] is not False else self.log.error
        say(f"scene {sid} replayed: frames integrated live {info['frames live']}, replayed {info['frames replayed']}; "
            f"map identical to the live map: {info['map identical to live']} ({info['seconds']} s)")
        return load_saved_map(info["map"])

    def _explore(self, sid: str, idx: int) -> MapView:
        from personal.grounding.eval.pog_run import explore_scene_map

        cfg = self.cfg
        first = self._first(sid)
        self.log.info(f"pre-exploring scene {sid} ({idx + 1}/{len(self.scene_order)}) from {first.episode_id}'s start pose")

        def progress(steps: int) -> None:
            if steps and steps % 250 == 0:
                self.log.info(f"  {sid}: {steps} exploration steps")

        view, info = explore_scene_map(self.scenes[sid], cfg.encoder_name, cfg.resolution, start_episode=first,
                                       max_steps=cfg.explore_steps, save_dir=self.run_dir / "maps_built" / sid,
                                       progress=progress, sensor=self.sensor)
        self.explore_info[sid] = info
        self.log.info(f"scene {sid} mapped: {info['steps']} steps ({info['stop_reason']}), {info['seconds']} s, "
                      f"{int(view.valid.sum())} observed cells")
        return view

    def _oracle(self, sid: str, idx: int) -> MapView:
        from personal.grounding.eval.pog_run import oracle_topdown_map
        from personal.grounding.pipeline import TextEmbedder
        from personal.models.base import make_encoder

        return oracle_topdown_map(self.scenes[sid], TextEmbedder(make_encoder(self.cfg.encoder_name)), self.cfg.resolution)


def map_source_text(cfg: PogConfig) -> str:
    return {"topic": "mapping node (pre-exploration, feature_map topics)", "saved": f"saved maps ({cfg.maps_dir})",
            "explore_graph": f"pre-exploration per scene by the ROS 'explore' graph (sim bridge + mapping node + "
                             f"frontier explore node), maps saved in {cfg.maps_dir}",
            "explore": "pre-exploration per scene: frontier explorer + MapBuilder on the synthetic simulator "
                       "(160x120 render, 79 deg HFOV), cell features from the encoder",
            "oracle": "ORACLE top-down map from scene ground truth",
            "bag": f"recorded sensor bags ({cfg.bags_dir}/<scene_id>/) replayed into a mapping node "
                   f"(bag_map graph, rate {cfg.replay_rate}, camera prefix {cfg.camera_prefix})"}[cfg.map_source]


def report_meta(cfg: PogConfig, session: PogSession, maps: dict[str, MapView], explore_info: dict[str, dict],
                sensor, incomplete: list[str]) -> dict[str, Any]:
    """The report's description of the run (encoder, map source, episodes, wall time, what is missing)."""
    encoders = session.map_encoders
    return {
        "encoder": ", ".join(sorted(encoders)) or cfg.encoder_name,
        "encoder_is_oracle": cfg.is_oracle or any("oracle" in e for e in encoders),
        "extractor": cfg.extractor_name,
        "map source": map_source_text(cfg),
        "pre-exploration": explore_info or "n/a",
        "sensor": (sensor.describe() if cfg.map_source in ("explore", "explore_graph")
                   else "n/a (maps not built from simulated frames here)"),
        **({"frames integrated (live / replayed)": {s: f"{i.get('frames live')} / {i.get('frames replayed')}"
                                                    for s, i in explore_info.items()},
            "replayed map identical to the live map": {s: i.get("map identical to live") for s, i in explore_info.items()}}
           if cfg.map_source == "bag" else {}),
        **({"recorded bags": cfg.record_dir} if cfg.record_dir else {}),
        "map resolution (m)": sorted({round(v.resolution, 3) for v in maps.values() if v.dim}) or [cfg.resolution],
        "observed cells per map": {sid: int(v.valid.sum()) for sid, v in maps.items()},
        "episodes": f"{cfg.episodes_dir or f'generated: {cfg.n_scenes} scenes x {cfg.splits} x {cfg.per_split}, seed {cfg.seed}'}",
        "summary style": cfg.summary_style,
        "episode count": len(session.episodes),
        "wall time (s)": round(time.monotonic() - session.t0, 1),
        "run": f"ROS graph {'pog_replay' if cfg.map_source == 'bag' else 'pog_eval'} (grounding node + evaluator node)",
        **({"INCOMPLETE RUN": incomplete} if incomplete else {}),
    }


def upper_bound(cfg: PogConfig, scenes: dict, episodes: list, log):
    """The same episodes on ORACLE top-down maps (library, in this process), or None."""
    if cfg.upper_bound == "none":
        return None
    from personal.grounding.eval.pog import UpperBound
    from personal.grounding.eval.pog_run import oracle_upper_bound

    t0 = time.monotonic()
    try:
        ub = oracle_upper_bound(scenes, episodes, cfg.methods, cfg.resolution, cfg.extractor_name)
    except Exception as exc:  # the run's own results are written regardless
        log.warning(f"ORACLE upper bound failed: {exc}")
        return UpperBound("ORACLE top-down caption maps", error=f"{type(exc).__name__}: {exc}")
    log.info(f"ORACLE upper bound (top-down maps) in {time.monotonic() - t0:.1f} s")
    return ub


def other_summary_style(cfg: PogConfig, scenes: dict, episodes: list, maps: dict[str, MapView], embedder, log):
    """The run's episodes with the other summary style (verbatim <-> varied: same queries, targets
    and maps, only the summary's wording differs), grounded in this process on the run's maps:
    an ``OtherStyle`` for the report, or None (a PersONAL folder, or the LLM extractor, which would
    be queried a second time)."""
    from personal.grounding.eval.pog import OtherStyle
    from personal.grounding.eval.pog_run import generate_episode_set, make_components
    from personal.grounding.pipeline import evaluate_offline

    if cfg.episodes_dir or cfg.extractor_name == "llm":
        return None
    style = "varied" if cfg.summary_style == "verbatim" else "verbatim"
    t0 = time.monotonic()
    try:
        _, other = generate_episode_set(cfg.n_scenes, cfg.splits, cfg.per_split, cfg.seed, summary_style=style)
        wanted = {e.episode_id for e in episodes}
        other = [e for e in other if e.episode_id in wanted]
        enc, ext = make_components(cfg.encoder_name, cfg.extractor_name)
        text = embedder.get() if embedder is not None else None
        enc = text.encoder if text is not None else enc
        results = evaluate_offline(other, scenes, maps, ext, enc, cfg.methods)
    except Exception as exc:  # the run's own results are written regardless
        log.warning(f"summary style {style!r} beside the run failed: {exc}")
        return OtherStyle(style, error=f"{type(exc).__name__}: {exc}")
    log.info(f"summary style {style!r} on the run's maps in {time.monotonic() - t0:.1f} s")
    return OtherStyle(style, results)


def write_run(run_dir: Path, cfg: PogConfig, session: PogSession, maps: dict[str, MapView], scene_maps: SceneMaps, sensor,
              incomplete: list[str], embedder, sample_maps: int, log) -> Path:
    """The run folder's report (with the ORACLE upper bound unless the run is an oracle), sample
    map PNGs (best effort) and HTML; returns report.md's path."""
    from personal.grounding.eval.pog import write_report
    from personal.grounding.eval.pog_run import write_sample_maps
    from personal.grounding.eval.pog_page import html_page
    from personal.runs.report_html import write_html

    meta = report_meta(cfg, session, maps, scene_maps.explore_info, sensor, incomplete)
    bound = None if meta["encoder_is_oracle"] else upper_bound(cfg, scene_maps.scenes, session.episodes, log)
    other = other_summary_style(cfg, scene_maps.scenes, session.episodes, maps, embedder, log)
    write_report(run_dir, session.results, meta, cfg.methods, upper_bound=bound, other_style=other)
    try:
        write_sample_maps(run_dir, session.results, session.episodes, scene_maps.scenes, maps, embedder.get(), sample_maps)
    except Exception as exc:  # plots are a nice-to-have; the report is written
        log.warning(f"sample map plots failed: {exc}")
    write_html(run_dir, html_page, log)
    return run_dir.resolve() / "report.md"

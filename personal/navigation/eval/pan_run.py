"""Offline PAN evaluation (no ROS): every policy on every episode, in-process.

Uses the same :class:`personal.navigation.loop.NavigationLoop` as the navigation node, on a
simulator backend directly. Perception for the value-map explorers is the ORACLE caption
encoder (``oracle-captions-minilm``: ground-truth instance ids → caption embeddings), and the
ownership phrases come from the built-in extractor; both are stated in the report.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from personal.paths import child_path
from personal.navigation.eval.pan import GoalGeometry, PanEpisodeResult, plot_trajectory, write_report
from personal.world.model import SPLITS, Episode, Scene

LABELS = {
    "random-frontier": "Random frontier",
    "value-map-qs": "Value-map explorer (QS)",
    "value-map-rpg": "Value-map explorer (RPG)",
    "value-map-rpg-owner": "Value-map explorer (RPG-owner)",
    "oracle": "ORACLE human w. env. memory (GT map + target)",
}
EXPLORERS = ("value-map-qs", "value-map-rpg", "value-map-rpg-owner")


def generate_pan_set(n_scenes: int, splits: Sequence[str] = SPLITS, per_split: int = 2, seed: int = 100,
                     episode_seed: int = 0, preset: str = "default") -> tuple[dict[str, Scene], list[Episode]]:
    """``n_scenes`` generated households (seeds ``seed``…), ``per_split`` episodes per split each
    (PAN's defaults: scene seeds from 100, episodes drawn with seed 0)."""
    from personal.grounding.eval.pog_run import generate_episode_set

    return generate_episode_set(n_scenes, splits, per_split, seed=seed, episode_seed=episode_seed, preset=preset)


@dataclass
class PanComponents:
    """What the policies need besides the simulator: encoder (perception), text embedder, extractor."""

    encoder: object
    embed: object
    extractor: object
    notes: list[str] = field(default_factory=list)
    map_config: object = None  # personal.navigation.mapper.NavMapConfig of every loop's online map (None: defaults)
    verify_candidates: str = "detected"  # what "+verify" judges (personal.navigation.verify_stop.CANDIDATE_MODES)


def make_components(encoder: str = "lit", extractor: str = "builtin", model_path: str = "") -> PanComponents:
    """``encoder``: ``lit`` (the learned RGB tower, the default), ``oracle`` (ORACLE captions) or an
    image encoder (``clip`` | ``siglip`` | ``blip2``) loaded from the local ``model_path``."""
    from personal.grounding.extract import make_extractor
    from personal.grounding.pipeline import TextEmbedder
    from personal.models.base import make_encoder

    enc = make_encoder(encoder, model_path=model_path) if model_path else make_encoder(encoder)
    return PanComponents(enc, TextEmbedder(enc), make_extractor(extractor))


def build_loop(name: str, comps: PanComponents, seed: int = 0, max_steps: int = 500, *, memory=None):
    """``memory`` (personal.navigation.eval.pan_sequence.MemoryRule): how a kept map is used by later
    requests in the same home (default: as it is, no fade, no re-look)."""
    from personal.navigation.loop import NavigationLoop
    from personal.navigation.mapper import OnlineMapper
    from personal.navigation.policies import make_policy
    from personal.navigation.thresholds import thresholds_for

    from personal.navigation.policies import looks_before_verifying, split_verify

    thresholds = thresholds_for(getattr(comps.encoder, "name", None)) if comps.encoder is not None else None
    look = looks_before_verifying(name)
    name, verify = split_verify(name)
    value_config = None
    if memory is not None and name.startswith("value-map-"):
        from personal.navigation.policies import ValueMapConfig

        value_config = ValueMapConfig(relook_margin=memory.relook_margin, relook_max=memory.relook_max,
                                      relook_guide_floor=memory.relook_guide_floor,
                                      reopen_conf=memory.reopen_conf, reopen_after=memory.reopen_after,
                                      reopen_new=memory.reopen_new, blind_after=memory.blind_after)
    policy = make_policy(name, embed=comps.embed, extractor=comps.extractor, seed=seed, thresholds=thresholds,
                         value_config=value_config)
    fade = memory.fade if memory is not None else 1.0
    mapper = None
    if policy.needs_map:
        from dataclasses import replace

        cfg = replace(comps.map_config) if comps.map_config is not None else None  # each loop resets its own
        if policy.needs_features:
            mapper = OnlineMapper(cfg, features=comps.encoder.frame_features, feature_dim=comps.encoder.dim,
                                  encoder_name=comps.encoder.name)
        else:
            mapper = OnlineMapper(cfg)
    if verify:
        from personal.navigation.verify_stop import StopVerifier

        verifier = StopVerifier(encoder=comps.encoder, candidates=comps.verify_candidates)
        return NavigationLoop(policy, mapper, max_steps, stop_verifier=verifier, memory_fade=fade,
                              look_before_verifying=look)
    return NavigationLoop(policy, mapper, max_steps, memory_fade=fade)


def run_pan_offline(scenes: dict[str, Scene], episodes: Sequence[Episode], methods: Sequence[str], out_dir: str | Path,
                    comps: PanComponents | None = None, *, max_steps: int = 500, sample_plots: int = 6, seed: int = 0,
                    backend: str = "synthetic", progress: Callable[[str], None] | None = None, meta_extra: dict | None = None,
                    upper_bound: str = "oracle-encoder", extractor: str = "builtin", sensor=None) -> dict:
    """Run and score every (episode, method); write the run folder; return the summary. The folder is
    checked writable first, and ``results.jsonl`` gets each run's record as it is scored. With a
    non-ORACLE encoder and ``upper_bound="oracle-encoder"`` the report has the ORACLE encoder's
    explorers beside the run (:func:`oracle_encoder_upper_bound`), labelled as an upper bound.
    ``sensor``: the camera model (personal.sim.sensor_model.SensorSpec; default ideal)."""
    from personal.runs.output import RESULTS_LOG, ResultLog, run_folder
    from personal.grounding.eval.pog_run import sample_episodes
    from personal.navigation.loop import run_episode
    from personal.sim.navgrid import NavGrid
    from personal.sim.sensor_model import IDEAL, make_sensor_backend

    out = run_folder(out_dir)  # OutputDirError now, not after every episode has run
    log = ResultLog(out / RESULTS_LOG)
    comps = comps or make_components()
    sensor = sensor or IDEAL
    sim = make_sensor_backend(backend, sensor)
    loops = {m: build_loop(m, comps, seed, max_steps) for m in methods}
    sampled = {e.episode_id for e in sample_episodes(list(episodes), sample_plots, seed)}
    results: list[PanEpisodeResult] = []
    timing = {m: [] for m in methods}
    t0 = time.perf_counter()
    by_scene: dict[str, list[Episode]] = {}
    for e in episodes:
        by_scene.setdefault(e.scene_id, []).append(e)
    for sid, eps in by_scene.items():
        scene = scenes[sid]
        sim.load_scene(scene)
        if hasattr(comps.encoder, "set_captions"):  # ORACLE perception: this scene's captions
            from personal.models.oracle import captions_from_scene

            comps.encoder.set_captions(captions_from_scene(scene))
            comps.encoder.encode_text([o.caption for o in scene.objects])  # warm the cache outside the loop timing
        navgrids: dict[int, NavGrid] = {}
        for ep in eps:
            geo = GoalGeometry(sim, ep)
            runs = {}
            for m in methods:
                loop = loops[m]
                if loop.policy.is_oracle:  # ORACLE: the true navigable grid and target boxes
                    if ep.floor_id not in navgrids:
                        navgrids[ep.floor_id] = NavGrid(scene, ep.floor_id)
                    loop.policy.set_ground_truth(navgrids[ep.floor_id], geo.boxes)
                traj = run_episode(sim, ep, loop)
                r = geo.score(traj, m, loop.policy.is_oracle, _small_info(traj))
                results.append(r)
                log.append(r.to_dict())
                timing[m].append(traj.timing_ms)
                runs[m] = {"poses": traj.poses, "success": r.success, "stopped": r.stopped,
                           "detections": traj.info.get("detections", []),
                           "occupancy": (loop.mapper.state(), loop.mapper.occupancy.geometry) if loop.mapper else None}
                if progress:
                    progress(f"{ep.episode_id} [{ep.split}] {m}: {'SUCCESS' if r.success else 'fail'} steps={r.steps} "
                             f"SPL={r.spl:.2f} DTG={r.dtg:.2f} ({traj.timing_ms['wall_s']:.1f}s)")
            if ep.episode_id in sampled:
                occ = next((run["occupancy"] for run in runs.values() if run["occupancy"] is not None), None)
                (out / "trajectories").mkdir(parents=True, exist_ok=True)
                plot_trajectory(child_path(out / "trajectories", ep.episode_id, "episode_id", ".png"), scene=scene, episode=ep, runs=runs,
                                labels=LABELS, occupancy=occ)
    wall = time.perf_counter() - t0
    log.close()
    enc_name = str(getattr(comps.encoder, "name", type(comps.encoder).__name__))
    bound = None
    if upper_bound == "oracle-encoder" and not is_oracle_encoder(enc_name):
        bound = oracle_encoder_upper_bound(scenes, episodes, methods, max_steps=max_steps, extractor=extractor,
                                           seed=seed, backend=backend, progress=progress, sensor=sensor)
    meta = {
        "episodes": len(episodes),
        "scenes": len(by_scene),
        "splits": sorted({e.split for e in episodes}, key=SPLITS.index),
        "methods": list(methods),
        "step budget": max_steps,
        "simulator": f"{backend} backend (camera 640x480; MOVE 0.25 m, TURN 30°)",
        "sensor": sensor.describe(),
        "encoder": enc_name,
        "encoder_is_oracle": is_oracle_encoder(enc_name),
        "perception": enc_name + (" — ORACLE: ground-truth instance ids → caption embeddings" if is_oracle_encoder(enc_name)
                                  else " — learned: reads the colour image and depth, no ground truth"),
        "ownership extractor": getattr(comps.extractor, "name", type(comps.extractor).__name__),
        "detection thresholds": _thresholds_note(comps),
        "wall time (s)": round(wall, 1),
        "mean ms per step (sim / map / policy)": {m: _mean_timing(timing[m]) for m in methods},
    }
    meta.update(meta_extra or {})
    summary = write_report(out, results, meta, list(methods), LABELS, [m for m in methods if m in EXPLORERS],
                           upper_bound=bound)
    from personal.runs.report_html import write_report_html
    from personal.navigation.eval.pan_page import html_page

    write_report_html(out, html_page)
    return summary


UPPER_BOUNDS = ("oracle-encoder", "none")
UPPER_BOUND_LABEL = ("ORACLE encoder (oracle-captions-minilm: ground-truth instance ids → caption embeddings), "
                     "the same value-map explorers, episodes and step budget, run in-process on the synthetic simulator")


def is_oracle_encoder(name: str) -> bool:
    return str(name).lower().startswith("oracle")


def oracle_encoder_upper_bound(scenes: dict, episodes: Sequence[Episode], methods: Sequence[str], *, max_steps: int = 500,
                               extractor: str = "builtin", seed: int = 0, backend: str = "synthetic",
                               progress: Callable[[str], None] | None = None, sensor=None):
    """The run's value-map explorers re-run with the ORACLE caption encoder (ground truth), to be
    reported beside a learned-encoder run as its labelled upper bound (as ``pog_eval``'s ORACLE
    maps). Policies that read no features (random frontier, the ORACLE policy) are not repeated.
    ``scenes`` maps scene ids to our scene models (a SceneAsset's ``scene`` is taken); ``sensor``
    (a SensorSpec, default ideal): the run's camera model, so both see the same kind of frames."""
    from personal.navigation.eval.pan import PanUpperBound as UpperBound

    explorers = [m for m in methods if m in EXPLORERS]
    if not explorers:
        return UpperBound(UPPER_BOUND_LABEL, error="no value-map explorer in the run: nothing reads the encoder")
    if backend != "synthetic":
        return UpperBound(UPPER_BOUND_LABEL, error=f"backend {backend}: its scenes have no ORACLE captions")
    if extractor == "llm":
        return UpperBound(UPPER_BOUND_LABEL, error="extractor llm: the upper bound would query the language model a second time")
    from personal.navigation.loop import run_episode
    from personal.sim.bridge_logic import scene_model
    from personal.sim.sensor_model import make_sensor_backend

    comps = make_components("oracle", extractor)
    sim = make_sensor_backend(backend, sensor)
    loops = {m: build_loop(m, comps, seed, max_steps) for m in explorers}
    results, loaded = [], None
    for ep in sorted(episodes, key=lambda e: e.scene_id):
        scene = scene_model(scenes[ep.scene_id])
        if loaded != ep.scene_id:
            sim.load_scene(scene)
            from personal.models.oracle import captions_from_scene

            comps.encoder.set_captions(captions_from_scene(scene))
            loaded = ep.scene_id
        geo = GoalGeometry(sim, ep)
        for m in explorers:
            traj = run_episode(sim, ep, loops[m])
            r = geo.score(traj, m, True, _small_info(traj))
            results.append(r)
            if progress:
                progress(f"upper bound {ep.episode_id} {m}: {'SUCCESS' if r.success else 'fail'} steps={r.steps}")
    return UpperBound(UPPER_BOUND_LABEL, results)


def _thresholds_note(comps: PanComponents) -> str:
    from personal.navigation.thresholds import thresholds_for

    th = thresholds_for(getattr(comps.encoder, "name", None))
    return f"{th.describe()} ({th.source})"


def _small_info(traj) -> dict:
    info = dict(traj.info)
    info["detections"] = info.get("detections", [])[-5:]
    info["timing_ms"] = {k: round(v, 2) for k, v in traj.timing_ms.items()}
    return info


def _mean_timing(rows: list[dict]) -> str:
    if not rows:
        return "–"
    n = sum(1 for _ in rows)

    def avg(k):
        vals = [r[k] for r in rows if k in r and math.isfinite(r[k])]
        return sum(vals) / max(len(vals), 1)

    return f"{avg('sim_per_step'):.1f} / {avg('map_per_step'):.1f} / {avg('policy_per_step'):.1f} (n={n})"

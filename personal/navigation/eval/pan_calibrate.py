"""Choose the value-map detection thresholds of an encoder on validation households.

Before its first detection a value-map explorer's path does not depend on the thresholds: the
frontier values (``guide``) use neither ``threshold`` nor ``phrase_floor``. So one *blind* run
per episode (thresholds that never fire) shows, for every threshold pair at once, where and when
the first detection would have happened. At each step the record keeps, per scorer and per
phrase floor, the best confident cell's score and centre. A pair's proxy success for an episode
is "its first detection lies within ``hit_radius_m`` of a target's footprint" (the explorer then
drives to within 0.6 m of that cell and STOPs); no detection in the budget is a failure. The
blind run follows the RPG-owner explorer's frontier values; the QS and RPG scorers are
evaluated on the same maps. The chosen pair maximises the mean proxy success of the three
scorers; real PAN runs with it are the measurement.

Validation households only (seeds 20000+, ``personal.perception.splits``); never the
evaluation households.
"""
from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from personal.navigation.scoring import GroundingScorer, best_detection

SCORERS = ("qs", "rpg", "rpg-owner")
THRESHOLDS = tuple(round(0.025 * k, 3) for k in range(21))  # 0.0 … 0.5
PHRASE_FLOORS = (-1.0, 0.20, 0.25, 0.30, 0.35, 0.40, 0.45, 0.50, 0.55, 0.60, 0.68)
HIT_RADIUS_M = 0.5


@dataclass
class StepBest:
    step: int
    scorer: str
    floor: float
    score: float
    xy: tuple[float, float]


def _start_blind_episode(sim, episode, comps, max_steps: int, guide: str, scorer_names: Sequence[str], margin: bool):
    """A value-map explorer guided by ``guide`` that never detects (its path is then the pure
    exploration path, whatever the detection rule), reset on ``episode``, plus extra scorers
    prepared for the episode's query. Returns (loop, first observation, scorers)."""
    from personal.navigation.eval.pan_run import build_loop
    from personal.navigation.policies import EpisodeSpec

    loop = build_loop(f"value-map-{guide}", comps, max_steps=max_steps)
    loop.policy.vcfg.threshold = math.inf
    loop.policy.scorer.phrase_floor = -math.inf
    extra = {"ownership_margin": loop.policy.scorer.ownership_margin} if margin else {}
    scorers = {m: GroundingScorer(m, phrase_floor=-math.inf, **extra) for m in scorer_names}
    obs = sim.reset(episode)
    spec = EpisodeSpec(episode.episode_id, episode.query, episode.summary, episode.owner, obs.state.z, episode.floor_id)
    loop.reset(spec)
    for s in scorers.values():
        s.prepare(spec.query, spec.summary, spec.owner, comps.embed, comps.extractor)
    return loop, obs, scorers


def record_blind_episode(sim, episode, comps, max_steps: int, floors: Sequence[float] = PHRASE_FLOORS) -> dict:
    """Drive one blind value-map-rpg-owner episode; per step, the best confident detection of
    every scorer at every phrase floor (score -inf when none)."""
    from personal.navigation.loop import frame_from_observation
    from personal.sim.backends.base import Action

    loop, obs, others = _start_blind_episode(sim, episode, comps, max_steps, "rpg-owner", ("qs", "rpg"), margin=False)
    min_conf = loop.policy.vcfg.min_confidence
    rows = []
    while not loop.done:
        action = loop.step(frame_from_observation(obs, True))
        fmap = loop.mapper.feature_map
        maps = {"rpg-owner": loop.policy.last_maps}
        maps.update({m: s.maps(fmap) for m, s in others.items()})
        for m, mp in maps.items():
            if mp is None:
                continue
            for fl in (floors if mp.phrase_sim is not None else (-1.0,)):
                masked = mp
                if mp.phrase_sim is not None:
                    ok = np.nan_to_num(mp.phrase_sim, nan=-np.inf) >= fl
                    masked = type(mp)(np.where(ok, mp.detect, -np.inf), mp.guide, mp.origin, mp.resolution, mp.confidence)
                det = best_detection(masked, -math.inf, min_conf)
                if det is not None:
                    rows.append([loop.step_count, m, fl, round(det[1], 4), round(det[0][0], 3), round(det[0][1], 3)])
        if action == Action.STOP:
            break
        obs = sim.step(Action(action))
    return {"episode_id": episode.episode_id, "scene_id": episode.scene_id, "split": episode.split,
            "steps": loop.step_count, "rows": rows}


def proxy_success(record: dict, boxes, scorer: str, threshold: float, floor: float,
                  radius: float = HIT_RADIUS_M) -> tuple[bool, int | None]:
    """Would the first detection at (threshold, floor) lie on the target? (hit, step)."""
    from personal.navigation.eval.pan import distance_to_boxes

    fl = floor if scorer != "qs" else -1.0
    for step, m, f, score, x, y in record["rows"]:  # rows are in step order
        if m == scorer and math.isclose(f, fl) and score >= threshold:
            return distance_to_boxes(x, y, boxes) <= radius, step
    return False, None


def sweep(records: Sequence[dict], boxes_of: dict, thresholds=THRESHOLDS, floors=PHRASE_FLOORS) -> dict:
    """Proxy SR (%) of every scorer for every (threshold, floor) pair, and the chosen pair."""
    table = []
    for t in thresholds:
        for fl in floors:
            row = {"threshold": t, "phrase_floor": fl}
            for m in SCORERS:
                hits = [proxy_success(r, boxes_of[r["episode_id"]], m, t, fl) for r in records]
                row[m] = 100.0 * sum(h for h, _ in hits) / max(len(records), 1)
                row[m + "_detected"] = sum(s is not None for _, s in hits)
            row["mean"] = sum(row[m] for m in SCORERS) / len(SCORERS)
            table.append(row)
    # best mean; ties go to the higher threshold, then the higher floor (fewer false stops)
    best = max(table, key=lambda r: (round(r["mean"], 6), r["threshold"], r["phrase_floor"]))
    return {"table": table, "chosen": {"threshold": best["threshold"], "phrase_floor": best["phrase_floor"],
                                       **{m: best[m] for m in SCORERS}, "mean": best["mean"]}}


def calibrate(encoder: str, seeds: Sequence[int], per_split: int, max_steps: int, out: str | Path,
              progress: Callable[[str], None] | None = None) -> dict:
    """Blind runs on the validation ``seeds`` (one split per household, rotating), appended to
    ``out/records.jsonl`` as each ends; then :func:`sweep_records` writes ``out/sweep.json``."""
    from personal.navigation.eval.pan_run import make_components
    from personal.perception.splits import check_training_seeds
    from personal.world.episodes import generate_episodes
    from personal.world.generator import generate_scene
    from personal.world.model import SPLITS
    from personal.sim.backends import make_backend

    check_training_seeds(list(seeds))  # validation households only, never evaluation ones
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    comps = make_components(encoder)
    sim = make_backend("synthetic")
    t0 = time.perf_counter()
    with (out / "records.jsonl").open("a") as log:
        for k, seed in enumerate(seeds):
            scene = generate_scene(seed)
            sim.load_scene(scene)
            for ep in generate_episodes(scene, SPLITS[k % len(SPLITS)], per_split, seed):
                rec = record_blind_episode(sim, ep, comps, max_steps)
                rec.update({"seed": seed, "encoder": comps.encoder.name, "max_steps": max_steps})
                log.write(json.dumps(rec) + "\n")
                log.flush()
                if progress:
                    progress(f"{ep.episode_id} [{ep.split}] {rec['steps']} steps, {time.perf_counter() - t0:.0f} s")
    return sweep_records(out / "records.jsonl", out / "sweep.json")


def _goal_boxes(records: Sequence[dict]) -> dict:
    """episode id -> the target's goal boxes, for blind-run records (regenerated from each record's
    household seed, split and episode number: the records keep no ground truth themselves)."""
    from personal.navigation.eval.pan import GoalGeometry
    from personal.world.episodes import generate_episodes
    from personal.world.generator import generate_scene
    from personal.sim.backends import make_backend

    sim, boxes_of = make_backend("synthetic"), {}
    for r in records:
        seed = int(r.get("seed", r["scene_id"].split("_")[-1]))
        scene = generate_scene(seed)
        sim.load_scene(scene)
        ep = next(e for e in generate_episodes(scene, r["split"], 1 + int(r["episode_id"].rsplit("_", 1)[1]), seed)
                  if e.episode_id == r["episode_id"])
        boxes_of[ep.episode_id] = GoalGeometry(sim, ep).boxes
    return boxes_of


def sweep_records(records_path: str | Path, out_path: str | Path | None = None) -> dict:
    """Sweep the blind runs of a ``records.jsonl`` (a finished or an interrupted calibration)."""
    records = [json.loads(line) for line in Path(records_path).read_text().splitlines() if line.strip()]
    if not records:
        raise ValueError(f"{records_path}: no blind runs recorded")
    result = sweep(records, _goal_boxes(records))
    result.update({"episodes": [r["episode_id"] for r in records], "hit_radius_m": HIT_RADIUS_M,
                   "max_steps": max(r["steps"] for r in records)})
    if out_path:
        Path(out_path).write_text(json.dumps(result, indent=1))
    return result


# -- cell records: every confident cell at every step (scene-relative detection) --------------

CELL_FIELDS = ("qs", "v_rpg", "psim_rpg", "rel_rpg", "v_rpgo", "psim_rpgo", "rel_rpgo")
MARGINS = (None, -0.05, 0.0, 0.02, 0.04, 0.06, 0.08, 0.10, 0.12, 0.15, 0.18, 0.20, 0.25)
CELL_FLOORS = (-1.0, 0.10, 0.15, 0.20, 0.25, 0.30, 0.35, 0.40, 0.45)


def record_blind_cells(sim, episode, comps, max_steps: int, guide: str = "rpg") -> dict:
    """Drive one blind value-map explorer episode (frontiers ranked by ``guide``'s values, no
    detection) and keep, at every step, every confident feature cell's centre and its scores
    (``CELL_FIELDS``: QS; RPG's and RPG-owner's gated value, best gating-phrase similarity and
    scene-relative margin). Any detection rule on these scores can then be swept offline."""
    from personal.grounding.pipeline import MapView
    from personal.navigation.loop import frame_from_observation
    from personal.sim.backends.base import Action

    loop, obs, scorers = _start_blind_episode(sim, episode, comps, max_steps, guide, ("rpg", "rpg-owner"), margin=True)
    min_conf = loop.policy.vcfg.min_confidence
    cols = {k: [] for k in ("step", "x", "y", *CELL_FIELDS)}
    while not loop.done:
        action = loop.step(frame_from_observation(obs, True))
        fmap = loop.mapper.feature_map
        maps = {m: s.maps(fmap) for m, s in scorers.items()}
        if maps["rpg"] is not None:
            view = MapView.of(fmap)
            keep = view.valid & (view.confidence >= min_conf)
            rr, cc = np.nonzero(keep)
            if len(rr):
                res, (ox, oy) = view.resolution, view.origin
                cols["step"].append(np.full(len(rr), loop.step_count, np.int16))
                cols["x"].append((ox + (cc + 0.5) * res).astype(np.float32))
                cols["y"].append((oy + (rr + 0.5) * res).astype(np.float32))
                cols["qs"].append(view.similarity(scorers["rpg"].q)[rr, cc].astype(np.float32))
                for m, tag in (("rpg", "rpg"), ("rpg-owner", "rpgo")):
                    mp = maps[m]
                    n = len(rr)
                    if mp is None or mp.phrase_sim is None:  # grounding failure: no RPG detection
                        cols[f"v_{tag}"].append(np.full(n, np.nan, np.float32))
                        cols[f"psim_{tag}"].append(np.full(n, np.nan, np.float32))
                        cols[f"rel_{tag}"].append(np.full(n, np.nan, np.float32))
                        continue
                    v = mp.detect[rr, cc]  # -inf outside the gate (and, rpg-owner, where another person's phrase wins)
                    cols[f"v_{tag}"].append(np.where(np.isfinite(v), v, np.nan).astype(np.float32))
                    cols[f"psim_{tag}"].append(mp.phrase_sim[rr, cc].astype(np.float32))
                    rel = mp.relative[rr, cc] if mp.relative is not None else np.full(n, np.nan)
                    cols[f"rel_{tag}"].append(np.asarray(rel, np.float32))
        if action == Action.STOP:
            break
        obs = sim.step(Action(action))
    arrays = {k: (np.concatenate(v) if v else np.zeros(0, np.float32)) for k, v in cols.items()}
    return {"episode_id": episode.episode_id, "scene_id": episode.scene_id, "split": episode.split,
            "steps": loop.step_count, "guide": guide, "arrays": arrays}


def first_detection(arrays: dict, scorer: str, threshold: float, floor: float = -1.0,
                    margin: float | None = None) -> tuple[int, float, float] | None:
    """(step, x, y) of the first detection a rule would make on a cell record: the best cell by
    the scorer's grounded value among cells passing floor and margin, once that value reaches
    ``threshold``. None when it never does."""
    return _first_detections(arrays, scorer, (threshold,), floor, margin)[0]


def _first_detections(arrays: dict, scorer: str, thresholds, floor: float = -1.0, margin: float | None = None,
                      order: str = "value"):
    step = arrays["step"]
    if len(step) == 0:
        return [None] * len(thresholds)
    if scorer == "qs":
        v = arrays["qs"].astype(np.float64)
        ok = np.isfinite(v)
    else:
        tag = {"rpg": "rpg", "rpg-owner": "rpgo"}[scorer]
        v = arrays[f"v_{tag}"].astype(np.float64)
        ok = np.isfinite(v) & (np.nan_to_num(arrays[f"psim_{tag}"], nan=-np.inf) >= floor)
        if margin is not None:
            ok &= np.nan_to_num(arrays[f"rel_{tag}"], nan=-np.inf) >= margin
    v = np.where(ok, v, -np.inf)
    starts = np.flatnonzero(np.r_[True, step[1:] != step[:-1]])
    best = np.maximum.reduceat(v, starts)
    rank = v
    if order == "relative" and scorer != "qs":  # the detected cell: the largest margin among those passing
        rank = np.where(np.isfinite(v), np.nan_to_num(arrays[f"rel_{tag}"], nan=-np.inf), -np.inf)
    out = []
    for t in thresholds:
        k = np.flatnonzero(best >= t)
        if len(k) == 0:
            out.append(None)
            continue
        s0 = starts[k[0]]
        s1 = starts[k[0] + 1] if k[0] + 1 < len(starts) else len(v)
        seg = np.where(v[s0:s1] >= t, rank[s0:s1], -np.inf)
        j = s0 + int(np.argmax(seg))
        out.append((int(step[j]), float(arrays["x"][j]), float(arrays["y"][j])))
    return out


def sweep_cells(records: Sequence[dict], boxes_of: dict, thresholds=THRESHOLDS, floors=CELL_FLOORS,
                margins=MARGINS, radius: float = HIT_RADIUS_M, orders=("value",)) -> dict:
    """Proxy SR (%) per scorer for every (threshold, phrase floor, relative margin); the best rule
    per scorer (ties: larger margin, higher threshold, higher floor: fewer false stops)."""
    from personal.navigation.eval.pan import distance_to_boxes

    table = []
    combos = [(m, fl, mg, od) for m in SCORERS for fl in (floors if m != "qs" else (-1.0,))
              for mg in (margins if m != "qs" else (None,)) for od in (orders if m != "qs" else ("value",))]
    for m, fl, mg, od in combos:
        dets = [_first_detections(r["arrays"], m, thresholds, fl, mg, od) for r in records]
        for i, t in enumerate(thresholds):
            hits = wrong = 0
            for r, d in zip(records, dets):
                if d[i] is None:
                    continue
                if distance_to_boxes(d[i][1], d[i][2], boxes_of[r["episode_id"]]) <= radius:
                    hits += 1
                else:
                    wrong += 1
            n = max(len(records), 1)
            table.append({"scorer": m, "threshold": t, "phrase_floor": fl, "margin": mg, "order": od,
                          "proxy_sr": round(100.0 * hits / n, 2), "wrong_first": wrong,
                          "none": len(records) - hits - wrong})
    _neighbour_means(table, thresholds, floors, margins)
    chosen = {}
    for m in SCORERS:
        rows = [r for r in table if r["scorer"] == m and r["order"] == "value"]
        # best proxy SR; ties: the rule whose grid neighbours score best (a plateau, not a spike),
        # then fewer wrong first detections, larger margin, higher threshold, higher floor
        chosen[m] = max(rows, key=lambda r: (r["proxy_sr"], r["neighbour_sr"], -r["wrong_first"],
                                             -1.0 if r["margin"] is None else r["margin"], r["threshold"], r["phrase_floor"]))
    return {"table": table, "chosen": chosen}


def _neighbour_means(table: list, thresholds, floors, margins) -> None:
    """``neighbour_sr``: mean proxy SR of a rule and its grid neighbours (one step in threshold,
    floor or margin, same scorer and order)."""
    ti = {t: i for i, t in enumerate(thresholds)}
    fi = {f: i for i, f in enumerate(floors)}
    mi = {m: i for i, m in enumerate(margins)}
    key = {(r["scorer"], r["order"], ti[r["threshold"]], fi.get(r["phrase_floor"], 0), mi.get(r["margin"], 0)): r["proxy_sr"]
           for r in table}
    for r in table:
        k = (r["scorer"], r["order"], ti[r["threshold"]], fi.get(r["phrase_floor"], 0), mi.get(r["margin"], 0))
        vals = [key[k]]
        for d in range(2, 5):
            for s in (-1, 1):
                n = list(k)
                n[d] += s
                if tuple(n) in key:
                    vals.append(key[tuple(n)])
        r["neighbour_sr"] = round(sum(vals) / len(vals), 2)


def calibrate_cells(encoder: str, seeds: Sequence[int], per_split: int, max_steps: int, out: str | Path,
                    guide: str = "rpg", progress: Callable[[str], None] | None = None, sensor=None,
                    map_config=None, model_path: str = "") -> dict:
    """Blind cell records on the validation ``seeds`` (one split per household, rotating), one
    ``out/cells/<episode>.npz`` each as it ends (an interrupted run keeps what it finished); then
    :func:`sweep_cell_records` writes ``out/sweep_relative.json``. ``sensor``: the camera model the
    blind runs see through (personal.sim.sensor_model.SensorSpec; default ideal), recorded per episode;
    ``map_config``: the online map's NavMapConfig (default: its defaults), recorded too; ``model_path``:
    another checkpoint of the encoder (default: the shipped one)."""
    from personal.navigation.eval.pan_run import make_components
    from personal.navigation.mapper import NavMapConfig
    from personal.perception.splits import VAL_SEEDS, check_training_seeds
    from personal.sim.sensor_model import IDEAL, make_sensor_backend
    from personal.world.episodes import generate_episodes
    from personal.world.generator import generate_scene
    from personal.world.model import SPLITS

    check_training_seeds(list(seeds))  # validation households only, never evaluation ones
    cells = Path(out) / "cells"
    cells.mkdir(parents=True, exist_ok=True)
    comps = make_components(encoder, model_path=model_path)
    comps.map_config = map_config or NavMapConfig()
    sensor = sensor or IDEAL
    sim = make_sensor_backend("synthetic", sensor)
    t0 = time.perf_counter()
    for seed in seeds:
        scene = generate_scene(seed)
        sim.load_scene(scene)
        if hasattr(comps.encoder, "set_captions"):  # ORACLE perception: this scene's captions
            from personal.models.oracle import captions_from_scene

            comps.encoder.set_captions(captions_from_scene(scene))
        for ep in generate_episodes(scene, SPLITS[(seed - VAL_SEEDS.start) % len(SPLITS)], per_split, seed):
            if (cells / f"{ep.episode_id}.npz").exists():
                continue
            rec = record_blind_cells(sim, ep, comps, max_steps, guide)
            meta = {"episode_id": ep.episode_id, "scene_id": ep.scene_id, "split": ep.split, "seed": seed,
                    "steps": rec["steps"], "guide": guide, "encoder": comps.encoder.name, "max_steps": max_steps,
                    "sensor": sensor.describe(), "proposal_depth_tol_m": comps.map_config.proposal_depth_tol_m,
                    "model_path": str(model_path)}
            np.savez_compressed(cells / f"{ep.episode_id}.npz", meta=json.dumps(meta), **rec["arrays"])
            if progress:
                progress(f"{ep.episode_id} [{ep.split}] {rec['steps']} steps, {time.perf_counter() - t0:.0f} s")
    return sweep_cell_records(out)


def load_cell_records(out: str | Path) -> list[dict]:
    recs = []
    for f in sorted((Path(out) / "cells").glob("*.npz")):
        with np.load(f) as z:
            meta = json.loads(str(z["meta"]))
            meta["arrays"] = {k: z[k] for k in z.files if k != "meta"}
        recs.append(meta)
    if not recs:
        raise ValueError(f"{out}/cells: no blind cell records")
    return recs


def sweep_cell_records(out: str | Path) -> dict:
    """Sweep every cell record under ``out/cells``; writes ``out/sweep_relative.json``."""
    records = load_cell_records(out)
    result = sweep_cells(records, _goal_boxes(records))
    result.update({"episodes": [r["episode_id"] for r in records], "hit_radius_m": HIT_RADIUS_M,
                   "max_steps": max(r["max_steps"] for r in records), "guide": records[0]["guide"],
                   "encoder": records[0]["encoder"], "sensor": sorted({r.get("sensor", "ideal") for r in records})})
    (Path(out) / "sweep_relative.json").write_text(json.dumps(result, indent=1))
    return result

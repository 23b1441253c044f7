"""Inputs and orchestration of a POG evaluation without ROS (also used by the nodes).

- :func:`load_episode_folder` — a PersONAL-format episode folder, leniently: an
  episode whose target is missing from its scene is kept (it becomes a recorded
  failure) instead of aborting the whole set like ``load_episode_set`` does.
- :func:`generate_episode_set` — scenes × splits from the synthetic generator.
- :func:`oracle_topdown_map` — an ORACLE feature map read straight from the
  scene's ground truth (object footprints → caption embeddings), for tests,
  benchmarks and as a no-exploration ablation. Named oracle everywhere.
- :func:`load_saved_map` — a map written by the mapping pipeline (``maps/<scene>/``).
- :func:`write_sample_maps` — PNGs of a sample of episodes: similarity (or
  confidence) background, target footprints, each method's predictions.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from personal.paths import child_path
from personal.graphs.pog_eval import METHODS as MAIN_JOB_METHODS
from personal.grounding.pipeline import MapView, TextEmbedder, encoder_is_oracle, encoder_name, target_boxes
from personal.world.model import SPLITS, Episode, Scene


# -- episodes ----------------------------------------------------------------------------------


def load_episode_folder(directory: str | Path, splits: Sequence[str] = SPLITS) -> tuple[dict[str, Scene], list[Episode], list[str]]:
    """(scenes by id, episodes, problems). File-level errors raise ``EpisodeFormatError``
    naming the file; a missing target or scene only becomes a problem line (and a
    recorded failure in the evaluation)."""
    from personal.world.habitat_format import EpisodeFormatError, load_scene, read_content_file

    root = Path(directory)
    if not root.is_dir():
        raise EpisodeFormatError(f"{root}: episode folder not found")
    scenes = {s.scene_id: s for s in (load_scene(p) for p in sorted((root / "scenes").glob("*.scene.json")))}
    episodes: list[Episode] = []
    problems: list[str] = []
    files = [(sp, p) for sp in splits for p in sorted((root / sp / "content").glob("*.json.gz"))]
    if not files:
        raise EpisodeFormatError(f"{root}: no {{{','.join(splits)}}}/content/*.json.gz episode files")
    for sp, p in files:
        _, eps = read_content_file(p, sp)
        for e in eps:
            _, failure = target_boxes(e, scenes.get(e.scene_id))
            if failure:
                problems.append(f"{p.name}: episode {e.episode_id}: {failure['reason']}")
        episodes.extend(eps)
    return scenes, episodes, problems


def generate_episode_set(n_scenes: int, splits: Sequence[str], per_split: int, seed: int = 0,
                         episode_seed: int | None = None, preset: str = "default",
                         summary_style: str = "verbatim") -> tuple[dict[str, Scene], list[Episode]]:
    """``n_scenes`` generated households (scene seeds ``seed``, ``seed + 1``, ..., size ``preset``),
    ``per_split`` episodes per split and scene drawn with ``episode_seed`` (default: ``seed``);
    ``summary_style`` "varied": the same episodes, summaries in other words (personal/world/summary_style.py)."""
    from personal.world.episodes import generate_episodes
    from personal.world.generator import generate_scene

    scenes: dict[str, Scene] = {}
    episodes: list[Episode] = []
    for i in range(n_scenes):
        scene = generate_scene(seed + i, preset=preset)
        scenes[scene.scene_id] = scene
        for sp in splits:
            episodes.extend(generate_episodes(scene, sp, per_split, seed if episode_seed is None else episode_seed,
                                              summary_style))
    return scenes, episodes


# -- maps ---------------------------------------------------------------------------------------


def oracle_topdown_map(scene: Scene, embed: TextEmbedder, resolution: float = 1.0, floor: int = 0,
                       structure_text: str | None = "floor and walls") -> MapView:
    """ORACLE map from ground truth: every room cell on ``floor`` is observed; a cell's
    embedding is the footprint-overlap-weighted mean of the captions of the objects over
    it (plus ``structure_text`` with weight 0.1·cell area so empty floor is not zero)."""
    from personal.mapping.grid import GridGeometry

    rooms = [r for r in scene.rooms if r.floor == floor]
    geo = GridGeometry.from_bounds(
        (min(r.bounds[0] for r in rooms), min(r.bounds[1] for r in rooms), max(r.bounds[2] for r in rooms), max(r.bounds[3] for r in rooms)),
        resolution,
    )
    h, w = geo.shape
    objs = [o for o in scene.objects if o.floor == floor]
    texts = [o.caption for o in objs] + ([structure_text] if structure_text else [])
    vecs = embed(texts)
    feats = np.zeros((h, w, vecs.shape[1]), np.float32)
    weight = np.zeros((h, w), np.float32)
    cx, cy = geo.center(np.arange(h)[:, None], np.arange(w)[None, :])
    inside = np.zeros((h, w), bool)
    for r in rooms:
        x0, y0, x1, y1 = r.bounds
        inside |= (cx >= x0) & (cx <= x1) & (cy >= y0) & (cy <= y1)
    xs0 = geo.origin[0] + np.arange(w) * resolution
    ys0 = geo.origin[1] + np.arange(h) * resolution
    for o, v in zip(objs, vecs):
        (bx0, by0, _), (bx1, by1, _) = o.box.min, o.box.max
        ox = np.clip(np.minimum(xs0 + resolution, bx1) - np.maximum(xs0, bx0), 0, None)
        oy = np.clip(np.minimum(ys0 + resolution, by1) - np.maximum(ys0, by0), 0, None)
        area = oy[:, None] * ox[None, :]
        feats += area[..., None] * v
        weight += area
    if structure_text:
        base = 0.1 * resolution * resolution
        feats += base * inside[..., None] * vecs[-1]
        weight += base * inside
    observed = inside | (weight > 0)
    feats = np.where(weight[..., None] > 0, feats / np.maximum(weight, 1e-12)[..., None], 0.0)
    conf = np.where(observed, np.maximum(weight, 1e-3), 0.0)
    return MapView.from_arrays(feats, conf, geo.origin, resolution, f"oracle-topdown:{encoder_name(embed.encoder)}")


def load_saved_map(path: str | Path, expected_encoder: str | None = None) -> MapView:
    """A FeatureMap saved by the mapping pipeline (``features.yaml`` or its folder)."""
    from personal.mapping.feature_map import FeatureMap

    return MapView.of(FeatureMap.load(path, expected_encoder=expected_encoder))


def explore_scene_map(scene: Scene, encoder_name: str = "oracle", resolution: float = 0.5, start_episode: Episode | None = None,
                      width: int = 320, height: int = 240, max_steps: int = 2500, save_dir: str | Path | None = None,
                      progress=None, sensor=None) -> tuple[MapView, dict]:
    """Pre-exploration of one scene without ROS (the mapping library's frontier explorer and
    MapBuilder on the synthetic simulator), from ``start_episode``'s start pose (else the
    first room's centre). Rendering at ``width``×``height`` keeps the 79° HFOV (same geometry,
    fewer pixels). With the oracle encoder the cell features are ORACLE (ground-truth captions
    of the instance ids seen). ``sensor``: the camera model (a SensorSpec; default ideal)."""
    maps, info = explore_scene_maps(scene, [encoder_name], resolution, start_episode, width, height, max_steps, progress,
                                    sensor=sensor)
    view, builder = maps[encoder_name]
    if save_dir:
        builder.save(save_dir, extra={"scene_id": scene.scene_id})
    return view, info


def explore_scene_maps(scene: Scene, encoder_names: Sequence[str], resolution: float = 0.5, start_episode: Episode | None = None,
                       width: int = 320, height: int = 240, max_steps: int = 2500, progress=None,
                       sensor=None, model_paths: dict | None = None) -> tuple[dict, dict]:
    """One pre-exploration, mapped with every encoder of ``encoder_names`` from the same frames
    (the frontier policy reads the first builder's occupancy, which is encoder independent):
    {encoder name: (MapView, MapBuilder)}, info. The camera is ``sensor``'s (a
    personal.sim.sensor_model.SensorSpec: field of view, height, pitch, noise; default ideal) at
    ``width``×``height``. ``model_paths``: {encoder name: checkpoint} for encoders not to load their
    default checkpoint. A name ``<encoder>@<label>`` (``lit@finetuned``) is encoder ``<encoder>`` under
    its own key, so two checkpoints of one encoder map the same frames."""
    from personal.mapping.exploration import ExplorerConfig, FrontierExplorer
    from personal.mapping.pipeline import MapBuilder, MapConfig
    from personal.mapping.session import explore
    from personal.models.base import make_encoder
    from personal.sim.backends.base import AgentState
    from personal.sim.sensor_model import make_sensor_backend

    builders = {}
    for name in encoder_names:
        path, kind = (model_paths or {}).get(name), name.split("@", 1)[0]
        enc = make_encoder(kind, scene=scene) if "oracle" in kind else make_encoder(kind, model_path=path) if path \
            else make_encoder(kind)
        builders[name] = MapBuilder(MapConfig(stride=max(1, width // 160), feature_resolution=resolution), feature_dim=enc.dim,
                                    encoder_name=enc.name, features=enc.frame_features)
    backend = make_sensor_backend("synthetic", sensor, width, height)
    backend.load_scene(scene)
    if start_episode is not None:
        obs = backend.reset(episode=start_episode)
    else:
        r = scene.rooms[0]
        x, y = backend.snap_to_navigable((r.bounds[0] + r.bounds[2]) / 2, (r.bounds[1] + r.bounds[3]) / 2)
        obs = backend.reset(state=AgentState(x, y, scene.floors[0].z, 0.0))
    first, *rest = builders.values()
    out = explore(backend, obs, first, FrontierExplorer(ExplorerConfig(max_steps=max_steps)), progress=progress, also=tuple(rest))
    info = {"steps": out.steps, "stop_reason": out.reason, "collisions": out.collisions, "seconds": round(out.seconds, 1),
            "sensor": getattr(sensor, "name", "ideal"),
            "feature_ms_per_frame": {n: round(b.timer.summary().get("features", 0.0), 1) for n, b in builders.items()}}
    return {n: (MapView.of(b.feature_map), b) for n, b in builders.items()}, info


MAP_SOURCE_FILE = "source.json"


def encoder_weights_digest(encoder: str) -> str:
    """A digest of the weights behind an encoder name whose checkpoint ships in the repository
    (``lit``), "" for the others: the checkpoint under a name can be replaced."""
    import hashlib

    if encoder.split(":")[0] != "lit":
        return ""
    from personal.models.lit import shipped_checkpoint

    weights = shipped_checkpoint() / "model.safetensors"
    return hashlib.sha256(weights.read_bytes()).hexdigest()[:16] if weights.exists() else ""


def map_source_record(scene: Scene, resolution: float, encoder: str, image_size: tuple[int, int] = (640, 480),
                      sensor: dict | None = None) -> dict:
    """What a saved pre-exploration map was built from: a map is reused only for the same
    scene geometry and objects, cell size, encoder, (shipped checkpoint) encoder weights and precision
    (scene ids alone repeat across generator versions and episode folders)."""
    import hashlib
    import json

    digest = hashlib.sha256(json.dumps(scene.to_dict(), sort_keys=True).encode()).hexdigest()
    out = {"scene_id": scene.scene_id, "scene_digest": digest, "resolution": float(resolution), "encoder": encoder,
           "image_size": [int(image_size[0]), int(image_size[1])], "encoder_weights": encoder_weights_digest(encoder)}
    if encoder.split(":")[0] == "lit":  # a lit map inferred under bf16 (before 2026-12-07) differs a little
        from personal.models.base import TOWER_PRECISION

        out["inference_precision"] = TOWER_PRECISION
    if sensor_graph_args(sensor):  # maps of another camera model are not this one's (ideal: the record as before)
        out["sensor"] = dict(sensor)
    return out


def sensor_graph_args(sensor: dict | None) -> list[str]:
    """``sensor:=… sensor_overrides:=… sensor_seed:=…`` for a child graph (none for the ideal camera)."""
    if not sensor or (sensor.get("sensor", "ideal") == "ideal" and not sensor.get("sensor_overrides")):
        return []
    return [f"sensor:={sensor.get('sensor', 'ideal')}", f"sensor_overrides:={sensor.get('sensor_overrides', '')}",
            f"sensor_seed:={int(sensor.get('sensor_seed', 0))}"]


def reusable_map(map_dir: str | Path, scene: Scene, resolution: float, encoder: str,
                 image_size: tuple[int, int] = (640, 480), sensor: dict | None = None) -> tuple[bool, str]:
    """(reusable, why) for ``<maps_dir>/<scene_id>/``."""
    import json

    map_dir = Path(map_dir)
    if not (map_dir / "features.yaml").exists():
        return False, "no saved map"
    try:
        saved = json.loads((map_dir / MAP_SOURCE_FILE).read_text())
    except (OSError, ValueError):
        return False, f"{map_dir / MAP_SOURCE_FILE} missing or unreadable"
    want = map_source_record(scene, resolution, encoder, image_size, sensor)
    diff = [k for k in set(want) | ({"sensor"} & set(saved)) if saved.get(k) != want.get(k)]
    return (not diff), ("matches" if not diff else f"built for a different {', '.join(diff)}")


def remember_map_source(map_dir: str | Path, scene: Scene, resolution: float, encoder: str,
                        image_size: tuple[int, int] = (640, 480), sensor: dict | None = None) -> None:
    import json

    (Path(map_dir) / MAP_SOURCE_FILE).write_text(json.dumps(map_source_record(scene, resolution, encoder, image_size, sensor),
                                                            indent=1))


def explore_with_graph(scene: Scene, episode: Episode, maps_dir: str | Path, resolution: float, max_steps: int,
                       encoder: str = "oracle", work_dir: str | Path = "explore_sets", timeout_s: float = 900.0,
                       log=None, bag_dir: str | Path | None = None, image_size: tuple[int, int] = (640, 480),
                       sensor: dict | None = None) -> dict:
    """Pre-explore ``scene`` with the ROS ``explore`` graph (sim bridge + mapping node + explore
    node) as a child ``personal launch`` on a ROS_DOMAIN_ID of its own; its map lands in
    ``<maps_dir>/<scene_id>/``. The scene and ``episode`` (start pose) are written as a
    one-scene episode folder so that any scene of any set can be explored. With ``bag_dir``
    the mapping node's input topics and frame log are recorded there (rosbag2 MCAP, see
    personal.grounding.eval.pog_replay). Returns {seconds, exit_code, map[, bag]}."""
    from personal.grounding.eval.pog_replay import explore_record_command
    from personal.runner import child_domain, run_child
    from personal.world.habitat_format import write_episode_set

    folder = child_path(work_dir, scene.scene_id, "scene_id")
    write_episode_set(folder, [scene], [episode])
    cmd = explore_record_command(folder.resolve(), Path(maps_dir).resolve(), resolution, max_steps, encoder,
                                 Path(bag_dir).resolve() if bag_dir else None, image_size, sensor_graph_args(sensor))
    progress = lambda line: "[sim_bridge]" in line and ", step " in line  # noqa: E731 - periodic bridge summary
    keep = lambda line: progress(line) or any(k in line for k in ("exploration finished", "maps saved", "ERROR", "error:", "wrote "))  # noqa: E731

    def forward(line: str) -> None:
        log("exploration step " + line.rsplit(", step ", 1)[1].strip() if progress(line) else line)

    t0 = time.perf_counter()
    with child_domain() as env:
        code, tail = run_child(cmd, env, timeout_s, forward if log else None, keep)
    out = child_path(maps_dir, scene.scene_id, "scene_id") / "features.yaml"
    info = {"seconds": round(time.perf_counter() - t0, 1), "exit_code": code, "map": str(out) if out.exists() else None}
    if code != 0:  # why: the child runner names a node that died; else its last lines
        info["errors"] = " | ".join([l for l in tail if "ERROR" in l or "error:" in l or "timed out" in l] or tail[-3:])[-600:]
    if bag_dir:
        from personal.grounding.eval.pog_replay import note_live_map

        info["bag"] = note_live_map(bag_dir, child_path(maps_dir, scene.scene_id, "scene_id"))
    return info


def explore_scenes_with_graph(pairs: Sequence[tuple[Scene, Episode]], maps_dir: str | Path, resolution: float, max_steps: int,
                              encoder: str = "oracle", work_dir: str | Path = "explore_sets", timeout_s: float = 900.0,
                              log=None, image_size: tuple[int, int] = (640, 480), sensor: dict | None = None) -> dict[str, dict]:
    """Pre-explore several scenes with **one** ``explore`` graph (``all_episodes:=true``: the
    explore node asks the bridge for the next episode after each saved map, the mapping node starts
    fresh maps for each scene), so the graph's start-up is paid once. Each ``(scene, episode)``
    is explored from ``episode``'s start, exactly as by a graph of its own. Returns {scene_id:
    info} like :func:`explore_with_graph`; a scene whose map this run did not save gets the graph's
    non-zero exit code (or 1)."""
    from personal.grounding.eval.pog_replay import explore_record_command
    from personal.runner import child_domain, run_child
    from personal.world.habitat_format import write_episode_set

    if len(pairs) == 1:
        (scene, episode), = pairs
        return {scene.scene_id: explore_with_graph(scene, episode, maps_dir, resolution, max_steps, encoder,
                                                   work_dir, timeout_s, log, None, image_size, sensor)}
    folder = Path(work_dir) / "scenes"
    write_episode_set(folder, [s for s, _ in pairs], [e for _, e in pairs])
    cmd = explore_record_command(folder.resolve(), Path(maps_dir).resolve(), resolution, max_steps, encoder, None,
                                 image_size, sensor_graph_args(sensor)) + ["all_episodes:=true"]
    progress = lambda line: "[sim_bridge]" in line and ", step " in line  # noqa: E731 - periodic bridge summary
    keep = lambda line: progress(line) or any(k in line for k in ("exploration finished", "maps saved", "next scene",  # noqa: E731
                                                                  "ERROR", "error:", "wrote "))

    def forward(line: str) -> None:
        log("exploration step " + line.rsplit(", step ", 1)[1].strip() if progress(line) else line)

    t0, wall0 = time.perf_counter(), time.time()
    with child_domain() as env:
        code, tail = run_child(cmd, env, timeout_s * len(pairs), forward if log else None, keep)
    seconds = round(time.perf_counter() - t0, 1)
    infos = {}
    for scene, _ in pairs:
        out = child_path(maps_dir, scene.scene_id, "scene_id") / "features.yaml"
        fresh = out.exists() and out.stat().st_mtime >= wall0 - 1.0  # saved by this graph, not an older map
        info = {"seconds": seconds, "graph": f"one explore graph for {len(pairs)} scenes",
                "exit_code": 0 if fresh else (code or 1), "map": str(out) if fresh else None}
        if not fresh:
            info["errors"] = (" | ".join([l for l in tail if "ERROR" in l or "error:" in l or "timed out" in l] or tail[-3:])[-600:]
                              or "the graph ended before this scene's map was saved")
        infos[scene.scene_id] = info
    return infos


# -- plots ----------------------------------------------------------------------------------------


def sample_episodes(episodes: Sequence[Episode], n: int, seed: int = 0) -> list[Episode]:
    """Up to ``n`` episodes spread over the splits (deterministic)."""
    rng = np.random.default_rng(seed)
    by_split = {sp: [e for e in episodes if e.split == sp] for sp in SPLITS}
    out: list[Episode] = []
    while len(out) < n and any(by_split.values()):
        for sp in SPLITS:
            if by_split[sp] and len(out) < n:
                out.append(by_split[sp].pop(int(rng.integers(len(by_split[sp])))))
    return out


def write_sample_maps(run_dir: str | Path, results: Sequence[Any], episodes: Sequence[Episode], scenes: dict[str, Scene],
                      maps: dict[str, MapView], embed: TextEmbedder | None = None, n: int = 6) -> list[Path]:
    """``maps/<episode>.png`` for a sample: background = cos(map, query) when ``embed`` is
    given (the QS similarity), else the cell confidence; targets red, other objects of the
    query's category cyan, each method's ranked predictions."""
    from personal.grounding.eval.pog import plot_episode_map

    out_dir = Path(run_dir) / "maps"
    out_dir.mkdir(parents=True, exist_ok=True)
    by_ep: dict[str, dict[str, list]] = {}
    for r in results:
        if not r.failure:
            by_ep.setdefault(r.episode_id, {})[r.method] = r.predictions
    written = []
    for ep in sample_episodes([e for e in episodes if e.episode_id in by_ep and e.scene_id in maps], n):
        view, scene = maps[ep.scene_id], scenes.get(ep.scene_id)
        boxes, _ = target_boxes(ep, scene)
        others = [o.box for o in scene.objects if o.category == ep.object_category and o.object_id not in ep.target_object_ids] if scene else []
        if embed is not None and view.dim:
            bg = view.similarity(embed([ep.query])[0])
            label = "cos(cell, query) — QS similarity"
        else:
            bg = np.where(view.valid, view.confidence if view.confidence is not None else view.valid.astype(float), np.nan)
            label = "observed (confidence)"
        path = child_path(out_dir, ep.episode_id, "episode_id", ".png")
        plot_episode_map(path, background=bg, origin=view.origin, resolution=view.resolution, targets=boxes,
                         distractors=others, predictions=by_ep[ep.episode_id], background_label=label,
                         title=f"{ep.episode_id} [{ep.split}] {ep.query}")
        written.append(path)
    return written


# -- offline evaluation -------------------------------------------------------------------------------


@dataclass
class EvalInputs:
    scenes: dict[str, Scene]
    episodes: list[Episode]
    maps: dict[str, MapView]
    extractor: Any
    encoder: Any
    methods: list[Any]
    map_source: str
    problems: list[str] = field(default_factory=list)

    @property
    def encoder_name(self) -> str:
        return encoder_name(self.encoder)

    @property
    def extractor_name(self) -> str:
        return str(getattr(self.extractor, "name", type(self.extractor).__name__))


def make_components(encoder: str = "oracle", extractor: str = "builtin", model_path: str = ""):
    """(encoder, extractor) from the project's registries (``model_path``: the encoder's checkpoint,
    else its default)."""
    from personal.grounding.extract import make_extractor
    from personal.models.base import make_encoder

    return (make_encoder(encoder, model_path=model_path) if model_path else make_encoder(encoder)), make_extractor(extractor)


def build_eval_inputs(*, scenes: int = 3, splits: Sequence[str] = SPLITS, episodes_per_split: int = 10, resolution: float = 1.0,
                      seed: int = 0, encoder: str = "oracle", extractor: str = "builtin",
                      methods: Sequence[str] = ("random", "centre", "qs", "rpg", "rpg-owner"),
                      episodes_dir: str = "", maps_dir: str = "", build_maps: bool = True, explore: bool = False,
                      progress=None, preset: str = "default", summary_style: str = "verbatim") -> EvalInputs:
    """Episodes (folder or generated), components, and a map per scene: a saved map from
    ``maps_dir/<scene_id>/`` when present; else, with ``build_maps``, a pre-exploration map
    (``explore``) or the ORACLE top-down map; else an empty map (its episodes then fail
    with ``empty_map``)."""
    from personal.grounding.methods import make_method

    say = progress or (lambda msg: None)
    enc, ext = make_components(encoder, extractor)
    problems: list[str] = []
    if episodes_dir and summary_style != "verbatim":
        raise ValueError(f"summary_style {summary_style!r} rewrites generated summaries; {episodes_dir} brings its own")
    if episodes_dir:
        scene_map, eps, problems = load_episode_folder(episodes_dir, splits)
    else:
        scene_map, eps = generate_episode_set(scenes, splits, episodes_per_split, seed, preset=preset,
                                              summary_style=summary_style)
    embed = TextEmbedder(enc)
    maps: dict[str, MapView] = {}
    sources = set()
    for sid, scene in scene_map.items():
        saved = Path(maps_dir) / sid / "features.yaml" if maps_dir else None
        if saved and saved.exists():
            maps[sid] = load_saved_map(saved)
            sources.add(f"saved maps ({maps_dir})")
        elif build_maps and explore:
            first = next((e for e in eps if e.scene_id == sid), None)
            say(f"pre-exploring scene {sid} ...")
            maps[sid], info = explore_scene_map(scene, encoder, resolution, start_episode=first)
            say(f"scene {sid} mapped: {info}")
            sources.add("pre-exploration per scene (frontier explorer + MapBuilder on the synthetic simulator)")
        elif build_maps:
            maps[sid] = oracle_topdown_map(scene, embed, resolution)
            sources.add("ORACLE top-down map from scene ground truth")
        else:
            problems.append(f"scene {sid}: no saved map in {maps_dir}; its episodes are evaluated on an empty map")
            sources.add("missing maps")
    return EvalInputs(scene_map, eps, maps, ext, enc, [make_method(m) for m in methods], ", ".join(sorted(sources)), problems)


def run_offline(inputs: EvalInputs, out_dir: str | Path, sample_maps: int = 6, progress=None,
                meta_extra: dict | None = None) -> dict:
    """Evaluate every episode with every method and write the run folder; returns the summary."""
    from personal.runs.output import RESULTS_LOG, ResultLog, run_folder
    from personal.grounding.eval.pog import write_report
    from personal.grounding.pipeline import evaluate_offline

    t0 = time.perf_counter()
    with ResultLog(run_folder(out_dir) / RESULTS_LOG) as log:  # each episode's records as it finishes
        results = evaluate_offline(inputs.episodes, inputs.scenes, inputs.maps, inputs.extractor, inputs.encoder,
                                   inputs.methods, progress=progress,
                                   on_results=lambda rs: log.extend(r.to_dict() for r in rs))
    dt = time.perf_counter() - t0
    enc_oracle = encoder_is_oracle(inputs.encoder) or "ORACLE" in inputs.map_source
    meta = {
        "encoder": inputs.encoder_name,
        "encoder_is_oracle": enc_oracle,
        "extractor": inputs.extractor_name,
        "map source": inputs.map_source,
        "map resolution (m)": sorted({round(v.resolution, 3) for v in inputs.maps.values()}),
        "scenes": len(inputs.scenes),
        "episodes": len(inputs.episodes),
        "methods": [f"{m.name} {m.params()}" for m in inputs.methods],
        "grounding wall time (s)": round(dt, 2),
        "episodes per second (after the maps exist)": round(len(inputs.episodes) / dt, 1) if dt > 0 else math.inf,
        "episode-set problems": len(inputs.problems),
        **(meta_extra or {}),
    }
    summary = write_report(out_dir, results, meta, [m.name for m in inputs.methods])
    write_sample_maps(out_dir, results, inputs.episodes, inputs.scenes, inputs.maps, TextEmbedder(inputs.encoder), sample_maps)
    from personal.runs.report_html import write_report_html
    from personal.grounding.eval.pog_page import html_page

    write_report_html(out_dir, html_page)
    return summary


# the main job's methods (declared once, with the pog_eval graph): `pog compare` reports the same list
COMPARE_METHODS = tuple(MAIN_JOB_METHODS.split(","))


def oracle_upper_bound(scenes: dict, episodes: Sequence, methods: Sequence[str], resolution: float = 0.5,
                       extractor: str = "builtin"):
    """The episodes grounded on ORACLE top-down maps of their households (ground-truth captions over
    every room cell, :func:`oracle_topdown_map`): the upper bound a run's report prints beside it.
    Same methods, texts and extractor; only the map differs."""
    from personal.grounding.eval.pog import UpperBound
    from personal.grounding.pipeline import evaluate_offline

    label = ("ORACLE top-down caption maps (scene ground truth: every room cell observed, the captions of the "
             f"objects over it; encoder oracle-captions-minilm, {resolution:g} m cells)")
    if extractor == "llm":
        return UpperBound(label, error="extractor llm: the upper bound would query the language model a second time")
    enc, ext = make_components("oracle", extractor)
    embed = TextEmbedder(enc)
    used = {e.scene_id for e in episodes}
    maps = {sid: oracle_topdown_map(scene, embed, resolution) for sid, scene in scenes.items() if sid in used}
    return UpperBound(label, evaluate_offline(list(episodes), scenes, maps, ext, enc, list(methods)))


def compare_offline(out_dir: str | Path, *, encoder: str = "lit", upper_bound: str = "oracle", scenes: int = 3,
                    splits: Sequence[str] = SPLITS, episodes_per_split: int = 10, resolution: float = 0.5, seed: int = 0,
                    extractor: str = "builtin", methods: Sequence[str] = COMPARE_METHODS,
                    max_steps: int = 2500, width: int = 320, height: int = 240, progress=None, sensor=None,
                    model_path: str = "") -> dict:
    """POG with ``encoder`` (leading) and ``upper_bound`` (an ORACLE, labelled so) on the same
    households, episodes and exploration frames: ``out_dir/learned``, ``out_dir/upper_bound`` and a
    combined ``out_dir/report.md``. Returns {"learned": summary, "upper_bound": summary}.
    ``sensor``: the exploration camera (a SensorSpec; default ideal); ``model_path``: the learned
    encoder's checkpoint (default: its shipped one)."""
    from personal.grounding.eval.pog import ratio_lines, table_v
    from personal.grounding.methods import make_method
    from personal.sim.sensor_model import IDEAL

    sensor = sensor or IDEAL
    say = progress or (lambda msg: None)
    scene_map, eps = generate_episode_set(scenes, splits, episodes_per_split, seed)
    maps: dict[str, dict[str, MapView]] = {encoder: {}, upper_bound: {}}
    infos = {}
    for sid, scene in scene_map.items():
        first = next((e for e in eps if e.scene_id == sid), None)
        say(f"pre-exploring {sid} (maps with {encoder} and {upper_bound} from the same frames) ...")
        built, infos[sid] = explore_scene_maps(scene, [encoder, upper_bound], resolution, first, width, height,
                                               max_steps=max_steps, sensor=sensor,
                                               model_paths={encoder: model_path} if model_path else None)
        for name, (view, _) in built.items():
            maps[name][sid] = view
        say(f"{sid}: {infos[sid]}")
    out = Path(out_dir)
    summaries = {}
    for role, name in (("learned", encoder), ("upper_bound", upper_bound)):
        enc, ext = make_components(name, extractor, model_path if name == encoder else "")
        inputs = EvalInputs(scene_map, eps, maps[name], ext, enc, [make_method(m) for m in methods],
                            f"pre-exploration per scene (frontier explorer + MapBuilder, {width}x{height}, camera "
                            f"{sensor.describe()}); the same frames mapped with {encoder} and {upper_bound}")
        summaries[role] = run_offline(inputs, out / role, meta_extra={"sensor": sensor.describe()})
    s_l, s_u = summaries["learned"], summaries["upper_bound"]
    lines = [f"# POG: learned encoder {s_l['meta']['encoder']} (no ground truth), with the ORACLE upper bound beside it", "",
             f"Households: generated seeds {seed}..{seed + scenes - 1} (evaluation households; perception trains on "
             "seeds 10000+, validates on 20000+). Episodes: "
             f"{len(eps)} ({', '.join(splits)} x {episodes_per_split} per household). Success: within 1.0 m of the target's "
             "footprint (PersONAL POG). Both maps come from the same exploration frames.", "",
             f"Camera: {sensor.describe()}.", "",
             f"## Learned encoder ({s_l['meta']['encoder']}, reads RGB only) — SR@top-1 (%)"]
    lines += table_v(s_l, "sr_top1")
    lines += ["", f"## ORACLE upper bound ({s_u['meta']['encoder']}: ground-truth instance ids + captions) — SR@top-1 (%)"]
    lines += table_v(s_u, "sr_top1")
    lines += ["", "## Learned / ORACLE, SR@top-1 (%)", ""] + ratio_lines(s_l, s_u)
    lines += ["", "## SR@top-3 (%)", "", "Learned:"] + table_v(s_l, "sr_top3") + ["", "ORACLE upper bound:"] + table_v(s_u, "sr_top3")
    lines += ["", f"Exploration per household: {infos}", "",
              "Per-method details, failures and map images: `learned/report.md`, `upper_bound/report.md`."]
    (out / "report.md").write_text("\n".join(lines) + "\n")
    return summaries


ROBUSTNESS_PRESETS = ("ideal", "d435", "d435-harsh")


def robustness_offline(out_dir: str | Path, *, presets: Sequence[str] = ROBUSTNESS_PRESETS, overrides: str = "",
                       encoder: str = "lit", upper_bound: str = "oracle", scenes: int = 1,
                       splits: Sequence[str] = SPLITS, episodes_per_split: int = 3, resolution: float = 0.5, seed: int = 0,
                       extractor: str = "builtin", methods: Sequence[str] = COMPARE_METHODS, max_steps: int = 2500,
                       width: int = 320, height: int = 240, sensor_seed: int = 0, progress=None,
                       model_path: str = "") -> dict:
    """The same households and episodes grounded under each camera preset (personal.sim.sensor_model),
    ``encoder`` beside the ORACLE ``upper_bound``: one :func:`compare_offline` per preset in
    ``out_dir/<preset>/`` and a table in ``out_dir/robustness.md``. The exploration is repeated
    per preset (a noisy camera maps differently, so the frames differ too). Returns
    {preset: {"learned": summary, "upper_bound": summary}}."""
    from personal.sim.sensor_model import sensor_spec

    say = progress or (lambda msg: None)
    specs = {p: sensor_spec(p, overrides, sensor_seed) for p in presets}  # SensorSpecError before any work
    out = Path(out_dir)
    results: dict[str, dict] = {}
    for name, spec in specs.items():
        say(f"== preset {name}: {spec.describe()}")
        folder = name.replace("[", "-").replace("+", "-").rstrip("]")  # d435[gains+blur] -> d435-gains-blur
        results[name] = compare_offline(out / folder, encoder=encoder, upper_bound=upper_bound, scenes=scenes, splits=splits,
                                        episodes_per_split=episodes_per_split, resolution=resolution, seed=seed,
                                        extractor=extractor, methods=methods, max_steps=max_steps, width=width,
                                        height=height, progress=progress, sensor=spec, model_path=model_path)
        table = robustness_table(results, specs, encoder, upper_bound, scenes, seed)
        (out / "robustness.md").write_text(table + (f"\nLearned encoder's checkpoint: `{model_path}`.\n" if model_path else ""))
    return results


def robustness_table(results: dict, specs: dict, encoder: str, upper_bound: str, scenes: int, seed: int) -> str:
    """SR@top-1 (total) per preset and method, learned and ORACLE, and learned relative to its own ideal figure."""
    from personal.grounding.eval.pog import METHOD_LABELS

    first = next(iter(results.values()))
    n = first["learned"]["meta"].get("episodes", "?")
    ideal = results.get("ideal")
    lines = [f"# POG robustness to the camera: learned {encoder} beside the ORACLE {upper_bound}", "",
             f"Households: generated seeds {seed}..{seed + scenes - 1}; {n} episodes, the same under every preset; "
             "each preset explores anew (its own frames). SR@top-1 over all splits (%).", "",
             "| preset | method | learned | ORACLE | learned / learned-ideal |", "|---|---|---:|---:|---:|"]
    for preset, res in results.items():
        for m, per in res["learned"]["methods"].items():
            if m in ("random", "centre"):
                continue
            lt = per["total"]["sr_top1"]
            ut = res["upper_bound"]["methods"].get(m, {}).get("total", {}).get("sr_top1")
            base = ideal["learned"]["methods"][m]["total"]["sr_top1"] if ideal else None
            rel = f"{100 * lt / base:.0f} %" if (lt is not None and base) else "–"
            f = lambda v: "–" if v is None else f"{v:.1f}"  # noqa: E731
            lines.append(f"| {preset} | {METHOD_LABELS.get(m, m)} | {f(lt)} | {f(ut)} | {rel} |")
    lines += ["", "Presets:"] + [f"- {p}: {s.describe()}" for p, s in specs.items() if p in results]
    lines += ["", "Per preset: `<preset>/report.md` (learned and ORACLE reports, map images; `d435[gains]` in `d435-gains/`)."]
    return "\n".join(lines) + "\n"

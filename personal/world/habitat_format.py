"""PersONAL habitat-lab episode files (``Personalized-ObjectNav-v1``) and self-contained
episode-set folders.

Folder layout written by :func:`write_episode_set`::

    OUT/{split}/{split}.json.gz              # split file: no episodes, the category maps
    OUT/{split}/content/{scene_id}.json.gz   # habitat-lab episodes + goals_by_category
    OUT/scenes/{scene_id}.scene.json         # Scene.to_dict()
    OUT/scenes/{scene_id}.ply (+ .npz)       # triangle mesh with colours / instance ids (map frame)
    OUT/scenes/{scene_id}.stage_config.json  # how habitat-sim orients that mesh (habitat_scene)
    OUT/scenes/{scene_id}_semantic.ply       # instance mesh for habitat-sim's semantic sensor

The files load with habitat-lab's ``ObjectNavDatasetV1`` (config-driven:
``data_path=OUT/{split}/{split}.json.gz``, ``scenes_dir=OUT``) once its episode and
goal classes carry the PersONAL fields, as the PersONAL authors' ``habitat-utils/``
set-up does, and with their ``PersonalizedObjectNavDatasetV1`` filters
(``g.floor_id in episode.floor_id and g.object_name in episode.object_id``):

- ``goals_by_category`` keys are habitat's ``goals_key``:
  ``f"{os.path.basename(scene_id)}_{object_category}"`` (``synth_00000.ply_vase``);
- every episode has ``"goals": []`` (habitat fills it from ``goals_by_category``);
- ``floor_id`` is a string on episodes and goals (``"0"``);
- a goal's ``object_id`` is the instance id (the value in the semantic image) and its
  ``object_name`` the instance name the episode's ``object_id`` refers to
  (``vase_12``), like the public files;
- attrs classes reject unknown keys, so our extras (split, people, ownership,
  the ownership matrix, target ids, exact yaw) live under ``info["personal"]``.

Frames: :mod:`personal.world.frames` (map (x, y, z) -> habitat (x, z, -y); a heading
yaw is a rotation about habitat +y by yaw - pi/2, stored as (x, y, z, w)). The
Habitat backend uses the same module, so a file's poses reach habitat-sim unchanged.

Reading accepts the public PersONAL files as published (string or int
``floor_id``, ``object_id`` a string or a list, a ``scene_dataset_config``, HM3D
``scene_id`` paths and no scene models) and our older files (extras in a top-level
``"personal"`` key). Each episode carries its targets' goal entries (positions and
view points, map frame) and the scene file as the file names it. A round trip of
our own files is lossless.
"""
from __future__ import annotations

import gzip
import json
import math
import os
from pathlib import Path

from personal.files import read_json
from personal.paths import UnsafeIdError, child_path, path_component
from personal.world import frames
from personal.world.catalog import CATEGORIES
from personal.world.episodes import FloorNav, ownership_matrix, straight_line_distance
from personal.world.habitat_scene import write_habitat_stage
from personal.world.mesh import scene_mesh, write_ply
from personal.world.model import SPLITS, Episode, GoalViewPoint, ObjectGoal, Scene

DATASET_TYPE = "Personalized-ObjectNav-v1"
EPISODE_FIELDS = (
    "episode_id", "scene_id", "start_position", "start_rotation", "info", "object_category", "object_id",
    "floor_id", "description", "owner", "summary", "extracted_summary", "query",
)
GOAL_FIELDS = ("object_id", "object_name", "object_category", "position", "view_points", "room_id", "room_name")
# key of our extras inside an episode's ``info`` (older files: a top-level key of the episode)
EXTRAS_KEY = "personal"


class EpisodeFormatError(ValueError):
    """Bad episode-set input; the message names the file and the field."""


# ---------------------------------------------------------------- frames
# The conversions live in personal.world.frames (one convention for files, backends and
# bags); these wrappers give the JSON-ready lists the files hold.
def map_to_habitat(p) -> list[float]:
    return list(frames.map_to_habitat(p))


def habitat_to_map(p) -> tuple[float, float, float]:
    return frames.habitat_to_map(p)


def yaw_to_habitat_quat(yaw: float) -> list[float]:
    return list(frames.yaw_to_habitat_quat(yaw))


def habitat_quat_to_yaw(q) -> float:
    return frames.habitat_quat_to_yaw(q)


def scene_basename(scene_id: str) -> str:
    """``scenes/synth_00000.ply`` -> ``synth_00000`` (our scene id)."""
    return Path(scene_id).name.split(".")[0]


def scene_path(scene_id: str) -> str:
    """The episode's ``scene_id`` field: the mesh path relative to the set's root (habitat's ``scenes_dir``)."""
    return f"scenes/{scene_id}.ply"


def goals_key(scene_file: str, category: str) -> str:
    """habitat-lab's ``ObjectGoalNavEpisode.goals_key``: scene file name, extension included."""
    return f"{os.path.basename(scene_file)}_{category}"


# ---------------------------------------------------------------- export
def _goal(scene: Scene, obj, nav: FloorNav) -> dict:
    vps = nav.view_points(obj)
    room = scene.room(obj.room_id)
    # only fields of the PersONAL authors' ObjectGoal (habitat-lab's plus floor_id): attrs rejects others
    return {
        "object_id": obj.instance_id,  # id in the semantic image, like the public files' goals
        "object_name": obj.object_id,  # "vase_12": what the episode's object_id names
        "object_category": obj.category,
        "position": map_to_habitat(obj.box.center),
        "view_points": [
            # "iou" holds our visible-fraction proxy (share of 5 object points in line of sight), not a mask IoU
            {"agent_state": {"position": map_to_habitat(v["position"]), "rotation": yaw_to_habitat_quat(v["yaw"])}, "iou": v["visible_fraction"]}
            for v in vps
        ],
        "room_id": room.room_id,
        "room_name": room.name,
        "floor_id": str(obj.floor),
    }


def episode_to_habitat(ep: Episode, scene: Scene) -> dict:
    targets = ep.target_object_ids
    geo = ep.geodesic_distance
    return {
        "episode_id": ep.episode_id,
        "scene_id": scene_path(ep.scene_id),
        "start_position": map_to_habitat(ep.start_position),
        "start_rotation": yaw_to_habitat_quat(ep.start_yaw),
        "goals": [],  # habitat fills it from goals_by_category[goals_key]
        "object_category": ep.object_category,
        "object_id": targets[0] if len(targets) == 1 else list(targets),
        "floor_id": str(ep.floor_id),
        "description": list(ep.description),
        "owner": ep.owner,
        "summary": ep.summary,
        "extracted_summary": list(ep.extracted_summary),
        "query": [ep.query],
        "info": {
            "geodesic_distance": None if math.isnan(geo) else geo,
            # straight line to the nearest target footprint: a lower bound, not the geodesic
            "euclidean_distance_lower_bound": round(straight_line_distance(scene, ep), 4),
            EXTRAS_KEY: _extras(ep, targets),
        },
    }


def _extras(ep: Episode, targets) -> dict:
    return {
        "split": ep.split,
        "people": list(ep.people),
        "ownership": {p: list(o) for p, o in ep.ownership.items()},
        "ownership_matrix": _matrix_json(ep.ownership),
        "target_object_ids": list(targets),
        "start_yaw": ep.start_yaw,
        "start_position_map": list(ep.start_position),
        "scene_id": ep.scene_id,
    }


def _matrix_json(ownership) -> dict:
    people, objects, a = ownership_matrix(ownership)
    return {"people": people, "objects": objects, "A": a.tolist()}


def category_maps(scenes: list[Scene]) -> dict:
    """``category_to_task_category_id`` and ``category_to_scene_annotation_category_id``,
    the same in every file of a set (habitat-lab asserts both exist with equal keys; the
    last file read sets them). Our semantic images hold instance ids, so the scene
    annotation id is just the category's index too."""
    names = sorted(set(CATEGORIES) | {o.category for s in scenes for o in s.objects})
    ids = {c: i for i, c in enumerate(names)}
    return {"category_to_task_category_id": ids, "category_to_scene_annotation_category_id": dict(ids)}


def scene_content(scene: Scene, episodes: list[Episode], maps: dict | None = None) -> dict:
    """The ``{split}/content/{scene}.json.gz`` document for one scene."""
    scene_file = scene_path(scene.scene_id)
    categories = sorted({e.object_category for e in episodes} | {scene.object(o).category for e in episodes for o in e.target_object_ids})
    navs = {f.index: FloorNav(scene, f.index) for f in scene.floors}
    goals = {
        goals_key(scene_file, c): [_goal(scene, o, navs[o.floor]) for o in scene.objects if o.category == c]
        for c in categories
    }
    return {
        "dataset_type": DATASET_TYPE,
        "goals_by_category": goals,
        "episodes": [episode_to_habitat(e, scene) for e in episodes],
        **(maps or category_maps([scene])),
    }


def _write_gz(path: Path, doc: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as f:
        json.dump(doc, f)


def write_episode_set(out_dir: str | Path, scenes: list[Scene], episodes: list[Episode]) -> list[Path]:
    """Write a self-contained episode folder (see module doc); returns the content files."""
    out = Path(out_dir)
    by_id = {s.scene_id: s for s in scenes}
    for s in scenes:
        sdir = out / "scenes"
        sdir.mkdir(parents=True, exist_ok=True)
        _safe_id(s.scene_id, "scene_id", "scene")
        child_path(sdir, s.scene_id, "scene_id", ".scene.json").write_text(json.dumps(s.to_dict()))
        mesh = scene_mesh(s)
        write_ply(mesh, sdir / f"{s.scene_id}.ply")
        write_habitat_stage(mesh, sdir / f"{s.scene_id}.ply")  # stage config + semantic mesh for habitat-sim
    groups: dict[tuple[str, str], list[Episode]] = {}
    for e in episodes:
        if e.scene_id not in by_id:
            raise EpisodeFormatError(f"episode {e.episode_id!r}: scene {e.scene_id!r} is not among the scenes given")
        if e.split not in SPLITS:
            raise EpisodeFormatError(f"episode {e.episode_id!r}: unknown split {e.split!r}")
        groups.setdefault((e.split, e.scene_id), []).append(e)
    maps = category_maps(scenes)
    written = []
    for split in sorted({sp for sp, _ in groups}):
        # habitat-lab's config-driven loading opens data_path={split}/{split}.json.gz first
        _write_gz(out / split / f"{split}.json.gz", {"episodes": [], **maps})
    for (split, sid), eps in sorted(groups.items()):
        path = child_path(out / split / "content", sid, "scene_id", ".json.gz")
        _write_gz(path, scene_content(by_id[sid], eps, maps))
        written.append(path)
    return written


# ---------------------------------------------------------------- import
def _safe_id(value, field: str, where: str) -> str:
    """An id that becomes a file name (scene and episode ids do: maps_dir/<scene_id>/, plots per
    episode), checked by the one rule of :mod:`personal.paths`; EpisodeFormatError naming where."""
    try:
        return path_component(value, f"field {field!r}")
    except UnsafeIdError as exc:
        raise EpisodeFormatError(f"{where}: {exc}") from None


def _need(d: dict, key: str, where: str):
    if not isinstance(d, dict) or key not in d:
        raise EpisodeFormatError(f"{where}: missing field {key!r}")
    return d[key]


def _extras_of(d: dict) -> dict:
    info = d.get("info") if isinstance(d.get("info"), dict) else {}
    return info.get(EXTRAS_KEY) or d.get(EXTRAS_KEY) or {}


def _floor(value, where: str) -> int:
    """``floor_id`` as published ("0", a string) or as older files wrote it (0)."""
    if value is None:
        return 0
    try:
        return int(value)
    except (TypeError, ValueError):
        raise EpisodeFormatError(f"{where}: field 'floor_id' must be a floor number such as \"0\", got {value!r}") from None


def _float3(value, where: str, field: str) -> tuple[float, float, float]:
    try:
        x, y, z = (float(v) for v in value)
    except (TypeError, ValueError):
        raise EpisodeFormatError(f"{where}: field {field!r} must be three numbers, got {value!r}") from None
    return x, y, z


def _quat(value, where: str, field: str) -> tuple[float, float, float, float]:
    try:
        q = tuple(float(v) for v in value)
        if len(q) != 4 or not sum(v * v for v in q) > 0:
            raise ValueError
    except (TypeError, ValueError):
        raise EpisodeFormatError(f"{where}: field {field!r} must be a non-zero (x, y, z, w) quaternion, got {value!r}") from None
    return q


def goal_from_habitat(g: dict, where: str) -> ObjectGoal:
    """One ``goals_by_category`` entry in the map frame (``where`` names it for errors)."""
    view_points = []
    for k, vp in enumerate(g.get("view_points") or []):
        state = _need(vp, "agent_state", f"{where}.view_points[{k}]")
        vwhere = f"{where}.view_points[{k}].agent_state"
        pos = _float3(_need(state, "position", vwhere), vwhere, "position")
        rot = _quat(_need(state, "rotation", vwhere), vwhere, "rotation")
        iou = vp.get("iou")
        view_points.append(GoalViewPoint(habitat_to_map(pos), habitat_quat_to_yaw(rot), None if iou is None else float(iou)))
    return ObjectGoal(
        object_name=str(g["object_name"]), instance_id=int(g["object_id"]), category=str(g["object_category"]),
        position=habitat_to_map(_float3(g["position"], where, "position")), floor=_floor(g.get("floor_id"), where),
        view_points=view_points, room_id=g.get("room_id"), room_name=g.get("room_name"),
    )


def episode_goals(goals_by_category: dict, d: dict, targets: list[str], where: str) -> list[ObjectGoal]:
    """The goal entries of an episode's targets: its ``goals_key`` list, same floor, named by
    ``object_id``. (The PersONAL authors' filter tests ``in`` on strings, so ``vase_1`` would
    also pass for ``vase_12``; names are compared exactly here.)"""
    key = goals_key(str(d["scene_id"]), str(d["object_category"]))
    floor = _floor(d["floor_id"], where)
    names = set(targets)
    # published files list goals under goals_by_category; habitat-lab's to_json writes them inline
    candidates = [(f"goals_by_category[{key!r}][{k}]", g) for k, g in enumerate(goals_by_category.get(key, []))]
    candidates += [(f"{where}.goals[{k}]", g) for k, g in enumerate(d.get("goals") or [])]
    out, seen = [], set()
    for gwhere, g in candidates:
        name = str(g.get("object_name"))
        if name in names and name not in seen and _floor(g.get("floor_id", floor), gwhere) == floor:
            seen.add(name)
            out.append(goal_from_habitat(g, gwhere))
    return out


def _start_map(value, habitat_pos, where: str) -> tuple[float, float, float]:
    """Our exact map-frame start (``info.personal.start_position_map``). Both it and the habitat
    ``start_position`` (what habitat-lab uses) must be finite and agree: a NaN in either was
    silently ignored or crashed the simulator later."""
    try:
        pos = tuple(float(v) for v in value)
    except (TypeError, ValueError):
        pos = ()
    if len(pos) != 3 or not all(math.isfinite(v) for v in pos):
        raise EpisodeFormatError(f"{where}: field 'info.personal.start_position_map' must be three finite numbers, got {value!r}")
    if not all(math.isfinite(v) for v in habitat_pos) or max(abs(a - b) for a, b in zip(pos, habitat_pos)) > 1e-3:
        raise EpisodeFormatError(f"{where}: field 'start_position' {map_to_habitat(habitat_pos)} (habitat frame) does not "
                                 f"match 'info.personal.start_position_map' {list(pos)}")
    return pos


def episode_from_habitat(d: dict, where: str, split: str | None = None, goals_by_category: dict | None = None) -> Episode:
    """Episode from one habitat episode dict; ``where`` names file/index for errors.
    With ``goals_by_category`` (the file's) the episode carries its targets' goals."""
    for k in EPISODE_FIELDS:
        _need(d, k, where)
    extra = _extras_of(d)
    pos = habitat_to_map(_float3(d["start_position"], where, "start_position"))
    yaw = extra.get("start_yaw", habitat_quat_to_yaw(_quat(d["start_rotation"], where, "start_rotation")))
    if "start_position_map" in extra:
        pos = _start_map(extra["start_position_map"], pos, where)
    if not all(math.isfinite(v) for v in pos) or not math.isfinite(float(yaw)):
        raise EpisodeFormatError(f"{where}: field 'start_position' / 'start_rotation' must be finite, got "
                                 f"{d['start_position']!r} / {d['start_rotation']!r}")
    targets = extra.get("target_object_ids") or (d["object_id"] if isinstance(d["object_id"], list) else [d["object_id"]])
    owner = d["owner"]
    ownership = extra.get("ownership") or {owner: list(targets)}
    geo = _need(d["info"], "geodesic_distance", f"{where}.info")
    query = d["query"]
    return Episode(
        episode_id=_safe_id(d["episode_id"], "episode_id", where),
        scene_id=_safe_id(extra.get("scene_id") or scene_basename(d["scene_id"]),
                          "info.personal.scene_id" if extra.get("scene_id") else "scene_id", where),
        split=extra.get("split", split or ""),
        people=list(extra.get("people", list(ownership))),
        ownership={p: list(o) for p, o in ownership.items()},
        owner=owner,
        target_object_ids=list(targets),
        object_category=d["object_category"],
        query=query[0] if isinstance(query, list) and query else str(query),
        summary=d["summary"],
        extracted_summary=list(d["extracted_summary"]),
        description=list(d["description"]),
        start_position=pos,
        start_yaw=float(yaw),
        floor_id=_floor(d["floor_id"], where),
        geodesic_distance=float("nan") if geo is None else float(geo),
        goals=episode_goals(goals_by_category or {}, d, list(targets), where),
        scene_file=str(d["scene_id"]),
        scene_dataset_config=str(d.get("scene_dataset_config") or ""),
    )


def read_content_file(path: str | Path, split: str | None = None) -> tuple[dict, list[Episode]]:
    """(goals_by_category, episodes) from one ``.json.gz`` file."""
    path = Path(path)
    doc = read_json(path, EpisodeFormatError, gzipped=True)  # any malformed file: an error naming it
    goals = _need(doc, "goals_by_category", str(path))
    eps_raw = _need(doc, "episodes", str(path))
    if not isinstance(eps_raw, list):
        raise EpisodeFormatError(f"{path}: field 'episodes' must be a list")
    for key, gl in goals.items():
        for k, g in enumerate(gl):
            for field in GOAL_FIELDS:
                _need(g, field, f"{path}: goals_by_category[{key!r}][{k}]")
    return goals, [episode_from_habitat(e, f"{path}: episodes[{i}]", split, goals) for i, e in enumerate(eps_raw)]


def load_scene(path: str | Path) -> Scene:
    path = Path(path)
    if not path.exists():
        raise EpisodeFormatError(f"{path}: scene file not found")
    doc = read_json(path, EpisodeFormatError)
    try:
        scene = Scene.from_dict(doc)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise EpisodeFormatError(f"{path}: missing or bad scene field {exc}") from None
    _safe_id(scene.scene_id, "scene_id", str(path))
    return scene


def load_episode_set(directory: str | Path, scene_models: bool = True) -> tuple[dict[str, Scene], list[Episode]]:
    """Scenes (by id) and episodes of every split found in an episode folder.
    Raises EpisodeFormatError naming the file and field on bad input.

    ``scene_models=True`` requires our scene model (``scenes/{id}.scene.json``) for every
    episode, as the synthetic simulator and the ground-truth tools need. ``False`` also
    accepts episodes without one (the public PersONAL files on HM3D, replayed by habitat-sim
    from their ``scene_id``); their scenes are simply absent from the returned dict."""
    root = Path(directory)
    if not root.is_dir():
        raise EpisodeFormatError(f"{root}: episode folder not found")
    scenes = {}
    for p in sorted((root / "scenes").glob("*.scene.json")):
        s = load_scene(p)
        scenes[s.scene_id] = s
    episodes: list[Episode] = []
    files = [(split, p) for split in SPLITS for p in sorted((root / split / "content").glob("*.json.gz"))]
    if not files:
        raise EpisodeFormatError(f"{root}: no {{split}}/content/*.json.gz episode files")
    for split, p in files:
        _, eps = read_content_file(p, split)
        for i, e in enumerate(eps):
            if e.scene_id not in scenes:
                if not scene_models:
                    continue
                raise EpisodeFormatError(
                    f"{p}: episodes[{i}] field 'scene_id': unknown scene {e.scene_id!r} (no scenes/{e.scene_id}.scene.json; "
                    "public HM3D episode sets have no scene models: replay them with habitat-sim, backend:=habitat scenes_dir:=...)")
            for oid in e.target_object_ids:
                try:
                    scenes[e.scene_id].object(oid)
                except KeyError:
                    raise EpisodeFormatError(f"{p}: episodes[{i}] field 'object_id': {oid!r} not in scene {e.scene_id!r}") from None
        episodes.extend(eps)
    return scenes, episodes

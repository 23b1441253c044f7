"""Public-format PersONAL episode sets over synthetic households, for the Habitat tests.

:func:`make_public_set` writes episodes exactly as the PersONAL authors publish them (the key
sets of the verbatim excerpt in test/data/personal_public are checked): HM3D-style
``scene_id`` paths under a scenes folder, a ``scene_dataset_config`` path as the public files
write it, string ``floor_id``, goals with view points and ``radius`` / ``object_name_id``,
no scene models and none of our extras. Only the meshes are ours: the exported PLY with its
stage config and semantic mesh (``personal.world.habitat_scene``), since the contract fake
cannot read HM3D's ``.basis.glb``.
"""
from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

from personal.world.habitat_format import category_maps, goals_key, scene_content
from personal.world.habitat_scene import write_habitat_stage
from personal.world.mesh import scene_mesh, write_ply

PUBLIC = Path(__file__).resolve().parent / "data" / "personal_public"
DATASET_CONFIG = "./data/scene_datasets/hm3d_v0.2/hm3d_annotated_basis.scene_dataset_config.json"


def public_keys() -> tuple[set, set, set]:
    """(episode keys, goal keys, info keys) of the published files."""
    doc = json.loads(gzip.open(PUBLIC / "hard" / "content" / "4ok3usBNeis.json.gz", "rt").read())
    goal = next(iter(doc["goals_by_category"].values()))[0]
    return set(doc["episodes"][0]), set(goal), set(doc["episodes"][0]["info"])


def _reach(g: dict, vp: dict) -> float:
    (x, _, z), (gx, _, gz) = vp["agent_state"]["position"], g["position"]
    return math.hypot(x - gx, z - gz)


def authors_view_points(g: dict) -> list:
    """The PersONAL generator's rule (seed, "Dataset construction"): view points within 1.0 m
    of the object's centre, relaxed to 1.5 m for large objects; ours are within 1 m of the
    object's box. Nearest first (kept alone when none is within 1.5 m)."""
    vps = sorted(g["view_points"], key=lambda vp: _reach(g, vp))
    for limit in (1.0, 1.5):
        kept = [vp for vp in vps if _reach(g, vp) <= limit]
        if kept:
            return kept
    return vps[:1]


def _hm3d_scene_id(k: int, scene_id: str) -> str:
    return f"hm3d_v0.2/val/{800 + k:05d}-{scene_id}/{scene_id}.ply"


def make_public_set(root: Path, scenes: list, episodes: list, start_at_view_point: set[str] = frozenset()):
    """Write ``root/episodes/{split}/...`` and ``root/scene_datasets/hm3d_v0.2/...``; returns
    (episodes_dir, scenes_dir, {episode_id: published episode dict}). Episodes named in
    ``start_at_view_point`` start at the first view point of their first target."""
    episodes_dir, scenes_dir = root / "episodes", root / "scene_datasets"
    hm3d = scenes_dir / "hm3d_v0.2"
    hm3d.mkdir(parents=True, exist_ok=True)
    (hm3d / "hm3d_annotated_basis.scene_dataset_config.json").write_text(json.dumps(
        {"stages": {"default_attributes": {"origin": [0.0, 0.0, 0.0]}}}))
    ep_keys, goal_keys, info_keys = public_keys()
    maps = category_maps(scenes)
    published: dict[str, dict] = {}
    for k, scene in enumerate(scenes):
        sid = _hm3d_scene_id(k, scene.scene_id)
        mesh = scene_mesh(scene)
        write_ply(mesh, scenes_dir / sid)
        write_habitat_stage(mesh, scenes_dir / sid)
        for split in sorted({e.split for e in episodes if e.scene_id == scene.scene_id}):
            eps = [e for e in episodes if e.scene_id == scene.scene_id and e.split == split]
            ours = scene_content(scene, eps, maps)
            goals = {}
            for old_key, gl in ours["goals_by_category"].items():
                category = old_key[len(f"{scene.scene_id}.ply_"):]
                goals[goals_key(sid, category)] = [
                    {**g, "radius": None, "object_name_id": None, "room_id": None, "room_name": None,
                     "view_points": authors_view_points(g)} for g in gl]
            out_eps = []
            for e, d in zip(eps, ours["episodes"]):
                d = {key: v for key, v in d.items() if key != "info"}
                d.update(scene_id=sid, scene_dataset_config=DATASET_CONFIG, additional_obj_config_paths=[],
                         start_room=None, shortest_paths=None)
                targets = [g for g in goals[goals_key(sid, e.object_category)] if g["object_name"] in e.target_object_ids]
                if e.episode_id in start_at_view_point:
                    vp = targets[0]["view_points"][0]["agent_state"]  # the nearest to the goal's centre
                    d["start_position"], d["start_rotation"] = list(vp["position"]), list(vp["rotation"])
                vps = [v["agent_state"]["position"] for g in targets for v in g["view_points"]]
                straight = min(math.dist(d["start_position"], p) for p in vps)
                d["info"] = {"geodesic_distance": straight,  # a lower bound: the bridge recomputes the geodesic
                             "euclidean_distance": straight, "closest_goal_object_id": targets[0]["object_id"]}
                assert set(d) == ep_keys and set(d["info"]) == info_keys, sorted(set(d) ^ ep_keys)
                out_eps.append(d)
                published[e.episode_id] = d
            for gl in goals.values():
                assert all(set(g) == goal_keys for g in gl)
            doc = {"goals_by_category": goals, "episodes": out_eps, **maps}
            path = episodes_dir / split / "content" / f"{scene.scene_id}.json.gz"
            path.parent.mkdir(parents=True, exist_ok=True)
            with gzip.open(path, "wt") as f:
                json.dump(doc, f)
            split_file = episodes_dir / split / f"{split}.json.gz"
            with gzip.open(split_file, "wt") as f:
                json.dump({"episodes": [], **maps}, f)
    return episodes_dir, scenes_dir, published

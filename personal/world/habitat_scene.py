"""Synthetic households as habitat-sim stages, oriented like the episode files.

An episode folder holds each household as ``scenes/{id}.ply`` in our map frame (z up,
``personal.world.mesh``). habitat-sim would load a plain ``.ply`` stage y-up as it stands
(``StageAttributesManager::setDefaultAssetNameBasedAttributes``: up +y, front -z for any
file that is not a ``.glb`` or ``_semantic.ply``), i.e. lying on its side. Beside it this
module writes what makes habitat-sim load it consistently with the exported episodes:

- ``scenes/{id}.stage_config.json``: habitat-sim looks for this name when it is given
  ``scenes/{id}.ply`` as the scene (``AbstractAttributesManager::
  createFromJsonOrDefaultInternal`` with ``convertFilenameToPassedExt``: both extensions
  stripped, ``.stage_config.json`` added). It names the render asset with ``up`` = map +z
  and ``front`` = map +y: habitat-sim's ``CoordinateFrame::rotationFrameToWorld`` then takes
  the asset's up to +y and its front to -z, which is :data:`frames.R_HAB_MAP`.
- ``scenes/{id}_semantic.ply``: the instance mesh for the semantic sensor (per-vertex colour,
  which habitat requires of semantic meshes, and per-vertex ``object_id`` = our instance id),
  z up: ``GenericSemanticMeshData::buildSemanticMeshData`` turns every generic semantic
  ``.ply`` from -Z gravity into habitat's frame, which is again :data:`frames.R_HAB_MAP`. The
  stage config gives it the identity frame (``semantic_up`` +y, ``semantic_front`` -z) so it is
  not turned twice.

No ``.navmesh`` is written: the Habitat backend recomputes the navmesh with the LoCoBot's
radius and height when the scene has none.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from personal.world import frames
from personal.world.mesh import SceneMesh

STAGE_SUFFIX = ".stage_config.json"
SEMANTIC_SUFFIX = "_semantic.ply"
# the map directions habitat-sim must take to its up (+y) and front (-z)
STAGE_UP = [float(v) for v in frames.habitat_to_map((0.0, 1.0, 0.0))]  # map +z
STAGE_FRONT = [float(v) for v in frames.habitat_to_map(frames.HAB_FRONT)]  # map +y
MAX_OBJECT_ID = 65535  # habitat-sim stores semantic object ids in 16 bits


def stage_config_path(scene_file: str | Path) -> Path:
    """Where habitat-sim looks for a stage config of ``scene_file`` (both extensions replaced)."""
    p = Path(scene_file)
    return p.with_name(Path(p.stem).stem + STAGE_SUFFIX)


def semantic_path(scene_file: str | Path) -> Path:
    p = Path(scene_file)
    return p.with_name(p.stem + SEMANTIC_SUFFIX)


def stage_config(scene_file: str | Path) -> dict:
    p = Path(scene_file)
    return {
        "render_asset": p.name,
        "up": STAGE_UP,
        "front": STAGE_FRONT,
        "origin": [0.0, 0.0, 0.0],
        "semantic_asset": semantic_path(p).name,
        "semantic_up": [0.0, 1.0, 0.0],
        "semantic_front": [0.0, 0.0, -1.0],
    }


def write_habitat_stage(mesh: SceneMesh, scene_file: str | Path) -> tuple[Path, Path]:
    """Write the stage config and the semantic mesh beside an exported ``scene_file`` (the
    map-frame PLY); returns their paths."""
    scene_file = Path(scene_file)
    cfg = stage_config_path(scene_file)
    cfg.write_text(json.dumps(stage_config(scene_file), indent=1))
    sem = semantic_path(scene_file)
    write_semantic_ply(mesh, sem)
    return cfg, sem


def _instance_rgb(ids: np.ndarray) -> np.ndarray:
    """A fixed colour per instance id (semantic meshes must have vertex colours)."""
    ids = ids.astype(np.uint32)
    return np.stack([(ids * 97) % 251, (ids * 57 + 80) % 253, (ids * 31 + 160) % 255], axis=1).astype(np.uint8)


def per_vertex_ids(vertices: np.ndarray, triangles: np.ndarray, tri_ids: np.ndarray):
    """(vertices, triangles, vertex ids): vertices shared by triangles of different instances
    are duplicated so every vertex carries one id."""
    v_id = np.full(len(vertices), -1, dtype=np.int64)
    v_id[triangles.reshape(-1)] = np.repeat(tri_ids, 3)
    clash = np.any(v_id[triangles] != tri_ids[:, None], axis=1)
    if clash.any():
        k = int(clash.sum())
        extra = vertices[triangles[clash]].reshape(-1, 3)
        triangles = triangles.copy()
        triangles[clash] = len(vertices) + np.arange(3 * k).reshape(k, 3)
        vertices = np.concatenate([vertices, extra])
        v_id = np.concatenate([v_id, np.repeat(tri_ids[clash], 3)])
    return vertices, triangles, np.maximum(v_id, 0)


def write_semantic_ply(mesh: SceneMesh, path: str | Path) -> Path:
    """Binary PLY, map frame (z up): x y z, red green blue, object_id per vertex; faces as
    vertex index lists."""
    ids = np.asarray(mesh.triangle_instance_id, dtype=np.int64)
    if ids.size and (ids.min() < 0 or ids.max() > MAX_OBJECT_ID):
        raise ValueError(f"{path}: instance ids must lie in 0..{MAX_OBJECT_ID} for habitat-sim's semantic mesh")
    verts, tris, v_ids = per_vertex_ids(np.asarray(mesh.vertices, np.float32), np.asarray(mesh.triangles, np.int64), ids)
    vert_dtype = np.dtype([("x", "<f4"), ("y", "<f4"), ("z", "<f4"), ("red", "u1"), ("green", "u1"), ("blue", "u1"),
                           ("object_id", "<u2")])
    v = np.empty(len(verts), dtype=vert_dtype)
    v["x"], v["y"], v["z"] = verts[:, 0], verts[:, 1], verts[:, 2]
    rgb = _instance_rgb(v_ids)
    v["red"], v["green"], v["blue"] = rgb[:, 0], rgb[:, 1], rgb[:, 2]
    v["object_id"] = v_ids
    f = np.empty(len(tris), dtype=np.dtype([("n", "u1"), ("idx", "<i4", (3,))]))
    f["n"], f["idx"] = 3, tris
    header = (
        "ply\nformat binary_little_endian 1.0\n"
        f"element vertex {len(v)}\n"
        "property float x\nproperty float y\nproperty float z\n"
        "property uchar red\nproperty uchar green\nproperty uchar blue\n"
        "property ushort object_id\n"
        f"element face {len(f)}\n"
        "property list uchar int vertex_indices\n"
        "end_header\n"
    )
    path = Path(path)
    with open(path, "wb") as fh:
        fh.write(header.encode("ascii"))
        fh.write(v.tobytes())
        fh.write(f.tobytes())
    return path

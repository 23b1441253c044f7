"""Stage loading and rendering of the contract fake.

How habitat-sim 0.3 turns ``SimulatorConfiguration.scene_id`` into oriented meshes, as read
from its source, and what the fake does with it:

- ``MetadataMediator::getSceneInstanceAttributesByName`` -> ``StageAttributesManager``
  ``createObject`` -> ``AbstractAttributesManager::createFromJsonOrDefaultInternal``: a
  scene id that is not itself a ``*.stage_config.json`` is turned into one by
  ``convertFilenameToPassedExt`` (the last two extensions stripped, ``.stage_config.json``
  added); when that file exists it configures the stage, else default attributes are built
  from the file name.
- ``StageAttributesManager::setDefaultAssetNameBasedAttributes``: a ``.glb`` defaults to up
  +z, front +y (MP3D, gravity -Z); any other render asset to up +y, front -z.
  ``StageAttributesManager::initNewObjectInternal``: the semantic asset defaults to
  ``<stage root>_semantic.ply`` when that file exists.
- Stage config keys (``AbstractObjectAttributesManager::setAbstractObjectAttributesFromJson``,
  ``StageAttributesManager::setValsFromJSONDoc``): ``render_asset``, ``up``, ``front``,
  ``origin``, ``semantic_asset``, ``semantic_up``, ``semantic_front``; the semantic mesh uses
  the render frame unless ``semantic_up`` / ``semantic_front`` are given
  (``StageAttributes::getSemanticOrientUp``, ``ResourceManager::
  createStageAssetInfosFromAttributes``). Paths are relative to the config's folder.
- ``CoordinateFrame::rotationFrameToWorld``: the rotation taking the asset's up to +y and its
  front to -z.
- ``GenericSemanticMeshData::buildSemanticMeshData``: a semantic ``.ply`` is first turned by
  ``Quaternion::rotation(FRONT, GRAVITY)`` (-Z gravity to -Y); it must have vertex colours;
  per-vertex ``object_id`` values are the semantic ids (at most 65535).

A scene dataset config (``scene_dataset_config_file`` other than ``"default"``) is read for
``stages.default_attributes`` (the same orientation keys) only.

Rendering uses the project's synthetic renderer (``personal.sim.render.Renderer``) on the
oriented meshes, in habitat's frame: RGBA uint8, depth in metres along the optical axis with
0 where nothing is hit (``depth.frag``: the far plane reads 0), semantic ids uint32 (0 where
the semantic mesh is not hit). The fake cannot read ``.glb`` / ``.basis.glb`` assets (HM3D)
or recast ``.navmesh`` files: those need the real habitat-sim.
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

STAGE_EXT = ".stage_config.json"
Y_UP, Z_FRONT = (0.0, 1.0, 0.0), (0.0, 0.0, -1.0)


def _unit(v) -> np.ndarray:
    v = np.asarray(v, dtype=np.float64)
    n = np.linalg.norm(v)
    if not n > 0:
        raise ValueError(f"zero-length orientation vector {v.tolist()}")
    return v / n


def frame_to_world(up, front) -> np.ndarray:
    """3x3 rotation taking ``up`` to +y and ``front`` to -z (``CoordinateFrame::
    rotationFrameToWorld``); up and front must be orthogonal (else habitat keeps the default)."""
    u, f = _unit(up), _unit(front)
    if abs(float(u @ f)) > 1e-6:
        u, f = np.array(Y_UP), np.array(Z_FRONT)
    r = np.cross(f, u)  # the asset's "right" (x in habitat's default frame: front x up)
    src = np.stack([r, u, -f], axis=1)  # asset directions that must become +x, +y, +z
    return src.T  # orthonormal: world = src^T @ asset


def stage_config_candidate(scene_id: str) -> str:
    """``convertFilenameToPassedExt(scene_id, "stage_config.json")``."""
    if STAGE_EXT in scene_id.lower():
        return scene_id
    root, _ = os.path.splitext(scene_id)
    root, _ = os.path.splitext(root)
    return root + STAGE_EXT


@dataclass
class Stage:
    render_path: str
    up: tuple
    front: tuple
    semantic_path: str | None
    semantic_up: tuple | None
    semantic_front: tuple | None


def resolve_stage(scene_id: str, dataset_config: str) -> Stage:
    defaults: dict = {}
    if dataset_config and dataset_config != "default":
        if not os.path.isfile(dataset_config):
            raise RuntimeError(f"scene dataset config not found: {dataset_config}")
        doc = json.loads(Path(dataset_config).read_text())
        defaults = dict(doc.get("stages", {}).get("default_attributes", {}))
    cfg_path = stage_config_candidate(scene_id)
    cfg = dict(defaults)
    base = os.path.dirname(scene_id)
    render = scene_id
    if os.path.isfile(cfg_path):
        cfg.update(json.loads(Path(cfg_path).read_text()))
        base = os.path.dirname(cfg_path)
        if "render_asset" in cfg:
            render = os.path.join(base, cfg["render_asset"])
    if render.lower().endswith(".glb"):
        raise NotImplementedError(f"{render}: the contract fake cannot load glTF stages (HM3D needs the real habitat-sim)")
    if not os.path.isfile(render):
        raise RuntimeError(f"stage render asset not found: {render}")
    up = tuple(cfg.get("up", Y_UP))
    front = tuple(cfg.get("front", Z_FRONT))
    if "semantic_asset" in cfg:
        semantic = os.path.join(base, cfg["semantic_asset"])
    else:
        root = os.path.splitext(os.path.splitext(render)[0])[0]
        semantic = root + "_semantic.ply" if os.path.isfile(root + "_semantic.ply") else None
    sem_up = tuple(cfg["semantic_up"]) if "semantic_up" in cfg else None
    sem_front = tuple(cfg["semantic_front"]) if "semantic_front" in cfg else None
    return Stage(render, up, front, semantic, sem_up, sem_front)


# ---------------------------------------------------------------- PLY reading
_PLY_TYPES = {"char": "i1", "uchar": "u1", "short": "<i2", "ushort": "<u2", "int": "<i4", "uint": "<u4",
              "float": "<f4", "double": "<f8", "int8": "i1", "uint8": "u1", "int16": "<i2", "uint16": "<u2",
              "int32": "<i4", "uint32": "<u4", "float32": "<f4", "float64": "<f8"}


def read_ply(path: str) -> dict:
    """Vertices (x, y, z), optional colours and ``object_id`` per vertex, and triangles of a
    binary little-endian PLY whose faces are triangle lists (what the exports write)."""
    raw = Path(path).read_bytes()
    end = raw.find(b"end_header\n")
    if not raw.startswith(b"ply") or end < 0:
        raise RuntimeError(f"{path}: not a PLY file")
    lines = raw[:end].decode("ascii").splitlines()
    if "format binary_little_endian 1.0" not in lines:
        raise NotImplementedError(f"{path}: the contract fake reads binary little-endian PLY only")
    elements, cur = [], None
    for ln in lines:
        parts = ln.split()
        if parts[:1] == ["element"]:
            cur = {"name": parts[1], "count": int(parts[2]), "props": []}
            elements.append(cur)
        elif parts[:1] == ["property"] and cur is not None:
            cur["props"].append(parts[1:])
    off = end + len(b"end_header\n")
    out: dict = {}
    for el in elements:
        if el["name"] == "vertex":
            dt = np.dtype([(p[1], _PLY_TYPES[p[0]]) for p in el["props"]])
            v = np.frombuffer(raw, dtype=dt, count=el["count"], offset=off)
            off += v.nbytes
            out["vertices"] = np.stack([v["x"], v["y"], v["z"]], axis=1).astype(np.float64)
            if {"red", "green", "blue"} <= set(dt.names):
                out["colors"] = np.stack([v["red"], v["green"], v["blue"]], axis=1).astype(np.uint8)
            if "object_id" in dt.names:
                out["object_id"] = v["object_id"].astype(np.int64)
        elif el["name"] == "face":
            fields = []
            for p in el["props"]:
                if p[0] == "list":
                    if p[3] != "vertex_indices" and p[3] != "vertex_index":
                        raise NotImplementedError(f"{path}: face list {p[3]!r}")
                    fields += [("n", _PLY_TYPES[p[1]]), ("idx", _PLY_TYPES[p[2]], (3,))]
                else:
                    fields.append((p[1], _PLY_TYPES[p[0]]))
            f = np.frombuffer(raw, dtype=np.dtype(fields), count=el["count"], offset=off)
            if el["count"] and not np.all(f["n"] == 3):
                raise NotImplementedError(f"{path}: only triangle faces")
            off += f.nbytes
            out["triangles"] = f["idx"].astype(np.int64)
        else:
            raise NotImplementedError(f"{path}: PLY element {el['name']!r}")
    if "vertices" not in out or "triangles" not in out:
        raise RuntimeError(f"{path}: PLY without vertices or faces")
    return out


# ---------------------------------------------------------------- meshes
R_NEG_Z_GRAVITY = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, -1.0, 0.0]])  # rotation(FRONT -> GRAVITY)


def _scene_mesh(vertices, triangles, ids, rgb):
    from personal.world.mesh import SceneMesh

    return SceneMesh(vertices=np.asarray(vertices, np.float32), triangles=np.asarray(triangles, np.int32),
                     triangle_instance_id=np.asarray(ids, np.int32), triangle_rgb=np.asarray(rgb, np.uint8))


class LoadedStage:
    """The stage's render and semantic meshes in habitat's frame, with ray casting."""

    def __init__(self, scene_id: str, dataset_config: str, load_semantic: bool) -> None:
        import open3d as o3d

        self.stage = resolve_stage(scene_id, dataset_config)
        ply = read_ply(self.stage.render_path)
        R = frame_to_world(self.stage.up, self.stage.front)
        verts = ply["vertices"] @ R.T
        tris = ply["triangles"]
        colors = ply.get("colors")
        rgb = colors[tris[:, 0]] if colors is not None else np.full((len(tris), 3), 200, np.uint8)
        self.render_mesh = _scene_mesh(verts, tris, np.zeros(len(tris)), rgb)
        self.semantic_mesh = None
        if load_semantic and self.stage.semantic_path:
            sem = read_ply(self.stage.semantic_path)
            if "colors" not in sem:
                raise RuntimeError(f"{self.stage.semantic_path}: semantic meshes need vertex colours")
            obj = sem.get("object_id")
            if obj is None:
                raise NotImplementedError(f"{self.stage.semantic_path}: the fake reads per-vertex object_id only")
            if obj.max(initial=0) > 65535:
                raise RuntimeError(f"{self.stage.semantic_path}: object ids can't be stored into 16 bits")
            sv = sem["vertices"] @ R_NEG_Z_GRAVITY.T
            if self.stage.semantic_up is not None or self.stage.semantic_front is not None:
                Rs = frame_to_world(self.stage.semantic_up or Y_UP, self.stage.semantic_front or Z_FRONT)
            else:
                Rs = R
            sv = sv @ Rs.T
            st = sem["triangles"]
            self.semantic_mesh = _scene_mesh(sv, st, obj[st[:, 0]], sem["colors"][st[:, 0]])
        self.bounds = (verts.min(axis=0), verts.max(axis=0))
        self.raycaster = o3d.t.geometry.RaycastingScene()
        self.raycaster.add_triangles(o3d.core.Tensor(np.ascontiguousarray(verts, np.float32)),
                                     o3d.core.Tensor(np.ascontiguousarray(tris, np.uint32)))
        self._renderers: dict = {}
        self._last_render = None

    def _renderer(self, which: str, spec):
        from personal.sim.backends.base import CameraSpec
        from personal.sim.render import Renderer

        h, w = int(spec.resolution[0]), int(spec.resolution[1])
        key = (which, h, w, float(spec.hfov), float(spec.near), float(spec.far))
        if key not in self._renderers:
            cam = CameraSpec(width=w, height=h, hfov_deg=float(spec.hfov), height_m=0.0,
                             min_depth=float(spec.near), max_depth=float(spec.far))
            mesh = self.render_mesh if which == "render" else self.semantic_mesh
            kw = {"mode": "exact"} if (h % 2 or w % 2) else {}
            self._renderers[key] = Renderer(mesh, cam, nthreads=1, **kw)
        return self._renderers[key]

    def draw(self, spec, position, R_gl: np.ndarray, sensor_type) -> np.ndarray:
        """The observation buffer of one sensor at ``position`` with OpenGL camera rotation
        ``R_gl``, stored bottom row first like the GL framebuffer the real sensor reads."""
        from ._config import SensorType

        T = np.eye(4)
        T[:3, :3] = R_gl @ np.diag([1.0, -1.0, -1.0])  # optical (x right, y down, z forward)
        T[:3, 3] = position
        h, w = int(spec.resolution[0]), int(spec.resolution[1])
        if sensor_type == SensorType.SEMANTIC:
            if self.semantic_mesh is None:
                image = np.zeros((h, w), np.uint32)
            else:
                _, _, ids = self._renderer("semantic", spec).render(T)
                image = ids.astype(np.uint32)
        else:
            key = (int(spec.resolution[0]), int(spec.resolution[1]), float(spec.hfov), float(spec.near), float(spec.far),
                   T.tobytes())
            if self._last_render is None or self._last_render[0] != key:  # COLOR and DEPTH at one pose: one cast
                self._last_render = (key, self._renderer("render", spec).render(T))
            rgb, depth, _ = self._last_render[1]
            if sensor_type == SensorType.DEPTH:
                image = depth.astype(np.float32)
            else:
                image = np.concatenate([rgb, np.full((h, w, 1), 255, np.uint8)], axis=2)
        return np.ascontiguousarray(image[::-1])  # GL rows run bottom-up; get_observation flips them back


def vfov(hfov_deg: float, h: int, w: int) -> float:
    return 2 * math.degrees(math.atan(math.tan(math.radians(hfov_deg) / 2) * h / w))

"""Triangle mesh of a synthetic household (walls, floors, ceilings, objects, parts).

The renderer ray-casts this mesh; episode folders store it as a PLY with
per-vertex colour plus a sidecar ``.npz`` holding the per-triangle instance id
(PLY readers drop custom face properties, the npz keeps them lossless).

Instance id 0 = structure (walls, floor, ceiling); objects keep their own id,
and an object's parts carry the owning object's id but their own colour.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from personal.world.model import Box, Scene

SLAB_THICKNESS = 0.05  # floor / ceiling slabs, metres

# Unit cube corners, index = 4*ix + 2*iy + iz with i* in {0, 1}.
_CORNERS = np.array([[ix, iy, iz] for ix in (0, 1) for iy in (0, 1) for iz in (0, 1)], dtype=np.float32)
# Two triangles per face, counter-clockwise seen from outside (normal points out).
_FACES = np.array(
    [
        [0, 1, 3], [0, 3, 2],  # x = 0  (normal -x)
        [4, 6, 7], [4, 7, 5],  # x = 1  (normal +x)
        [0, 4, 5], [0, 5, 1],  # y = 0  (normal -y)
        [2, 3, 7], [2, 7, 6],  # y = 1  (normal +y)
        [0, 2, 6], [0, 6, 4],  # z = 0  (normal -z)
        [1, 5, 7], [1, 7, 3],  # z = 1  (normal +z)
    ],
    dtype=np.int32,
)


@dataclass
class SceneMesh:
    vertices: np.ndarray  # (N, 3) float32, map frame
    triangles: np.ndarray  # (M, 3) int32
    triangle_instance_id: np.ndarray  # (M,) int32, 0 = structure
    triangle_rgb: np.ndarray  # (M, 3) uint8

    @property
    def n_triangles(self) -> int:
        return int(self.triangles.shape[0])

    def triangle_normals(self) -> np.ndarray:
        v = self.vertices[self.triangles]
        n = np.cross(v[:, 1] - v[:, 0], v[:, 2] - v[:, 0])
        norm = np.linalg.norm(n, axis=1, keepdims=True)
        return n / np.maximum(norm, 1e-12)


class _Builder:
    def __init__(self) -> None:
        self.verts: list[np.ndarray] = []
        self.tris: list[np.ndarray] = []
        self.ids: list[int] = []
        self.rgbs: list[tuple[int, int, int]] = []
        self.n_verts = 0

    def add_box(self, box: Box, instance_id: int, rgb) -> None:
        lo = np.asarray(box.min, dtype=np.float32)
        size = np.asarray(box.size, dtype=np.float32)
        if np.any(size <= 0):
            raise ValueError(f"box with non-positive size {tuple(box.size)} (instance {instance_id})")
        self.verts.append(lo + _CORNERS * size)
        self.tris.append(_FACES + self.n_verts)
        self.n_verts += 8
        self.ids.append(instance_id)
        self.rgbs.append(tuple(int(c) for c in rgb))

    def build(self) -> SceneMesh:
        n_faces = len(_FACES)
        return SceneMesh(
            vertices=np.concatenate(self.verts).astype(np.float32),
            triangles=np.concatenate(self.tris).astype(np.int32),
            triangle_instance_id=np.repeat(np.asarray(self.ids, dtype=np.int32), n_faces),
            triangle_rgb=np.repeat(np.asarray(self.rgbs, dtype=np.uint8), n_faces, axis=0),
        )


def _slab_footprints(scene: Scene, floor_index: int) -> list[tuple[float, float, float, float]]:
    rooms = [r.bounds for r in scene.rooms if r.floor == floor_index]
    if rooms:
        return rooms
    return [scene.bounds()]


def scene_mesh(scene: Scene) -> SceneMesh:
    """Boxes of every wall, object and part, plus floor and ceiling slabs per room."""
    b = _Builder()
    for wall in scene.walls:
        b.add_box(wall.box, 0, wall.rgb)
    for fl in scene.floors:
        for x0, y0, x1, y1 in _slab_footprints(scene, fl.index):
            cx, cy, sx, sy = (x0 + x1) / 2, (y0 + y1) / 2, x1 - x0, y1 - y0
            # floor slab: top face at fl.z; ceiling slab: bottom face at fl.z + height
            b.add_box(Box((cx, cy, fl.z - SLAB_THICKNESS / 2), (sx, sy, SLAB_THICKNESS)), 0, scene.floor_rgb)
            ceil_z = fl.z + fl.height + SLAB_THICKNESS / 2
            b.add_box(Box((cx, cy, ceil_z), (sx, sy, SLAB_THICKNESS)), 0, scene.ceiling_rgb)
    for obj in scene.objects:
        b.add_box(obj.box, obj.instance_id, obj.rgb)
        for part in obj.parts:
            b.add_box(part.box, obj.instance_id, part.rgb)
    return b.build()


def _sidecar(path: Path) -> Path:
    return path.with_suffix(".npz")


def write_ply(mesh: SceneMesh, path: str | Path) -> Path:
    """Binary PLY with per-vertex colour (vertices are duplicated per triangle so
    each face keeps its own flat colour) plus ``<path>.npz`` with the exact arrays."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tri_verts = mesh.vertices[mesh.triangles].reshape(-1, 3).astype("<f4")
    colours = np.repeat(mesh.triangle_rgb, 3, axis=0).astype(np.uint8)
    n_v, n_f = len(tri_verts), mesh.n_triangles
    vert_dtype = np.dtype([("x", "<f4"), ("y", "<f4"), ("z", "<f4"), ("red", "u1"), ("green", "u1"), ("blue", "u1")])
    vdata = np.empty(n_v, dtype=vert_dtype)
    vdata["x"], vdata["y"], vdata["z"] = tri_verts[:, 0], tri_verts[:, 1], tri_verts[:, 2]
    vdata["red"], vdata["green"], vdata["blue"] = colours[:, 0], colours[:, 1], colours[:, 2]
    face_dtype = np.dtype([("n", "u1"), ("idx", "<i4", (3,)), ("instance_id", "<i4")])
    fdata = np.empty(n_f, dtype=face_dtype)
    fdata["n"] = 3
    fdata["idx"] = np.arange(n_v, dtype=np.int32).reshape(-1, 3)
    fdata["instance_id"] = mesh.triangle_instance_id
    header = (
        "ply\nformat binary_little_endian 1.0\n"
        f"element vertex {n_v}\n"
        "property float x\nproperty float y\nproperty float z\n"
        "property uchar red\nproperty uchar green\nproperty uchar blue\n"
        f"element face {n_f}\n"
        "property list uchar int vertex_indices\nproperty int instance_id\n"
        "end_header\n"
    )
    with open(path, "wb") as f:
        f.write(header.encode("ascii"))
        f.write(vdata.tobytes())
        f.write(fdata.tobytes())
    np.savez_compressed(
        _sidecar(path),
        vertices=mesh.vertices,
        triangles=mesh.triangles,
        triangle_instance_id=mesh.triangle_instance_id,
        triangle_rgb=mesh.triangle_rgb,
    )
    return path


def read_ply(path: str | Path) -> SceneMesh:
    """Read a mesh written by :func:`write_ply` (uses the npz sidecar when present,
    otherwise parses the binary PLY written here)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"mesh file not found: {path}")
    side = _sidecar(path)
    if side.exists():
        with np.load(side) as d:
            return SceneMesh(
                vertices=d["vertices"].astype(np.float32),
                triangles=d["triangles"].astype(np.int32),
                triangle_instance_id=d["triangle_instance_id"].astype(np.int32),
                triangle_rgb=d["triangle_rgb"].astype(np.uint8),
            )
    return _parse_own_ply(path)


def _parse_own_ply(path: Path) -> SceneMesh:
    raw = path.read_bytes()
    end = raw.find(b"end_header\n")
    if not raw.startswith(b"ply\n") or end < 0:
        raise ValueError(f"{path}: not a PLY file (missing 'ply' magic or 'end_header')")
    header = raw[:end].decode("ascii").splitlines()
    if "format binary_little_endian 1.0" not in header or "property int instance_id" not in header:
        raise ValueError(f"{path}: unsupported PLY layout (expected the layout written by personal.world.mesh)")
    counts = {ln.split()[1]: int(ln.split()[2]) for ln in header if ln.startswith("element")}
    vert_dtype = np.dtype([("x", "<f4"), ("y", "<f4"), ("z", "<f4"), ("red", "u1"), ("green", "u1"), ("blue", "u1")])
    face_dtype = np.dtype([("n", "u1"), ("idx", "<i4", (3,)), ("instance_id", "<i4")])
    off = end + len(b"end_header\n")
    v = np.frombuffer(raw, dtype=vert_dtype, count=counts["vertex"], offset=off)
    f = np.frombuffer(raw, dtype=face_dtype, count=counts["face"], offset=off + v.nbytes)
    verts = np.stack([v["x"], v["y"], v["z"]], axis=1).astype(np.float32)
    tris = f["idx"].astype(np.int32)
    rgb = np.stack([v["red"], v["green"], v["blue"]], axis=1)[tris[:, 0]].astype(np.uint8)
    return SceneMesh(verts, tris, f["instance_id"].astype(np.int32), rgb)

"""Triangle mesh of a synthetic household (walls, floors, ceilings, door trims, objects).

The renderer ray-casts this mesh; episode folders store it as a PLY with per-vertex colour
plus a sidecar ``.npz`` holding every per-triangle array (PLY readers drop custom face
properties; the npz keeps them lossless).

Instance id 0 = structure (walls, floor, ceiling, door trims); objects keep their own id,
and an object's parts carry the owning object's id but their own colour. Objects are drawn
with their category's shape (``personal.world.shapes``) inside their box; per triangle the
mesh also carries what the renderer needs to draw every stated attribute: a pattern (texture
id, second colour, period) in the object's own surface coordinates (``triangle_uv``), a
material class, a structure class (wall / floor / ceiling / door) and the room's light gain;
the household's lighting rides along (``lighting``).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from personal.world import appearance as ap
from personal.world import shapes
from personal.world.model import Box, Scene, SceneObject

SLAB_THICKNESS = 0.05  # floor / ceiling slabs, metres
DOOR_HEIGHT = 2.05  # door trims and the lintel above each 1 m door gap
TRIM_W, TRIM_PROUD = 0.06, 0.02

# structure classes per triangle (labels for perception training)
STRUCTURE_CLASSES = ("object", "wall", "floor", "ceiling", "door")
OBJECT, WALL, FLOOR, CEILING, DOOR = range(5)

# fixed looks of shape pieces that are not the object's own colour
FIXED_ROLES = {
    "dark": ((32, 32, 36), "plastic"), "light": ((236, 232, 220), "matte"), "metal": ((195, 200, 205), "metal"),
    "leaf": ((50, 120, 55), "matte"), "skin": ((232, 192, 162), "matte"),
    "book_a": ((150, 40, 40), "matte"), "book_b": ((40, 70, 140), "matte"), "book_c": ((210, 190, 120), "matte"),
    "book_d": ((40, 110, 70), "matte"),
}
FABRIC_PARTS = {"pillow", "mattress", "cushion", "seat cushion", "backrest", "shade", "strap", "pocket", "fringe", "piping",
                "tassels", "bow tie", "pillowcase trim", "border", "band", "laces", "pom-pom", "ears", "hair"}
WOOD_PARTS = {"headboard", "neck"}
# catalog parts a category's shape already draws (in the part's colour)
SHAPE_DRAWS_PART = {("bookshelf", "books"), ("sofa", "backrest"), ("armchair", "backrest"), ("toilet", "lid")}


@dataclass
class SceneMesh:
    vertices: np.ndarray  # (N, 3) float32, map frame
    triangles: np.ndarray  # (M, 3) int32
    triangle_instance_id: np.ndarray  # (M,) int32, 0 = structure
    triangle_rgb: np.ndarray  # (M, 3) uint8, base colour
    triangle_rgb2: np.ndarray | None = None  # (M, 3) uint8, the pattern's second colour
    triangle_pattern: np.ndarray | None = None  # (M,) int16 texture id (appearance.TEXTURE_ID), 0 = plain
    triangle_period: np.ndarray | None = None  # (M,) float32 metres per pattern repeat
    triangle_material: np.ndarray | None = None  # (M,) uint8 appearance.MATERIAL_ID
    triangle_uv: np.ndarray | None = None  # (M, 3, 2) float32 surface coordinates (m) per corner
    triangle_class: np.ndarray | None = None  # (M,) uint8 STRUCTURE_CLASSES index
    triangle_gain: np.ndarray | None = None  # (M,) float32 light gain of the triangle's room
    lighting: ap.Lighting = field(default_factory=ap.Lighting)

    def __post_init__(self) -> None:
        m = int(self.triangles.shape[0])
        defaults = {
            "triangle_rgb2": lambda: np.array(self.triangle_rgb, np.uint8),
            "triangle_pattern": lambda: np.zeros(m, np.int16),
            "triangle_period": lambda: np.full(m, 0.1, np.float32),
            "triangle_material": lambda: np.full(m, ap.MATERIAL_ID["matte"], np.uint8),
            "triangle_uv": lambda: np.zeros((m, 3, 2), np.float32),
            "triangle_class": lambda: np.where(np.asarray(self.triangle_instance_id) > 0, OBJECT, WALL).astype(np.uint8),
            "triangle_gain": lambda: np.ones(m, np.float32),
        }
        for name, make in defaults.items():
            if getattr(self, name) is None:
                setattr(self, name, make())

    @property
    def n_triangles(self) -> int:
        return int(self.triangles.shape[0])

    def triangle_normals(self) -> np.ndarray:
        v = self.vertices[self.triangles]
        n = np.cross(v[:, 1] - v[:, 0], v[:, 2] - v[:, 0])
        norm = np.linalg.norm(n, axis=1, keepdims=True)
        return n / np.maximum(norm, 1e-12)

    def subset(self, keep: np.ndarray) -> "SceneMesh":
        """The triangles selected by ``keep`` (bool mask or indices), every attribute kept."""
        return SceneMesh(self.vertices, self.triangles[keep], *(getattr(self, n)[keep] for n in _TRIANGLE_ARRAYS[1:]),
                         lighting=self.lighting)


_TRIANGLE_ARRAYS = ("triangles", "triangle_instance_id", "triangle_rgb", "triangle_rgb2", "triangle_pattern", "triangle_period",
                    "triangle_material", "triangle_uv", "triangle_class", "triangle_gain")


@dataclass
class _Look:
    rgb: tuple
    material: str = "matte"
    pattern: str = "none"
    rgb2: tuple | None = None
    period: float = 0.1
    cls: int = OBJECT
    gain: float = 1.0


class _Builder:
    def __init__(self) -> None:
        self.geoms: list[shapes.Geom] = []
        self.looks: list[tuple[int, _Look, int]] = []  # (instance id, look, n triangles)

    def add(self, geom: shapes.Geom, instance_id: int, look: _Look) -> None:
        if len(geom.tris):
            self.geoms.append(geom)
            self.looks.append((instance_id, look, len(geom.tris)))

    def add_box(self, box: Box, instance_id: int, rgb, look: _Look | None = None) -> None:
        if np.any(np.asarray(box.size, float) <= 0):
            raise ValueError(f"box with non-positive size {tuple(box.size)} (instance {instance_id})")
        self.add(shapes.box(box.center, box.size, world_uv=instance_id == 0), instance_id, look or _Look(tuple(int(c) for c in rgb)))

    def build(self, lighting: ap.Lighting) -> SceneMesh:
        g = shapes.Geom.concat(self.geoms)
        counts = np.array([n for _, _, n in self.looks])

        def per_tri(values, dtype):
            return np.repeat(np.asarray(values, dtype=dtype), counts, axis=0)

        looks = [lk for _, lk, _ in self.looks]
        return SceneMesh(
            vertices=g.verts.astype(np.float32), triangles=g.tris.astype(np.int32),
            triangle_instance_id=per_tri([i for i, _, _ in self.looks], np.int32),
            triangle_rgb=per_tri([lk.rgb for lk in looks], np.uint8),
            triangle_rgb2=per_tri([lk.rgb2 or lk.rgb for lk in looks], np.uint8),
            triangle_pattern=per_tri([ap.TEXTURE_ID.get(lk.pattern, 0) for lk in looks], np.int16),
            triangle_period=per_tri([lk.period for lk in looks], np.float32),
            triangle_material=per_tri([ap.MATERIAL_ID[lk.material] for lk in looks], np.uint8),
            triangle_uv=g.uv.astype(np.float32), triangle_class=per_tri([lk.cls for lk in looks], np.uint8),
            triangle_gain=per_tri([lk.gain for lk in looks], np.float32), lighting=lighting,
        )


def _slab_footprints(scene: Scene, floor_index: int) -> list[tuple[float, float, float, float, str]]:
    rooms = [(*r.bounds, r.room_id) for r in scene.rooms if r.floor == floor_index]
    if rooms:
        return rooms
    return [(*scene.bounds(), "")]


def door_gaps(scene: Scene) -> list[tuple[str, float, float, float, float, float]]:
    """Door openings read off the walls: (axis, coord, lo, hi, z0, height) where two collinear
    wall pieces of one floor leave a gap of about 1 m (the generator's doors)."""
    lines: dict[tuple, list[Box]] = {}
    for w in scene.walls:
        b = w.box
        axis = "x" if b.size[0] < b.size[1] else "y"  # "x": a wall at constant x
        key = (axis, round(b.center[0] if axis == "x" else b.center[1], 3), round(b.min[2], 3))
        lines.setdefault(key, []).append(b)
    gaps = []
    for (axis, coord, z0), boxes in lines.items():
        k = 1 if axis == "x" else 0
        spans = sorted((b.min[k], b.max[k], b.size[2]) for b in boxes)
        for (_, hi, hgt), (lo, _, _) in zip(spans, spans[1:]):
            if 0.8 <= lo - hi <= 1.2:
                gaps.append((axis, coord, hi, lo, z0, hgt))
    return gaps


def _room_finder(scene: Scene):
    def room_at(x, y, z):
        for r in scene.rooms:
            fl = next((f for f in scene.floors if f.index == r.floor), None)
            if fl is not None and fl.z - 0.1 <= z <= fl.z + fl.height + 0.1 and r.contains(x, y):
                return r.room_id
        return None

    return room_at


def _hidden_face(boxes: np.ndarray, i: int, axis: int, side: int) -> bool:
    """Whether face (axis, side) of wall box i lies inside a coplanar, same-facing face of
    another wall (a wall end flush with the wall it meets): drawing both would z-fight."""
    lo, hi = boxes[:, 0], boxes[:, 1]
    plane = hi[i, axis] if side else lo[i, axis]
    others = np.abs((hi[:, axis] if side else lo[:, axis]) - plane) < 1e-6
    others[i] = False
    for a in range(3):
        if a != axis:
            others &= (lo[:, a] <= lo[i, a] + 1e-6) & (hi[:, a] >= hi[i, a] - 1e-6)
    return bool(others.any())


def _add_walls(b: _Builder, scene: Scene, look: ap.HouseLook) -> None:
    room_at = _room_finder(scene)
    gain = look.lighting.room_gain
    boxes = np.array([[w.box.min, w.box.max] for w in scene.walls], float).reshape(-1, 2, 3)
    for i, wall in enumerate(scene.walls):
        g = shapes.box(wall.box.center, wall.box.size, world_uv=True)
        c, s = np.asarray(wall.box.center), np.asarray(wall.box.size)
        for f in range(6):  # faces in shapes.box order: axis f // 2, side f % 2, two triangles each
            axis, side = divmod(f, 2)
            if _hidden_face(boxes, i, axis, side):
                continue
            p = c.copy()
            p[axis] += (side - 0.5) * s[axis] + (0.06 if side else -0.06)
            rid = room_at(*p)
            rl = look.rooms.get(rid)
            face = shapes.Geom(g.verts, g.tris[2 * f:2 * f + 2], g.uv[2 * f:2 * f + 2])
            if rl is None:
                b.add(face, 0, _Look(tuple(wall.rgb), "paint", cls=WALL))
            else:
                b.add(face, 0, _Look(rl.wall_rgb, rl.wall_material, cls=WALL, gain=gain.get(rid, 1.0)))


def _add_doors(b: _Builder, scene: Scene, look: ap.HouseLook) -> None:
    from personal.world.generator import WALL_THICKNESS

    trim = _Look(look.trim_rgb, "wood" if look.trim_rgb[0] < 230 else "paint", cls=DOOR)
    for axis, coord, lo, hi, z0, height in door_gaps(scene):
        t = WALL_THICKNESS + 2 * TRIM_PROUD
        # jambs cover the wall ends and reach 5 mm into the opening (no coincident faces)
        spans = ((lo - TRIM_W / 2 + 0.005, TRIM_W, DOOR_HEIGHT), (hi + TRIM_W / 2 - 0.005, TRIM_W, DOOR_HEIGHT),
                 ((lo + hi) / 2, hi - lo + 2 * TRIM_W, TRIM_W))
        for along, length, hgt in spans:
            zc = z0 + (hgt / 2 if hgt == DOOR_HEIGHT else DOOR_HEIGHT + TRIM_W / 2)
            centre, size = ((coord, along, zc), (t, length, hgt)) if axis == "x" else ((along, coord, zc), (length, t, hgt))
            b.add(shapes.box(centre, size, world_uv=True), 0, trim)
        lintel_h = height - DOOR_HEIGHT - TRIM_W
        if lintel_h > 0.01:
            zc = z0 + DOOR_HEIGHT + TRIM_W + lintel_h / 2
            centre, size = ((coord, (lo + hi) / 2, zc), (WALL_THICKNESS, hi - lo, lintel_h)) if axis == "x" else \
                (((lo + hi) / 2, coord, zc), (hi - lo, WALL_THICKNESS, lintel_h))
            b.add(shapes.box(centre, size, world_uv=True), 0, _Look(ap.WALL_PAINTS[0], "paint", cls=WALL))


def _object_looks(obj: SceneObject, look: ap.HouseLook):
    """role -> _Look for one object's pieces."""
    gain = look.lighting.room_gain.get(obj.room_id, 1.0)
    attrs = obj.attributes or {}
    mat = ap.MATERIAL_OF.get(attrs.get("material", ""), "matte")
    pattern = attrs.get("pattern", "plain")
    body = _Look(tuple(obj.rgb), mat, pattern if pattern in ap.PATTERN_NAMES else "none", ap.contrast_colour(tuple(obj.rgb)),
                 ap.pattern_period(obj.box.size), OBJECT, gain)
    accent = _Look(tuple(int(0.72 * c) for c in obj.rgb), mat, cls=OBJECT, gain=gain)
    parts = {p.name: p for p in obj.parts}

    def role_look(role: str) -> _Look:
        if role == "body":
            return body
        if role == "accent":
            return accent
        if role.startswith("part:"):
            part = parts.get(role[5:])
            return _part_look(part, mat, gain) if part else accent
        rgb, m = FIXED_ROLES.get(role, (tuple(obj.rgb), mat))
        return _Look(rgb, m, cls=OBJECT, gain=gain)

    return role_look


def _part_look(part, body_material: str, gain: float) -> _Look:
    if part.color in ("silver", "gold"):
        mat = "metal"
    elif part.name in FABRIC_PARTS:
        mat = "fabric"
    elif part.name in WOOD_PARTS:
        mat = "wood"
    else:
        mat = body_material if body_material in ("fabric", "wood", "leather", "metal", "ceramic") else "plastic"
    return _Look(tuple(part.rgb), mat, cls=OBJECT, gain=gain)


def _unturn(dx: float, dy: float, k: int) -> tuple[float, float]:
    for _ in range(k % 4):
        dx, dy = dy, -dx
    return dx, dy


def object_geometry(obj: SceneObject, look: ap.HouseLook | None = None) -> list[tuple[shapes.Geom, _Look]]:
    """(map-frame geometry, look) of every piece of one object: its category's body shape in its
    box and each catalog part drawn by its part recipe, turned by the object's quarter turns."""
    look = look or ap.HouseLook({}, ap.TRIMS[0], (245, 245, 245), ap.Lighting())
    k = int((obj.attributes or {}).get("yaw_quarter_turns", 0))
    sx, sy, sz = obj.box.size
    local = (sy, sx, sz) if k % 2 else (sx, sy, sz)
    role_look = _object_looks(obj, look)
    centre = np.asarray(obj.box.center, float)
    out = []
    for piece in shapes.body_pieces(obj.category, local):
        role = piece.role
        if obj.category == "bookshelf" and role.startswith("book_") and any(p.name == "books" for p in obj.parts) \
                and role in ("book_a", "book_c"):
            role = "part:books"  # most books on the shelf take the caption's book colour
        out.append((piece.geom.turned(k).moved(centre), role_look(role)))
    for part in obj.parts:
        if (obj.category, part.name) in SHAPE_DRAWS_PART:
            continue
        pc = np.asarray(part.box.center, float)
        rel = np.array([*_unturn(pc[0] - centre[0], pc[1] - centre[1], k), pc[2] - centre[2]])
        psx, psy, psz = part.box.size
        plocal = (psy, psx, psz) if k % 2 else (psx, psy, psz)
        g = shapes.part_geom(obj.category, part.name, plocal, rel, local)
        out.append((g.moved(rel).turned(k).moved(centre), role_look("part:" + part.name)))
    return out


def scene_mesh(scene: Scene) -> SceneMesh:
    """Walls (per-room paint), floor and ceiling slabs per room, door trims and lintels, and
    every object drawn with its category's shape, pattern and material."""
    look = ap.house_look(scene)
    gain = look.lighting.room_gain
    b = _Builder()
    _add_walls(b, scene, look)
    _add_doors(b, scene, look)
    for fl in scene.floors:
        for x0, y0, x1, y1, rid in _slab_footprints(scene, fl.index):
            cx, cy, sx, sy = (x0 + x1) / 2, (y0 + y1) / 2, x1 - x0, y1 - y0
            rl = look.rooms.get(rid)
            floor_look = _Look(rl.floor_rgb, rl.floor_material, cls=FLOOR, gain=gain.get(rid, 1.0)) if rl else \
                _Look(tuple(scene.floor_rgb), "planks", cls=FLOOR)
            # floor slab: top face at fl.z; ceiling slab: bottom face at fl.z + height
            b.add_box(Box((cx, cy, fl.z - SLAB_THICKNESS / 2), (sx, sy, SLAB_THICKNESS)), 0, floor_look.rgb, floor_look)
            ceil_z = fl.z + fl.height + SLAB_THICKNESS / 2
            ceil = _Look(look.ceiling_rgb, "paint", cls=CEILING, gain=gain.get(rid, 1.0))
            b.add_box(Box((cx, cy, ceil_z), (sx, sy, SLAB_THICKNESS)), 0, ceil.rgb, ceil)
    for obj in scene.objects:
        for g, lk in object_geometry(obj, look):
            b.add(g, obj.instance_id, lk)
    return b.build(look.lighting)


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
        _sidecar(path), vertices=mesh.vertices, lighting=np.array(json.dumps(mesh.lighting.to_dict())),
        **{name: getattr(mesh, name) for name in _TRIANGLE_ARRAYS},
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
            extra = {name: d[name] for name in _TRIANGLE_ARRAYS[3:] if name in d.files}
            lighting = ap.Lighting.from_dict(json.loads(str(d["lighting"]))) if "lighting" in d.files else ap.Lighting()
            return SceneMesh(
                vertices=d["vertices"].astype(np.float32),
                triangles=d["triangles"].astype(np.int32),
                triangle_instance_id=d["triangle_instance_id"].astype(np.int32),
                triangle_rgb=d["triangle_rgb"].astype(np.uint8),
                lighting=lighting, **extra,
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

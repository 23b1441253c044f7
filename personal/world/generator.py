"""Procedural multi-room households (seeded, deterministic, CPU only).

Layout: each floor's rectangle is split recursively (BSP) into 4-8 named rooms;
a random spanning tree over adjacent rooms (plus a few extra links) gets door
gaps of ``DOOR_WIDTH`` so every room is reachable. Furniture stands against the
walls or free in the room, never in front of doors, and every placement is
checked so that an agent of ``AGENT_RADIUS`` can still reach all doors of the
room. Small objects go on or under furniture. Objects get PersONAL-style
captions ("the striped blue mug with a black handle on the kitchen counter").
"""
from __future__ import annotations

import math
import random
from collections import Counter
from dataclasses import dataclass

import numpy as np
from scipy import ndimage

from personal.world import catalog as cat
from personal.world.model import Box, Floor, ObjectPart, Room, Scene, SceneObject, Wall

AGENT_RADIUS = 0.18
WALL_THICKNESS = 0.10
DOOR_WIDTH = 1.0  # nominal gap; wall ends are not extended into it, clear width stays 1.0 m
DOOR_MARGIN = 0.3  # door gap keeps this distance from the ends of a shared wall
FLOOR_HEIGHT = 2.6
FLOOR_SPACING = 3.0  # second floor stacked at z = 3.0
MIN_ROOM_SIDE = 2.6
GRID_RES = 0.05
MIN_OBJECTS_PER_FLOOR = 44
PART_PAD = 0.004
MAX_SAME_SMALL_PER_ROOM = 2  # a pair allows "one of" queries without cluttering
WALL_RGB = (225, 220, 210)

GROUND_ROOMS = ["living room", "kitchen", "bathroom", "office", "dining room", "hallway", "master bedroom", "child's bedroom"]
GROUND_ROOMS_TWO_FLOORS = ["living room", "kitchen", "bathroom", "dining room", "office", "hallway", "laundry room", "playroom"]
UPPER_ROOMS = ["master bedroom", "child's bedroom", "bathroom", "guest bedroom", "study", "playroom", "laundry room", "hallway"]
SEAT_LIKE = {"sofa", "armchair", "chair", "office chair"}  # objects sit at half height on these
# Room names of larger homes and the catalog room type whose furniture and objects they get
# (every alias ends in a word the ownership extractor knows as a room word).
ROOM_ALIASES = {
    "family room": "living room", "sitting room": "living room", "den": "living room",
    "second bathroom": "bathroom", "powder room": "bathroom", "nursery": "child's bedroom",
    "second bedroom": "guest bedroom", "library": "study", "utility room": "laundry room",
    "corridor": "hallway", "entryway": "hallway", "home office": "office",
}
LARGE_HOME_ROOMS = ["living room", "kitchen", "bathroom", "dining room", "master bedroom", "office", "hallway",
                    "child's bedroom", "guest bedroom", "study", "laundry room", "playroom", *ROOM_ALIASES]


def room_type(name: str) -> str:
    """The catalog room type of a room name (itself, or what an alias stands for)."""
    return ROOM_ALIASES.get(name, name)


@dataclass(frozen=True)
class SizePreset:
    """How big a generated household is. ``default`` is the project's original size; ``hm3d``
    follows published HM3D figures (``source`` says which, docs/simulator.md the details)."""

    name: str
    width_m: tuple[float, float]  # floor rectangle, short side (uniform range)
    depth_m: tuple[float, float]  # long side
    rooms_per_floor: tuple[int, int]
    floors: int = 1
    room_pool: tuple[str, ...] = tuple(GROUND_ROOMS)
    small_per_room: tuple[int, int] = (4, 8)
    max_same_small_per_room: int = MAX_SAME_SMALL_PER_ROOM
    max_objects: int = 120
    scene_prefix: str = "synth"
    source: str = ""


PRESETS = {
    "default": SizePreset("default", (7.5, 9.0), (9.0, 11.0), (4, 8), source="the project's original households"),
    # HM3D: 3,100 rooms in the 216 HM3DSem spaces = 14.4 rooms a scene (Yadav et al. 2023, arXiv
    # 2210.05633, abstract / Table 1); 112.5k m2 of navigable space over HM3D's 1,000 scenes = 112 m2
    # a scene (Ramakrishnan et al. 2021, arXiv 2109.08238; PersONAL §II: "over 112,000 m2"). No
    # traceable per-scene floor count was found, so one floor (episodes never change floors).
    "hm3d": SizePreset("hm3d", (11.0, 13.0), (15.0, 18.0), (12, 17), room_pool=tuple(LARGE_HOME_ROOMS),
                       small_per_room=(5, 9), max_same_small_per_room=3, max_objects=260, scene_prefix="hm3dsize",
                       source="HM3D figures: 14.4 rooms a scene (HM3DSem, arXiv 2210.05633), 112 m2 navigable a scene "
                              "(HM3D, arXiv 2109.08238)"),
}


def size_preset(name: str) -> SizePreset:
    if name not in PRESETS:
        raise ValueError(f"unknown household size preset {name!r} (known: {', '.join(PRESETS)})")
    return PRESETS[name]


# ---------------------------------------------------------------- layout
def _split_rooms(rng: random.Random, w: float, h: float, n: int) -> list[tuple[float, float, float, float]]:
    rects = [(0.0, 0.0, w, h)]
    while len(rects) < n:
        rects.sort(key=lambda r: (r[2] - r[0]) * (r[3] - r[1]), reverse=True)
        for i, (x0, y0, x1, y1) in enumerate(rects):
            vertical = (x1 - x0) >= (y1 - y0)  # split the longer side
            lo, hi = (x0, x1) if vertical else (y0, y1)
            if hi - lo < 2 * MIN_ROOM_SIDE:
                continue
            cut = round(rng.uniform(max(lo + MIN_ROOM_SIDE, lo + 0.35 * (hi - lo)), min(hi - MIN_ROOM_SIDE, lo + 0.65 * (hi - lo))), 1)
            a, b = ((x0, y0, cut, y1), (cut, y0, x1, y1)) if vertical else ((x0, y0, x1, cut), (x0, cut, x1, y1))
            rects[i:i + 1] = [a, b]
            break
        else:
            break  # nothing splittable
    return sorted(rects, key=lambda r: (r[1], r[0]))


def _shared_edge(a, b):
    """(axis, coord, lo, hi) of the wall shared by rooms a and b, or None.
    axis 'x' = wall at constant x (vertical in top view)."""
    for axis, (a0, a1, b0, b1, alo, ahi, blo, bhi) in (
        ("x", (a[0], a[2], b[0], b[2], a[1], a[3], b[1], b[3])),
        ("y", (a[1], a[3], b[1], b[3], a[0], a[2], b[0], b[2])),
    ):
        for c1, c2 in ((a1, b0), (a0, b1)):
            if abs(c1 - c2) < 1e-6:
                lo, hi = max(alo, blo), min(ahi, bhi)
                if hi - lo >= DOOR_WIDTH + 2 * DOOR_MARGIN:
                    return axis, c1, lo, hi
    return None


def _plan_doors(rng: random.Random, rects) -> list[tuple[str, float, float, float, int, int]] | None:
    """Spanning tree of door links (+ some extras). None if rooms cannot all connect."""
    edges = [(i, j, e) for i in range(len(rects)) for j in range(i + 1, len(rects)) if (e := _shared_edge(rects[i], rects[j]))]
    rng.shuffle(edges)
    parent = list(range(len(rects)))

    def find(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    doors = []
    for i, j, (axis, coord, lo, hi) in edges:
        tree_edge = find(i) != find(j)
        if tree_edge or rng.random() < 0.25:
            parent[find(i)] = find(j)
            centre = rng.uniform(lo + DOOR_MARGIN + DOOR_WIDTH / 2, hi - DOOR_MARGIN - DOOR_WIDTH / 2)
            doors.append((axis, coord, centre - DOOR_WIDTH / 2, centre + DOOR_WIDTH / 2, i, j))
    if len({find(i) for i in range(len(rects))}) != 1:
        return None
    return doors


def _merge(intervals):
    out = []
    for lo, hi in sorted(intervals):
        if out and lo <= out[-1][1] + 1e-6:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return out


def _walls(rects, doors, z0: float, height: float) -> list[Wall]:
    lines: dict[tuple[str, float], list] = {}
    for x0, y0, x1, y1 in rects:
        for key, iv in ((("x", x0), (y0, y1)), (("x", x1), (y0, y1)), (("y", y0), (x0, x1)), (("y", y1), (x0, x1))):
            lines.setdefault((key[0], round(key[1], 4)), []).append(iv)
    half = WALL_THICKNESS / 2
    walls = []
    for (axis, coord), ivs in sorted(lines.items()):
        for lo, hi in _merge(ivs):
            pieces = [[lo - half, hi + half]]  # extend ends to close corners
            for d_axis, d_coord, d_lo, d_hi, *_ in doors:
                if d_axis == axis and abs(d_coord - coord) < 1e-6:
                    pieces = [p for a, b in pieces for p in ([a, min(b, d_lo)], [max(a, d_hi), b]) if p[1] - p[0] > 1e-3]
            for a, b in pieces:
                mid, length = (a + b) / 2, b - a
                if axis == "x":
                    box = Box((coord, mid, z0 + height / 2), (WALL_THICKNESS, length, height))
                else:
                    box = Box((mid, coord, z0 + height / 2), (length, WALL_THICKNESS, height))
                walls.append(Wall(box=box, rgb=WALL_RGB))
    return walls


# ---------------------------------------------------------------- objects
def _rotated(size, k):
    return (size[1], size[0], size[2]) if k % 2 else tuple(size)


def _rot_offset(dx, dy, k):
    for _ in range(k % 4):
        dx, dy = -dy, dx
    return dx, dy


def _make_parts(rng, c: cat.Category, full: Box, k: int) -> list[ObjectPart]:
    parts = []
    for spec in c.parts:
        dx, dy = _rot_offset(spec.offset[0] * c.size[0], spec.offset[1] * c.size[1], k)
        # +4 mm so part faces never coincide with the object's faces (no z-fighting; the part shows)
        size = _rotated(tuple(round(s * f + PART_PAD, 4) for s, f in zip(c.size, spec.scale)), k)
        colour = rng.choice(spec.colors)
        centre = (full.center[0] + dx, full.center[1] + dy, full.center[2] + spec.offset[2] * c.size[2])
        parts.append(ObjectPart(spec.name, colour, cat.COLORS[colour], Box(centre, size)))
    if c.open_below > 0:  # four legs hold the top slab up
        sx, sy, _ = full.size
        leg_colour = parts[0].color if parts and "leg" in parts[0].name else rng.choice(("black", "brown", "silver"))
        parts = [p for p in parts if "leg" not in p.name]
        for fx in (-1, 1):
            for fy in (-1, 1):
                centre = (full.center[0] + fx * (sx / 2 - 0.04), full.center[1] + fy * (sy / 2 - 0.04), full.min[2] + c.open_below / 2)
                parts.append(ObjectPart("leg", leg_colour, cat.COLORS[leg_colour], Box(centre, (0.05, 0.05, c.open_below))))
    return parts


class _RoomFiller:
    """Places furniture and small objects in one room, keeping the room traversable."""

    def __init__(self, rng, room: Room, z0: float, doors_here, next_id, max_same_small: int = MAX_SAME_SMALL_PER_ROOM):
        self.rng, self.room, self.z0, self.next_id = rng, room, z0, next_id
        self.max_same_small = max_same_small
        x0, y0, x1, y1 = room.bounds
        h = WALL_THICKNESS / 2
        self.inner = (x0 + h, y0 + h, x1 - h, y1 - h)
        self.door_zones = []  # keep-out rectangles in front of doors
        self.door_points = []  # points just inside each door
        for axis, coord, lo, hi in doors_here:
            depth = 1.1
            if axis == "x":
                inward = 1 if abs(coord - x0) < 1e-6 else -1
                xs = sorted((coord, coord + inward * depth))
                self.door_zones.append((xs[0], lo - 0.3, xs[1], hi + 0.3))
                self.door_points.append((coord + inward * 0.3, (lo + hi) / 2))
            else:
                inward = 1 if abs(coord - y0) < 1e-6 else -1
                ys = sorted((coord, coord + inward * depth))
                self.door_zones.append((lo - 0.3, ys[0], hi + 0.3, ys[1]))
                self.door_points.append(((lo + hi) / 2, coord + inward * 0.3))
        self.objects: list[SceneObject] = []
        self.footprints: list[tuple[float, float, float, float]] = []

    # -- geometry checks
    @staticmethod
    def _overlap(a, b, gap=0.0):
        return a[0] < b[2] + gap and b[0] < a[2] + gap and a[1] < b[3] + gap and b[1] < a[3] + gap

    def _free(self, fp, gap=0.15) -> bool:
        x0, y0, x1, y1 = self.inner
        if fp[0] < x0 - 1e-6 or fp[1] < y0 - 1e-6 or fp[2] > x1 + 1e-6 or fp[3] > y1 + 1e-6:
            return False
        if any(self._overlap(fp, z) for z in self.door_zones):
            return False
        return not any(self._overlap(fp, f, gap) for f in self.footprints)

    def _traversable(self, footprints) -> bool:
        """All door points (or, without doors, most of the floor) stay mutually reachable."""
        x0, y0, x1, y1 = self.inner
        nx, ny = int(math.ceil((x1 - x0) / GRID_RES)), int(math.ceil((y1 - y0) / GRID_RES))
        occ = np.zeros((nx, ny), bool)
        pad = AGENT_RADIUS + 0.02
        occ[: int(pad / GRID_RES) + 1, :] = occ[-int(pad / GRID_RES) - 1:, :] = True
        occ[:, : int(pad / GRID_RES) + 1] = occ[:, -int(pad / GRID_RES) - 1:] = True
        for fx0, fy0, fx1, fy1 in footprints:
            i0, i1 = int((fx0 - pad - x0) / GRID_RES), int(math.ceil((fx1 + pad - x0) / GRID_RES))
            j0, j1 = int((fy0 - pad - y0) / GRID_RES), int(math.ceil((fy1 + pad - y0) / GRID_RES))
            occ[max(i0, 0):max(i1, 0), max(j0, 0):max(j1, 0)] = True
        labels, n = ndimage.label(~occ)
        if n == 0:
            return False
        sizes = np.bincount(labels.ravel())
        sizes[0] = 0
        main = int(sizes.argmax())
        for px, py in self.door_points:
            i = min(max(int((px - x0) / GRID_RES), 0), nx - 1)
            j = min(max(int((py - y0) / GRID_RES), 0), ny - 1)
            # door points sit at the wall padding; accept a free cell nearby on the main component
            win = labels[max(i - 6, 0):i + 7, max(j - 6, 0):j + 7]
            if not (win == main).any():
                return False
        return sizes[main] >= 0.6 * (~occ).sum()

    # -- object creation
    def _new_object(self, c: cat.Category, full: Box, k: int, relation: dict) -> SceneObject:
        rng = self.rng
        iid = self.next_id()
        colour = rng.choice(c.colors)
        pattern = rng.choice(c.patterns)
        material = rng.choice(c.materials)
        parts = _make_parts(rng, c, full, k)
        box = full
        if c.open_below > 0:  # the box is the top slab; legs are parts
            top = full.max[2]
            box = Box((full.center[0], full.center[1], (c.open_below + full.min[2] + top) / 2), (full.size[0], full.size[1], top - full.min[2] - c.open_below))
        named_parts = [p for p in parts if p.name != "leg"]
        attributes = {
            "pattern": pattern,
            "material": material,
            "secondary_color": named_parts[0].color if named_parts else None,
            "parts": {p.name: p.color for p in named_parts},
            "room_name": self.room.name,
            "yaw_quarter_turns": k,
            **relation,
        }
        obj = SceneObject(
            instance_id=iid, object_id=f"{c.name.replace(' ', '_')}_{iid}", category=c.name, color=colour,
            rgb=cat.COLORS[colour], caption="", room_id=self.room.room_id, floor=self.room.floor, box=box,
            is_furniture=c.furniture, attributes=attributes, parts=parts,
        )
        self.objects.append(obj)
        return obj

    def place_furniture(self, c: cat.Category, tries: int = 40) -> SceneObject | None:
        x0, y0, x1, y1 = self.inner
        for _ in range(tries):
            if c.against_wall:
                side = self.rng.randrange(4)  # 0: back to y0 wall (faces +y), 1: x1, 2: y1, 3: x0
                k = {0: 0, 1: 1, 2: 2, 3: 3}[side]
                sx, sy, sz = _rotated(c.size, k)
                if side == 0:
                    cx, cy = self.rng.uniform(x0 + sx / 2, x1 - sx / 2), y0 + sy / 2 + 0.02
                elif side == 2:
                    cx, cy = self.rng.uniform(x0 + sx / 2, x1 - sx / 2), y1 - sy / 2 - 0.02
                elif side == 1:
                    cx, cy = x1 - sx / 2 - 0.02, self.rng.uniform(y0 + sy / 2, y1 - sy / 2)
                else:
                    cx, cy = x0 + sx / 2 + 0.02, self.rng.uniform(y0 + sy / 2, y1 - sy / 2)
                if (x1 - x0) < sx or (y1 - y0) < sy:
                    continue
            else:
                k = self.rng.randrange(4)
                sx, sy, sz = _rotated(c.size, k)
                if (x1 - x0) < sx + 1.0 or (y1 - y0) < sy + 1.0:
                    continue
                cx = self.rng.uniform(x0 + sx / 2 + 0.5, x1 - sx / 2 - 0.5)
                cy = self.rng.uniform(y0 + sy / 2 + 0.5, y1 - sy / 2 - 0.5)
            fp = (cx - sx / 2, cy - sy / 2, cx + sx / 2, cy + sy / 2)
            if not self._free(fp) or not self._traversable(self.footprints + [fp]):
                continue
            self.footprints.append(fp)
            full = Box((round(cx, 3), round(cy, 3), self.z0 + sz / 2), (sx, sy, sz))
            return self._new_object(c, full, k, {"placement": "against the wall" if c.against_wall else "free standing"})
        return None

    def place_small(self, c: cat.Category, supports: list[SceneObject], taken: dict) -> SceneObject | None:
        if sum(o.category == c.name for o in self.objects) >= self.max_same_small:
            return None
        options = [(s, "on") for s in supports if s.category in c.on] + [(s, "under") for s in supports if s.category in c.under]
        self.rng.shuffle(options)
        for support, rel in options[:4]:
            k = self.rng.randrange(4)
            sx, sy, sz = _rotated(c.size, k)
            sb = support.box
            margin = 0.05 if rel == "on" else 0.1
            if sb.size[0] < sx + 2 * margin or sb.size[1] < sy + 2 * margin:
                continue
            for _ in range(12):
                cx = self.rng.uniform(sb.min[0] + margin + sx / 2, sb.max[0] - margin - sx / 2)
                cy = self.rng.uniform(sb.min[1] + margin + sy / 2, sb.max[1] - margin - sy / 2)
                fp = (cx - sx / 2, cy - sy / 2, cx + sx / 2, cy + sy / 2)
                key = (support.object_id, rel)
                if any(self._overlap(fp, f, 0.03) for f in taken.get(key, [])):
                    continue
                if rel == "on":
                    top = sb.max[2]
                    if support.category in SEAT_LIKE:
                        top = sb.min[2] + 0.5 * sb.size[2]
                    if support.category == "kitchen counter":
                        top = max(p.box.max[2] for p in support.parts) if support.parts else top
                    z = top
                else:
                    z = self.z0
                taken.setdefault(key, []).append(fp)
                full = Box((round(cx, 3), round(cy, 3), round(z + sz / 2, 4)), (sx, sy, sz))
                return self._new_object(c, full, k, {"placement": rel, "support": support.object_id, "support_category": support.category})
        return None


# ---------------------------------------------------------------- captions
def _describe(obj: SceneObject, with_part: bool, with_material: bool) -> str:
    words = []
    if obj.attributes.get("pattern", "plain") != "plain":
        words.append(obj.attributes["pattern"])
    words.append(obj.color)
    if with_material:
        words.append(_MATERIAL_ADJ.get(obj.attributes["material"], obj.attributes["material"]))
    words.append(obj.category)
    text = " ".join(words)
    parts = obj.attributes.get("parts", {})
    if with_part and parts:
        name, colour = next(iter(parts.items()))
        text += f" with {_article(colour, name)}{colour} {name}"
    return text


_MASS_NOUNS = {"hair", "fruit", "stitching", "fringe", "lens"}


def _article(colour: str, part: str) -> str:
    if part in _MASS_NOUNS - {"lens"} or (part.endswith("s") and part not in _MASS_NOUNS):
        return ""
    return "an " if colour[0] in "aeiou" else "a "


_MATERIAL_ADJ = {"wood": "wooden", "metal": "metal", "glass": "glass", "leather": "leather", "wool": "woollen", "plastic": "plastic"}


def _relation_phrase(obj: SceneObject, by_id: dict, room_objs: list[SceneObject]) -> str:
    a = obj.attributes
    if a.get("placement") in ("on", "under"):
        sup = by_id[a["support"]]
        same = [o for o in room_objs if o.category == sup.category and o.is_furniture]
        sup_name = sup.category if len(same) <= 1 else f"{sup.color} {sup.category}"
        return f"{a['placement']} the {sup_name}"
    # furniture: relate to the nearest other furniture in the room, else to the wall
    others = [o for o in room_objs if o.is_furniture and o is not obj]
    if others:
        near = min(others, key=lambda o: math.dist(o.box.center[:2], obj.box.center[:2]))
        if math.dist(near.box.center[:2], obj.box.center[:2]) < 2.0:
            return f"next to the {near.category}"
    return "against the wall" if a.get("placement") == "against the wall" else "at the centre of the room"


# the words _describe, _article and _relation_phrase add around the catalog's names
_CAPTION_GLUE = "the a an with on under next to against wall at centre of room"


def caption_vocabulary() -> set[str]:
    """Every word a generated caption can use (lower case): what a tower trained on these captions
    has seen (``personal.models.colour_words`` leaves these words alone)."""
    texts = [*cat.COLORS, *cat.PATTERNS, *_MATERIAL_ADJ.values(), _CAPTION_GLUE]
    for c in cat.CATEGORIES.values():
        texts += [c.name, *c.materials, *c.patterns, *(p.name for p in c.parts)]  # part colours are COLORS
    return {w for t in texts for w in t.lower().replace("-", " ").split()}


def _assign_captions(objs: list[SceneObject], rng: random.Random) -> None:
    """Captions like "the striped blue mug with a black handle on the kitchen counter",
    made unique within each room by adding detail (part colour, material) when needed."""
    by_id = {o.object_id: o for o in objs}
    rooms: dict[tuple, list[SceneObject]] = {}
    for o in objs:
        rooms.setdefault((o.floor, o.attributes["room_name"]), []).append(o)
    for room_objs in rooms.values():
        for o in room_objs:
            o.caption = f"the {_describe(o, rng.random() < 0.5, False)} {_relation_phrase(o, by_id, room_objs)}"
        for variant in ((True, False), (True, True)):
            counts = Counter(o.caption for o in room_objs)
            for o in room_objs:
                if counts[o.caption] > 1:
                    o.caption = f"the {_describe(o, *variant)} {_relation_phrase(o, by_id, room_objs)}"
        counts = Counter(o.caption for o in room_objs)
        for o in room_objs:
            o.attributes["caption_unique"] = counts[o.caption] == 1


# ---------------------------------------------------------------- scene
def _room_names(rng: random.Random, n: int, pool: list[str]) -> list[str]:
    names = pool[:3] + rng.sample(pool[3:], n - 3)
    return names


def _build_floor(rng, floor: Floor, pool, room_offset: int, next_id, preset: SizePreset):
    for _attempt in range(50):
        w = round(rng.uniform(*preset.width_m), 1)
        h = round(rng.uniform(*preset.depth_m), 1)
        n = rng.randint(*preset.rooms_per_floor)
        rects = _split_rooms(rng, w, h, n)
        if len(rects) < max(4, preset.rooms_per_floor[0]):
            continue
        doors = _plan_doors(rng, rects)
        if doors is not None:
            break
    else:  # pragma: no cover - the splitter always finds a connected layout in practice
        raise RuntimeError("could not build a connected floor plan")
    # biggest rooms get the living room / kitchen, the smallest the bathroom
    order = sorted(range(len(rects)), key=lambda i: -(rects[i][2] - rects[i][0]) * (rects[i][3] - rects[i][1]))
    names = _room_names(rng, len(rects), pool)
    for wet in ("powder room", "second bathroom", "bathroom"):  # bathrooms go to the smallest rooms
        if wet in names:
            names.remove(wet)
            names.append(wet)
    rooms = [None] * len(rects)
    for rank, i in enumerate(order):
        x0, y0, x1, y1 = rects[i]
        rooms[i] = Room(f"room_{room_offset + i}", names[rank], floor.index, (x0, y0, x1, y1))
    walls = _walls(rects, doors, floor.z, floor.height)
    fillers = []
    for i, room in enumerate(rooms):
        here = [(a, c, lo, hi) for a, c, lo, hi, ri, rj in doors if i in (ri, rj)]
        filler = _RoomFiller(rng, room, floor.z, here, next_id, preset.max_same_small_per_room)
        kinds = cat.furniture_for_room(room_type(room.name))
        area = (room.bounds[2] - room.bounds[0]) * (room.bounds[3] - room.bounds[1])
        n_furn = min(len(kinds) + 1, 2 + int(area // 6))
        picks = rng.sample(kinds, min(n_furn, len(kinds)))
        if len(picks) < n_furn:
            picks.append(rng.choice(kinds))  # a second instance of a category
        furniture = [f for c in picks if (f := filler.place_furniture(c)) is not None]
        small_kinds = [c for c in cat.small_for_room(room_type(room.name)) if any(f.category in c.on + c.under for f in furniture)]
        taken: dict = {}
        for _ in range(rng.randint(*preset.small_per_room) if small_kinds else 0):
            filler.place_small(rng.choice(small_kinds), furniture, taken)
        fillers.append((filler, furniture, small_kinds, taken))
    # top up with small objects so a floor holds at least MIN_OBJECTS_PER_FLOOR objects
    for _ in range(200):
        if sum(len(f.objects) for f, *_ in fillers) >= MIN_OBJECTS_PER_FLOOR:
            break
        filler, furniture, small_kinds, taken = rng.choice(fillers)
        if small_kinds:
            filler.place_small(rng.choice(small_kinds), furniture, taken)
    objects = sorted((o for f, *_ in fillers for o in f.objects), key=lambda o: o.instance_id)
    return rooms, walls, objects


def generate_scene(seed: int, scene_id: str | None = None, two_floors: bool = False, max_objects: int | None = None,
                   preset: str = "default") -> Scene:
    """A deterministic household for ``seed``: ``default`` 4-8 rooms per floor and 40-120
    objects; ``hm3d`` an HM3D-sized one (``PRESETS``). Its id is ``<prefix>_<seed>``
    (``synth_00012``, ``hm3dsize_00012``), from which the seed and preset can be recovered."""
    size = size_preset(preset)
    rng = random.Random(seed)
    counter = iter(range(1, 10**6))
    two_floors = two_floors or size.floors > 1
    floors = [Floor(0, 0.0, FLOOR_HEIGHT)] + ([Floor(1, FLOOR_SPACING, FLOOR_HEIGHT)] if two_floors else [])
    rooms, walls, objects = [], [], []
    for fl in floors:
        if preset != "default":
            pool = list(size.room_pool)
        else:
            pool = (GROUND_ROOMS_TWO_FLOORS if two_floors else GROUND_ROOMS) if fl.index == 0 else UPPER_ROOMS
        r, w, o = _build_floor(rng, fl, pool, len(rooms), lambda: next(counter), size)
        rooms += r
        walls += w
        objects += o
    objects = _limit_objects(objects, size.max_objects if max_objects is None else max_objects)
    _assign_captions(objects, rng)
    return Scene(scene_id=scene_id or f"{size.scene_prefix}_{seed:05d}", seed=seed, floors=floors, rooms=rooms, walls=walls, objects=objects)


def _limit_objects(objects: list[SceneObject], max_objects: int) -> list[SceneObject]:
    """Drop small objects beyond the cap (never furniture, which small objects reference)."""
    if len(objects) <= max_objects:
        return objects
    keep = [o for o in objects if o.is_furniture]
    small = [o for o in objects if not o.is_furniture]
    return sorted(keep + small[: max(0, max_objects - len(keep))], key=lambda o: o.instance_id)


# ---------------------------------------------------------------- navigability
def floor_standing(scene: Scene, floor: int) -> list[SceneObject]:
    """Objects whose footprint blocks the floor (furniture and objects lying on the floor)."""
    z = next(f.z for f in scene.floors if f.index == floor)
    return [o for o in scene.objects if o.floor == floor and (o.is_furniture or o.box.min[2] <= z + 0.05)]


def clearance(scene: Scene, floor: int, x: float, y: float) -> float:
    """Horizontal distance from (x, y) to the nearest wall or floor-standing object footprint."""
    fl = next(f for f in scene.floors if f.index == floor)
    walls = [w.box for w in scene.walls if w.box.min[2] < fl.z + 1.0 and w.box.max[2] > fl.z]
    boxes = walls + [o.box for o in floor_standing(scene, floor)]
    return min((b.distance_2d(x, y) for b in boxes), default=float("inf"))


def is_navigable(scene: Scene, floor: int, x: float, y: float, min_clearance: float = 0.4) -> bool:
    """Simple start-pose check: inside a room and ``min_clearance`` from walls and furniture.
    (True geodesic reachability is the simulator's job.)"""
    return scene.room_at(x, y, floor) is not None and clearance(scene, floor, x, y) >= min_clearance


def occupancy_grid(scene: Scene, floor: int, resolution: float = GRID_RES, inflate: float = AGENT_RADIUS):
    """Boolean grid (True = blocked) of walls and floor-standing objects inflated by ``inflate``,
    plus the grid origin (xmin, ymin). Cells outside every room are blocked."""
    x0, y0, x1, y1 = scene.bounds()
    x0, y0 = x0 - 0.2, y0 - 0.2
    nx, ny = int(math.ceil((x1 + 0.2 - x0) / resolution)), int(math.ceil((y1 + 0.2 - y0) / resolution))
    xs = x0 + (np.arange(nx) + 0.5) * resolution
    ys = y0 + (np.arange(ny) + 0.5) * resolution
    gx, gy = np.meshgrid(xs, ys, indexing="ij")
    inside = np.zeros((nx, ny), bool)
    for r in scene.rooms:
        if r.floor == floor:
            inside |= (gx >= r.bounds[0]) & (gx <= r.bounds[2]) & (gy >= r.bounds[1]) & (gy <= r.bounds[3])
    blocked = ~inside
    fl = next(f for f in scene.floors if f.index == floor)
    boxes = [w.box for w in scene.walls if w.box.min[2] < fl.z + 1.0 and w.box.max[2] > fl.z]
    boxes += [o.box for o in floor_standing(scene, floor)]
    for b in boxes:
        dx = np.maximum(np.maximum(b.min[0] - gx, 0), gx - b.max[0])
        dy = np.maximum(np.maximum(b.min[1] - gy, 0), gy - b.max[1])
        blocked |= dx * dx + dy * dy <= inflate * inflate
    return blocked, (x0, y0)

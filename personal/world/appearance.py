"""How surfaces look: pattern tiles, material classes and each household's look (wall paint,
floor coverings, door trims, lighting).

Everything a caption can state about an object's looks is drawn by the renderer from the
tables here: the pattern (``PATTERN_TILES``, drawn in the object's own surface coordinates,
mixing the object's colour with a contrasting second colour), the material (``MATERIALS``:
detail texture + gloss, so metal, glass, wood and fabric shade differently), the colour and
the coloured parts (geometry in ``personal.world.shapes``).

Tiles are 64 x 64 float32 images in [0, 1], periodic in both directions; they are generated
procedurally once per process (no image files). A household's look is drawn from a random
stream of its own (``random.Random(f"look:{seed}")``), so adding looks never changes the
layout the generator draws for a seed.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

TILE = 64

# -- textures (index = row of texture_stack()) -------------------------------------------
# 0 is "none" (a constant 0 tile), patterns next, then material details and structure.
PATTERN_NAMES = ("striped", "checked", "dotted", "floral", "plaid", "zigzag")
DETAIL_NAMES = ("grain", "weave", "brushed", "speckle", "wicker", "pebble")
STRUCTURE_NAMES = ("planks", "tiles", "carpet", "paint", "wallpaper")
TEXTURE_NAMES = ("none",) + PATTERN_NAMES + DETAIL_NAMES + STRUCTURE_NAMES
TEXTURE_ID = {n: i for i, n in enumerate(TEXTURE_NAMES)}


def _grid() -> tuple[np.ndarray, np.ndarray]:
    """(u, v) in [0, 1) over one tile, u along columns."""
    t = (np.arange(TILE, dtype=np.float32) + 0.5) / TILE
    v, u = np.meshgrid(t, t, indexing="ij")
    return u, v


def _smooth_noise(rng: np.random.Generator, cells: int) -> np.ndarray:
    """Periodic value noise on a ``cells`` x ``cells`` lattice, bilinear, in [0, 1]."""
    lat = rng.random((cells, cells)).astype(np.float32)
    u, v = _grid()
    x, y = u * cells, v * cells
    x0, y0 = np.floor(x).astype(int), np.floor(y).astype(int)
    fx, fy = x - x0, y - y0
    fx, fy = fx * fx * (3 - 2 * fx), fy * fy * (3 - 2 * fy)
    x1, y1 = (x0 + 1) % cells, (y0 + 1) % cells
    x0, y0 = x0 % cells, y0 % cells
    top = lat[y0, x0] * (1 - fx) + lat[y0, x1] * fx
    bot = lat[y1, x0] * (1 - fx) + lat[y1, x1] * fx
    return top * (1 - fy) + bot * fy


def _soft(x: np.ndarray, edge: float = 0.04) -> np.ndarray:
    """Anti-aliased step: 0 below -edge, 1 above +edge."""
    return np.clip(0.5 + x / (2 * edge), 0.0, 1.0)


def _pattern_tiles() -> dict[str, np.ndarray]:
    u, v = _grid()
    tri = lambda x: 1 - 2 * np.abs(x - np.floor(x + 0.5))  # noqa: E731 - triangle wave, period 1
    # dots: two per tile on a staggered lattice
    d1 = np.hypot(u - 0.25, v - 0.25)
    d2 = np.hypot(u - 0.75, v - 0.75)
    dots = _soft(0.13 - np.minimum(d1, d2))
    # flowers: five petals around a centre, two per tile
    flower = np.zeros_like(u)
    for cu, cv in ((0.5, 0.0), (0.0, 0.5)):  # between the dots' places
        du, dv = u - cu, v - cv
        du, dv = du - np.round(du), dv - np.round(dv)
        r, a = np.hypot(du, dv), np.arctan2(dv, du)
        petal = _soft(0.2 * (0.55 + 0.45 * np.cos(5 * a)) - r, 0.02)
        centre = _soft(0.045 - r, 0.015)
        flower = np.maximum(flower, np.maximum(petal, centre))
    # plaid: broad and thin bands both ways, overlaps darker
    band_u = _soft(0.15 - np.abs(np.abs(u - 0.5) - 0.5)) + 0.6 * _soft(0.03 - np.abs(u - 0.5))
    band_v = _soft(0.15 - np.abs(np.abs(v - 0.5) - 0.5)) + 0.6 * _soft(0.03 - np.abs(v - 0.5))
    plaid = np.clip(0.55 * band_u + 0.55 * band_v, 0, 1)
    return {
        "striped": _soft(0.25 - np.abs(v - 0.5)),
        "checked": np.where((u < 0.5) ^ (v < 0.5), 1.0, 0.0).astype(np.float32),
        "dotted": dots,
        "floral": flower,
        "plaid": plaid,
        "zigzag": _soft(0.2 - np.abs(((v + 0.6 * tri(2 * u)) % 1.0) - 0.5)),
    }


def _detail_tiles() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    u, v = _grid()
    n4, n8, n16 = _smooth_noise(rng, 4), _smooth_noise(rng, 8), _smooth_noise(rng, 16)
    wobble = _smooth_noise(rng, 4)[:, :1].T.repeat(TILE, 0)  # varies along u only
    grain = np.clip(0.5 + 0.38 * np.sin(2 * np.pi * (7 * v + 0.8 * wobble)) + 0.25 * (n16 - 0.5), 0, 1)  # streaks along u
    weave = 0.5 + 0.25 * np.sin(2 * np.pi * 8 * u) * np.sign(np.sin(2 * np.pi * 8 * v)) + 0.25 * (n16 - 0.5)
    brushed = 0.5 + 0.5 * (_smooth_noise(rng, 32)[:1].repeat(TILE, 0) - 0.5) * 2  # streaks along u
    speckle = np.clip(0.5 + 1.2 * (n16 - 0.5) + 0.6 * (rng.random((TILE, TILE)) - 0.5), 0, 1)
    wicker = 0.5 + 0.5 * np.sin(2 * np.pi * 4 * u) * np.sin(2 * np.pi * 4 * v)
    pebble = np.clip(0.5 + 0.8 * (n8 - 0.5), 0, 1)
    return {"grain": grain, "weave": weave, "brushed": brushed, "speckle": speckle, "wicker": wicker, "pebble": pebble}


def _structure_tiles() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(11)
    u, v = _grid()
    n8 = _smooth_noise(rng, 8)
    # planks: 4 boards per tile across v, staggered joints along u, fine grain along each board
    board = np.floor(v * 4)
    joint_u = (u + 0.37 * board) % 1.0
    gaps = np.maximum(_soft(0.012 - np.abs(((v * 4) % 1.0) - 0.0)), _soft(0.006 - np.abs(joint_u - 0.5)))
    tone = _smooth_noise(rng, 4)[(board * 13 % TILE).astype(int), 0]  # one tone per board
    wob = _smooth_noise(rng, 8)[:, :1].T.repeat(TILE, 0)
    grain = np.sin(2 * np.pi * (24 * v + 0.7 * wob))
    planks = np.clip(0.5 + 0.3 * (tone - 0.5) + 0.08 * grain - 0.5 * gaps, 0, 1)
    tiles = np.clip(0.75 + 0.1 * (n8 - 0.5) - 0.6 * np.maximum(_soft(0.02 - np.abs(u - 0.5)), _soft(0.02 - np.abs(v - 0.5))), 0, 1)
    carpet = np.clip(0.5 + 0.35 * (_smooth_noise(rng, 32) - 0.5) + 0.2 * (rng.random((TILE, TILE)) - 0.5), 0, 1)
    paint = np.clip(0.5 + 0.15 * (n8 - 0.5), 0, 1)
    wallpaper = np.clip(0.5 + 0.12 * np.sign(np.sin(2 * np.pi * 4 * u)) + 0.05 * (n8 - 0.5), 0, 1)
    return {"planks": planks, "tiles": tiles, "carpet": carpet, "paint": paint, "wallpaper": wallpaper}


MIP_LEVELS = 6  # 64, 32, 16, 8, 4 texels per tile, then the mean


@lru_cache(maxsize=1)
def texture_stack() -> np.ndarray:
    """(MIP_LEVELS, len(TEXTURE_NAMES), TILE, TILE) float32, textures in TEXTURE_ID order.
    Level L is the tile box-filtered over 2^L texels (then repeated back to TILE x TILE, so
    every level is indexed alike): a texture seen from afar is its average, not aliasing."""
    tiles = {"none": np.zeros((TILE, TILE), np.float32), **_pattern_tiles(), **_detail_tiles(), **_structure_tiles()}
    base = np.stack([tiles[n].astype(np.float32) for n in TEXTURE_NAMES])
    levels = []
    for lv in range(MIP_LEVELS):
        f = 2 ** lv
        if f >= TILE:
            levels.append(np.broadcast_to(base.mean(axis=(1, 2), keepdims=True), base.shape).copy())
            continue
        small = base.reshape(len(base), TILE // f, f, TILE // f, f).mean(axis=(2, 4))
        levels.append(small.repeat(f, axis=1).repeat(f, axis=2))
    return np.stack(levels).astype(np.float32)


# -- materials -----------------------------------------------------------------------------
@dataclass(frozen=True)
class MaterialClass:
    """How a class of materials shades: a luminance detail texture (``detail`` repeated every
    ``period`` metres, +-``amp``), Blinn-Phong gloss, and for glass/metal a reflection of the
    room (a vertical sky-to-floor gradient) mixed in by ``reflect``."""

    name: str
    detail: str = "none"
    period: float = 0.1
    amp: float = 0.0
    spec: float = 0.0
    shininess: float = 8.0
    reflect: float = 0.0
    diffuse: float = 1.0
    glaze: float = 0.0  # mix of the colour towards GLAZE_RGB (clear glass looks pale and cool)


MATERIAL_CLASSES: dict[str, MaterialClass] = {c.name: c for c in (
    MaterialClass("matte", "pebble", 0.2, 0.12),
    MaterialClass("wood", "grain", 0.3, 0.2, spec=0.12, shininess=12),
    MaterialClass("fabric", "weave", 0.025, 0.45),
    MaterialClass("leather", "pebble", 0.04, 0.25, spec=0.3, shininess=18),
    MaterialClass("metal", "brushed", 0.15, 0.35, spec=0.9, shininess=45, reflect=0.35, diffuse=0.55),
    MaterialClass("glass", "none", 0.1, 0.0, spec=1.0, shininess=90, reflect=0.3, diffuse=0.75, glaze=0.45),
    MaterialClass("ceramic", "none", 0.1, 0.0, spec=0.55, shininess=60, reflect=0.08),
    MaterialClass("plastic", "none", 0.1, 0.0, spec=0.35, shininess=25),
    MaterialClass("stone", "speckle", 0.06, 0.35, spec=0.2, shininess=30),
    MaterialClass("wicker", "wicker", 0.05, 0.6),
    # structure surfaces
    MaterialClass("paint", "paint", 0.6, 0.5),
    MaterialClass("wallpaper", "wallpaper", 0.3, 0.6),
    MaterialClass("planks", "planks", 1.6, 0.6, spec=0.1, shininess=10),
    MaterialClass("tiles", "tiles", 0.6, 0.8, spec=0.25, shininess=30),
    MaterialClass("carpet", "carpet", 0.25, 0.5),
)}
MATERIAL_ID = {n: i for i, n in enumerate(MATERIAL_CLASSES)}
GLAZE_RGB = (200, 222, 228)

# every material word of the catalog -> its shading class
MATERIAL_OF: dict[str, str] = {
    "wood": "wood", "laminate": "wood", "cardboard": "matte", "paper": "matte",
    "fabric": "fabric", "velvet": "fabric", "mesh": "fabric", "nylon": "fabric", "canvas": "fabric",
    "cotton": "fabric", "wool": "fabric", "fleece": "fabric", "felt": "fabric", "silk": "fabric",
    "denim": "fabric", "cloth": "fabric", "plush": "fabric",
    "leather": "leather",
    "metal": "metal", "steel": "metal", "aluminium": "metal", "cast iron": "metal",
    "glass": "glass", "acrylic": "plastic",
    "ceramic": "ceramic", "terracotta": "stone", "stone": "stone", "wax": "matte",
    "plastic": "plastic", "rubber": "matte",
    "wicker": "wicker", "straw": "wicker",
}


def material_class(material: str | None) -> MaterialClass:
    """The shading class of a catalog material word (unknown words shade matte)."""
    return MATERIAL_CLASSES[MATERIAL_OF.get(material or "", "matte")]


def contrast_colour(rgb: tuple[int, int, int]) -> tuple[int, int, int]:
    """The second colour of a pattern: light on dark objects, dark on light ones."""
    lum = 0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2]
    return (235, 232, 225) if lum < 110 else (35, 35, 40) if lum > 170 else (245, 240, 230)


def pattern_period(size: tuple[float, float, float]) -> float:
    """Metres per pattern repeat: about five repeats across the object's largest side."""
    return float(min(max(max(size) / 5.0, 0.02), 0.3))


# -- household look --------------------------------------------------------------------------
WALL_PAINTS = ((232, 226, 214), (222, 228, 232), (238, 234, 222), (214, 222, 210), (236, 224, 216),
               (228, 228, 228), (244, 238, 226), (210, 218, 230), (234, 218, 200), (226, 234, 226))
FLOORS = {
    "planks": ((168, 122, 80), (190, 150, 105), (120, 85, 55), (205, 175, 135), (140, 110, 90)),
    "tiles": ((215, 212, 205), (190, 190, 195), (170, 160, 150), (225, 220, 200), (150, 160, 170)),
    "carpet": ((150, 140, 130), (120, 130, 145), (170, 160, 140), (110, 115, 110), (160, 145, 150)),
}
WET_ROOMS = {"kitchen", "bathroom", "laundry room"}
SOFT_ROOMS = {"master bedroom", "child's bedroom", "guest bedroom", "playroom", "study"}
TRIMS = ((245, 245, 240), (120, 85, 55), (60, 60, 62), (200, 170, 130))


@dataclass
class Lighting:
    """A household's light: a key light (direction towards the light, map frame), a fill
    from the opposite side below, ambient level, a colour tint and a gain per room."""

    key_dir: tuple[float, float, float] = (0.45, 0.3, 0.84)
    fill_dir: tuple[float, float, float] = (-0.5, -0.6, -0.62)
    ambient: float = 0.55
    key: float = 0.45
    fill: float = 0.2
    tint: tuple[float, float, float] = (1.0, 1.0, 1.0)
    room_gain: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"key_dir": list(self.key_dir), "fill_dir": list(self.fill_dir), "ambient": self.ambient, "key": self.key,
                "fill": self.fill, "tint": list(self.tint), "room_gain": dict(self.room_gain)}

    @classmethod
    def from_dict(cls, d: dict) -> "Lighting":
        return cls(tuple(d["key_dir"]), tuple(d["fill_dir"]), float(d["ambient"]), float(d["key"]), float(d["fill"]),
                   tuple(d["tint"]), {str(k): float(v) for k, v in d.get("room_gain", {}).items()})


@dataclass
class RoomLook:
    wall_rgb: tuple[int, int, int]
    wall_material: str  # paint | wallpaper
    floor_rgb: tuple[int, int, int]
    floor_material: str  # planks | tiles | carpet


@dataclass
class HouseLook:
    rooms: dict[str, RoomLook]
    trim_rgb: tuple[int, int, int]
    ceiling_rgb: tuple[int, int, int]
    lighting: Lighting


def house_look(scene) -> HouseLook:
    """The look of a household, drawn from its own stream (``look:<seed>:<scene_id>``)."""
    rng = random.Random(f"look:{scene.seed}:{scene.scene_id}")
    rooms = {}
    for r in scene.rooms:
        if r.name in WET_ROOMS:
            floor = "tiles"
        elif r.name in SOFT_ROOMS:
            floor = rng.choice(("carpet", "planks"))
        else:
            floor = rng.choice(("planks", "planks", "tiles"))
        rooms[r.room_id] = RoomLook(rng.choice(WALL_PAINTS), "wallpaper" if rng.random() < 0.25 else "paint",
                                    rng.choice(FLOORS[floor]), floor)
    az, el = rng.uniform(0, 2 * math.pi), math.radians(rng.uniform(35, 72))
    key = (math.cos(az) * math.cos(el), math.sin(az) * math.cos(el), math.sin(el))
    fill = (-0.6 * key[0], -0.6 * key[1], -0.6)
    n = math.sqrt(sum(c * c for c in fill))
    warmth = rng.uniform(-1, 1)  # -1 cool daylight .. +1 warm bulbs
    tint = (1.0 + 0.08 * warmth, 1.0 + 0.01 * warmth, 1.0 - 0.1 * warmth)
    lighting = Lighting(
        key_dir=key, fill_dir=tuple(c / n for c in fill), ambient=rng.uniform(0.42, 0.6), key=rng.uniform(0.35, 0.55),
        fill=rng.uniform(0.12, 0.25), tint=tint, room_gain={r.room_id: rng.uniform(0.85, 1.12) for r in scene.rooms},
    )
    return HouseLook(rooms, rng.choice(TRIMS), rng.choice(((245, 245, 245), (240, 236, 228), (232, 234, 238))), lighting)

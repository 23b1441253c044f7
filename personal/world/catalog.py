"""Household object categories for the procedural generator.

Each category knows its typical size, where it appears, how it is placed
(furniture against a wall / in the room, small objects on or under furniture),
plausible colours and fine-grained attributes (pattern, secondary colour,
material, coloured parts). Fine-grained attributes exist so that same-category
distractors can differ in a described attribute (instance verification).

Sizes are (width, depth, height) in metres in the object's local frame:
width runs along the wall it stands against, depth points away from the wall.
"""
from __future__ import annotations

from dataclasses import dataclass, field

COLORS: dict[str, tuple[int, int, int]] = {
    "red": (200, 30, 35), "dark red": (120, 20, 25), "orange": (235, 120, 30),
    "yellow": (240, 210, 40), "green": (40, 150, 60), "dark green": (25, 85, 40),
    "olive": (110, 120, 45), "teal": (20, 130, 130), "light blue": (130, 185, 235),
    "blue": (35, 70, 200), "navy": (20, 30, 90), "purple": (120, 50, 160),
    "pink": (235, 130, 170), "white": (240, 240, 240), "cream": (240, 230, 200),
    "beige": (215, 195, 160), "light grey": (185, 185, 185), "grey": (128, 128, 128),
    "dark grey": (70, 70, 70), "black": (25, 25, 25), "brown": (120, 75, 40),
    "dark brown": (75, 45, 25), "tan": (200, 160, 110), "silver": (195, 200, 205),
    "gold": (210, 170, 50),
}

PATTERNS = ("plain", "striped", "checked", "dotted", "floral", "plaid", "zigzag")
ROOM_TYPES = (
    "kitchen", "living room", "master bedroom", "child's bedroom", "guest bedroom",
    "office", "bathroom", "dining room", "hallway", "laundry room", "playroom", "study",
)


@dataclass(frozen=True)
class PartSpec:
    """A coloured part in the object's local frame, in fractions of the object size.

    ``offset``: part centre minus object centre / object size (per axis);
    ``scale``: part size / object size."""

    name: str
    offset: tuple[float, float, float]
    scale: tuple[float, float, float]
    colors: tuple[str, ...]


@dataclass(frozen=True)
class Category:
    name: str
    size: tuple[float, float, float]
    rooms: tuple[str, ...]
    furniture: bool
    colors: tuple[str, ...]
    materials: tuple[str, ...]
    plural: str = ""
    patterns: tuple[str, ...] = ("plain",)
    parts: tuple[PartSpec, ...] = ()
    on: tuple[str, ...] = ()  # small objects: furniture it may stand on
    under: tuple[str, ...] = ()  # small objects: furniture it may lie under
    against_wall: bool = True  # furniture: back to a wall (else free standing)
    open_below: float = 0.0  # furniture: clear height underneath (tables, beds)

    @property
    def plural_name(self) -> str:
        return self.plural or self.name + "s"


def _f(name, size, rooms, colors, materials, **kw) -> Category:
    return Category(name, size, tuple(rooms), True, tuple(colors), tuple(materials), **kw)


def _s(name, size, rooms, colors, materials, **kw) -> Category:
    return Category(name, size, tuple(rooms), False, tuple(colors), tuple(materials), **kw)


P = PartSpec
WOOD = ("brown", "dark brown", "tan", "white", "black", "grey")
FABRIC = ("grey", "blue", "green", "beige", "red", "navy", "dark green", "cream", "teal")
BEDROOMS = ("master bedroom", "child's bedroom", "guest bedroom")
LEGS4 = lambda c: (  # noqa: E731 - four table legs as one pair of parts each side
    P("left legs", (-0.45, 0.0, -0.5), (0.06, 0.9, 1.0), c),
    P("right legs", (0.45, 0.0, -0.5), (0.06, 0.9, 1.0), c),
)

FURNITURE: tuple[Category, ...] = (
    _f("bed", (1.6, 2.0, 0.55), BEDROOMS, FABRIC + ("white",), ("wood", "fabric"), patterns=("plain", "striped", "checked", "floral"),
       parts=(P("headboard", (0, -0.48, 0.9), (1.0, 0.05, 1.8), WOOD), P("pillow", (0, -0.38, 0.6), (0.7, 0.12, 0.25), ("white", "cream", "light blue", "pink"))), open_below=0.25),
    _f("crib", (0.7, 1.3, 0.9), ("child's bedroom",), ("white", "tan", "light grey"), ("wood",), parts=(P("mattress", (0, 0, 0.53), (0.9, 0.9, 0.06), ("white", "light blue", "pink")),)),
    _f("sofa", (2.0, 0.9, 0.85), ("living room", "playroom", "study"), FABRIC + ("black", "brown"), ("fabric", "leather", "velvet"), patterns=("plain", "striped", "checked", "plaid"),
       parts=(P("backrest", (0, -0.35, 0.56), (1.0, 0.3, 0.12), FABRIC), P("cushion", (0.25, 0.1, 0.55), (0.2, 0.2, 0.25), ("yellow", "orange", "white", "pink", "teal")))),
    _f("armchair", (0.85, 0.85, 0.9), ("living room", "study", "master bedroom", "office"), FABRIC + ("brown",), ("fabric", "leather"), patterns=("plain", "checked", "floral"),
       parts=(P("backrest", (0, -0.38, 0.56), (1.0, 0.24, 0.12), FABRIC),)),
    _f("cabinet", (0.8, 0.45, 1.1), ("kitchen", "office", "hallway", "laundry room", "bathroom", "dining room"), WOOD, ("wood", "metal"),
       parts=(P("handle", (0, 0.52, 0.2), (0.3, 0.04, 0.04), ("silver", "gold", "black")),)),
    _f("sideboard", (1.6, 0.45, 0.85), ("living room", "dining room", "hallway"), WOOD, ("wood",), parts=(P("handles", (0, 0.52, 0.3), (0.6, 0.04, 0.04), ("silver", "gold", "black")),)),
    _f("desk", (1.3, 0.65, 0.75), ("office", "study", "child's bedroom", "master bedroom"), WOOD, ("wood", "metal", "glass"),
       parts=LEGS4(("black", "silver", "brown")), open_below=0.7),
    _f("dining table", (1.6, 0.9, 0.76), ("dining room", "kitchen"), WOOD, ("wood", "glass"), parts=LEGS4(("black", "brown", "silver")), open_below=0.7, against_wall=False),
    _f("coffee table", (1.1, 0.6, 0.42), ("living room", "playroom"), WOOD, ("wood", "glass"), parts=LEGS4(("black", "brown", "silver")), open_below=0.36, against_wall=False),
    _f("side table", (0.5, 0.5, 0.6), ("living room", "study", "guest bedroom"), WOOD, ("wood", "metal"), parts=LEGS4(("black", "brown")), open_below=0.55),
    _f("bookshelf", (0.9, 0.35, 1.8), ("living room", "office", "study", "child's bedroom", "playroom"), WOOD, ("wood",),
       parts=(P("books", (0, 0.52, 0.1), (0.8, 0.06, 0.12), ("red", "blue", "green", "yellow")),)),
    _f("wardrobe", (1.2, 0.6, 2.0), BEDROOMS, WOOD, ("wood",), parts=(P("handles", (0, 0.52, 0.0), (0.15, 0.04, 0.15), ("silver", "gold", "black")),)),
    _f("dresser", (1.0, 0.5, 0.9), BEDROOMS, WOOD + ("pink",), ("wood",), parts=(P("knobs", (0, 0.52, 0.1), (0.6, 0.04, 0.05), ("silver", "gold", "black", "white")),)),
    _f("nightstand", (0.5, 0.4, 0.55), BEDROOMS, WOOD, ("wood",), parts=(P("drawer knob", (0, 0.55, 0.2), (0.12, 0.05, 0.08), ("silver", "gold", "black")),)),
    _f("kitchen counter", (2.0, 0.6, 0.9), ("kitchen",), ("white", "grey", "black", "cream", "dark green", "navy"), ("stone", "wood", "laminate"),
       parts=(P("worktop", (0, 0, 0.47), (1.02, 1.02, 0.06), ("black", "white", "grey", "tan")),)),
    _f("refrigerator", (0.7, 0.7, 1.8), ("kitchen",), ("white", "silver", "black", "cream", "red"), ("metal",), parts=(P("handle", (0.35, 0.52, 0.1), (0.05, 0.05, 0.3), ("silver", "black", "grey")),)),
    _f("oven", (0.6, 0.6, 0.9), ("kitchen",), ("black", "silver", "white"), ("metal",), parts=(P("door window", (0, 0.51, 0.0), (0.7, 0.03, 0.4), ("black", "dark grey")),)),
    _f("tv stand", (1.5, 0.45, 0.5), ("living room", "playroom"), WOOD, ("wood",), parts=(P("television", (0, 0, 1.25), (0.8, 0.1, 1.4), ("black", "dark grey")),)),
    _f("chair", (0.45, 0.5, 0.9), ("dining room", "kitchen", "office", "study", "child's bedroom"), WOOD + ("red", "green", "blue"), ("wood", "plastic", "metal"),
       parts=(P("seat cushion", (0, 0.52, -0.05), (0.9, 0.06, 0.1), FABRIC),), against_wall=False),
    _f("office chair", (0.6, 0.6, 1.0), ("office", "study"), ("black", "grey", "blue", "red", "white"), ("mesh", "leather", "fabric"), parts=(P("wheel base", (0, 0, -0.45), (1.2, 1.2, 0.1), ("black", "silver")),), against_wall=False),
    _f("bathtub", (1.7, 0.75, 0.55), ("bathroom",), ("white", "cream", "light blue"), ("ceramic", "acrylic"), parts=(P("tap", (0.45, -0.4, 0.7), (0.05, 0.1, 0.3), ("silver", "gold")),)),
    _f("toilet", (0.4, 0.65, 0.8), ("bathroom",), ("white", "cream", "black"), ("ceramic",), parts=(P("lid", (0, 0.1, 0.53), (0.95, 0.6, 0.06), ("white", "black", "light blue", "tan")),)),
    _f("sink cabinet", (0.8, 0.5, 0.85), ("bathroom", "laundry room"), ("white", "grey", "navy", "tan", "dark green"), ("wood", "ceramic"), parts=(P("basin", (0, 0, 0.55), (0.7, 0.8, 0.12), ("white", "cream")),)),
    _f("washing machine", (0.6, 0.6, 0.85), ("laundry room", "bathroom", "kitchen"), ("white", "silver", "grey"), ("metal",), parts=(P("door", (0, 0.51, 0.05), (0.6, 0.03, 0.55), ("silver", "black", "white")),)),
    _f("shoe rack", (0.8, 0.3, 0.5), ("hallway",), WOOD, ("wood", "metal")),
    _f("toy chest", (0.8, 0.45, 0.5), ("child's bedroom", "playroom"), ("red", "blue", "yellow", "green", "white", "pink"), ("wood", "plastic"), patterns=("plain", "dotted", "striped"),
       parts=(P("lid", (0, 0, 0.52), (1.02, 1.02, 0.06), ("white", "red", "blue", "yellow")),)),
    _f("piano", (1.5, 0.6, 1.2), ("living room", "study"), ("black", "dark brown", "white"), ("wood",), parts=(P("keys", (0, 0.6, -0.1), (0.8, 0.25, 0.05), ("white",)),)),
    _f("ottoman", (0.6, 0.6, 0.45), ("living room", "master bedroom"), FABRIC, ("fabric", "leather"), patterns=("plain", "checked", "dotted"), against_wall=False),
    _f("laundry hamper", (0.5, 0.4, 0.65), ("laundry room", "bathroom") + BEDROOMS, ("white", "grey", "tan", "blue"), ("wicker", "plastic", "fabric")),
    _f("floor lamp", (0.4, 0.4, 1.6), ("living room", "study", "office", "master bedroom"), ("black", "white", "gold", "silver"), ("metal",),
       parts=(P("shade", (0, 0, 0.38), (1.3, 1.3, 0.25), ("white", "cream", "beige", "black")),)),
)

SMALL: tuple[Category, ...] = (
    _s("backpack", (0.32, 0.2, 0.45), BEDROOMS + ("office", "hallway", "study"), ("red", "blue", "black", "green", "grey", "yellow", "purple", "navy"), ("nylon", "canvas", "leather"),
       patterns=("plain", "striped", "checked"), parts=(P("strap", (0, -0.55, 0.05), (0.6, 0.1, 0.8), ("black", "grey", "white", "brown")),),
       on=("desk", "bed", "chair", "sofa"), under=("desk", "dining table")),
    _s("mug", (0.09, 0.09, 0.1), ("kitchen", "office", "study", "living room", "dining room"), ("white", "red", "blue", "yellow", "green", "black", "pink"), ("ceramic",),
       patterns=("plain", "striped", "dotted", "checked"), parts=(P("handle", (0.62, 0, 0), (0.25, 0.25, 0.6), ("black", "white", "red", "blue", "yellow")),),
       on=("kitchen counter", "desk", "dining table", "coffee table", "nightstand", "side table")),
    _s("laptop", (0.34, 0.24, 0.02), ("office", "study", "living room") + BEDROOMS, ("silver", "black", "grey", "white", "gold"), ("aluminium", "plastic"),
       parts=(P("screen", (0, -0.48, 5.5), (1.0, 0.05, 11.0), ("black", "silver", "white")),), on=("desk", "dining table", "coffee table", "bed", "sofa")),
    _s("teddy bear", (0.25, 0.2, 0.35), ("child's bedroom", "playroom", "living room"), ("brown", "tan", "white", "pink", "cream"), ("plush",),
       parts=(P("bow tie", (0, 0.55, 0.2), (0.4, 0.1, 0.15), ("red", "blue", "green", "yellow")),), on=("bed", "sofa", "toy chest", "bookshelf", "armchair")),
    _s("book", (0.16, 0.23, 0.04), ("living room", "office", "study") + BEDROOMS, ("red", "blue", "green", "black", "yellow", "white", "orange"), ("paper",),
       parts=(P("spine label", (-0.45, 0, 0), (0.1, 0.6, 1.05), ("gold", "white", "black")),), on=("nightstand", "desk", "coffee table", "bookshelf", "side table")),
    _s("table lamp", (0.25, 0.25, 0.45), BEDROOMS + ("living room", "office", "study"), ("white", "black", "gold", "silver", "green", "blue"), ("ceramic", "metal", "glass"),
       parts=(P("shade", (0, 0, 0.3), (1.2, 1.2, 0.4), ("white", "cream", "beige", "black")),), on=("nightstand", "desk", "side table", "sideboard", "dresser")),
    _s("vase", (0.15, 0.15, 0.3), ("living room", "dining room", "hallway"), ("white", "blue", "green", "red", "gold", "black", "teal"), ("ceramic", "glass"),
       patterns=("plain", "striped", "floral", "dotted"), parts=(P("flowers", (0, 0, 0.6), (1.3, 1.3, 0.3), ("red", "yellow", "white", "pink", "purple")),),
       on=("sideboard", "dining table", "coffee table", "side table", "tv stand")),
    _s("potted plant", (0.35, 0.35, 0.6), ("living room", "office", "hallway", "kitchen", "dining room"), ("green", "dark green", "olive"), ("terracotta", "ceramic"),
       parts=(P("pot", (0, 0, -0.35), (1.15, 1.15, 0.3), ("orange", "white", "grey", "black", "blue")),), on=("sideboard", "bookshelf", "tv stand", "side table")),
    _s("cushion", (0.4, 0.15, 0.4), ("living room", "playroom") + BEDROOMS, ("red", "yellow", "blue", "green", "white", "orange", "pink", "grey", "teal"), ("cotton", "velvet"),
       patterns=PATTERNS, parts=(P("piping", (0, 0, 0.48), (1.0, 1.0, 0.06), ("white", "gold", "black")),), on=("sofa", "armchair", "bed")),
    _s("blanket", (0.5, 0.4, 0.12), BEDROOMS + ("living room",), ("red", "blue", "grey", "cream", "green", "navy", "pink"), ("wool", "cotton", "fleece"),
       patterns=("plain", "striped", "checked", "plaid"), parts=(P("fringe", (0, 0.55, 0), (1.0, 0.1, 0.5), ("white", "cream", "black")),), on=("sofa", "bed", "armchair")),
    _s("pair of shoes", (0.3, 0.3, 0.12), ("hallway",) + BEDROOMS, ("black", "white", "brown", "red", "blue", "pink"), ("leather", "canvas"), plural="pairs of shoes",
       patterns=("plain", "striped"), parts=(P("laces", (0, 0.2, 0.55), (0.5, 0.3, 0.1), ("white", "black", "red")),), on=("shoe rack",), under=("bed", "desk", "side table")),
    _s("slippers", (0.28, 0.28, 0.08), BEDROOMS, ("pink", "grey", "blue", "white", "brown"), ("fleece", "felt"), plural="pairs of slippers",
       patterns=("plain", "dotted", "checked"), parts=(P("pom-pom", (0, 0.35, 0.6), (0.3, 0.2, 0.5), ("white", "pink", "yellow")),), under=("bed",)),
    _s("handbag", (0.3, 0.14, 0.22), BEDROOMS + ("hallway", "living room"), ("black", "brown", "red", "tan", "white", "pink", "navy"), ("leather", "canvas"),
       patterns=("plain", "checked", "dotted"), parts=(P("handle", (0, 0, 0.7), (0.6, 0.1, 0.4), ("black", "brown", "gold")),), on=("dresser", "sideboard", "bed", "chair", "sofa")),
    _s("suitcase", (0.45, 0.25, 0.65), BEDROOMS + ("hallway",), ("black", "navy", "red", "silver", "grey", "teal"), ("plastic", "fabric"),
       parts=(P("handle", (0, 0, 0.58), (0.35, 0.15, 0.15), ("black", "grey")),), under=("desk",)),
    _s("toy car", (0.2, 0.1, 0.08), ("child's bedroom", "playroom"), ("red", "blue", "yellow", "green", "orange"), ("plastic", "metal"),
       parts=(P("wheels", (0, 0, -0.4), (1.05, 1.1, 0.4), ("black",)),), on=("toy chest", "bookshelf", "coffee table"), under=("bed", "desk")),
    _s("ball", (0.22, 0.22, 0.22), ("child's bedroom", "playroom", "hallway"), ("red", "blue", "yellow", "white", "orange", "green"), ("rubber", "leather"),
       patterns=("plain", "striped", "dotted"), parts=(P("stripe", (0, 0, 0), (1.02, 0.2, 1.02), ("white", "black", "yellow")),), under=("bed", "desk", "coffee table"), on=("toy chest",)),
    _s("doll", (0.12, 0.1, 0.3), ("child's bedroom", "playroom"), ("pink", "purple", "blue", "yellow", "red"), ("plastic", "cloth"),
       parts=(P("hair", (0, 0, 0.42), (0.9, 0.9, 0.2), ("yellow", "brown", "black", "orange")),), on=("bed", "toy chest", "bookshelf", "dresser")),
    _s("guitar", (0.38, 0.12, 1.0), ("living room", "child's bedroom", "study", "master bedroom"), ("brown", "black", "red", "white", "tan"), ("wood",),
       parts=(P("neck", (0, 0, 0.55), (0.15, 0.5, 0.1), ("dark brown", "black")),), on=("sofa", "bed", "armchair")),
    _s("headphones", (0.18, 0.08, 0.2), ("office", "study") + BEDROOMS, ("black", "white", "red", "blue", "silver", "pink"), ("plastic",),
       parts=(P("ear cushions", (0, 0, -0.3), (1.05, 1.1, 0.4), ("black", "grey", "white")),), on=("desk", "nightstand", "bed", "sofa")),
    _s("keyboard", (0.44, 0.14, 0.03), ("office", "study"), ("black", "white", "grey", "silver"), ("plastic",), parts=(P("keycaps", (0, 0, 0.7), (0.95, 0.9, 0.5), ("white", "black", "grey")),), on=("desk",)),
    _s("monitor", (0.55, 0.18, 0.42), ("office", "study"), ("black", "white", "silver"), ("plastic",), parts=(P("stand", (0, 0, -0.55), (0.3, 0.9, 0.15), ("black", "silver", "white")),), on=("desk",)),
    _s("tablet", (0.25, 0.17, 0.01), ("living room", "office") + BEDROOMS, ("black", "silver", "white", "gold"), ("glass", "aluminium"),
       parts=(P("cover", (0, 0, -1.0), (1.02, 1.02, 1.0), ("blue", "red", "black", "pink", "green")),), on=("coffee table", "nightstand", "desk", "sofa", "bed")),
    _s("phone", (0.08, 0.16, 0.01), ("living room", "kitchen", "office") + BEDROOMS, ("black", "white", "silver", "gold", "blue"), ("glass",),
       parts=(P("case", (0, 0, -1.0), (1.05, 1.03, 1.0), ("red", "blue", "black", "pink", "green", "yellow")),), on=("nightstand", "coffee table", "desk", "kitchen counter", "dining table")),
    _s("water bottle", (0.08, 0.08, 0.26), ("kitchen", "office", "hallway") + BEDROOMS, ("blue", "green", "silver", "red", "pink", "black", "teal"), ("steel", "plastic"),
       patterns=("plain", "striped"), parts=(P("cap", (0, 0, 0.58), (0.9, 0.9, 0.15), ("black", "white", "silver", "orange")),), on=("desk", "nightstand", "kitchen counter", "dining table")),
    _s("lunch box", (0.22, 0.16, 0.1), ("kitchen",), ("red", "blue", "green", "yellow", "pink", "purple"), ("plastic", "metal"),
       patterns=("plain", "dotted", "striped"), parts=(P("lid", (0, 0, 0.55), (1.02, 1.02, 0.2), ("white", "blue", "red", "green")),), on=("kitchen counter", "dining table")),
    _s("kettle", (0.22, 0.16, 0.24), ("kitchen",), ("silver", "white", "black", "red", "cream", "teal"), ("steel", "plastic"),
       parts=(P("handle", (0, 0, 0.6), (0.6, 0.2, 0.2), ("black", "white", "silver")),), on=("kitchen counter",)),
    _s("toaster", (0.28, 0.18, 0.2), ("kitchen",), ("silver", "white", "black", "red", "cream"), ("steel", "plastic"), parts=(P("lever", (0.55, 0, 0.2), (0.1, 0.2, 0.15), ("black", "silver")),), on=("kitchen counter",)),
    _s("bowl", (0.18, 0.18, 0.08), ("kitchen", "dining room"), ("white", "blue", "green", "red", "yellow", "black"), ("ceramic", "wood", "glass"),
       patterns=("plain", "striped", "dotted", "floral"), parts=(P("rim", (0, 0, 0.45), (1.02, 1.02, 0.1), ("white", "gold", "blue", "black")),), on=("kitchen counter", "dining table", "coffee table")),
    _s("fruit bowl", (0.3, 0.3, 0.14), ("kitchen", "dining room"), ("white", "brown", "silver", "green", "blue"), ("ceramic", "wood", "metal"),
       parts=(P("fruit", (0, 0, 0.6), (0.8, 0.8, 0.4), ("orange", "red", "yellow", "green")),), on=("dining table", "kitchen counter", "sideboard")),
    _s("cutting board", (0.4, 0.28, 0.02), ("kitchen",), ("tan", "brown", "white", "green", "black"), ("wood", "plastic"), parts=(P("handle", (0.58, 0, 0), (0.16, 0.3, 1.0), ("tan", "brown", "black")),), on=("kitchen counter",)),
    _s("towel", (0.4, 0.25, 0.08), ("bathroom", "laundry room"), ("white", "blue", "pink", "green", "grey", "yellow", "navy"), ("cotton",),
       patterns=("plain", "striped", "checked"), parts=(P("border", (0, 0.45, 0), (1.0, 0.1, 1.02), ("white", "navy", "gold", "grey")),), on=("sink cabinet", "bathtub", "washing machine", "laundry hamper")),
    _s("toothbrush cup", (0.08, 0.08, 0.11), ("bathroom",), ("white", "blue", "green", "pink", "black", "yellow"), ("ceramic", "plastic"),
       patterns=("plain", "dotted"), parts=(P("toothbrush", (0, 0, 0.7), (0.2, 0.2, 0.8), ("blue", "green", "red", "white")),), on=("sink cabinet",)),
    _s("hair dryer", (0.24, 0.09, 0.22), ("bathroom",) + BEDROOMS, ("black", "white", "pink", "purple", "silver"), ("plastic",), parts=(P("nozzle", (0.55, 0, 0.25), (0.15, 0.8, 0.3), ("black", "grey")),), on=("sink cabinet", "dresser")),
    _s("alarm clock", (0.14, 0.08, 0.12), BEDROOMS, ("white", "black", "red", "blue", "silver", "green"), ("plastic", "metal"),
       parts=(P("bells", (0, 0, 0.6), (0.9, 0.6, 0.25), ("silver", "gold", "black")),), on=("nightstand", "dresser", "desk")),
    _s("picture frame", (0.25, 0.05, 0.3), ("living room", "hallway", "office") + BEDROOMS, ("black", "white", "gold", "brown", "silver"), ("wood", "metal"),
       parts=(P("photo", (0, 0.52, 0), (0.8, 0.1, 0.8), ("blue", "green", "beige", "orange")),), on=("sideboard", "nightstand", "desk", "dresser", "bookshelf", "tv stand")),
    _s("jewelry box", (0.22, 0.15, 0.1), BEDROOMS, ("pink", "white", "brown", "red", "purple", "black"), ("wood", "velvet", "leather"),
       patterns=("plain", "floral", "dotted"), parts=(P("clasp", (0, 0.55, 0.2), (0.15, 0.1, 0.3), ("gold", "silver")),), on=("dresser", "nightstand")),
    _s("umbrella", (0.1, 0.1, 0.85), ("hallway",), ("black", "red", "blue", "yellow", "navy", "green"), ("nylon",), patterns=("plain", "striped", "dotted", "checked"),
       parts=(P("handle", (0, 0, 0.55), (1.2, 1.2, 0.12), ("brown", "black", "silver")),), on=("shoe rack",)),
    _s("jacket", (0.5, 0.2, 0.12), ("hallway",) + BEDROOMS, ("black", "navy", "green", "red", "brown", "grey", "beige", "yellow"), ("wool", "denim", "leather", "nylon"),
       patterns=("plain", "checked", "striped"), parts=(P("zipper", (0, 0.1, 0.5), (0.05, 0.8, 0.3), ("silver", "gold", "black")),), on=("bed", "chair", "sofa", "armchair")),
    _s("hat", (0.3, 0.3, 0.14), ("hallway",) + BEDROOMS, ("black", "brown", "tan", "red", "navy", "white", "beige"), ("felt", "straw", "wool"),
       parts=(P("band", (0, 0, -0.1), (1.06, 1.06, 0.2), ("black", "red", "white", "brown")),), on=("sideboard", "dresser", "bed", "shoe rack")),
    _s("scarf", (0.4, 0.2, 0.05), ("hallway",) + BEDROOMS, ("red", "blue", "grey", "green", "yellow", "purple", "cream"), ("wool", "silk"),
       patterns=("plain", "striped", "checked", "plaid", "dotted"), parts=(P("tassels", (0.55, 0, 0), (0.1, 1.0, 1.0), ("white", "black", "gold")),), on=("sideboard", "dresser", "bed", "chair")),
    _s("trash can", (0.3, 0.3, 0.4), ("kitchen", "office", "bathroom"), ("silver", "white", "black", "grey", "blue"), ("steel", "plastic"),
       parts=(P("lid", (0, 0, 0.52), (1.02, 1.02, 0.06), ("black", "silver", "white")),), under=("desk",)),
    _s("wall clock", (0.3, 0.05, 0.3), ("kitchen", "living room", "office", "dining room"), ("white", "black", "brown", "silver", "red"), ("wood", "metal", "plastic"),
       parts=(P("hands", (0, 0.6, 0), (0.5, 0.1, 0.5), ("black", "gold", "red")),), on=("sideboard", "bookshelf", "desk", "tv stand")),
    _s("speaker", (0.15, 0.15, 0.22), ("living room", "office", "study") + BEDROOMS, ("black", "white", "grey", "blue", "red"), ("fabric", "plastic"),
       parts=(P("grille", (0, 0.52, 0), (0.9, 0.05, 0.8), ("black", "grey", "silver")),), on=("tv stand", "desk", "bookshelf", "nightstand", "sideboard")),
    _s("camera", (0.13, 0.08, 0.09), ("office", "study", "living room") + BEDROOMS, ("black", "silver", "white"), ("metal", "plastic"),
       parts=(P("lens", (0, 0.7, 0), (0.45, 0.4, 0.6), ("black", "silver")),), on=("desk", "sideboard", "nightstand", "bookshelf")),
    _s("game controller", (0.16, 0.1, 0.06), ("living room", "child's bedroom", "playroom"), ("black", "white", "red", "blue", "grey"), ("plastic",),
       parts=(P("buttons", (0.25, 0, 0.55), (0.3, 0.5, 0.2), ("red", "green", "blue", "yellow")),), on=("coffee table", "tv stand", "sofa", "desk")),
    _s("board game", (0.4, 0.28, 0.07), ("living room", "playroom", "child's bedroom"), ("red", "blue", "green", "yellow", "orange", "purple"), ("cardboard",),
       patterns=("plain", "checked", "striped"), parts=(P("lid label", (0, 0, 0.52), (0.6, 0.5, 0.05), ("white", "black", "yellow")),), on=("coffee table", "bookshelf", "toy chest"), under=("coffee table",)),
    _s("glasses case", (0.16, 0.06, 0.05), BEDROOMS + ("office", "living room"), ("black", "brown", "red", "blue", "tan"), ("leather", "plastic"),
       parts=(P("hinge", (0, -0.5, 0.3), (0.6, 0.1, 0.3), ("silver", "gold")),), on=("nightstand", "desk", "coffee table")),
    _s("wallet", (0.12, 0.09, 0.02), BEDROOMS + ("hallway",), ("black", "brown", "tan", "red", "navy"), ("leather",),
       parts=(P("stitching", (0, 0, 0.55), (0.9, 0.9, 0.1), ("white", "gold", "black")),), on=("nightstand", "dresser", "sideboard", "desk")),
    _s("pillow", (0.5, 0.35, 0.14), BEDROOMS, ("white", "blue", "pink", "grey", "yellow", "cream"), ("cotton", "silk"),
       patterns=("plain", "striped", "dotted", "floral"), parts=(P("pillowcase trim", (0, 0.48, 0), (1.0, 0.06, 1.0), ("white", "gold", "navy")),), on=("bed", "armchair", "sofa")),
    _s("laundry basket", (0.5, 0.35, 0.3), ("laundry room", "bathroom") + BEDROOMS, ("white", "tan", "grey", "blue", "pink"), ("wicker", "plastic"),
       parts=(P("handles", (0, 0, 0.45), (1.05, 0.2, 0.1), ("white", "grey", "brown")),), on=("washing machine",), under=("desk",)),
    _s("coffee maker", (0.22, 0.25, 0.33), ("kitchen",), ("black", "silver", "red", "white"), ("steel", "plastic"), parts=(P("carafe", (0, 0.3, -0.2), (0.7, 0.5, 0.5), ("black", "silver")),), on=("kitchen counter",)),
    _s("frying pan", (0.28, 0.45, 0.06), ("kitchen",), ("black", "silver", "red", "grey"), ("cast iron", "steel"), parts=(P("handle", (0, 0.4, 0.2), (0.12, 0.5, 0.4), ("black", "brown", "silver")),), on=("kitchen counter", "oven")),
    _s("candle", (0.08, 0.08, 0.15), ("living room", "dining room", "bathroom") + BEDROOMS, ("white", "cream", "red", "purple", "teal"), ("wax",),
       parts=(P("holder", (0, 0, -0.4), (1.3, 1.3, 0.25), ("gold", "silver", "black", "white")),), on=("dining table", "sideboard", "coffee table", "nightstand", "sink cabinet")),
    _s("plush rabbit", (0.18, 0.16, 0.3), ("child's bedroom", "playroom"), ("white", "pink", "grey", "brown", "light blue"), ("plush",),
       parts=(P("ears", (0, 0, 0.55), (0.6, 0.3, 0.4), ("pink", "white", "grey")),), on=("bed", "toy chest", "armchair", "sofa")),
    _s("school bag", (0.35, 0.18, 0.38), ("child's bedroom", "hallway"), ("pink", "blue", "green", "red", "purple", "yellow"), ("nylon", "canvas"),
       patterns=("plain", "dotted", "striped"), parts=(P("pocket", (0, 0.55, -0.15), (0.7, 0.15, 0.4), ("white", "black", "yellow", "grey")),), on=("desk", "chair", "bed"), under=("desk",)),
    _s("sewing kit", (0.25, 0.18, 0.12), ("study", "living room") + BEDROOMS, ("red", "pink", "tan", "blue", "green"), ("wicker", "fabric"),
       patterns=("plain", "floral", "checked"), parts=(P("thread spools", (0, 0, 0.55), (0.6, 0.4, 0.2), ("red", "blue", "yellow", "white")),), on=("desk", "sideboard", "dresser", "coffee table")),
)

CATEGORIES: dict[str, Category] = {c.name: c for c in FURNITURE + SMALL}


def category(name: str) -> Category:
    try:
        return CATEGORIES[name]
    except KeyError:
        raise KeyError(f"unknown object category {name!r}; known: {sorted(CATEGORIES)}") from None


def furniture_for_room(room_type: str) -> list[Category]:
    return [c for c in FURNITURE if room_type in c.rooms]


def small_for_room(room_type: str) -> list[Category]:
    return [c for c in SMALL if room_type in c.rooms]


def _validate() -> None:
    """Catch catalog typos at import time (unknown colours, rooms or supports)."""
    for c in CATEGORIES.values():
        for col in c.colors + tuple(x for p in c.parts for x in p.colors):
            if col not in COLORS:
                raise ValueError(f"catalog: category {c.name!r} uses unknown colour {col!r}")
        for r in c.rooms:
            if r not in ROOM_TYPES:
                raise ValueError(f"catalog: category {c.name!r} uses unknown room {r!r}")
        for s in c.on + c.under:
            if s not in CATEGORIES or not CATEGORIES[s].furniture:
                raise ValueError(f"catalog: category {c.name!r} placed on/under unknown furniture {s!r}")
        for s in c.under:
            if CATEGORIES[s].open_below <= c.size[2]:
                raise ValueError(f"catalog: {c.name!r} ({c.size[2]} m tall) does not fit under {s!r}")
        for p in c.patterns:
            if p not in PATTERNS:
                raise ValueError(f"catalog: category {c.name!r} uses unknown pattern {p!r}")


_validate()

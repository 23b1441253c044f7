"""Scene summaries in other words (issue 30): ``summary_style`` "verbatim" | "varied".

"verbatim" summaries quote each owned object's generator caption ("the checked teal armchair with
a dark green backrest next to the piano"). "varied" describes the same object in other words, as a
person or an LLM writing the summary would: a category synonym ("easy chair"), a colour synonym
("blue-green"), a different attribute order ("the easy chair, blue-green and checked"), a partial
description (colour or part left out) and relative descriptions ("the cup near the laptop") that
are computed from the scene's geometry, so they are true of the scene, and only emitted when they
are.

The word lists below were written for this module, separately from the captions the perception
tower trains on (personal/world/generator.py) and from any caption paraphraser of its training
data: the point of "varied" is wording the tower has not seen. Everything is deterministic for a
seed (the caller passes a ``random.Random``).
"""
from __future__ import annotations

import random
import re

from personal.world.model import Scene, SceneObject

SUMMARY_STYLES = ("verbatim", "varied")

# category -> other names for it; none of them is another category's name or a room word
CATEGORY_SYNONYMS: dict[str, tuple[str, ...]] = {
    "bed": ("sleeping bed", "bedstead"), "crib": ("cot", "baby bed"), "sofa": ("couch", "settee"),
    "armchair": ("easy chair", "lounge chair"), "cabinet": ("cupboard",), "sideboard": ("buffet", "credenza"),
    "desk": ("writing desk", "work desk"), "dining table": ("dinner table", "eating table"),
    "coffee table": ("low table", "cocktail table"), "side table": ("end table", "occasional table"),
    "bookshelf": ("bookcase", "book rack"), "wardrobe": ("armoire", "clothes cupboard"),
    "dresser": ("chest of drawers",), "nightstand": ("bedside table", "night table"),
    "kitchen counter": ("kitchen unit", "countertop"), "refrigerator": ("fridge",), "oven": ("stove", "cooker"),
    "tv stand": ("television unit", "media console"), "chair": ("seat",), "office chair": ("desk chair", "swivel chair"),
    "bathtub": ("tub", "bath"), "toilet": ("lavatory", "wc"), "sink cabinet": ("vanity unit", "washbasin cabinet"),
    "washing machine": ("washer",), "shoe rack": ("shoe shelf",), "toy chest": ("toy box", "toy trunk"),
    "piano": ("upright piano",), "ottoman": ("footstool", "pouf"), "laundry hamper": ("clothes hamper",),
    "floor lamp": ("standing lamp", "standard lamp"), "backpack": ("rucksack", "knapsack"), "mug": ("cup", "coffee cup"),
    "laptop": ("notebook computer", "portable computer"), "teddy bear": ("stuffed bear", "toy bear"),
    "book": ("novel", "hardback"), "table lamp": ("reading lamp", "little lamp"), "vase": ("flower vase",),
    "potted plant": ("houseplant", "plant pot"), "cushion": ("throw cushion", "scatter cushion"),
    "blanket": ("throw", "rug blanket"), "pair of shoes": ("shoes", "pair of trainers"), "slippers": ("house shoes",),
    "handbag": ("purse",), "suitcase": ("luggage case", "travel case"), "toy car": ("model car", "little car"),
    "ball": ("play ball",), "doll": ("toy doll",), "guitar": ("acoustic guitar",), "headphones": ("headset",),
    "keyboard": ("computer keyboard",), "monitor": ("computer screen", "display"), "tablet": ("tablet computer",),
    "phone": ("smartphone", "mobile"), "toothbrush cup": ("toothbrush holder", "toothbrush tumbler"),
    "hair dryer": ("blow dryer", "hairdryer"), "alarm clock": ("bedside clock",), "picture frame": ("photo frame",),
    "jewelry box": ("jewellery case", "trinket box"), "umbrella": ("brolly",), "jacket": ("coat",),
    "hat": ("cap",), "scarf": ("muffler",), "trash can": ("rubbish bin", "waste bin"),
    "wall clock": ("clock",), "speaker": ("loudspeaker",), "camera": ("digital camera",),
    "game controller": ("gamepad", "joypad"), "board game": ("game box",), "glasses case": ("spectacle case",),
    "wallet": ("billfold",), "pillow": ("bed pillow",), "laundry basket": ("washing basket",),
    "coffee maker": ("coffee machine",), "frying pan": ("skillet",), "candle": ("wax candle",),
    "plush rabbit": ("stuffed bunny", "toy rabbit"), "school bag": ("satchel",), "sewing kit": ("sewing box",),
    "water bottle": ("drinking bottle", "flask"), "lunch box": ("lunch tin", "food box"), "kettle": ("electric kettle",),
    "toaster": ("bread toaster",), "bowl": ("dish", "serving dish"), "fruit bowl": ("fruit dish",),
    "cutting board": ("chopping board",), "towel": ("bath towel", "hand towel"),
}
COLOUR_SYNONYMS: dict[str, tuple[str, ...]] = {
    "grey": ("gray",), "dark grey": ("charcoal",), "light grey": ("pale grey",), "navy": ("navy-blue",),
    "dark red": ("maroon",), "cream": ("off-white",), "beige": ("sand-coloured",), "tan": ("light brown",),
    "dark brown": ("chocolate-brown",), "light blue": ("sky-blue",), "teal": ("blue-green",),
    "olive": ("olive-green",), "gold": ("golden",), "silver": ("silvery",), "dark green": ("forest-green",),
    "purple": ("violet",), "white": ("snow-white",), "black": ("jet-black",), "red": ("scarlet",),
}
PREPOSITIONS = {"on": ("on top of", "sitting on"), "under": ("underneath", "beneath"),
                "next to": ("beside", "by"), "against": ("along", "up against")}
NEAR_WORDS = ("near", "beside")
NEAR_GAP_M = 0.5  # footprint gap under which "near the X" is true
_RELATION = re.compile(r"\s(on|under|next to|against|at the centre of)\s(the\s.+)$")


def synonym(category: str, rng: random.Random) -> str:
    return rng.choice(CATEGORY_SYNONYMS.get(category, (category,)))


def colour_word(colour: str, rng: random.Random) -> str:
    return rng.choice(COLOUR_SYNONYMS[colour]) if colour in COLOUR_SYNONYMS and rng.random() < 0.5 else colour


def caption_relation(obj: SceneObject) -> tuple[str, str]:
    """(preposition, landmark) of the caption's closing relation: ("on", "the black desk")."""
    m = _RELATION.search(obj.caption)
    if not m:
        raise ValueError(f"object {obj.object_id}: caption {obj.caption!r} ends in no known relation")
    return m.group(1), m.group(2)


def _landmark(text: str, scene: Scene, obj: SceneObject, rng: random.Random) -> str:
    """The caption's landmark ("the black desk", "the wall", "the room") with the furniture named
    by a synonym; the colour, when the caption gives one, is kept (it tells same-category pieces apart)."""
    support = obj.attributes.get("support")
    cat = scene.object(support).category if support else next(
        (c for c in sorted(CATEGORY_SYNONYMS, key=len, reverse=True) if text.endswith(" " + c)), None)
    if cat is None:
        return text
    return text[: len(text) - len(cat)] + synonym(cat, rng)


def near_landmark(scene: Scene, obj: SceneObject) -> SceneObject | None:
    """The nearest other object in the same room within NEAR_GAP_M of ``obj``'s footprint, when its
    category is the only one of its kind in the room (so "near the X" names one thing), and it is
    not the object ``obj`` stands on; else None."""
    room = [o for o in scene.objects if o.room_id == obj.room_id and o.floor == obj.floor and o is not obj]
    support = obj.attributes.get("support")
    unique = [o for o in room if o.object_id != support and sum(p.category == o.category for p in room) == 1
              and o.category != obj.category]
    gaps = [(_gap(obj, o), o.object_id, o) for o in unique]
    gaps = [g for g in gaps if g[0] < NEAR_GAP_M]
    return min(gaps)[2] if gaps else None


def _gap(a: SceneObject, b: SceneObject) -> float:
    """Shortest distance between two footprints (0 when they overlap)."""
    dx = max(b.box.min[0] - a.box.max[0], a.box.min[0] - b.box.max[0], 0.0)
    dy = max(b.box.min[1] - a.box.max[1], a.box.min[1] - b.box.max[1], 0.0)
    return (dx * dx + dy * dy) ** 0.5


def varied_relation(scene: Scene, obj: SceneObject, rng: random.Random) -> str:
    """Where the object is, in other words: the caption's relation paraphrased, or (when true of
    the scene) a relative description against another nearby object."""
    near = near_landmark(scene, obj)
    if near is not None and rng.random() < 0.4:
        return f"{rng.choice(NEAR_WORDS)} the {synonym(near.category, rng)}"
    prep, landmark = caption_relation(obj)
    if prep == "at the centre of":  # "of the room" would read as a room name before "in the <room>"
        return rng.choice(("standing free", "out in the open"))
    return f"{rng.choice(PREPOSITIONS[prep])} {_landmark(landmark, scene, obj, rng)}"


def varied_description(scene: Scene, obj: SceneObject, rng: random.Random) -> str:
    """The object in other words, without a leading article ("checked easy chair in blue-green beside
    the bookcase"); never the caption's wording (the category word is always a synonym). The forms
    are ones the builtin extractor reads whole (a comma or a "whose" clause would split them)."""
    name = synonym(obj.category, rng)
    colour = colour_word(obj.color, rng)
    pattern = obj.attributes.get("pattern", "plain")
    parts = obj.attributes.get("parts") or {}
    part = next(iter(parts.items()), None)
    where = varied_relation(scene, obj, rng)
    form = rng.randrange(4)
    if form == 0:  # partial: the colour and pattern left out, the part (if any) kept
        text = f"{name} with the {part[1]} {part[0]}" if part else name
    elif form == 1:  # the colour after the noun, the pattern before it
        text = f"{pattern} {name} in {colour}" if pattern != "plain" else f"{name} in {colour}"
    elif form == 2:  # colour after the noun, the part's colour after the part
        text = f"{name} in {colour}" + (f" with the {part[0]} in {colour_word(part[1], rng)}" if part else "")
    else:  # colour before pattern, part left out
        text = f"{colour} {pattern} {name}" if pattern != "plain" else f"{colour} {name}"
    return f"{text} {where}"


def check_summary_style(style: str) -> str:
    if style not in SUMMARY_STYLES:
        raise ValueError(f"unknown summary_style {style!r}; expected one of {', '.join(SUMMARY_STYLES)}")
    return style

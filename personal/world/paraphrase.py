"""Paraphrases of the generator's captions, for wording randomisation of the crop tower's training.

A caption (``personal.world.generator._assign_captions``) reads
``the [pattern] colour [material] category [with [a] colour part] relation``. A paraphrase keeps
that locked-text style ("the ... on the desk") and what it states stays true of the drawn object:

- category synonyms (sofa -> couch, mug -> cup, backpack -> rucksack ...);
- colour words outside the catalog, each mapped to the catalog colour whose appearance it names
  (scarlet -> red, sapphire -> blue ...);
- attributes dropped (pattern, part phrase) or re-ordered (pattern after the colour, the part
  phrase after the relation).

Two disjoint off-catalog colour vocabularies: ``TRAIN_COLOUR_WORDS`` for training paraphrases and
``EVAL_COLOUR_WORDS`` (crimson, cobalt, ivory ...) for the held-out unseen-colour evaluation only
(:func:`recolour`); ``test_world_paraphrase`` keeps them disjoint. Deterministic: the same
caption, category and seed give the same paraphrase.
"""
from __future__ import annotations

import random
import re

from personal.world.catalog import COLORS, PATTERNS

# catalog colour -> off-catalog words naming (about) its appearance; training paraphrases only
TRAIN_COLOUR_WORDS: dict[str, tuple[str, ...]] = {
    "red": ("scarlet", "ruby"), "dark red": ("burgundy",), "orange": ("tangerine",), "yellow": ("lemon",),
    "green": ("emerald",), "dark green": ("forest green",), "olive": ("moss",), "teal": ("petrol blue",),
    "light blue": ("baby blue",), "blue": ("sapphire",), "navy": ("midnight blue",), "purple": ("plum",),
    "pink": ("rose",), "white": ("snow white",), "cream": ("off-white",), "beige": ("sand",),
    "light grey": ("pale grey",), "grey": ("slate",), "dark grey": ("graphite",), "black": ("jet black",),
    "brown": ("chestnut",), "dark brown": ("espresso",), "tan": ("camel",), "silver": ("chrome",), "gold": ("brass",),
}
# catalog colour -> the held-out unseen word of the evaluation (never in a training paraphrase)
EVAL_COLOUR_WORDS: dict[str, str] = {
    "red": "crimson", "dark red": "maroon", "orange": "amber", "yellow": "canary", "green": "jade",
    "dark green": "hunter green", "olive": "avocado", "teal": "turquoise", "light blue": "sky blue", "blue": "cobalt",
    "navy": "indigo", "purple": "violet", "pink": "blush", "white": "ivory", "cream": "eggshell", "beige": "oatmeal",
    "light grey": "ash", "dark grey": "charcoal", "black": "ebony", "brown": "cocoa",
    "dark brown": "chocolate", "tan": "caramel", "silver": "platinum",
}
CATEGORY_SYNONYMS: dict[str, tuple[str, ...]] = {
    "sofa": ("couch", "settee"), "mug": ("cup",), "backpack": ("rucksack",), "school bag": ("satchel",),
    "trash can": ("bin", "waste bin"), "phone": ("smartphone",), "refrigerator": ("fridge",),
    "nightstand": ("bedside table",), "wardrobe": ("closet",), "armchair": ("easy chair",),
    "coffee maker": ("coffee machine",), "tv stand": ("tv cabinet",), "pair of shoes": ("shoes",),
    "plush rabbit": ("stuffed bunny",), "teddy bear": ("stuffed bear",), "picture frame": ("photo frame",),
    "potted plant": ("houseplant",), "frying pan": ("skillet",), "cushion": ("throw pillow",), "jacket": ("coat",),
    "dresser": ("chest of drawers",), "handbag": ("purse",), "headphones": ("headset",), "speaker": ("loudspeaker",),
    "water bottle": ("flask",), "suitcase": ("travel case",), "bathtub": ("bath",), "washing machine": ("washer",),
    "laundry hamper": ("clothes hamper",), "laundry basket": ("clothes basket",), "cabinet": ("cupboard",),
    "office chair": ("desk chair",), "ottoman": ("footstool",), "crib": ("cot",), "toy chest": ("toy box",),
    "laptop": ("notebook computer",), "monitor": ("computer screen",), "tablet": ("tablet computer",),
    "kettle": ("tea kettle",), "scarf": ("muffler",), "toilet": ("loo",), "sideboard": ("buffet cabinet",),
}
_RELATION = re.compile(r" (on the |under the |next to the |against the wall|at the centre of the room)")


def colour_regex(words) -> re.Pattern:
    names = sorted(words, key=len, reverse=True)  # "dark green" before "green"
    return re.compile(r"\b(" + "|".join(re.escape(n) for n in names) + r")\b")


_CATALOG_COLOUR = colour_regex(COLORS)


def articles(text: str) -> str:
    """'a' / 'an' agreeing with the word after it (a colour word may have changed)."""
    text = re.sub(r"\ba (?=[aeiou])", "an ", text)
    return re.sub(r"\ban (?=[^aeiou])", "a ", text)


def recolour(caption: str, words: dict[str, str] | None = None) -> str:
    """``caption`` with every catalog colour word replaced by its word in ``words`` (default the
    evaluation's unseen words; colours without one stay)."""
    words = EVAL_COLOUR_WORDS if words is None else words
    return articles(_CATALOG_COLOUR.sub(lambda m: words.get(m.group(1), m.group(1)), caption))


def _split(caption: str, category: str):
    """(pattern, colour-and-material words, part phrase, relation) of a generated caption, or None
    when it does not read as one."""
    if not caption.startswith("the "):
        return None
    m = _RELATION.search(caption)
    body, rel = (caption[4:m.start()], caption[m.start() + 1:]) if m else (caption[4:], "")
    head, _, part = body.partition(" with ")
    if not head.endswith(category):
        return None
    words = head[: -len(category)].strip().split(" ")
    pattern = words.pop(0) if words and words[0] in PATTERNS else ""
    return pattern, " ".join(w for w in words if w), part, rel


def paraphrase(caption: str, category: str, rng: random.Random, p: float = 0.4) -> str:
    """One paraphrase of a generated caption (each change with probability ``p``); captions not in
    the generator's form get only the colour-word changes."""
    def colour_word(m):
        alts = TRAIN_COLOUR_WORDS.get(m.group(1))
        return rng.choice(alts) if alts and rng.random() < p else m.group(1)

    parts = _split(caption, category)
    if parts is None:
        return articles(_CATALOG_COLOUR.sub(colour_word, caption))
    pattern, colour, part, rel = parts
    noun = rng.choice(CATEGORY_SYNONYMS[category]) if category in CATEGORY_SYNONYMS and rng.random() < p else category
    colour = _CATALOG_COLOUR.sub(colour_word, colour)
    part = _CATALOG_COLOUR.sub(colour_word, part)
    if pattern and rng.random() < p / 2:
        pattern = ""  # dropped
    if part and rng.random() < p / 2:
        part = ""  # dropped
    if pattern and rng.random() < p:
        head = " ".join(w for w in (colour, pattern, noun) if w)  # "the blue striped mug"
    else:
        head = " ".join(w for w in (pattern, colour, noun) if w)
    part_first = not (part and rel and rng.random() < p)  # else "the blue mug on the desk with a black handle"
    text = head + (f" with {part}" if part and part_first else "")
    text += f" {rel}" if rel else ""
    text += f" with {part}" if part and not part_first else ""
    return articles("the " + text)


def paraphrases(caption: str, category: str, n: int, seed: int = 0) -> list[str]:
    """Up to ``n`` distinct paraphrases other than ``caption`` itself, deterministic by ``seed``."""
    rng = random.Random(f"paraphrase:{seed}:{caption}")
    out: list[str] = []
    for _ in range(4 * n):
        t = paraphrase(caption, category, rng)
        if t != caption and t not in out:
            out.append(t)
        if len(out) == n:
            break
    return out

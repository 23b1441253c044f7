"""Colour words a locked-text tower never saw, read through the colours it did (issue 30).

The crop tower learned colour from the generator's captions: 25 catalog colour words ("red",
"navy", "cream" ...). A person says "crimson", "cobalt" or "eggshell". MiniLM does not place those
near the catalog words (docs/perception.md, "Unseen colour words from the text side"), so the
tower ranks their captions little better than chance on colour.

This module grounds such a word in appearance instead of in text: a colour-naming lexicon gives
its sRGB value, and the text is embedded as a mixture of the same text with the word replaced by
each of the ``k`` catalog colours nearest in CIELAB (weights ``exp(-dE / tau)``). Words the tower
trained on are never touched, so every caption in the generator's own words embeds exactly as
before.

The lexicon is matplotlib's ``matplotlib.colors.XKCD_COLORS`` (the 949 names of the xkcd colour
survey, https://xkcd.com/color/rgb/; lib/matplotlib/_color_data.py), then ``CSS4_COLORS`` for names
xkcd lacks, then, for names neither has ("graphite", "espresso", "jet black"), the 4,961 curated
names of meodai's color-name-list (npm ``color-name-list`` 14.51.0, MIT, its
``dist/colornames.bestof.csv``, copied verbatim into ``data/`` with its licence and checked against
the npm package by ``test/test_colour_words.py``). The catalog colours' appearance is the training
palette (``personal.world.catalog.COLORS``): what each word looked like in the tower's training data.

Capitalised and possessive matches are taken for names ("Rosa", "Amber's mug") and left alone.
A curated name counts only where a colour word stands (after "in", or before a word that is not a
preposition, conjunction or verb: ``_in_a_colour_place``), so "the couch in the living room" and
"the lunch tin near the kettle" keep their nouns. Known limits: a word outside the lexicon stays as it
is, an xkcd / CSS4 name that is also a noun ("wine" in "wine glass") is read as a colour, and so is a
name written in lower case.
"""
from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, replace
from functools import cached_property, lru_cache
from typing import Callable

import numpy as np

from personal.world.colour import srgb_to_lab
from personal.world.paraphrase import articles, colour_regex

# chosen on validation households 20000-20015 with the training paraphraser's colour words, never
# the evaluation's (docs/perception.md, "Unseen colour words: a colour lexicon")
DEFAULT_K = 3
DEFAULT_TAU = 3.0
# chosen on the same households and words, 2026-12-07 (docs/results/colour_lexicon/RULES_extension.md)
DEFAULT_LEXICON = "xkcd+bestof"
# chosen on validation households 2026-12-07 (RULES_extension.md, amendment): a curated name counts as
# a colour only where a colour word stands (_in_a_colour_place), and none beginning with an article
DEFAULT_CURATED_IN_CONTEXT = True
_ARTICLES = frozenset({"the", "a", "an"})
# words that follow an object noun in a sentence, never a colour word's noun
_NOT_BEFORE_A_NOUN = frozenset(
    "in on under over near beside by at with and or of to from into onto for against along beneath underneath "
    "is are was were be belongs belong sits sitting lies lying stands standing that which who".split())
MIN_WEIGHT = 0.01  # lighter variants are dropped (the heaviest never; the rest re-weighted to sum to 1)
_WORD = re.compile(r"[a-z]+")


# the lexicons a grounding may read (docs/perception.md): matplotlib's xkcd + CSS4 names, and those
# extended by meodai's color-name-list (npm, MIT) for names neither has
LEXICONS = ("xkcd", "xkcd+bestof", "xkcd+full")
COLOUR_NAME_LIST_FILES = {"bestof": "colornames.bestof.csv", "full": "colornames.csv"}


def _key(name: str) -> str | None:
    key = re.sub(r"[-/]", " ", name.lower()).strip()
    return key if re.fullmatch(r"[a-z' ]+", key) else None


@lru_cache(maxsize=4)
def lexicon(source: str = "xkcd") -> dict[str, tuple[float, float, float]]:
    """Colour name (lower case, hyphens and slashes as spaces) -> sRGB in [0, 1]; ``source`` one of
    :data:`LEXICONS` (the earlier list wins a name both have)."""
    import matplotlib.colors as mc

    if source not in LEXICONS:
        raise ValueError(f"colour lexicon {source!r}: expected one of {', '.join(LEXICONS)}")
    names = {k.removeprefix("xkcd:"): v for k, v in mc.XKCD_COLORS.items()}
    for k, v in mc.CSS4_COLORS.items():
        names.setdefault(k, v)
    out = {}
    for name, value in names.items():
        if (key := _key(name)) is not None:
            out.setdefault(key, mc.to_rgb(value))
    if "+" in source:
        for name, value in colour_name_list(source.split("+")[1]).items():
            if (key := _key(name)) is not None:
                out.setdefault(key, mc.to_rgb(value))
    return out


def colour_name_list(which: str) -> dict[str, str]:
    """meodai's color-name-list, ``which`` list (bestof / full): name -> hex. The curated list ships
    in ``data/``; ``PERSONAL_COLOUR_NAME_LIST`` may name the npm package's ``dist/`` folder instead
    (the full list, 31,918 names, is read from there only: it was measured, not shipped)."""
    import csv
    import os
    from pathlib import Path

    folder = Path(os.environ.get("PERSONAL_COLOUR_NAME_LIST") or Path(__file__).parent / "data")
    path = folder / COLOUR_NAME_LIST_FILES[which]
    try:
        with path.open(newline="", encoding="utf-8") as f:
            rows = {row["name"]: row["hex"] for row in csv.DictReader(f)}
    except (OSError, KeyError, UnicodeDecodeError, csv.Error) as e:
        raise ValueError(f"colour name list {path}: cannot read its name,hex rows ({type(e).__name__}: {e}); "
                         f"PERSONAL_COLOUR_NAME_LIST names color-name-list's dist/ folder") from e
    if not rows or not all(re.fullmatch(r"#[0-9a-fA-F]{6}", h or "") for h in rows.values()):
        raise ValueError(f"colour name list {path}: expected name,hex rows with #rrggbb values")
    return rows


@dataclass(frozen=True)
class ColourGrounding:
    """Reads unknown colour words through a tower's palette.

    ``palette``: the tower's colour words -> sRGB in [0, 1]; ``known``: every word its training
    texts used (never replaced)."""

    palette: dict[str, tuple[float, float, float]]
    known: frozenset[str]
    k: int = DEFAULT_K
    tau: float = DEFAULT_TAU
    lexicon_source: str = DEFAULT_LEXICON
    curated_in_context: bool = DEFAULT_CURATED_IN_CONTEXT

    def __post_init__(self):
        if self.lexicon_source not in LEXICONS:
            raise ValueError(f"ColourGrounding lexicon {self.lexicon_source!r}: expected one of {', '.join(LEXICONS)}")
        if not self.palette or self.k < 1 or self.tau <= 0:
            raise ValueError(f"ColourGrounding needs a palette, k >= 1 and tau > 0 (k={self.k}, tau={self.tau})")

    @cached_property
    def _tables(self):
        """(palette names, their Lab, {lexicon phrase with an unknown word: Lab}, a regex finding those
        phrases, longest first), built once per grounding."""
        names = list(self.palette)
        palette_lab = srgb_to_lab(255 * np.array(list(self.palette.values())))
        lex = lexicon(self.lexicon_source)
        curated = frozenset(lex) - frozenset(lexicon("xkcd")) if self.curated_in_context else frozenset()
        phrases = {p: srgb_to_lab(255 * np.array(rgb)) for p, rgb in lex.items()
                   if not all(w in self.known for w in _WORD.findall(p))
                   and not (p in curated and p.split()[0] in _ARTICLES)}  # "the end" is no colour word in a text
        return names, palette_lab, phrases, colour_regex(phrases) if phrases else None, curated

    def variants(self, text: str) -> list[tuple[float, str]]:
        """[(weight, text)] summing to 1: ``text`` itself when it has no unknown colour word, else
        one text per combination of the nearest palette colours of its unknown colour phrases."""
        names, palette_lab, phrases, pattern, curated = self._tables
        lowered = re.sub(r"(?<=[a-z])-(?=[a-z])", " ", text.lower())
        found = [m for m in (pattern.finditer(lowered) if pattern else ()) if not _a_name(text, m)
                 and (m.group(1) not in curated or _in_a_colour_place(lowered, m))]
        if not found:
            return [(1.0, text)]
        options = []
        for m in found:
            d = np.linalg.norm(palette_lab - phrases[m.group(1)], axis=1)
            near = np.argsort(d, kind="stable")[: self.k]
            w = np.exp(-(d[near] - d[near[0]]) / self.tau)
            options.append([(float(wi / w.sum()), names[i]) for wi, i in zip(w, near)])
        out = []
        for combo in itertools.product(*options):
            s, weight = lowered, 1.0
            for m, (w, name) in sorted(zip(found, combo), key=lambda z: -z[0].start()):  # right to left
                s, weight = s[:m.start()] + name + s[m.end():], weight * w
            if weight >= MIN_WEIGHT or not out:  # the first combination is the heaviest: always kept
                out.append((weight, articles(s)))
        total = sum(w for w, _ in out)
        return [(w / total, s) for w, s in out]

    def encode(self, texts: list[str], encode: Callable[[list[str]], np.ndarray]) -> np.ndarray:
        """``encode(texts)`` (unit rows), each text with unknown colour words replaced by the
        weighted, re-normalised mixture of its variants' embeddings."""
        plans = [self.variants(t) for t in texts]
        flat = [s for plan in plans for _, s in plan]
        emb = np.asarray(encode(flat), np.float32) if flat else np.zeros((0, 0), np.float32)
        out, i = [], 0
        for plan in plans:
            mixed = sum(w * emb[i + j] for j, (w, _) in enumerate(plan))
            out.append(mixed / max(float(np.linalg.norm(mixed)), 1e-12))
            i += len(plan)
        return np.asarray(out, np.float32).reshape(len(texts), -1)


def _in_a_colour_place(lowered: str, m: re.Match) -> bool:
    """Where a colour word stands: after "in" ("the mug in graphite") or before a word that is not a
    preposition, conjunction or verb ("the graphite mug"); "the couch in the room", "on the couch."
    and "the lunch tin near the kettle" are nouns there."""
    before = lowered[:m.start()].split()
    after = _WORD.findall(lowered[m.end():m.end() + 40])
    if before and before[-1] == "in":
        return True
    return bool(after) and not re.match(r"[.,;:!?]", lowered[m.end():].lstrip()) and after[0] not in _NOT_BEFORE_A_NOUN


def _a_name(text: str, m: re.Match) -> bool:
    """A capitalised or possessive match is a person ("Rosa owns ...", "ask rosa's ..."), not a colour."""
    return text[m.start()].isupper() or text[m.end():m.end() + 2] in ("'s", "’s")


def catalog_grounding_named(spec: str) -> ColourGrounding:
    """The catalog grounding with another lexicon, for comparisons: ``spec`` is a :data:`LEXICONS`
    name, ``:context`` after it reading its curated names only where a colour word stands
    (``xkcd``, ``xkcd+bestof``, ``xkcd+bestof:context``)."""
    source, context = spec.removesuffix(":context"), spec.endswith(":context")
    return replace(catalog_grounding(), lexicon_source=source, curated_in_context=context)


@lru_cache(maxsize=1)
def catalog_grounding() -> ColourGrounding:
    """The grounding for towers trained on the generator's captions (every shipped lit tower)."""
    from personal.world.catalog import COLORS
    from personal.world.generator import caption_vocabulary

    palette = {name: tuple(v / 255 for v in rgb) for name, rgb in COLORS.items()}
    return ColourGrounding(palette, frozenset(caption_vocabulary()))

"""Colour vocabulary of the attribute verifier (sRGB -> CIELAB is personal.world.colour's).

The vocabulary is generic colour-name knowledge (X11/CSS-like values), not the
generator's palette, so the built-in verifier is not tuned to the renderer.
"""
from __future__ import annotations

import re

import numpy as np

from personal.world.colour import srgb_to_lab  # noqa: F401 - re-exported: the verifier's callers import it here

COLOR_NAMES: dict[str, tuple[int, int, int]] = {
    "red": (210, 35, 35), "dark red": (139, 0, 0), "crimson": (220, 20, 60), "maroon": (128, 0, 0),
    "orange": (255, 140, 0), "yellow": (245, 215, 30), "gold": (212, 175, 55), "mustard": (205, 170, 45),
    "green": (34, 139, 34), "dark green": (0, 90, 30), "light green": (144, 238, 144), "olive": (128, 128, 0),
    "lime": (50, 205, 50), "teal": (0, 128, 128), "turquoise": (64, 224, 208), "cyan": (0, 200, 220),
    "light blue": (135, 190, 235), "sky blue": (135, 206, 235), "blue": (30, 70, 220), "royal blue": (65, 105, 225),
    "navy": (0, 0, 110), "navy blue": (0, 0, 110), "dark blue": (0, 0, 139), "purple": (128, 0, 160),
    "violet": (148, 80, 211), "lavender": (190, 170, 230), "pink": (255, 150, 180), "magenta": (230, 0, 160),
    "white": (245, 245, 245), "cream": (245, 235, 200), "ivory": (255, 255, 240), "beige": (220, 200, 160),
    "light grey": (200, 200, 200), "light gray": (200, 200, 200), "grey": (128, 128, 128), "gray": (128, 128, 128),
    "dark grey": (70, 70, 70), "dark gray": (70, 70, 70), "charcoal": (54, 69, 79), "black": (20, 20, 20),
    "brown": (130, 80, 40), "dark brown": (80, 45, 20), "chocolate": (123, 63, 0), "tan": (210, 170, 120),
    "khaki": (195, 176, 145), "silver": (192, 192, 200), "bronze": (205, 127, 50), "copper": (184, 115, 51),
}
# Longest names first so "dark green" wins over "green" when scanning text.
NAMES_BY_LENGTH = sorted(COLOR_NAMES, key=len, reverse=True)

# Illumination gains the expected colour is tried under: an object's faces are lit
# differently (shadowed side to lit top), so a colour name matches a pixel if some
# plausible gain brings the named colour close to it.
GAINS = np.array([0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2])
# Glossy materials (metal, glass) show less of their own colour: a darker diffuse part and a
# reflection of the (near-neutral) room mixed in, so their colours are also tried darker and
# mixed towards a neutral grey.
GLOSSY_GAINS = np.array([0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2])
GLOSSY_MIX = np.array([0.0, 0.2, 0.4])
REFLECTION_GREY = 200.0
ACHROMATIC_CHROMA = 20.0  # CIELAB chroma below which a name is (near) achromatic: white, greys, silver, cream
GLOSSY_MATERIALS = {"metal", "metallic", "steel", "aluminium", "aluminum", "iron", "chrome", "copper", "brass", "glass"}


def _name_lab_table(names: list[str], gains: np.ndarray, mixes: np.ndarray = np.zeros(1)) -> np.ndarray:
    """(len(names), len(gains) * len(mixes), 3) Lab of each named colour under each gain and
    mix towards a neutral reflection."""
    rgb = np.array([COLOR_NAMES[n] for n in names], dtype=np.float64)
    mixed = rgb[:, None, :] * (1 - mixes[None, :, None]) + REFLECTION_GREY * mixes[None, :, None]  # (K, M, 3)
    lit = np.clip(mixed[:, :, None, :] * gains[None, None, :, None], 0, 255)
    return srgb_to_lab(lit.reshape(len(names), -1, 3))


_ALL_NAMES = list(COLOR_NAMES)
_ALL_TABLE = _name_lab_table(_ALL_NAMES, GAINS)


def _glossy_table() -> np.ndarray:
    """The glossy appearances of chromatic names; achromatic names (white, greys, black, silver...)
    keep the plain table: their only cue is lightness, which reflections scramble, so widening it
    would make white, silver, grey and black one colour."""
    wide = _name_lab_table(_ALL_NAMES, GLOSSY_GAINS, GLOSSY_MIX)
    plain = _ALL_TABLE[:, np.arange(wide.shape[1]) % _ALL_TABLE.shape[1]]
    lab = srgb_to_lab(np.array([COLOR_NAMES[n] for n in _ALL_NAMES], dtype=np.float64))
    chromatic = np.hypot(lab[:, 1], lab[:, 2]) >= ACHROMATIC_CHROMA
    return np.where(chromatic[:, None, None], wide, plain)


_GLOSSY_TABLE = _glossy_table()


def is_glossy(material_text: str) -> bool:
    """Whether a described material reflects its surroundings (metal, glass)."""
    return any(w in GLOSSY_MATERIALS for w in re.findall(r"[a-z]+", material_text.lower()))


def shading_invariant_distance(lab: np.ndarray, names: list[str], glossy: bool = False) -> np.ndarray:
    """(N, len(names)) min over gains of the CIE76 ΔE between pixels and each named colour
    (``glossy``: also darker and mixed with a reflection, see ``GLOSSY_GAINS``).

    Lightness differences count half (shading moves L more than hue/chroma).
    """
    idx = [_ALL_NAMES.index(n) for n in names]
    table = (_GLOSSY_TABLE if glossy else _ALL_TABLE)[idx]  # (K, G, 3)
    diff = lab[:, None, None, :] - table[None]
    diff[..., 0] *= 0.5
    return np.sqrt((diff ** 2).sum(-1)).min(-1)


def nearest_names(lab: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each pixel: index into ``COLOR_NAMES`` order of the closest name and its distance."""
    d = shading_invariant_distance(lab, _ALL_NAMES)
    i = d.argmin(1)
    return i, d[np.arange(len(i)), i]


def color_names_in(text: str) -> list[str]:
    """Colour names mentioned in ``text`` (longest match first, no overlaps), in text order."""
    low = text.lower()
    taken = [False] * len(low)
    found = []
    for name in NAMES_BY_LENGTH:
        start = 0
        while (i := low.find(name, start)) >= 0:
            end = i + len(name)
            ok_bounds = (i == 0 or not low[i - 1].isalpha()) and (end == len(low) or not low[end].isalpha())
            if ok_bounds and not any(taken[i:end]):
                found.append((i, name))
                for k in range(i, end):
                    taken[k] = True
            start = end
    return [n for _, n in sorted(found)]


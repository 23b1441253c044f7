"""Decomposition of three descriptions into 4-8 typed, weighted attributes.

Every attribute carries an evidence phrase that must occur verbatim in one of
the descriptions; attributes whose evidence is not in the text are rejected
(both backends go through :func:`validate_attributes`).
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass

from personal.models.category_words import catalog_category_words
from personal.verification.colors import NAMES_BY_LENGTH, color_names_in
from personal.verification.openai_compat import ChatClient, LLMError, extract_json

ATTRIBUTE_TYPES = ("color", "pattern", "part", "logo_text", "material", "relation", "count", "shape", "other")
MAX_ATTRIBUTES = 8
MIN_ATTRIBUTES = 4

# The paper's 18 PInVerify classes; the synthetic catalog's names are added at import.
PINVERIFY_CATEGORIES = (
    "backpack", "bag", "ball", "book", "camera", "cellphone", "eyeglasses", "hat", "headphones", "keys",
    "laptop", "mug", "shoes", "teddy bear", "toy", "visor", "wallet", "watch",
)
PATTERN_NOUNS = {
    # (not "stripe"/"flowers": those are also part names, e.g. a ball's stripe, a vase's flowers)
    "stripes": "striped", "dots": "dotted", "polka dots": "dotted", "spots": "dotted",
    "checks": "checked", "check pattern": "checked", "checkerboard": "checked", "plaid": "plaid",
    "floral print": "floral", "flower print": "floral", "zigzags": "zigzag",
    "zigzag pattern": "zigzag", "tartan": "plaid",
}
PATTERN_ADJECTIVES = {"striped": "striped", "dotted": "dotted", "polka-dot": "dotted", "spotted": "dotted",
                      "checked": "checked", "checkered": "checked", "plaid": "plaid", "floral": "floral",
                      "zigzag": "zigzag", "tartan": "plaid"}
MATERIALS = (
    "leather", "faux leather", "plastic", "metal", "metallic", "wood", "wooden", "fabric", "canvas", "cotton",
    "wool", "woollen", "rubber", "glass", "ceramic", "porcelain", "denim", "suede", "nylon", "velvet", "plush",
    "felt", "straw", "silk", "steel", "stainless steel", "aluminium", "aluminum", "wicker", "fleece", "paper",
    "cardboard", "cloth", "wax", "stone", "cast iron", "terracotta", "acrylic", "mesh", "laminate",
)
_STOP = {"with", "and", "or", "on", "in", "of", "a", "an", "the", "its", "it", "is", "are", "has", "that",
         "which", "made", "from", "to", "at", "by", "for", "but", "very", "quite", "this", "one", "pattern",
         "print", "color", "colour", "colored", "coloured", "accents", "accent", "details", "detail", "trim"}


def _category_vocabulary() -> list[str]:
    names = set(PINVERIFY_CATEGORIES)
    try:  # synthetic catalog (category names are vocabulary, not per-object truth)
        from personal.world.catalog import CATEGORIES

        names |= set(CATEGORIES)
    except ImportError:  # pragma: no cover - catalog is part of the package
        pass
    return sorted(names, key=len, reverse=True)


CATEGORY_NAMES = _category_vocabulary()


@dataclass
class Attribute:
    name: str  # "color", "handle_color", "pattern"
    type: str  # one of ATTRIBUTE_TYPES
    weight: int  # 1..3, 3 = most discriminative
    evidence: str  # verbatim phrase from a description
    value: str = ""  # expected value ("black"); defaults to the evidence

    def to_dict(self) -> dict:
        return asdict(self)

    @property
    def expected(self) -> str:
        return self.value or self.evidence


class DecompositionError(ValueError):
    pass


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text.strip().lower())


def evidence_in_text(evidence: str, descriptions: list[str]) -> bool:
    ev = _norm(evidence)
    return bool(ev) and any(ev in _norm(d) for d in descriptions)


def validate_attributes(attrs: list[Attribute], descriptions: list[str]) -> tuple[list[Attribute], list[str]]:
    """Keep well-formed attributes whose evidence is verbatim in the text; return (kept, rejections)."""
    kept, rejected, names = [], [], set()
    for a in attrs:
        if a.type not in ATTRIBUTE_TYPES:
            rejected.append(f"{a.name}: unknown type {a.type!r}")
        elif not evidence_in_text(a.evidence, descriptions):
            rejected.append(f"{a.name}: evidence {a.evidence!r} is not in the descriptions")
        elif a.name in names:
            rejected.append(f"{a.name}: duplicate name")
        else:
            a.weight = min(3, max(1, int(a.weight)))
            kept.append(a)
            names.add(a.name)
    kept.sort(key=lambda a: -a.weight)
    return kept[:MAX_ATTRIBUTES], rejected


# a category noun right after one of these (+ article, up to two words) names a support or landmark
# ("... on the kitchen counter", "in the toy chest"), not the described object
_RELATION_BEFORE = re.compile(
    r"\b(?:on top of|on|in front of|in|inside|under|underneath|beneath|next to|beside|near|behind|by|against|at|"
    r"above|below|over|between)\s+(?:(?:the|a|an|his|her|their|its|[a-z]+'s)\s+)?(?:[a-z-]+\s+){0,2}$")


def predict_category(descriptions: list[str]) -> str | None:
    """The category noun of the described object: the one most often mentioned outside a relation
    ("red coffee maker ... on the kitchen counter" -> "coffee maker"), then most often at all, then
    the earliest mentioned (longest names are matched first, e.g. "teddy bear"). Nouns the catalog
    does not use are read through WordNet first (personal.models.category_words: "couch" -> sofa)."""
    obj: dict[str, int] = {}
    total: dict[str, int] = {}
    first: dict[str, int] = {}
    for d in descriptions:
        text = _norm(catalog_category_words().rewrite(d))  # a person's noun ("couch") as its category (sofa)
        low = text
        for name in CATEGORY_NAMES:
            for variant in (name, name + "s", name + "es"):
                hits = list(re.finditer(rf"\b{re.escape(variant)}\b", low))
                if not hits:
                    continue
                for m in hits:
                    total[name] = total.get(name, 0) + 1
                    if not _RELATION_BEFORE.search(text[: m.start()]):
                        obj[name] = obj.get(name, 0) + 1
                        first[name] = min(first.get(name, m.start()), m.start())
                # blank it out (same length, so positions stay) so that "bear" does not re-match "teddy bear"
                low = re.sub(rf"\b{re.escape(variant)}\b", lambda m: " " * len(m.group()), low)
                break
    if not total:
        return None
    return max(total, key=lambda n: (obj.get(n, 0), total[n], -first.get(n, 10**6), len(n)))


_MODIFIERS = sorted(set(MATERIALS) | set(PATTERN_ADJECTIVES) | {"woollen", "wooden", "small", "large", "big", "little", "old", "new", "soft", "shiny"}, key=len, reverse=True)


def _strip_modifiers(after: str) -> str:
    """Drop material/pattern/size adjectives between a colour and its noun ("red canvas backpack")."""
    changed = True
    while changed:
        changed = False
        for m in _MODIFIERS:
            if after.startswith(m + " "):
                after = after[len(m) + 1:]
                changed = True
                break
    return after


class BuiltinAttributeParser:
    """Deterministic rule-based decomposition (colour, part colour, pattern, material)."""

    name = "builtin"

    def decompose(self, descriptions: list[str], category: str | None = None) -> list[Attribute]:
        category = category or predict_category(descriptions) or ""
        found: dict[str, Attribute] = {}
        for text in descriptions:
            for attr in self._parse_one(text, category):
                old = found.get(attr.name)
                # keep the more specific evidence ("white stripes" over "striped")
                if old is None or (attr.type == old.type and len(attr.evidence) > len(old.evidence) and attr.type == "pattern"):
                    found[attr.name] = attr
        kept, _ = validate_attributes(list(found.values()), descriptions)
        return kept

    def _parse_one(self, text: str, category: str) -> list[Attribute]:
        low = text.lower()
        out: list[Attribute] = []
        # the category's head noun ("bowl" of "fruit bowl") also names the object itself
        cat_words = {category.split()[-1], category + "s", category.split()[-1] + "s"} if category else set()
        for m in self._color_spans(low):
            i, j, color = m
            rest = low[j:]
            follow = re.match(r"[\s-]*(?:and\s+(?:" + "|".join(map(re.escape, NAMES_BY_LENGTH)) + r")\s+)?", rest)
            after = rest[follow.end():] if follow else rest
            after = _strip_modifiers(after)
            tail = self._noun_phrase(after)
            if category and (after.startswith(category) or (tail and tail.split()[0] in cat_words)):
                out.append(Attribute("color", "color", 3, text[i:j], color))
                continue
            pat = next((p for p in sorted(PATTERN_NOUNS, key=len, reverse=True) if after.startswith(p)), None)
            if pat:
                end = j + follow.end() + len(pat) if follow else j + len(pat)
                colors = " and ".join(color_names_in(low[i:end]))
                out.append(Attribute("pattern", "pattern", 2, text[i:end], f"{colors} {PATTERN_NOUNS[pat]}"))
                continue
            if tail and tail.split()[0] not in _STOP and not any(tail.startswith(x) for x in MATERIALS):
                end = j + (follow.end() if follow else 0) + len(tail)
                part = tail.replace(" ", "_")
                out.append(Attribute(f"{part}_color", "color", 2, text[i:end], color))
        # "its handle is black" / "the straps are grey"
        for m in re.finditer(r"\b(?:its|the|with)\s+([a-z][a-z -]{1,24}?)\s+(?:is|are)\s+(?:a\s+)?(?:mostly\s+)?([a-z ]+?)(?=[,.;]|$| and\b)", low):
            noun, color_txt = m.group(1).strip(), m.group(2).strip()
            if color_txt not in NAMES_BY_LENGTH:
                continue
            ev = text[m.start(1):m.end(2)]
            if category and (noun == category or noun in cat_words or noun in ("object", "item")):
                out.append(Attribute("color", "color", 3, ev, color_txt))
            elif noun.split()[-1] not in _STOP:
                out.append(Attribute(f"{noun.replace(' ', '_')}_color", "color", 2, ev, color_txt))
        for adj, pat in PATTERN_ADJECTIVES.items():
            if (m := re.search(rf"\b{re.escape(adj)}\b", low)):
                out.append(Attribute("pattern", "pattern", 2, text[m.start():m.end()], pat))
        if (m := re.search(r"\b(?:on top of|on|under(?:neath)?|next to|beside|inside|in) the ([a-z][a-z ]{1,30}?)(?=[,.;]|$| and\b| with\b)", low)):
            out.append(Attribute("relation", "relation", 1, text[m.start():m.end()], text[m.start():m.end()]))
        for mat in sorted(MATERIALS, key=len, reverse=True):
            if (m := re.search(rf"\b{re.escape(mat)}\b", low)):
                out.append(Attribute("material", "material", 1, text[m.start():m.end()], mat))
                break
        return out

    @staticmethod
    def _color_spans(low: str) -> list[tuple[int, int, str]]:
        spans, taken = [], [False] * len(low)
        for name in NAMES_BY_LENGTH:
            for m in re.finditer(rf"(?<![a-z]){re.escape(name)}(?![a-z])", low):
                if not any(taken[m.start():m.end()]):
                    spans.append((m.start(), m.end(), name))
                    for k in range(m.start(), m.end()):
                        taken[k] = True
        return sorted(spans)

    @staticmethod
    def _noun_phrase(after: str) -> str:
        """Up to two words after a colour, stopping at stopwords and punctuation."""
        words = []
        for w in re.findall(r"[a-z-]+|[^a-z\s-]", after)[:3]:
            if not re.fullmatch(r"[a-z-]+", w) or w in _STOP:
                break
            words.append(w)
            if len(words) == 2:
                break
        return " ".join(words)


EXTRACT_PROMPT = """You are an attribute extractor for instance verification.
INPUT - target class: "{category}" - natural descriptions: 1) "{d1}" 2) "{d2}" 3) "{d3}"
TASK Extract visual attributes for verifying this object instance. For each attribute:
- name: Include the PART if the attribute belongs to a sub-part (e.g. "handle_color"); for the main object use "color", "pattern", "material".
- type: {{color, pattern, part, logo_text, material, relation, count, shape, other}}
- weight: {{1,2,3}} (3=most discriminative)
- evidence_phrase: EXACT value from description
RULES: ONLY extract EXPLICITLY mentioned attributes; NEVER invent values; evidence_phrase must be copied from the text.
RETURN JSON ONLY ({lo}~{hi} attributes): {{"attributes":[{{"name":"...", "type":"...", "weight":2, "evidence_phrase":"..."}}]}}"""


class LLMAttributeDecomposer:
    """Attribute extraction by an OpenAI-compatible LLM (paper App. C.3 prompt)."""

    name = "llm"

    def __init__(self, client: ChatClient):
        self.client = client
        self.last_rejections: list[str] = []

    def decompose(self, descriptions: list[str], category: str | None = None) -> list[Attribute]:
        category = category or predict_category(descriptions) or "object"
        d = (list(descriptions) + ["", "", ""])[:3]
        prompt = EXTRACT_PROMPT.format(category=category, d1=d[0], d2=d[1], d3=d[2], lo=MIN_ATTRIBUTES, hi=MAX_ATTRIBUTES)
        reply = extract_json(self.client.chat(prompt))
        items = reply.get("attributes")
        if not isinstance(items, list):
            raise LLMError(f"attribute reply has no 'attributes' list: {reply!r}"[:300])
        attrs = []
        for it in items:
            if not isinstance(it, dict) or not isinstance(it.get("evidence_phrase"), str):
                self.last_rejections.append(f"malformed item {it!r}"[:120])
                continue
            try:
                weight = int(it.get("weight", 2))
            except (TypeError, ValueError):
                weight = 2
            ev = it["evidence_phrase"]
            attrs.append(Attribute(str(it.get("name", "attribute")), str(it.get("type", "other")), weight, ev,
                                   " ".join(color_names_in(ev)) if it.get("type") == "color" else ev))
        kept, self.last_rejections = validate_attributes(attrs, descriptions)
        return kept


def make_decomposer(kind: str = "builtin"):
    """``builtin`` or ``llm`` (OpenAI-compatible endpoint from the environment)."""
    if kind == "builtin":
        return BuiltinAttributeParser()
    if kind == "llm":
        client = ChatClient.from_env("LLM")
        if client is None:
            raise DecompositionError("decomposer 'llm' needs PERSONAL_LLM_BASE_URL and PERSONAL_LLM_MODEL")
        return LLMAttributeDecomposer(client)
    raise DecompositionError(f"unknown decomposer {kind!r} (builtin|llm)")

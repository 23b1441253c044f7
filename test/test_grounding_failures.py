"""Bad input to the grounding pipeline becomes a recorded failure with a reason — never a crash or a skip."""
import json
import re
import zlib

import numpy as np
import pytest

from personal.grounding.eval.pog import write_report
from personal.grounding.pipeline import MapView, evaluate_offline, ground_episode, query_owner, score_grounding
from personal.world.model import Box, Episode, Floor, Room, Scene, SceneObject

METHODS = ["random", "centre", "qs", "rpg", "rpg-owner"]
DIM = 64


class HashEncoder:
    """Deterministic bag-of-words text embedder (test double for the real encoders)."""

    name = "hash-bow"

    def encode_text(self, texts):
        out = np.zeros((len(texts), DIM), np.float32)
        for i, t in enumerate(texts):
            for w in re.findall(r"[a-z]+", t.lower()):
                if w not in {"the", "a", "in", "owns", "find", "of", "s"}:
                    out[i, zlib.crc32(w.encode()) % DIM] += 1.0
        return out


class Phrase:
    def __init__(self, person, obj, room):
        self.person, self.object, self.room = person, obj, room
        self.text = f"{person} owns the {obj}" + (f" in the {room}" if room else "")


class SentenceExtractor:
    """Test double: 'X owns the Y in the Z.' sentences."""

    def extract(self, summary):
        return [Phrase(p, o, r) for p, o, r in re.findall(r"(\w+) owns the ([\w ]+?) in the (\w+)\.", summary)]


class BrokenExtractor:
    def extract(self, summary):
        raise ConnectionError("LLM endpoint http://localhost:9/v1 unreachable")


def obj(i, oid, cat, caption, x, y):
    return SceneObject(instance_id=i, object_id=oid, category=cat, color="", rgb=(0, 0, 0), caption=caption,
                       room_id="room_0", floor=0, box=Box((x, y, 0.3), (0.8, 0.8, 0.6)))


SCENE = Scene(
    scene_id="s0", seed=0, floors=[Floor(0, 0.0)], rooms=[Room("room_0", "bedroom", 0, (0, 0, 10, 10))], walls=[],
    objects=[obj(1, "bed_1", "bed", "white bed", 2.5, 2.5), obj(2, "bed_2", "bed", "red bed", 7.5, 7.5),
             obj(3, "lamp_3", "lamp", "green lamp", 7.5, 2.5)],
)
SUMMARY = "Clara owns the white bed in the bedroom. Tom owns the red bed in the bedroom. Tom owns the green lamp in the bedroom."


def make_map(scene=SCENE, res=1.0):
    enc = HashEncoder()
    n = int(10 / res)
    f = np.zeros((n, n, DIM), np.float32)
    conf = np.zeros((n, n), np.float32)
    conf[:, :] = 1.0
    f[:] = enc.encode_text(["floor wall"])[0]
    for o in scene.objects:
        r, c = int(o.box.center[1] / res), int(o.box.center[0] / res)
        f[r, c] = enc.encode_text([o.caption])[0]
    return MapView.from_arrays(f, conf, (0.0, 0.0), res, enc.name)


def episode(eid="ep0", owner="Clara", query="Find Clara's bed.", targets=("bed_1",), summary=SUMMARY, split="hard"):
    return Episode(episode_id=eid, scene_id="s0", split=split, people=["Clara", "Tom"],
                   ownership={"Clara": ["bed_1"], "Tom": ["bed_2", "lamp_3"]}, owner=owner,
                   target_object_ids=list(targets), object_category="bed", query=query, summary=summary,
                   extracted_summary=[], description=[], start_position=(1.0, 1.0, 0.0), start_yaw=0.0)


def run(ep, view=None, extractor=None):
    g = ground_episode(view or make_map(), ep, extractor or SentenceExtractor(), HashEncoder(), METHODS)
    return {r.method: r for r in score_grounding(g, ep, SCENE)}


def test_good_episode_rpg_owner_beats_qs():
    res = run(episode())
    assert all(r.failure is None for r in res.values())
    assert res["rpg-owner"].success_top1 and res["rpg-owner"].predictions[0] == [2.5, 2.5]
    assert {r.method for r in res.values()} == set(METHODS)
    assert res["rpg"].info["phrases"] == 3 and res["rpg"].latency_ms > 0


def test_target_missing_from_scene():
    res = run(episode(targets=("sofa_99",)))
    for m in METHODS:
        assert res[m].failure["code"] == "target_missing" and "sofa_99" in res[m].failure["reason"]
        assert not res[m].success_top1 and not res[m].success_top3


def test_summary_without_ownership_statements():
    res = run(episode(summary="The house is sunny and has two beds."))
    for m in ("rpg", "rpg-owner"):
        assert res[m].failure == {"code": "no_phrases", "reason": "the summary contains no ownership statements"}
    for m in ("random", "centre", "qs"):  # these ignore the summary and still answer
        assert res[m].failure is None and res[m].predictions
        assert res[m].info["issues"][0]["code"] == "no_phrases"


def test_query_naming_unknown_person():
    res = run(episode(owner="", query="Find Zed's bed."))
    for m in ("rpg", "rpg-owner"):
        assert res[m].failure["code"] == "unknown_person" and "Zed" in res[m].failure["reason"]
        assert res[m].owner == "Zed"
    assert res["qs"].failure is None


def test_empty_map():
    empty = MapView.from_arrays(np.zeros((10, 10, DIM)), np.zeros((10, 10)), (0, 0), 1.0)
    res = run(episode(), view=empty)
    for m in METHODS:
        assert res[m].failure["code"] == "empty_map", m
    no_cells = MapView.from_arrays(np.zeros((0, 0, 0)), np.zeros((0, 0)), (0, 0), 1.0)
    assert all(r.failure["code"] == "empty_map" for r in run(episode(), view=no_cells).values())


def test_nan_cells_are_unobserved():
    view = make_map()
    f = view.features.copy()
    f[2, 2, 0] = np.nan  # Clara's bed cell is corrupt
    res = run(episode(), view=MapView.from_arrays(f, np.ones((10, 10)), (0, 0), 1.0))
    assert all(r.failure is None for r in res.values())
    assert [2.5, 2.5] not in res["qs"].predictions


def test_unreachable_extractor():
    res = run(episode(), extractor=BrokenExtractor())
    for m in ("rpg", "rpg-owner"):
        assert res[m].failure["code"] == "extractor_error" and "unreachable" in res[m].failure["reason"]
    assert res["qs"].failure is None


def test_failing_encoder():
    class Broken:
        def encode_text(self, texts):
            raise RuntimeError("model not loaded")

    g = ground_episode(make_map(), episode(), SentenceExtractor(), Broken(), METHODS)
    by = {o.method: o for o in g.outcomes}
    for m in ("qs", "rpg", "rpg-owner"):
        assert by[m].failure["code"] == "encoder_error"
    assert by["random"].failure is None and by["centre"].failure is None


def test_query_owner_parsing():
    assert query_owner("Find Lisa's cabinet.") == "Lisa"
    assert query_owner("Find one of Julia’s beds") == "Julia"
    assert query_owner("find the bed") == ""


def test_offline_evaluation_records_every_episode(tmp_path):
    eps = [episode("good"), episode("missing", targets=("sofa_99",)), episode("nosum", summary="Nothing here."),
           episode("zed", owner="", query="Find Zed's bed."), episode("other_scene")]
    eps[-1].scene_id = "s_unknown"  # no map and no scene for it
    seen = []
    results = evaluate_offline(eps, {"s0": SCENE}, {"s0": make_map()}, SentenceExtractor(), HashEncoder(), METHODS,
                               progress=lambda done, total: seen.append((done, total)))
    assert seen[-1] == (5, 5)
    assert len(results) == len(eps) * len(METHODS)
    write_report(tmp_path, results, {"encoder": "hash-bow"}, METHODS)
    data = json.loads((tmp_path / "results.json").read_text())
    assert len(data) == len(eps) * len(METHODS)
    codes = {(d["episode_id"], d["method"]): (d["failure"] or {}).get("code") for d in data}
    assert codes[("missing", "qs")] == "target_missing"
    assert codes[("nosum", "rpg")] == "no_phrases"
    assert codes[("zed", "rpg-owner")] == "unknown_person"
    assert codes[("other_scene", "qs")] == "scene_missing"
    assert codes[("good", "rpg-owner")] is None
    report = (tmp_path / "report.md").read_text()
    assert "target_missing" in report and "Recorded failures" in report


def test_scene_relative_methods_get_the_structure_texts():
    from personal.grounding.methods import SCENE_CONTEXT_TEXTS

    class Recording(HashEncoder):
        def __init__(self):
            self.seen = []

        def encode_text(self, texts):
            self.seen += list(texts)
            return super().encode_text(texts)

    enc = Recording()
    g = ground_episode(make_map(), episode(), SentenceExtractor(), enc, ["qs", "rpg"])
    assert not set(SCENE_CONTEXT_TEXTS) & set(enc.seen)  # the paper's methods need no structure texts
    g = ground_episode(make_map(), episode(), SentenceExtractor(), enc, ["rpg-scene", "rpg-owner-scene"])
    assert set(SCENE_CONTEXT_TEXTS) <= set(enc.seen)
    assert {"the white bed", "the red bed", "the green lamp"} <= set(enc.seen)  # each phrase's object part
    res = {r.method: r for r in score_grounding(g, episode(), SCENE)}
    assert res["rpg-owner-scene"].failure is None and res["rpg-owner-scene"].predictions[0] == [2.5, 2.5]
    assert res["rpg-scene"].failure is None

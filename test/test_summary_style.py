"""summary_style:=varied (issue 30): the same episodes, their summaries in other words. The wording
differs from the captions, is deterministic, still parses (builtin extractor) to the same owner ->
object links, and its relative descriptions are true of the scene; the main job's report shows the
other style beside the run."""
from __future__ import annotations

import json
import random

import pytest

from personal.grounding.extract import BuiltinExtractor, parse_extracted_phrase
from personal.world.episodes import generate_episodes, object_phrase
from personal.world.generator import generate_scene
from personal.world.summary_style import NEAR_GAP_M, _gap, near_landmark, varied_description

SPLITS = ("easy", "medium", "hard")


@pytest.fixture(scope="module")
def scene():
    return generate_scene(20001)


@pytest.fixture(scope="module")
def both(scene):
    return ({sp: generate_episodes(scene, sp, 6, 3) for sp in SPLITS},
            {sp: generate_episodes(scene, sp, 6, 3, summary_style="varied") for sp in SPLITS})


def test_varied_keeps_the_episode_and_changes_only_the_wording(both):
    verbatim, varied = both
    for sp in SPLITS:
        for a, b in zip(verbatim[sp], varied[sp]):
            assert (a.episode_id, a.query, a.owner, a.ownership, a.target_object_ids, a.start_position) == \
                   (b.episode_id, b.query, b.owner, b.ownership, b.target_object_ids, b.start_position)
            assert a.summary != b.summary


def test_no_caption_is_quoted_verbatim(scene, both):
    _, varied = both
    for eps in varied.values():
        for e in eps:
            for oid in {o for objs in e.ownership.values() for o in objs}:
                assert object_phrase(scene.object(oid)) not in e.summary, (oid, e.summary)
                assert object_phrase(scene.object(oid)) not in " ".join(e.extracted_summary)


def test_varied_summaries_are_deterministic(scene, both):
    _, varied = both
    again = generate_episodes(scene, "hard", 6, 3, summary_style="varied")
    assert [e.summary for e in again] == [e.summary for e in varied["hard"]]


def test_builtin_extractor_reads_the_same_owner_object_links(both):
    """Each (person, description) the episode states is what the builtin rules extract."""
    _, varied = both
    ex = BuiltinExtractor()
    want = hit = 0
    for eps in varied.values():
        for e in eps:
            truth = {(p.person, p.object) for p in map(parse_extracted_phrase, e.extracted_summary)}
            got = {(p.person, p.object) for p in ex(e.summary)}
            assert len(truth) == sum(len(v) for v in e.ownership.values())
            want, hit = want + len(truth), hit + len(truth & got)
    # measured on validation households 20000-20002 (90 episodes): 825 of 826 links; one hyphenated colour
    # before a two-word synonym ("chocolate-brown upright piano beside ...") misparses in a pair sentence
    assert hit / want >= 0.98, (hit, want)


def test_relative_descriptions_are_true_of_the_scene(scene):
    seen = 0
    for obj in scene.objects:
        near = near_landmark(scene, obj)
        if near is None:
            continue
        assert near.room_id == obj.room_id and near is not obj and _gap(obj, near) < NEAR_GAP_M
        assert sum(o.category == near.category for o in scene.objects if o.room_id == obj.room_id) == 1
        for seed in range(6):
            text = varied_description(scene, obj, random.Random(seed))
            if " near the " in text or " beside the " in text.split(" in the ")[0]:
                seen += 1
    assert seen > 0  # the scene has objects with a true "near the X"
    lone = [o for o in scene.objects if near_landmark(scene, o) is None]
    for obj in lone:  # without a true landmark, no "near the" phrase is made up
        for seed in range(4):
            assert " near the " not in varied_description(scene, obj, random.Random(seed))


def test_unknown_style_is_refused_naming_it(scene):
    with pytest.raises(ValueError, match="unknown summary_style 'llm'"):
        generate_episodes(scene, "easy", 1, 0, summary_style="llm")
    from personal.grounding.pog_session import PogConfig

    with pytest.raises(ValueError, match="parameter summary_style"):
        PogConfig(map_source="oracle", summary_style="fancy")
    with pytest.raises(ValueError, match="parameter summary_style"):
        PogConfig(map_source="oracle", episodes_dir="/data/personal", summary_style="varied")


def test_graph_declares_the_choice():
    from personal.graphs import GRAPHS, GraphError, parse_assignments

    _, evaluator = GRAPHS["pog_eval"].resolve(parse_assignments(["summary_style:=varied"]))
    assert evaluator.parameters["summary_style"] == "varied"
    with pytest.raises(GraphError, match="argument 'summary_style'"):
        GRAPHS["pog_eval"].resolve(parse_assignments(["summary_style:=poetic"]))


def test_report_shows_the_other_style_beside_the_run(tmp_path):
    from personal.grounding.eval.pog import OtherStyle, write_report
    from personal.grounding.eval.pog_run import generate_episode_set, oracle_upper_bound

    scenes, eps = generate_episode_set(1, ["easy"], 2, 5)
    _, varied = generate_episode_set(1, ["easy"], 2, 5, summary_style="varied")
    run = oracle_upper_bound(scenes, eps, ["qs", "rpg-scene"], 0.5).results
    other = OtherStyle("varied", oracle_upper_bound(scenes, varied, ["qs", "rpg-scene"], 0.5).results)
    summary = write_report(tmp_path, run, {"encoder": "oracle", "encoder_is_oracle": True, "summary style": "verbatim"},
                           ["qs", "rpg-scene"], other_style=other)
    text = (tmp_path / "report.md").read_text()
    assert "## Summary style varied (the run's style: verbatim)" in text and "varied / verbatim" in text
    assert summary["other_summary_style"]["methods"]["rpg-scene"]["total"]["n"] == len(varied)
    assert len(json.loads((tmp_path / "other_summary_style" / "results.json").read_text())) == 2 * len(varied)


def test_evaluator_grounds_the_other_style_on_the_run_maps():
    import logging

    from personal.grounding.eval.pog_run import generate_episode_set, oracle_topdown_map
    from personal.grounding.pipeline import TextEmbedder
    from personal.grounding.pog_session import PogConfig, other_summary_style
    from personal.models.base import make_encoder

    cfg = PogConfig(map_source="oracle", n_scenes=1, per_split=1, splits=["easy", "hard"], seed=5, encoder_name="oracle",
                    methods=["qs", "rpg-scene"])
    scenes, eps = generate_episode_set(1, cfg.splits, 1, 5)
    maps = {sid: oracle_topdown_map(s, TextEmbedder(make_encoder("oracle")), 0.5) for sid, s in scenes.items()}
    other = other_summary_style(cfg, scenes, eps, maps, None, logging.getLogger("test"))
    assert other.style == "varied" and not other.error
    assert sorted((r.episode_id, r.method) for r in other.results) == sorted((e.episode_id, m) for e in eps for m in cfg.methods)
    llm = PogConfig(map_source="oracle", extractor_name="llm")
    assert other_summary_style(llm, scenes, eps, maps, None, logging.getLogger("test")) is None

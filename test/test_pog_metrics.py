"""POG metrics: SR@1 m top-1/top-3 against hand-computed cases, one-of targets, run-folder files."""
import json

import numpy as np
import pytest

from personal.grounding.eval.pog import (
    RADIUS_REFERENCE,
    EpisodeResult,
    load_results,
    ordering_analysis,
    plot_episode_map,
    score_episode,
    success_flags,
    summarize,
    target_distances,
    write_report,
)
from personal.world.model import Box

BED = Box(center=(2.0, 2.0, 0.3), size=(1.0, 2.0, 0.6))  # footprint x in [1.5, 2.5], y in [1, 3]
BED2 = Box(center=(8.0, 2.0, 0.3), size=(1.0, 1.0, 0.6))  # footprint x in [7.5, 8.5], y in [1.5, 2.5]


def test_distance_to_footprint():
    d = target_distances([(2.0, 2.0), (3.4, 2.0), (4.0, 2.0), (3.5, 4.0)], [BED])
    assert d == pytest.approx([0.0, 0.9, 1.5, np.hypot(1.0, 1.0)])


def test_success_top1_top3():
    assert success_flags([0.9]) == (True, True)
    assert success_flags([1.0]) == (True, True)  # the radius is inclusive
    assert success_flags([1.01, 0.5, 3.0]) == (False, True)
    assert success_flags([1.5, 2.0, 3.0, 0.1]) == (False, False)  # a 4th prediction does not count
    assert success_flags([]) == (False, False)


def test_one_of_targets_any_instance_counts():
    pts = [(7.0, 2.0)]  # 0.5 m from the second bed, 4.5 m from the first
    assert target_distances(pts, [BED, BED2]) == pytest.approx([0.5])
    r = score_episode(episode_id="e", scene_id="s", split="hard", method="qs", points=pts, scores=[0.3],
                      targets=[BED, BED2], latency_ms=1.0)
    assert r.success_top1 and r.success_top3


def test_failure_is_a_miss_even_with_predictions():
    r = score_episode(episode_id="e", scene_id="s", split="easy", method="rpg", points=[(2.0, 2.0)], scores=[1.0],
                      targets=[BED], latency_ms=1.0, failure={"code": "no_phrases", "reason": "x"})
    assert not r.success_top1 and not r.success_top3 and r.distances_m == []
    r = score_episode(episode_id="e", scene_id="s", split="easy", method="rpg", points=[(2.0, 2.0)], scores=[1.0],
                      targets=[], latency_ms=1.0)
    assert not r.success_top1


def make_results():
    """Hand-computed: qs 2/3 easy, 0/2 hard; rpg 1/3 easy, 1/2 hard (one failure)."""
    rows = []

    def add(ep, split, method, pts, failure=None):
        rows.append(score_episode(episode_id=ep, scene_id="s0", split=split, method=method, points=pts,
                                  scores=[0.5] * len(pts), targets=[BED], latency_ms=2.0, failure=failure))

    near, far = (2.2, 2.2), (6.0, 6.0)
    add("e1", "easy", "qs", [near]); add("e2", "easy", "qs", [near]); add("e3", "easy", "qs", [far, near])
    add("h1", "hard", "qs", [far]); add("h2", "hard", "qs", [far])
    add("e1", "easy", "rpg", [near]); add("e2", "easy", "rpg", [far]); add("e3", "easy", "rpg", [far, far, near])
    add("h1", "hard", "rpg", [near]); add("h2", "hard", "rpg", [], failure={"code": "no_phrases", "reason": "none"})
    add("e1", "easy", "random", [far]); add("e2", "easy", "random", [far]); add("e3", "easy", "random", [far])
    add("h1", "hard", "random", [far]); add("h2", "hard", "random", [far])
    return rows


def test_summarize_hand_computed():
    s = summarize(make_results())
    qs, rpg = s["methods"]["qs"], s["methods"]["rpg"]
    assert qs["easy"]["sr_top1"] == pytest.approx(100 * 2 / 3, abs=0.01)
    assert qs["easy"]["sr_top3"] == 100.0
    assert qs["hard"]["sr_top1"] == 0.0 and qs["medium"]["n"] == 0 and qs["medium"]["sr_top1"] is None
    assert qs["total"]["sr_top1"] == 40.0 and qs["total"]["n"] == 5
    assert rpg["easy"]["sr_top1"] == pytest.approx(33.33, abs=0.01) and rpg["easy"]["sr_top3"] == pytest.approx(66.67, abs=0.01)
    assert rpg["hard"]["sr_top1"] == 50.0 and rpg["hard"]["failures"] == 1
    assert rpg["total"]["failure_codes"] == {"no_phrases": 1} and rpg["total"]["n"] == 5
    assert s["success_radius_m"] == 1.0 and "1.0 m" in s["radius_reference"]


def test_ordering_analysis_from_numbers():
    s = summarize(make_results())
    holds, lines = ordering_analysis(s)
    text = "\n".join(lines)
    # random 0% vs QS 40%: far below; RPG hard 50% >= QS 0%; centre/rpg-owner were not run
    assert holds and "far below" in text and "Center (x,y) was not run" in text
    rows = [r for r in make_results() if not (r.method == "rpg" and r.episode_id == "h1")]
    rows.append(score_episode(episode_id="h1", scene_id="s0", split="hard", method="rpg", points=[(9, 9)],
                              scores=[0.1], targets=[BED], latency_ms=1.0))
    qs_h1 = next(r for r in rows if r.method == "qs" and r.episode_id == "h1")
    qs_h1.success_top1 = True
    holds, lines = ordering_analysis(summarize(rows))
    assert not holds and any("BELOW QS by 50.0 points" in line for line in lines)


def test_write_report_files(tmp_path):
    rows = make_results()
    meta = {"encoder": "oracle-caption-minilm", "encoder_is_oracle": True, "extractor": "builtin", "scenes": 1}
    summary = write_report(tmp_path, rows, meta, methods=["random", "qs", "rpg"])
    for name in ("results.json", "summary.json", "report.md", "sr_by_split.png"):
        assert (tmp_path / name).stat().st_size > 0, name
    data = json.loads((tmp_path / "results.json").read_text())
    assert len(data) == len(rows)
    fail = next(d for d in data if d["failure"])
    assert fail["failure"] == {"code": "no_phrases", "reason": "none"} and fail["method"] == "rpg"
    assert {"episode_id", "method", "split", "predictions", "scores", "latency_ms", "success_top1", "success_top3"} <= set(data[0])
    report = (tmp_path / "report.md").read_text()
    assert "ORACLE" in report.splitlines()[0]
    assert RADIUS_REFERENCE in report
    assert "| Map | Method | Easy SR↑ | Medium SR↑ | Hard SR↑ | Total SR↑ |" in report
    assert "| 2D | Random (x,y) | 0.0 | – | 0.0 | 0.0 |" in report
    assert "|  | Query-Score (QS) | 66.7 | – | 0.0 | 40.0 |" in report
    assert "Holds" in report
    assert json.loads((tmp_path / "summary.json").read_text())["methods"]["qs"]["total"]["sr_top1"] == summary["methods"]["qs"]["total"]["sr_top1"]
    assert [r.to_dict() for r in load_results(tmp_path)] == [r.to_dict() for r in rows]
    # a non-oracle encoder is not labelled oracle
    write_report(tmp_path / "b", rows, {"encoder": "clip"})
    assert "ORACLE" not in (tmp_path / "b" / "report.md").read_text()


def test_report_explains_when_ordering_fails(tmp_path):
    rows = [r for r in make_results() if r.method != "random"]
    rows += [score_episode(episode_id=e, scene_id="s0", split=sp, method="random", points=[(2.0, 2.0)], scores=[0.0],
                           targets=[BED], latency_ms=0.1, info={"observed_cells": 12}) for e, sp in
             (("e1", "easy"), ("e2", "easy"), ("e3", "easy"), ("h1", "hard"), ("h2", "hard"))]
    write_report(tmp_path, rows, {"encoder": "x"})
    report = (tmp_path / "report.md").read_text()
    assert "Does not hold" in report and "Why not" in report and "median of 12 observed cells" in report


def test_episode_map_png(tmp_path):
    bg = np.random.default_rng(0).random((10, 12))
    bg[0, 0] = -np.inf
    path = tmp_path / "m.png"
    plot_episode_map(path, background=bg, origin=(0.0, 0.0), resolution=1.0, targets=[BED], distractors=[BED2],
                     predictions={"qs": [(2, 2), (5, 5)], "rpg": [(3, 3)]}, title="ep")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_result_roundtrip_keeps_inf():
    r = EpisodeResult("e", "s", "easy", "qs", distances_m=[float("inf"), 0.5])
    d = json.loads(json.dumps(r.to_dict()))
    assert d["distances_m"] == [None, 0.5]
    assert EpisodeResult.from_dict(d).distances_m == [float("inf"), 0.5]

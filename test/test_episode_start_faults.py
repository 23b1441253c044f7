"""Bad start poses in episode files (issue 15, finding 7): refused by name when the set is loaded,
before anything runs — not a ValueError deep in the navigation grid with no report, and not a
silent SR 0 for a start 1e9 m away."""
from __future__ import annotations

import gzip
import json
import math
import shutil

import pytest

from personal.world.checks import start_problem
from personal.world.episodes import generate_episodes
from personal.world.generator import generate_scene
from personal.world.habitat_format import EpisodeFormatError, load_episode_set, write_episode_set
from personal.sim.bridge_logic import EpisodeSourceError, load_episodes


@pytest.fixture(scope="module")
def good_set(tmp_path_factory):
    out = tmp_path_factory.mktemp("eps")
    scene = generate_scene(5, scene_id="synth_00005")
    write_episode_set(out, [scene], generate_episodes(scene, "easy", 2, seed=0))
    return out, scene


def _edit(src, dst, fn):
    shutil.copytree(src, dst)
    path = dst / "easy" / "content" / "synth_00005.json.gz"
    with gzip.open(path, "rt") as f:
        doc = json.load(f)
    fn(doc["episodes"][0])
    with gzip.open(path, "wt") as f:
        json.dump(doc, f)  # json writes NaN / Infinity, as a careless exporter would
    return dst


def _extras(ep):
    return ep["info"]["personal"]


@pytest.mark.parametrize("edit, message", [
    (lambda ep: ep.__setitem__("start_position", [math.nan, 0.0, 1.0]), "does not match|must be finite"),
    (lambda ep: _extras(ep).__setitem__("start_position_map", [1.0, math.inf, 0.0]), "start_position_map' must be three finite"),
    # the NaN in the habitat field was ignored when start_position_map was present
    (lambda ep: ep.__setitem__("start_position", [ep["start_position"][0], math.nan, ep["start_position"][2]]), "does not match"),
    (lambda ep: ep.__setitem__("start_position", [v + 2.0 for v in ep["start_position"]]), "does not match"),
])
def test_non_finite_or_inconsistent_start_is_a_format_error(good_set, tmp_path, edit, message):
    folder = _edit(good_set[0], tmp_path / "bad", edit)
    with pytest.raises(EpisodeFormatError, match=message) as err:
        load_episode_set(folder)
    assert "synth_00005.json.gz: episodes[0]" in str(err.value)


def test_nan_start_without_our_extras_is_a_format_error(good_set, tmp_path):
    def strip(ep):
        _extras(ep).pop("start_position_map")
        ep["start_position"] = [math.nan, 0.0, 1.0]

    with pytest.raises(EpisodeFormatError, match="'start_position' / 'start_rotation' must be finite"):
        load_episode_set(_edit(good_set[0], tmp_path / "bad", strip))


def test_far_away_start_is_refused_by_the_bridge_loader_and_the_simulator(good_set, tmp_path):
    def far(ep):
        ep["start_position"][0] = 1e9
        _extras(ep)["start_position_map"][0] = 1e9

    folder = _edit(good_set[0], tmp_path / "far", far)
    scenes, episodes = load_episode_set(folder)  # the file is well-formed ...
    problem = start_problem(episodes[0], scenes["synth_00005"])
    assert "start position (1e+09" in problem and "is outside scene 'synth_00005'" in problem
    with pytest.raises(EpisodeSourceError, match="is outside scene"):  # ... but the set cannot be run
        load_episodes(str(folder), "easy")
    from personal.sim.backends.synthetic import SyntheticBackend

    backend = SyntheticBackend()
    backend.load_scene(scenes["synth_00005"])
    with pytest.raises(ValueError, match="is outside scene"):
        backend.reset(episodes[0])
    assert start_problem(episodes[1], scenes["synth_00005"]) == ""
    backend.reset(episodes[1])  # a good episode of the same scene still runs


def test_pan_evaluator_refuses_a_bad_set_with_a_clear_error(good_set, tmp_path, run_node):
    """pan_eval with a NaN start: the evaluator exits 2 before running anything, naming the file and field
    (before: ValueError in personal/sim/navgrid.py and no report)."""
    folder = _edit(good_set[0], tmp_path / "bad", lambda ep: ep.__setitem__("start_position", [math.nan, 0.0, 1.0]))
    node = run_node("nodes.pan_evaluator_node", "pan_evaluator", {"episodes_dir": str(folder), "out_dir": str(tmp_path / "runs")})
    node.proc.wait(60)
    log = node.log()
    assert node.proc.returncode == 2, log
    assert "synth_00005.json.gz: episodes[0]" in log and "start_position" in log

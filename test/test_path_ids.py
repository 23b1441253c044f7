"""Identifiers that become paths (issue 28, item 2): one rule (personal.paths), applied where ids are
read (episode and scene files, graph arguments) and where they are joined to a folder."""
from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from personal.graphs import GraphError, get_graph
from personal.paths import UnsafeIdError, child_path, path_component
from personal.world.habitat_format import EpisodeFormatError, load_episode_set, write_episode_set

ESCAPE = "../../../../tmp/x"


@pytest.mark.parametrize("bad", [ESCAPE, "a/b", "/etc", "", ".", "..", "a\x00b", "a\\b", "tab\there", "x" * 300])
def test_unsafe_ids_are_refused_naming_the_field(bad):
    with pytest.raises(UnsafeIdError, match="scene_id"):
        path_component(bad, "scene_id")


@pytest.mark.parametrize("good", ["synth_00000", "synth_00000_easy_001", "MV-fps", "hm3d.v2", "Zimmer_ä"])
def test_ordinary_ids_pass_unchanged(good, tmp_path):
    assert path_component(good) == good
    assert child_path(tmp_path, good, suffix=".png") == tmp_path / f"{good}.png"


def test_child_path_refuses_a_symlink_out_of_the_root(tmp_path):
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "link").symlink_to(tmp_path)
    with pytest.raises(UnsafeIdError, match="not inside"):
        child_path(tmp_path / "root", "link")


@pytest.fixture(scope="module")
def episode_folder(tmp_path_factory):
    from personal.grounding.eval.pog_run import generate_episode_set

    scenes, episodes = generate_episode_set(1, ["easy"], 2, 0)
    folder = tmp_path_factory.mktemp("eps") / "set"
    write_episode_set(folder, list(scenes.values()), episodes)
    return folder


def _tamper(src: Path, dst: Path, scene_id: str | None = None, episode_id: str | None = None) -> Path:
    shutil.copytree(src, dst)
    if scene_id is not None:
        sj = next((dst / "scenes").glob("*.scene.json"))
        d = json.loads(sj.read_text())
        d["scene_id"] = scene_id
        sj.write_text(json.dumps(d))
    content = next((dst / "easy" / "content").glob("*.json.gz"))
    doc = json.load(gzip.open(content, "rt"))
    for e in doc["episodes"]:
        if scene_id is not None:
            e["info"]["personal"]["scene_id"] = scene_id
        if episode_id is not None:
            e["episode_id"] = episode_id
    with gzip.open(content, "wt") as fh:
        json.dump(doc, fh)
    return dst


def test_scene_id_escaping_the_folder_is_refused_naming_file_and_field(episode_folder, tmp_path):
    bad = _tamper(episode_folder, tmp_path / "bad", scene_id=ESCAPE)
    with pytest.raises(EpisodeFormatError, match=r"synth_00000\.scene\.json: field 'scene_id' '\.\./\.\./\.\./\.\./tmp/x'"):
        load_episode_set(bad)


def test_episode_id_escaping_is_refused_naming_file_and_field(episode_folder, tmp_path):
    bad = _tamper(episode_folder, tmp_path / "bad", episode_id="../../evil")
    with pytest.raises(EpisodeFormatError, match=r"synth_00000\.json\.gz: episodes\[0\]: field 'episode_id'"):
        load_episode_set(bad)


def test_pog_eval_writes_nothing_outside_its_run_folder(episode_folder, tmp_path):
    """The graph itself, on a set whose scene id climbs out: refused by name, exit non-zero, and every
    file it wrote is under out_dir (before: explore folders and maps were written via the id)."""
    work = tmp_path / "work" / "a" / "b" / "c"
    work.mkdir(parents=True)
    bad = _tamper(episode_folder, tmp_path / "bad", scene_id="../../../../escaped")
    before = {p for p in tmp_path.rglob("*")}
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    proc = subprocess.run([sys.executable, "-m", "personal", "launch", "pog_eval", f"episodes_dir:={bad}",
                           "out_dir:=out", "maps_dir:=out/maps", "scenes:=1"], cwd=work, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert "scene.json: field 'scene_id' '../../../../escaped' cannot be a file name" in proc.stdout, proc.stdout[-2000:]
    new = {p for p in tmp_path.rglob("*")} - before
    outside = [p for p in new if work / "out" not in p.parents and p != work / "out"]
    assert not outside, outside


@pytest.mark.parametrize("graph, argument", [("aiv_eval", "run_name"), ("bag_map", "map_name"), ("locobot", "map_name")])
def test_graph_arguments_that_name_files_are_checked(graph, argument):
    g = get_graph(graph)
    with pytest.raises(GraphError, match=f"argument '{argument}'"):
        g.check_argument(argument, "../elsewhere")
    g.check_argument(argument, "fine_name")

"""Every file error names its path (issue 28, item 9): a full disk while results are written, a deeply
nested or 5000-digit JSON file, a corrupt gzip — each a clear error naming the file, never a bare
RecursionError / ValueError / OSError, and the exit-code table's code."""
from __future__ import annotations

import gzip
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from personal import exit_codes
from personal.runs.output import OutputDirError, ResultLog
from personal.files import parse_json, read_json
from personal.world.habitat_format import EpisodeFormatError, load_episode_set

ROOT = Path(__file__).resolve().parents[1]
DEEP = "[" * 100_000 + "]" * 100_000
DIGITS = '{"episodes": [' + "9" * 5000 + '], "goals_by_category": {}}'


@pytest.mark.parametrize("text, match", [(DEEP, "nested too deeply"), (DIGITS, "4300 digits"),
                                         ('{"a": ', "malformed JSON"), (b'{"a": "\x80"}', "not UTF-8")])
def test_parse_json_names_the_file_for_every_kind_of_bad_json(text, match):
    with pytest.raises(ValueError, match=f"^some/file.json: .*{match}"):
        parse_json(text, "some/file.json")


def test_a_corrupt_gzip_names_the_file(tmp_path):
    (tmp_path / "x.json.gz").write_bytes(b"not gzip at all")
    with pytest.raises(ValueError, match=r"x.json.gz: cannot read the gzipped file"):
        read_json(tmp_path / "x.json.gz")


@pytest.fixture(scope="module")
def episode_folder(tmp_path_factory):
    from personal.grounding.eval.pog_run import generate_episode_set
    from personal.world.habitat_format import write_episode_set

    scenes, episodes = generate_episode_set(1, ["easy"], 1, 0)
    folder = tmp_path_factory.mktemp("eps") / "set"
    write_episode_set(folder, list(scenes.values()), episodes)
    return folder


@pytest.mark.parametrize("which", ["content", "scene"])
@pytest.mark.parametrize("text", [DEEP, DIGITS], ids=["deep", "5000 digits"])
def test_hostile_episode_files_are_named(episode_folder, tmp_path, which, text):
    bad = tmp_path / "bad"
    shutil.copytree(episode_folder, bad)
    if which == "content":
        target = next((bad / "easy" / "content").glob("*.json.gz"))
        with gzip.open(target, "wt") as fh:
            fh.write(text)
    else:
        target = next((bad / "scenes").glob("*.scene.json"))
        target.write_text(text)
    with pytest.raises(EpisodeFormatError, match=str(target)):
        load_episode_set(bad)


def test_pog_eval_on_a_hostile_episode_file_exits_2_naming_it(episode_folder, tmp_path):
    bad = tmp_path / "bad"
    shutil.copytree(episode_folder, bad)
    target = next((bad / "easy" / "content").glob("*.json.gz"))
    with gzip.open(target, "wt") as fh:
        fh.write(DEEP)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-m", "personal", "launch", "pog_eval", f"episodes_dir:={bad}",
                          f"out_dir:={tmp_path / 'out'}"], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == exit_codes.BAD_INPUT, out.stdout[-2000:]
    assert f"{target}: JSON nested too deeply" in out.stdout and "Traceback" not in out.stdout, out.stdout[-2000:]


def test_a_full_disk_names_the_results_file_and_keeps_what_was_written(tmp_path):
    """/dev/full answers every write with ENOSPC, as a full disk does."""
    log = ResultLog(tmp_path / "results.jsonl")
    log.append({"k": 1})
    log._fh = open("/dev/full", "w")  # the disk fills up now
    with pytest.raises(OutputDirError, match=r"results.jsonl: cannot write the results log \(No space left on device\)"):
        log.append({"k": 2})
    assert ResultLog.read(tmp_path / "results.jsonl") == [{"k": 1}]


def test_an_evaluator_cli_on_a_full_disk_says_which_file_and_exits_1(tmp_path):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    (out_dir / "results.jsonl").symlink_to("/dev/full")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-m", "personal", "perm", "eval", "--backend", "kinematic", "--policy", "scripted",
                          "--seeds", "0", "--missions", "bin", "--prefs", "speed_up", "--suites", "none", "--out", str(out_dir)],
                         capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == exit_codes.FAILED, out.stderr[-2000:]
    assert f"error: {out_dir / 'results.jsonl'}: cannot write the results log (No space left on device)" in out.stderr
    assert "Traceback" not in out.stderr


def _disk_full_for_temp_files(monkeypatch):
    """The disk fills up now: every temporary file personal.runs.output opens writes to /dev/full."""
    import builtins

    from personal.runs import output

    monkeypatch.setattr(output, "open", lambda path, mode="r", *a, **k: builtins.open("/dev/full", mode), raising=False)


def test_a_report_written_on_a_full_disk_is_named_and_the_earlier_one_kept(tmp_path, monkeypatch):
    from personal.runs.output import write_file

    report = tmp_path / "report.md"
    write_file(report, "# the earlier run's report\n")
    _disk_full_for_temp_files(monkeypatch)
    with pytest.raises(OutputDirError, match=rf"^{report}: cannot write \(No space left on device\); an earlier version"):
        write_file(report, "# this run's report\n")
    assert report.read_text() == "# the earlier run's report\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.md"]  # no temporary file left behind


def test_an_evaluator_report_and_plot_on_a_full_disk_name_their_file(tmp_path, monkeypatch):
    """Through a real report writer (PAN's): its summary.json, then its plot, each named."""
    from personal.navigation.eval import pan

    _disk_full_for_temp_files(monkeypatch)
    with pytest.raises(OutputDirError, match=r"results.json: cannot write \(No space left on device\)"):
        pan.write_report(tmp_path, [], {"method": "test"}, ["value-map-rpg-owner"])
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from personal.runs.output import save_figure

    fig = plt.figure()
    with pytest.raises(OutputDirError, match=r"plot.png: cannot write"):
        save_figure(fig, tmp_path / "plot.png", dpi=50)
    plt.close(fig)
    assert not list(tmp_path.glob(".*.tmp"))

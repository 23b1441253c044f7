"""The `pog_eval` graph end to end through the runner (ORACLE top-down maps to keep it short):
progress, report location, exit code 0, and broken episodes (a missing target, a missing scene file) recorded as failures."""
import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from personal.graphs.pog_eval import METHODS
from conftest import only_run

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.timeout(300)


def episode_folder(tmp_path: Path) -> tuple[Path, str]:
    """Two households; the hard episode of the first names a target its scene lacks, and the second
    household's scene file is gone. Returns (folder, the missing scene's id)."""
    from personal.grounding.eval.pog_run import generate_episode_set
    from personal.world.habitat_format import write_episode_set

    scenes, eps = generate_episode_set(2, ("easy", "medium", "hard"), 1, seed=4)
    out = tmp_path / "episodes"
    write_episode_set(out, list(scenes.values()), eps)
    kept, gone = sorted(scenes)
    # break the hard episode: its target does not exist in the scene
    path = out / "hard" / "content" / f"{kept}.json.gz"
    doc = json.loads(gzip.open(path, "rt").read())
    doc["episodes"][0]["object_id"] = "unicorn_999"
    doc["episodes"][0]["info"]["personal"]["target_object_ids"] = ["unicorn_999"]  # our extras live in info
    with gzip.open(path, "wt") as f:
        json.dump(doc, f)
    (out / "scenes" / f"{gone}.scene.json").unlink()
    return out, gone


def test_pog_eval_graph_runs_to_a_report(tmp_path):
    eps, gone = episode_folder(tmp_path)
    out = tmp_path / "runs"
    cmd = [sys.executable, "-m", "personal", "launch", "pog_eval", f"episodes_dir:={eps}", "map_source:=oracle",
           f"out_dir:={out}", "resolution:=0.5"]
    proc = subprocess.run(cmd, cwd=ROOT, env=dict(os.environ), capture_output=True, text=True, timeout=280)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-4000:]
    assert "episodes done 6/6" in log and "report: " in log
    # issue 15, finding 5: a missing scene file raised KeyError in the evaluator and no report was written
    assert "KeyError" not in log and f"scene {gone}: no scene model" in log
    run = only_run(out)
    assert f"report: {run.resolve() / 'report.md'}" in log
    for name in ("results.json", "summary.json", "report.md", "sr_by_split.png"):
        assert (run / name).exists(), name
    results = json.loads((run / "results.json").read_text())
    n_methods = len(METHODS.split(","))  # the graph's default methods (7: the paper's, RPG-owner, scene-relative)
    assert len(results) == 6 * n_methods  # every episode x every method, nothing skipped
    assert len((run / "results.jsonl").read_text().splitlines()) == len(results)  # also kept as it went
    missing = [r for r in results if r["scene_id"] == gone]
    assert len(missing) == 3 * n_methods and all(r["failure"]["code"] == "scene_missing" for r in missing)
    results = [r for r in results if r["scene_id"] != gone]
    broken = [r for r in results if r["split"] == "hard"]
    assert len(broken) == n_methods and all(r["failure"]["code"] == "target_missing" for r in broken)
    assert "unicorn_999" in broken[0]["failure"]["reason"]
    good = [r for r in results if r["split"] != "hard" and r["method"] in ("qs", "rpg", "rpg-owner", "rpg-scene", "rpg-owner-scene")]
    assert all(r["failure"] is None and len(r["predictions"]) >= 1 for r in good)
    report = (run / "report.md").read_text()
    assert "ORACLE" in report.splitlines()[0] and "success radius 1.0 m" in report
    assert list((run / "maps").glob("*.png"))
    from report_browser import check_report

    check_report(run, ["ours easy", "paper total", "RPG-owner (ours, beyond paper)", "POG: per-episode gallery", "Full report"],
                 "pog_eval_report", min_images=2)


def test_evaluator_without_grounding_node_records_failures(tmp_path):
    from personal.runner import node_command

    out = tmp_path / "runs"
    cmd = node_command("nodes.pog_evaluator_node", "pog_evaluator_alone", parameters={
        "map_source": "oracle", "scenes": 1, "episodes_per_split": 1, "splits": "easy,hard", "grounding_wait_s": 1.0,
        "out_dir": str(out), "sample_maps": 0})
    proc = subprocess.run(cmd, cwd=ROOT, env=dict(os.environ), capture_output=True, text=True, timeout=200)
    # the report is written, but a run without its grounding node is not a success: exit 3, not 0
    assert proc.returncode == 3, (proc.stdout + proc.stderr)[-3000:]
    assert "run incomplete" in proc.stdout + proc.stderr
    results = json.loads((only_run(out) / "results.json").read_text())
    assert len(results) == 2 * 5
    assert all(r["failure"]["code"] == "no_grounding_node" for r in results)
    assert "INCOMPLETE RUN" in (only_run(out) / "summary.json").read_text()


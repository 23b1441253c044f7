"""One explore graph for several scenes (issue 16: the main job pays the graph's start-up once):
``explore all_episodes:=true`` saves, for every scene, exactly the maps a graph of its own saves
(fresh explorer and fresh maps per scene; features from the mapping node's child process)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from personal.grounding.eval.pog_run import generate_episode_set
from personal.world.habitat_format import write_episode_set

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.timeout(600)
ARGS = ["max_steps:=15", "width:=160", "height:=120", "feature_resolution:=0.5", "encoder:=lit"]


def _explore(episodes_dir: Path, maps_dir: Path, *extra: str) -> str:
    cmd = [sys.executable, "-m", "personal", "launch", "explore", f"episodes_dir:={episodes_dir}", f"maps_dir:={maps_dir}",
           *ARGS, *extra]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=500)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    return proc.stdout + proc.stderr


def test_one_graph_for_two_scenes_saves_the_maps_of_two_graphs(tmp_path):
    scenes, episodes = generate_episode_set(2, ["easy"], 1)
    firsts = [next(e for e in episodes if e.scene_id == sid) for sid in scenes]
    folder = tmp_path / "eps"
    write_episode_set(folder, list(scenes.values()), firsts)
    log = _explore(folder, tmp_path / "together", "all_episodes:=true")
    assert log.count("exploration finished") == 2 and "next scene: episode 2/2" in log, log[-3000:]
    for sid in scenes:
        _explore(folder, tmp_path / "alone", f"scene:={sid}")
        a, b = tmp_path / "together" / sid, tmp_path / "alone" / sid
        names = sorted(p.name for p in b.iterdir())
        assert {"features.npz", "occupancy.pgm", "cloud.npy"} <= set(names)
        assert sorted(p.name for p in a.iterdir()) == names
        for name in names:
            assert (a / name).read_bytes() == (b / name).read_bytes(), f"{sid}/{name} differs"

"""One explore graph for several scenes (issue 16: the main job pays the graph's start-up once):
``explore all_episodes:=true`` saves, for every scene, exactly the maps a graph of its own saves
(fresh explorer and fresh maps per scene; features from the mapping node's child process)."""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import wait_for
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


def test_explore_gives_up_an_unanswered_episode_load_instead_of_hanging(ros_context, monkeypatch):
    """all_episodes: the explore node's episode/load for the next scene, never answered in time (a bridge
    double that answers after 1.5 s), fails the run as INCOMPLETE after LOAD_TIMEOUT_S, naming the call;
    its episode/next call had no timeout at all, so a lost reply hung the graph."""
    import threading

    from rclpy.executors import SingleThreadedExecutor

    import nodes.explore_node as explore
    from personal import exit_codes
    from personal.srv import LoadEpisode

    monkeypatch.setattr(explore, "LOAD_TIMEOUT_S", 0.5)
    monkeypatch.setattr(explore, "LOAD_RESEND_S", 10.0)  # one request: the deadline, not the resend, is tested
    node = ros_context.add_node(explore.ExploreNode(context=ros_context.context))
    bridge = ros_context.rclpy.create_node("slow_bridge_double", context=ros_context.context)
    asked, answered = [], []

    def load(request, response):
        asked.append(request.index)
        time.sleep(1.5)
        response.success, response.message = True, "too late"
        answered.append(request.index)
        return response

    bridge.create_service(LoadEpisode, "episode/load", load)
    executor = SingleThreadedExecutor(context=ros_context.context)
    executor.add_node(bridge)
    threading.Thread(target=executor.spin, daemon=True).start()
    try:
        node._next_episode(1)
        wait_for(lambda: node.finished, 20)
        wait_for(lambda: answered, 20)  # the late answer is ignored
    finally:
        executor.shutdown(timeout_sec=5)
        bridge.destroy_node()
    assert node.exit_code == exit_codes.INCOMPLETE and asked == [1]
    assert node.failures == ["episode/load 1: no answer in 0.5 s: the remaining episodes are not explored"]
    assert node.want_index is None  # no explorer started for a scene that never came

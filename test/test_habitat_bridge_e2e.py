"""`personal launch sim backend:=habitat` end to end over ROS, on a public-format PersONAL
episode set (HM3D-style scene_id paths under scenes_dir, a scene_dataset_config path as the
public files write it, no scene models), with the habitat_sim contract fake on the launched
node's PYTHONPATH (the project never ships it).

Episode 1 starts away from its goal: a few actions, then STOP, fails with the DTG the
pathfinder gives for where it stopped. Episode 2 starts at one of its goal's view points:
STOP succeeds with SPL 1."""
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

from conftest import wait_for, only_run
from habitat_fake import env_with_fake, fake_habitat_sim
from personal.world import frames
from personal.world.episodes import generate_episodes
from personal.world.generator import generate_scene
from public_format import make_public_set

rclpy = pytest.importorskip("rclpy")

from nav_msgs.msg import Odometry  # noqa: E402
from rclpy.qos import qos_profile_sensor_data  # noqa: E402
from sensor_msgs.msg import Image  # noqa: E402
from std_srvs.srv import Trigger  # noqa: E402

from personal.interfaces.convert import to_dict  # noqa: E402
from personal.msg import AgentState, DiscreteAction, EpisodeDescriptor, EpisodeResult  # noqa: E402
from sim_bridge.bridge_node import LATCHED, STATE_QOS  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def public_set(tmp_path_factory):
    root = tmp_path_factory.mktemp("public_e2e")
    scene = generate_scene(31, scene_id="synth_e")
    eps = generate_episodes(scene, "easy", 2, seed=3)
    episodes_dir, scenes_dir, published = make_public_set(root, [scene], eps, start_at_view_point={eps[1].episode_id})
    return episodes_dir, scenes_dir, published, eps


@pytest.fixture
def graph(public_set):
    """The sim graph for one test: it renders 640x480 frames at 4 Hz, which the module's other
    graphs should not have to share the two cores with."""
    episodes_dir, scenes_dir, _, _ = public_set
    log = tempfile.NamedTemporaryFile(prefix="sim_habitat_", suffix=".log", delete=False)
    cmd = [sys.executable, "-m", "personal", "launch", "sim", "backend:=habitat", f"episodes_dir:={episodes_dir}",
           f"scenes_dir:={scenes_dir}", "split:=easy", "rate:=4.0"]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env_with_fake(), stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)

    def text():
        return Path(log.name).read_text(errors="replace")

    try:
        # start-up: imports, the stage's navmesh and the first render (generous under load: only a bound)
        wait_for(lambda: "episode 1/2" in text() or proc.poll() is not None, 300)
        assert "episode 1/2" in text(), text()
        yield proc, text
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        os.unlink(log.name)


def _subscribe(node, store, topic, kind, qos):
    node.create_subscription(kind, topic, lambda m: store.setdefault(topic, []).append(m), qos)


def test_public_episodes_replay_over_ros(graph, public_set, ros_context):
    proc, log = graph
    _, scenes_dir, published, eps = public_set
    node = ros_context.make_node("habitat_e2e")
    got: dict = {}
    _subscribe(node, got, "episode", EpisodeDescriptor, LATCHED)
    _subscribe(node, got, "agent_state", AgentState, STATE_QOS)
    _subscribe(node, got, "episode/result", EpisodeResult, STATE_QOS)
    _subscribe(node, got, "odom", Odometry, qos_profile_sensor_data)
    _subscribe(node, got, "camera/aligned_depth_to_color/image_raw", Image, qos_profile_sensor_data)
    _subscribe(node, got, "camera/semantic/image_raw", Image, qos_profile_sensor_data)
    pub = node.create_publisher(DiscreteAction, "action", 10)
    wait_for(lambda: pub.get_subscription_count() > 0 and got.get("episode"), 60)

    # episode 1, at the file's start pose
    desc = to_dict(got["episode"][-1])
    d1 = published[desc["episode_id"]]
    assert desc["episode_id"] == eps[0].episode_id and desc["count"] == 2
    start = frames.habitat_to_map(d1["start_position"])
    assert (desc["start_position"]["x"], desc["start_position"]["y"]) == pytest.approx(start[:2], abs=1e-6)
    # every stream of the frame, each waited for: they are separate best-effort topics, and odometry
    # arriving says nothing about the semantic image published beside it
    wait_for(lambda: all(got.get(t) for t in ("odom", "camera/aligned_depth_to_color/image_raw",
                                              "camera/semantic/image_raw")), 60)
    odom = got["odom"][-1].pose.pose
    assert (odom.position.x, odom.position.y, odom.position.z) == pytest.approx(start, abs=1e-5)
    yaw = 2 * np.arctan2(odom.orientation.z, odom.orientation.w)
    assert abs(frames.wrap_angle(yaw - frames.habitat_quat_to_yaw(d1["start_rotation"]))) < 1e-5
    depth = got["camera/aligned_depth_to_color/image_raw"][-1]
    mm = np.frombuffer(bytes(depth.data), np.uint16).reshape(depth.height, depth.width)
    assert (depth.width, depth.height) == (640, 480) and (mm > 0).mean() > 0.5 and mm.max() <= 5000
    sem = got["camera/semantic/image_raw"][-1]
    assert (sem.width, sem.height) == (640, 480)
    # the targets come from the file (no scene model)
    assert desc["target_object_ids"] == list(eps[0].target_object_ids)

    def act(action, rid):
        pub.publish(DiscreteAction(action=action, request_id=rid))
        return wait_for(lambda: next((to_dict(m) for m in got.get("agent_state", []) if m.request_id == rid), None), 60)

    for k, a in enumerate([1, 2, 1, 3]):  # forward, left, forward, right
        s = act(a, f"a{k}")
    s = act(0, "stop")
    assert s["stopped"] and s["step"] == 5
    wait_for(lambda: got.get("episode/result"), 30)
    r1 = to_dict(got["episode/result"][-1])
    assert r1["episode_id"] == eps[0].episode_id and r1["stopped"] and r1["steps"] == 5
    assert not r1["success"] and r1["spl"] == 0.0
    # DTG and L are habitat's pathfinder geodesics to the goals' view points (checked in-process)
    with fake_habitat_sim():
        from personal.world.habitat_format import load_episode_set
        from personal.sim.backends.base import CameraSpec
        from personal.sim.backends.habitat import HabitatBackend
        from personal.sim.bridge_logic import scene_assets

        _, loaded = load_episode_set(public_set[0], scene_models=False)
        ep1 = next(e for e in loaded if e.episode_id == eps[0].episode_id)
        ref = HabitatBackend(camera=CameraSpec(width=32, height=24))
        ref.load_scene(scene_assets([ep1], {}, str(public_set[0]), str(scenes_dir))[ep1.scene_id])
        final = (s["position"]["x"], s["position"]["y"], s["position"]["z"])
        assert r1["distance_to_goal"] == pytest.approx(ref.path_distance(final, ep1.view_point_positions()), abs=1e-3)
        assert r1["geodesic_distance"] == pytest.approx(ref.episode_goal_distance(ep1), abs=1e-3)
        ref.close()
    assert r1["path_length"] == pytest.approx(0.5, abs=0.01)  # two unobstructed forward steps

    # episode 2 starts at a view point of its goal: STOP there succeeds
    client = node.create_client(Trigger, "episode/next")
    assert client.wait_for_service(timeout_sec=20)
    future = client.call_async(Trigger.Request())
    wait_for(future.done, 30)
    assert future.result().success, future.result().message
    wait_for(lambda: got["episode"][-1].episode_id == eps[1].episode_id, 30)
    s = act(0, "stop2")
    wait_for(lambda: len(got.get("episode/result", [])) >= 2, 30)
    r2 = to_dict(got["episode/result"][-1])
    assert r2["episode_id"] == eps[1].episode_id and r2["success"] and r2["spl"] == 1.0
    assert r2["distance_to_goal"] == pytest.approx(0.0, abs=1e-3) and r2["steps"] == 1
    # the bridge logs the verdict after publishing it: wait for the line, not just the message
    wait_for(lambda: "SUCCESS SPL=1.00" in log() or proc.poll() is not None, 30)
    text = log()
    assert "SUCCESS SPL=1.00" in text and proc.poll() is None


def test_pan_eval_runs_on_habitat(public_set, tmp_path):
    """PAN through the ROS graph with backend:=habitat: the evaluator scores with its own
    habitat-sim (the fake here) from the files' view points, and the report says so."""
    import json

    episodes_dir, scenes_dir, _, eps = public_set
    out = tmp_path / "runs"
    cmd = [sys.executable, "-m", "personal", "launch", "pan_eval", "backend:=habitat", f"episodes_dir:={episodes_dir}",
           f"scenes_dir:={scenes_dir}", "split:=easy", "methods:=random-frontier", "max_steps:=15", f"out_dir:={out}",
           "--domain-id", "auto"]  # its own domain: the module's sim graph may still be running
    proc = subprocess.run(cmd, cwd=ROOT, env=env_with_fake(), capture_output=True, text=True, timeout=240)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-4000:]
    run_dir = only_run(out)
    results = json.loads((run_dir / "results.json").read_text())
    assert sorted(r["episode_id"] for r in results) == sorted(e.episode_id for e in eps)
    for r in results:
        assert r["steps"] == 15 and np.isfinite(r["dtg"]) and np.isfinite(r["geodesic_distance"])
    assert any(r["path_length"] > 0 for r in results)  # it drove through the bridge
    report = (run_dir / "report.md").read_text()
    assert "nearest view point of a target" in report and "Not habitat ObjectNav's 0.1 m" in report
    assert "test/fakes/habitat_sim" in report  # the simulator line names what actually ran


def test_pog_on_habitat_explore_then_saved_maps(public_set, tmp_path):
    """POG on a public-format set: the explore graph maps the scene through habitat-sim (the
    fake) with an image encoder (a tiny random CLIP), then pog_eval grounds every query on the
    saved map and scores it against the files' goal centres (no scene model)."""
    import json

    from test_models_hf import _save_tiny

    episodes_dir, scenes_dir, _, eps = public_set
    clip = _save_tiny("clip", tmp_path / "tiny_clip")
    maps = tmp_path / "maps"
    explore = [sys.executable, "-m", "personal", "launch", "explore", "backend:=habitat", f"episodes_dir:={episodes_dir}",
               f"scenes_dir:={scenes_dir}", "scene:=synth_e", "encoder:=clip", f"model_path:={clip}", f"maps_dir:={maps}",
               "max_steps:=12", "--domain-id", "auto"]
    proc = subprocess.run(explore, cwd=ROOT, env=env_with_fake(), capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    assert (maps / "synth_e" / "features.yaml").exists()
    out = tmp_path / "pog"
    pog = [sys.executable, "-m", "personal", "launch", "pog_eval", "map_source:=saved", f"maps_dir:={maps}",
           f"episodes_dir:={episodes_dir}", "splits:=easy", "encoder:=clip", f"model_path:={clip}", f"out_dir:={out}",
           "--domain-id", "auto"]
    proc = subprocess.run(pog, cwd=ROOT, env=dict(os.environ), capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    results = json.loads((only_run(out) / "results.json").read_text())
    assert {r["episode_id"] for r in results} == {e.episode_id for e in eps}
    centres = {e.episode_id: [g.position for g in _public_goals(episodes_dir, e)] for e in eps}
    for r in results:
        assert r["failure"] is None, r
        # distances are to the goals' centres from the file
        expect = min(np.hypot(r["predictions"][0][0] - c[0], r["predictions"][0][1] - c[1]) for c in centres[r["episode_id"]])
        assert r["distances_m"][0] == pytest.approx(expect, abs=1e-3)


def _public_goals(episodes_dir, episode):
    from personal.world.habitat_format import load_episode_set

    _, loaded = load_episode_set(episodes_dir, scene_models=False)
    return next(e for e in loaded if e.episode_id == episode.episode_id).goals

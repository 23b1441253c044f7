"""aiv_eval over ROS topics: replayer + verifier + view planner, in-process, on a tiny generated set;
and the message-level sessions against the offline runner."""
import json

import pytest

from personal.verification.agent import AgentConfig
from personal.verification.evaluate import run_config
from personal.verification.reader import load_index
from personal.verification.session import CaptureServer, PlannerSession, VerifierSession
from personal.verification.writer import write_dataset


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    root = tmp_path_factory.mktemp("pvnodes")
    return write_dataset(root, n_targets=2, seed=11)["index"]


def drive(pairs, cfg, **window):
    server, verifier, planner = CaptureServer(pairs, seed=cfg.seed), VerifierSession(cfg), PlannerSession(pairs, cfg, **window)
    cmd = planner.start_next()
    while cmd is not None:
        obs, rgb, mask, depth = server.handle(cmd)
        if obs["new_view"] and not obs.get("error"):  # the shape check needs the capture's depth
            assert obs["has_depth"] and depth.dtype == "float32" and depth.shape == mask.shape
        planner.on_observation(obs)
        cmd = planner.on_verdict(verifier.handle(obs, rgb, mask, depth))
    return planner.records


@pytest.mark.parametrize("mode,nbv,detection", [("single", "none", "mask"), ("multi", "fps", "mask"),
                                                ("multi", "random", "mask"), ("multi", "fps", "box")])
def test_sessions_match_offline_runner(index, mode, nbv, detection):
    pairs = load_index(index)
    cfg = AgentConfig(mode=mode, nbv=nbv, seed=4, detection=detection)
    offline = run_config(pairs, cfg)
    online = drive(pairs, cfg)
    for a, b in zip(offline, online, strict=True):
        for key in ("episode_key", "prediction", "steps", "first_view_prediction", "interim_predictions",
                    "nav_fail_unreachable", "nav_fail_trap"):
            assert a[key] == b[key], key


def test_episode_windows_are_the_whole_run(index):
    """A sharded aiv_eval runs windows of the index (start / limit): random next-best views are seeded
    per episode, so the windows' records are the whole run's, and the offline runner's."""
    pairs = load_index(index)
    cfg = AgentConfig(mode="multi", nbv="random", seed=2, horizon=5)
    whole = drive(pairs, cfg)
    parts = drive(pairs, cfg, start=0, limit=2) + drive(pairs, cfg, start=2, limit=3) + drive(pairs, cfg, start=5)
    assert [r["index"] for r in parts] == list(range(len(pairs))) == [r["index"] for r in whole]
    assert parts == whole  # same views (transcripts), verdicts and records
    assert sum(r["moves"] for r in whole) >= len(whole)  # random views were chosen
    keys = ("episode_key", "prediction", "steps", "interim_predictions", "nav_fail_unreachable", "nav_fail_trap")
    offline_tail = run_config(pairs[3:], cfg)  # the offline runner, started mid-index, agrees too
    assert [{k: r[k] for k in keys} for r in offline_tail] == [{k: r[k] for k in keys} for r in whole[3:]]


def test_capture_server_reports_bad_commands(index):
    server = CaptureServer(load_index(index))
    obs, *_ = server.handle({"request_id": "r", "episode_index": 99, "command": "reset", "direction": ""})
    assert obs["status"] == "error" and "out of range" in obs["error"]
    obs, *_ = server.handle({"request_id": "r", "episode_index": 0, "command": "move", "direction": "back"})
    assert "move before reset" in obs["error"]
    server.handle({"request_id": "r", "episode_index": 0, "command": "reset", "direction": ""})
    obs, *_ = server.handle({"request_id": "r", "episode_index": 0, "command": "move", "direction": "sideways"})
    assert "unknown direction" in obs["error"]


def test_graph_nodes_over_topics(index, tmp_path, ros_context):
    from rclpy.parameter import Parameter

    from conftest import wait_for
    from personal.msg import AivCommand
    from nodes.aiv_replayer_node import AivReplayerNode
    from nodes.verifier_node import VerifierNode
    from nodes.view_planner_node import ViewPlannerNode

    ctx = ros_context
    kw = {"context": ctx.context}
    ctx.add_node(AivReplayerNode(parameter_overrides=[Parameter("index", value=str(index))], **kw))
    ctx.add_node(VerifierNode(**kw))
    planner = ctx.add_node(ViewPlannerNode(parameter_overrides=[
        Parameter("out_dir", value=str(tmp_path / "out")), Parameter("nbv", value="fps")], **kw))
    # bad commands (an episode that does not exist, an unknown command) must be answered and survived
    junk = ctx.make_node("junk").create_publisher(AivCommand, "aiv/command", 10)
    wait_for(lambda: junk.get_subscription_count() > 0, timeout=20)
    junk.publish(AivCommand(request_id="junk-1", episode_index=999, command="reset"))
    junk.publish(AivCommand(request_id="junk-2", episode_index=0, command="jump"))
    wait_for(lambda: planner.exit_code is not None, timeout=60)
    assert planner.exit_code == 0
    records = [json.loads(line) for line in (tmp_path / "out" / "results_MV-fps.jsonl").read_text().splitlines()]
    assert len(records) == 6 and {r["pair_type"] for r in records} == {"positive", "neg_same", "neg_diff"}
    offline = run_config(load_index(index), AgentConfig(mode="multi", nbv="fps"))
    assert [r["prediction"] for r in records] == [r["prediction"] for r in offline]
    assert (tmp_path / "out" / "report.md").is_file()

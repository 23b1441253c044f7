"""Navigation run bookkeeping without ROS (personal/navigation/run.py, sync.ObservationPairing)."""
import json
from types import SimpleNamespace

import numpy as np

from personal.navigation.run import NavRun, failed_run, image_array, start_state, yaw_of
from personal.navigation.sync import ObservationPairing


def _loop():
    policy = SimpleNamespace(is_oracle=False, info={"detections": 2})
    return SimpleNamespace(policy=policy, step_count=0, timing={"map": 0.03}, guard=SimpleNamespace(overrides=1),
                           stop_verifier=None)


def _state(step, rid, x=0.0, collided=False, episode="e1"):
    return {"episode_id": episode, "request_id": rid, "step": step, "position": {"x": x, "y": 1.0, "z": 0.0},
            "yaw": 0.5, "collided": collided, "stopped": False}


def test_answers_match_request_and_step_or_request_only_live():
    run = NavRun("e1", "random-frontier", _loop(), None, now=0.0)
    run.begin(1.0)
    assert run.answers(_state(0, ""), live=False)
    assert not run.answers(_state(0, "", episode="other"), live=False)
    assert not run.answers(_state(0, ""), live=True)  # live: the reset has no request id to answer
    run.loop.step_count = 1
    rid = run.took(2, now=2.0)
    assert rid == "e1:random-frontier:1" and run.awaiting == (rid, 1)
    assert run.answers(_state(1, rid), live=False) and not run.answers(_state(0, rid), live=False)
    assert run.answers(_state(7, rid, episode="driver's own"), live=True)


def test_record_collects_collisions_only_after_an_action():
    run = NavRun("e1", "p", _loop(), None, 0.0)
    run.record(_state(0, "", x=1.0, collided=True))
    assert run.xs == [1.0] and run.collided == []
    run.took(1, 1.0)
    run.record(_state(1, "x", x=2.0, collided=True))
    assert run.xs == [1.0, 2.0] and run.collided == [True]


def test_overdue_names_what_the_run_waits_for():
    run = NavRun("e1", "p", _loop(), None, 0.0)
    assert run.overdue(100.0, 10.0) is None  # not started yet
    run.begin(5.0)
    assert run.overdue(14.0, 10.0) is None
    assert run.overdue(16.0, 10.0) == "agent_state"
    run.state = _state(0, "")
    assert run.overdue(16.0, 10.0) == "an observation matching the agent state"
    run.result("", 17.0)
    assert run.overdue(100.0, 10.0) is None  # done


def test_result_pads_collisions_and_computes_rates():
    loop = _loop()
    run = NavRun("e1", "p", loop, None, now=0.0)
    run.begin(0.0)
    for step, (action, t) in enumerate([(1, 1.0), (2, 2.0), (0, 3.0)], start=1):
        loop.step_count = step
        run.took(action, t)
    result, info = run.result("", now=4.0)
    assert run.done and result["steps"] == 3 and result["stopped"] is True and result["collided"] == [False] * 3
    assert info["steps_per_s"] == 0.75 and info["loop_steps_per_s"] == 1.0
    assert info["timing_ms_per_step"] == {"map": 10.0} and json.loads(result["info_json"])["detections"] == 2
    assert result["guard_overrides"] == 1
    one = NavRun("e2", "p", _loop(), None, 0.0)
    one.took(1, 1.0)
    assert one.result("timeout", 2.0)[1]["loop_steps_per_s"] is None  # one action: no span


def test_failed_run_and_live_start_state():
    r = failed_run("e1", "bogus", "cannot start: unknown policy")
    assert r["steps"] == 0 and r["failure_reason"].startswith("cannot start")
    st = start_state("e1", (1.0, 2.0, 0.1, 0.3))
    assert st["position"] == {"x": 1.0, "y": 2.0, "z": 0.1} and st["yaw"] == 0.3 and st["request_id"] == ""


def test_image_array_and_yaw():
    msg = SimpleNamespace(encoding="32FC1", is_bigendian=False, height=1, width=2,
                          data=np.array([np.nan, 1.5], "<f4").tobytes())
    assert image_array(msg).tolist() == [[0.0, 1.5]]
    try:
        image_array(SimpleNamespace(encoding="rgb8", is_bigendian=False, height=1, width=1, data=b"abc"))
        raise AssertionError("rgb8 accepted")
    except ValueError as exc:
        assert "unsupported image encoding" in str(exc)
    q = SimpleNamespace(x=0.0, y=0.0, z=np.sin(0.4), w=np.cos(0.4))
    assert abs(yaw_of(q) - 0.8) < 1e-9


def test_bridge_pairing_needs_matching_odometry_and_the_feature_image_only_when_asked():
    pairing = ObservationPairing(live=False, feature_key="rgb", slop_ns=0, settle_s=0.0)
    stamp = (3, 0)
    for key, value in (("depth", "D"), ("pose", "P"), ("odom", (1.0, 2.0, 0.0))):
        pairing.add(key, stamp, value, now=0.0)
    assert pairing.match(False, (1.0, 2.0, 0.0)).parts["depth"] == "D"
    assert pairing.match(False, (5.0, 2.0, 0.0)) is None  # the odometry is not the awaited state's pose
    assert pairing.match(True, (1.0, 2.0, 0.0)) is None
    pairing.add("rgb", stamp, "C", now=0.0)
    assert pairing.match(True, (1.0, 2.0, 0.0)).parts["rgb"] == "C"


def test_live_pairing_takes_frames_only_after_arming():
    pairing = ObservationPairing(live=True, feature_key="rgb", slop_ns=20_000_000, settle_s=0.0)
    pairing.add("depth", (1, 0), "old", now=0.0)
    pairing.arm(1.0)
    pairing.add("depth", (2, 0), "D", now=1.5)
    pairing.add("pose", (9, 0), "P", now=1.5)
    assert pairing.match(False, (0.0, 0.0, 0.0)).parts == {"depth": "D", "pose": "P"}
    assert pairing.match(True, (0.0, 0.0, 0.0)) is None  # no colour frame yet
    pairing.arm(None)
    pairing.add("depth", (3, 0), "D2", now=2.0)
    assert pairing.match(False, (0.0, 0.0, 0.0)) is None  # disarmed: collects nothing


def test_accept_finishes_on_stop_or_spent_budget_and_observes_otherwise():
    loop = _loop()
    loop.done = False
    run = NavRun("e1", "p", loop, None, 0.0)
    run.begin(0.0)
    loop.step_count = 1
    rid = run.took(1, 1.0)
    assert run.accept(_state(1, "stale"), live=False, now=2.0) is None and run.since == 1.0
    assert run.accept(_state(1, rid), live=False, now=2.0) == "observe" and run.state["request_id"] == rid
    assert run.since == 2.0 and run.xs == []  # recorded when observed, not before
    stop = dict(_state(1, rid), stopped=True)
    assert run.accept(stop, live=False, now=3.0) == "finish" and run.xs == [0.0]
    loop.done = True
    assert run.accept(_state(1, rid), live=False, now=4.0) == "finish"


def test_observation_refuses_colour_unlike_depth_and_keeps_waiting():
    run = NavRun("e1", "p", _loop(), None, 0.0)
    run.state = _state(0, "", x=3.0, collided=True)
    parts = {"depth": np.zeros((4, 6)), "pose": np.eye(4), "rgb": np.zeros((4, 5, 3), np.uint8)}
    try:
        run.observation(parts, np.eye(3))
        raise AssertionError("mismatched colour accepted")
    except ValueError as exc:
        assert "5x4 does not match the aligned depth 6x4" in str(exc)
    assert run.state is not None and run.xs == []
    parts["rgb"] = np.zeros((4, 6, 3), np.uint8)
    frame = run.observation(parts, np.eye(3))
    assert run.state is None and run.xs == [3.0] and frame.collided is True and frame.rgb is parts["rgb"]


def test_specs_from_the_descriptor_or_the_command():
    from personal.navigation.run import command_spec, episode_spec

    assert command_spec({"episode_id": "e", "query": "  ", "summary": "", "owner": ""}, 0.0) is None
    spec = command_spec({"episode_id": "e", "query": "Find Ana's mug", "summary": "s", "owner": "Ana"}, 0.4)
    assert spec.query == "Find Ana's mug" and spec.owner == "Ana" and spec.floor_z == 0.4
    ep = {"episode_id": "e", "query": "q", "summary": "s", "owner": "o", "start_position": {"z": 1.5}, "floor_id": 2}
    assert (episode_spec(ep).floor_z, episode_spec(ep).floor) == (1.5, 2)


def test_sensing_reads_ids_under_the_oracle_encoder_and_colour_otherwise():
    from personal.navigation.run import PARAMETERS, Sensing

    p = {name: default for name, (default, _) in PARAMETERS.items()}
    lit, oracle = Sensing(p), Sensing({**p, "encoder": "oracle"})
    assert (lit.feature_key, lit.image_keys(), lit.error) == ("rgb", ("depth", "rgb"), "")
    assert oracle.feature_key == "ids" and oracle.image_keys() == ("depth", "ids", "rgb")  # colour for verify
    assert Sensing({**p, "encoder": "oracle", "sync": "live"}).image_keys() == ("depth", "ids")
    assert "unknown" in Sensing({**p, "sync": "lockstep"}).error and not Sensing({**p, "sync": "lockstep"}).live
    run = lambda spec, oracle_policy, features: SimpleNamespace(  # noqa: E731
        spec=spec, loop=SimpleNamespace(policy=SimpleNamespace(is_oracle=oracle_policy, needs_features=features)))
    assert lit.needs_episode(run(None, False, True)) and not lit.needs_episode(run("spec", False, True))
    assert lit.needs_episode(run("spec", True, False)) and oracle.needs_episode(run("spec", False, True))
    assert not oracle.needs_episode(run("spec", False, False))


def test_node_input_checks_name_what_is_wrong():
    import pytest

    from personal.navigation.run import camera_matrix, is_reset_state, map_due, non_finite_pose, observation_image

    assert camera_matrix([500, 0, 320, 0, 500, 240, 0, 0, 1])[1, 2] == 240
    with pytest.raises(ValueError, match="focal"):
        camera_matrix([0] * 9)
    assert non_finite_pose(1.0, 2.0, 0.0, 0.5) == "" and "non-finite" in non_finite_pose(float("nan"), 0, 0, 0)
    state = {"episode_id": "e1", "request_id": "", "step": 0}
    assert is_reset_state(state, "e1") and not is_reset_state(state, "e2") and not is_reset_state(None, "e1")
    assert not is_reset_state({**state, "request_id": "r3", "step": 3}, "e1")
    assert [s for s in range(1, 31) if map_due(s, 10)] == [10, 20, 30] and not map_due(10, 0)
    bad = SimpleNamespace(encoding="bgr8", is_bigendian=0, data=b"", height=0, width=0)
    with pytest.raises(ValueError, match="topic 'depth_topic': unsupported"):
        observation_image(bad, "depth", "depth_topic")

"""openpi websocket protocol: round trip with the real openpi-client, malformed observations, server down;
OpenVLA-style /act client; the oracle scripted policy on the kinematic stand-in (no robosuite here)."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest
import requests
from openpi_client.websocket_client_policy import WebsocketClientPolicy

from personal.manipulation.backends import make_backend
from personal.manipulation.policies import make_policy
from personal.manipulation.policies.base import ObservationError, Policy, make_observation, validate_observation
from personal.manipulation.policies.http_act import HttpActPolicy, decode_json, encode_array
from personal.manipulation.policies.openpi_ws import OpenpiWebsocketPolicy, PolicyServerError, PolicyServerUnavailable
from personal.manipulation.policies.scripted import parse_prompt
from personal.manipulation.policies.server import PolicyServer
from personal.manipulation.runner import run_episode
from personal.manipulation.suite import build_suite, make_layout


def _obs(prompt="Task: put a block on the mat. Preference: Move faster.", layout=None):
    env = make_backend("kinematic")
    layout = layout or make_layout("mat", 0)
    return make_observation(env.reset(layout), prompt, layout)


@pytest.fixture
def server():
    srv = PolicyServer(make_policy("scripted", chunk=4), port=0, metadata={"suite": "test"}).start()
    yield srv
    srv.stop()


def test_round_trip_with_openpi_client(server):
    client = WebsocketClientPolicy(host="127.0.0.1", port=server.port)
    meta = client.get_server_metadata()
    assert meta["policy"] == "oracle_scripted" and meta["suite"] == "test" and meta["action_dim"] == 7
    first = client.infer(_obs())
    assert first["actions"].shape == (4, 7) and first["actions"].dtype == np.float32
    assert "infer_ms" in first["server_timing"] and "prev_total_ms" not in first["server_timing"]
    second = client.infer(_obs())
    assert second["server_timing"]["prev_total_ms"] > 0
    assert requests.get(f"http://127.0.0.1:{server.port}/healthz", timeout=5).status_code == 200


class _RecordingPolicy(Policy):
    """Answers a zero chunk and remembers the image shapes it was given."""

    name = "recording"

    def __init__(self):
        self.seen = []

    def infer(self, obs):
        validate_observation(obs)
        self.seen.append(tuple(np.asarray(obs["observation/image"]).shape))
        return {"actions": np.zeros((5, 7))}


def libero_example_observation(size=224):
    """What openpi's examples/libero/main.py sends: resized images, 8-D state, the task as prompt."""
    rng = np.random.default_rng(0)
    return {
        "observation/image": rng.integers(0, 256, (size, size, 3), dtype=np.uint8),
        "observation/wrist_image": rng.integers(0, 256, (size, size, 3), dtype=np.uint8),
        "observation/state": rng.normal(size=8).astype(np.float32),
        "prompt": "put the black bowl on the plate",
    }


def test_openpi_client_gets_actions_for_a_224_observation():
    policy = _RecordingPolicy()
    with PolicyServer(policy, port=0) as srv:
        client = WebsocketClientPolicy(host="127.0.0.1", port=srv.port)
        out = client.infer(libero_example_observation(224))
        assert out["actions"].shape == (5, 7) and out["actions"].dtype == np.float32
        assert policy.seen == [(224, 224, 3)]
        # our own suite's 128 x 128 and a non-square image go through too: any H x W x 3 uint8
        assert client.infer(libero_example_observation(128))["actions"].shape == (5, 7)
        odd = dict(libero_example_observation(), **{"observation/image": np.zeros((180, 320, 3), np.uint8)})
        assert client.infer(odd)["actions"].shape == (5, 7)


def test_prev_total_includes_the_clients_think_time_like_openpi():
    """openpi's server starts its clock before recv: prev_total_ms covers wait + recv + infer + send."""
    import time

    with PolicyServer(_RecordingPolicy(), port=0) as srv:
        client = WebsocketClientPolicy(host="127.0.0.1", port=srv.port)
        time.sleep(0.25)  # the client thinks before its first request
        first = client.infer(libero_example_observation())
        second = client.infer(libero_example_observation())
    assert "prev_total_ms" not in first["server_timing"]
    assert second["server_timing"]["prev_total_ms"] >= 250.0
    assert second["server_timing"]["prev_total_ms"] >= first["server_timing"]["infer_ms"]


def test_image_checks_are_dtype_and_rank():
    validate_observation(libero_example_observation(224))
    for bad, msg in ((np.zeros((224, 224), np.uint8), "H x W x 3"), (np.zeros((224, 224, 4), np.uint8), "H x W x 3"),
                     (np.zeros((224, 224, 3), np.float32), "uint8"), (np.zeros((0, 224, 3), np.uint8), "H x W x 3")):
        with pytest.raises(ObservationError, match=msg):
            validate_observation(dict(libero_example_observation(), **{"observation/image": bad}))
    with pytest.raises(ObservationError, match="must be 128 x 128"):  # a policy that needs one size says so
        validate_observation(libero_example_observation(224), image_size=128)


@pytest.mark.parametrize("mutate, field", [
    (lambda o: o.__setitem__("observation/image", np.zeros((64, 64), np.uint8)), "observation/image"),
    (lambda o: o["observation/state"].__setitem__(2, np.nan), "observation/state"),
])
def test_malformed_observation_gets_error_and_server_keeps_serving(server, mutate, field):
    bad = _obs()
    mutate(bad)
    client = WebsocketClientPolicy(host="127.0.0.1", port=server.port)
    with pytest.raises(RuntimeError, match=field):
        client.infer(bad)
    # the failed connection was closed by the server; a new one is served normally
    again = WebsocketClientPolicy(host="127.0.0.1", port=server.port)
    assert again.infer(_obs())["actions"].shape == (4, 7)
    assert server.errors == 1


def test_our_client_reconnects_after_error_and_reports_server_text(server):
    client = OpenpiWebsocketPolicy(port=server.port)
    bad = _obs()
    bad["observation/wrist_image"] = np.zeros((128, 128), np.uint8)
    with pytest.raises(PolicyServerError, match="observation/wrist_image"):
        client.infer(bad)
    assert client.infer(_obs())["actions"].shape == (4, 7)  # reconnected
    client.close()


def test_client_clear_error_when_server_down():
    srv = PolicyServer(make_policy("scripted"), port=0).start()
    port = srv.port
    srv.stop()
    with pytest.raises(PolicyServerUnavailable, match=rf"127.0.0.1:{port} is not reachable after 3 attempts"):
        OpenpiWebsocketPolicy(port=port, attempts=3, backoff_s=0.01)


def test_http_act_client_against_local_openvla_style_server():
    seen = {}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server API
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])), object_hook=decode_json)
            seen.update(body)
            reply = json.dumps(json.dumps(encode_array(np.arange(7, dtype=np.float32) / 10)))  # deploy.py style
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(reply.encode())

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        policy = HttpActPolicy(url=f"http://127.0.0.1:{httpd.server_address[1]}/act")
        out = policy.infer(_obs())
        assert out["actions"].shape == (1, 7) and out["actions"][0, 6] == pytest.approx(0.6)
        assert seen["image"].shape == (128, 128, 3) and seen["instruction"].startswith("Task:")
    finally:
        httpd.shutdown()
        thread.join()
    with pytest.raises(ConnectionError, match="not reachable"):
        HttpActPolicy(url=f"http://127.0.0.1:{httpd.server_address[1]}/act", timeout_s=1).infer(_obs())


def test_prompt_parser_explicit_contextual_and_order():
    assert parse_prompt("Task: put a block on the mat. Preference: Move faster.") == ("put a block on the mat", ["speed_up"])
    assert parse_prompt("Task: put a block in the bin. Guests will use them immediately.")[1] == ["speed_up"]
    assert parse_prompt("Task: put a block in the bin. Preference: Prefer the red one; Prefer the bigger one.")[1] == \
        ["prefer_red", "prefer_bigger"]
    assert parse_prompt("Task: put a block in the bin.")[1] == []


def test_scripted_policy_follows_preferences_on_kinematic_stand_in():
    """The stand-in is physics-free; this checks the policy/plan/metric plumbing, not the eval numbers."""
    backend, policy = make_backend("kinematic"), make_policy("scripted")
    for suite in ("none", "single"):
        for task in build_suite(suite, ["mat"], ["push", "move_higher", "prefer_blue"], [2]):
            run = run_episode(backend, policy, task, images=False)
            assert run.result.success, task.task_id
            if suite == "single":
                assert run.result.d[task.measured[0]] == 1.0, (task.task_id, run.result.scores)
    conflict = build_suite("conflict", ["mat"], ["speed_up"], [0])[0]
    run = run_episode(backend, policy, conflict, images=False)
    assert run.result.success and run.result.sa == 1.0 and policy.prefs == ["speed_up"]  # first stated wins


def test_client_reconnects_when_the_server_restarts():
    first = PolicyServer(make_policy("scripted"), port=0).start()
    port = first.port
    client = OpenpiWebsocketPolicy(port=port, attempts=20, backoff_s=0.05, max_backoff_s=0.2)
    assert client.infer(_obs())["actions"].shape == (1, 7)
    first.stop()
    second = PolicyServer(make_policy("scripted"), port=port).start()
    try:
        assert client.infer(_obs())["actions"].shape == (1, 7)
        assert client.reconnects == 1
    finally:
        client.close()
        second.stop()


def test_scripted_chunks_are_a_look_ahead_executed_whole():
    policy = make_policy("scripted", chunk=5)
    assert policy.metadata["action_horizon"] == 5 and policy.metadata["oracle"] is True
    task = build_suite("single", ["mat"], ["prefer_blue"], [0])[0]
    run = run_episode(make_backend("kinematic"), policy, task, images=False, replan=5)
    assert run.result.success and run.result.d == {"prefer_blue": 1.0}
    assert len(run.infer_ms) == pytest.approx(run.result.steps / 5, abs=1)  # one inference per chunk

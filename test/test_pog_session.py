"""POG evaluator bookkeeping without ROS (personal/grounding/pog_session.py)."""
import json

import pytest

from personal.runs.output import ResultLog
from personal.grounding.eval.pog_run import generate_episode_set
from personal.grounding.pog_session import (
    GroundingGate, MapHandoff, PogConfig, PogSession, failed_result, map_source_text, report_meta,
)

METHODS = ["centre", "qs"]


class Log:
    def __init__(self):
        self.lines = []

    def info(self, m):
        self.lines.append(("info", m))

    warning = error = info


@pytest.fixture(scope="module")
def episode_set():
    return generate_episode_set(2, ["easy"], 2, 0)


def _session(episode_set, tmp_path, window=3):
    scenes, eps = episode_set
    log = Log()
    return PogSession(eps, scenes, METHODS, window, ResultLog(tmp_path / "r.jsonl", sync=False), log, t0=0.0), log


def _answer(session, rid, method, ok=True):
    session.answer({"request_id": rid, "method": method, "ok": ok, "failure_code": "" if ok else "boom",
                    "failure_reason": "" if ok else "bad", "points": [{"x": 0.0, "y": 0.0}], "scores": [1.0],
                    "latency_ms": 3.0, "owner": "", "phrases": [], "map_encoder": "lit:test"})


def test_scenes_in_order_and_window_bounds_queries_in_flight(episode_set, tmp_path):
    s, _ = _session(episode_set, tmp_path, window=3)
    first = s.next_scene()
    assert first == s.episodes[0].scene_id and len(s.scene_order) == 2
    s.start_scene(first, now=1.0)
    n_first = sum(e.scene_id == first for e in s.episodes)
    batch = s.to_send()
    assert len(batch) == min(3, n_first) and all(e.scene_id == first for e in batch)
    for ep in batch:
        s.open(ep, 1.0, seed=0)
    assert s.to_send() == []  # the window is full
    assert not s.idle() and s.next_scene() == s.scene_order[1]


def test_episode_scored_only_when_every_method_answered(episode_set, tmp_path):
    s, log = _session(episode_set, tmp_path)
    s.start_scene(s.next_scene(), 0.0)
    ep = s.to_send()[0]
    q = s.open(ep, 0.0, seed=5)
    assert q["methods"] == METHODS and q["seed"] == 5 and q["episode_id"] == ep.episode_id
    _answer(s, q["request_id"], "centre")
    assert s.done == 0 and not s.results
    _answer(s, "someone-elses", "qs")  # another evaluator's request: ignored
    _answer(s, q["request_id"], "qs", ok=False)
    assert s.done == 1 and [r.method for r in s.results] == METHODS
    assert s.results[1].failure["code"] == "boom" and s.results[0].failure is None
    assert s.map_encoders == {"lit:test"}
    s.result_log.close()
    lines = (tmp_path / "r.jsonl").read_text().splitlines()
    assert [json.loads(x)["method"] for x in lines] == METHODS  # on disk as each episode finishes


def test_a_query_without_any_result_is_sent_once_more(episode_set, tmp_path):
    """A query lost in the DDS match (no result at all) is sent again, once, with its request id; one
    that got a method's result is only waiting; a late second answer is ignored."""
    s, _ = _session(episode_set, tmp_path)
    s.start_scene(s.next_scene(), 0.0)
    a, b = s.to_send()[:2]
    qa, qb = s.open(a, 0.0, 0), s.open(b, 0.0, 0)
    _answer(s, qb["request_id"], "centre")
    assert s.resend_due(now=20.0, after=30.0) == []
    assert s.resend_due(now=31.0, after=30.0) == [qa]  # the same fields, request id included
    assert s.resend_due(now=45.0, after=30.0) == []  # once
    for m in METHODS:
        _answer(s, qa["request_id"], m)
    _answer(s, qa["request_id"], "centre")  # the repeat's answer: its query is done
    assert s.done == 1 and len(s.results) == len(METHODS) and not s.queries.get(qa["request_id"])


def test_expire_fills_only_missing_methods_with_timeouts(episode_set, tmp_path):
    s, _ = _session(episode_set, tmp_path)
    s.start_scene(s.next_scene(), 0.0)
    a, b = s.to_send()[:2]
    qa, qb = s.open(a, 0.0, 0), s.open(b, 50.0, 0)
    _answer(s, qa["request_id"], "centre")
    assert s.expire(now=55.0, timeout=60.0) == 0
    assert s.expire(now=61.0, timeout=60.0) == 1  # only a's query is older than the timeout
    codes = {r.method: (r.failure or {}).get("code") for r in s.results}
    assert codes == {"centre": None, "qs": "timeout"} and qb["request_id"] in s.pending


def test_fail_queue_records_every_queued_episode(episode_set, tmp_path):
    s, log = _session(episode_set, tmp_path)
    sid = s.next_scene()
    s.start_scene(sid, 0.0)
    queued = len(s.queue)
    s.fail_queue("no_grounding_node", "never subscribed", 1.0)
    assert s.queue == [] and not s.pending and s.done == queued
    assert {r.failure["code"] for r in s.results} == {"no_grounding_node"} and len(s.results) == queued * len(METHODS)
    assert any("episodes done" in m for _, m in log.lines)


def test_map_overdue_counts_from_the_scene_start(episode_set, tmp_path):
    s, _ = _session(episode_set, tmp_path)
    s.start_scene(s.next_scene(), now=100.0)
    assert not s.map_overdue(150.0, timeout=60.0) and s.map_overdue(161.0, timeout=60.0)


def test_grounding_gate_waits_logs_every_10_s_and_gives_up():
    g = GroundingGate(wait_s=30.0)
    assert g.check(False, 100.0) == "wait-log"
    assert g.check(False, 105.0) == "wait"
    assert g.check(False, 111.0) == "wait-log"
    assert g.check(True, 112.0) == "ready"
    assert g.check(False, 113.0) == "wait"  # waiting starts again from 113
    assert g.check(False, 140.0) == "wait-log"
    assert g.check(False, 143.5) == "gave_up"


def test_map_handoff_settles_after_match_or_gives_up():
    h = MapHandoff(wait_s=20.0)
    h.sent(10.0)
    assert not h.arrived(False, 15.0) and h.arrived(False, 30.5)  # no grounding node: go on after wait_s
    h2 = MapHandoff(wait_s=20.0)
    h2.sent(10.0)
    assert not h2.arrived(True, 10.2)
    assert h2.arrived(True, 10.7)
    h2.sent(20.0)  # the next scene's map: the settle time counts from its sending
    assert not h2.arrived(True, 20.3) and h2.arrived(True, 20.6)


def test_config_rejects_unknown_sources_and_marks_oracles():
    with pytest.raises(ValueError, match="map_source"):
        PogConfig(map_source="telepathy")
    with pytest.raises(ValueError, match="upper_bound"):
        PogConfig(upper_bound="maybe")
    assert PogConfig(map_source="oracle").is_oracle and PogConfig(encoder_name="oracle-captions").is_oracle
    assert not PogConfig().is_oracle
    assert "rate 2.0" in map_source_text(PogConfig(map_source="bag", replay_rate=2.0))


def test_report_meta_flags_incomplete_runs(episode_set, tmp_path):
    s, _ = _session(episode_set, tmp_path)
    cfg = PogConfig(map_source="saved", encoder_name="lit")
    meta = report_meta(cfg, s, {}, {}, sensor=None, incomplete=["no grounding node"])
    assert meta["INCOMPLETE RUN"] == ["no grounding node"] and meta["encoder_is_oracle"] is False
    assert meta["episode count"] == len(s.episodes) and meta["map resolution (m)"] == [0.5]
    s.map_encoders.add("oracle-captions-minilm")
    assert report_meta(cfg, s, {}, {}, None, [])["encoder_is_oracle"] is True
    assert "INCOMPLETE RUN" not in report_meta(cfg, s, {}, {}, None, [])


def test_failed_result_is_a_failure_of_that_method():
    r = failed_result("qs", "timeout", "late")
    assert (r["method"], r["ok"], r["failure_code"], r["points"]) == ("qs", False, "timeout", [])


def test_taken_record_dirs_names_only_existing_scene_folders(episode_set, tmp_path):
    from personal.grounding.pog_session import taken_record_dirs

    _, eps = episode_set
    sid = eps[0].scene_id
    assert taken_record_dirs(str(tmp_path), eps) == []
    (tmp_path / sid).mkdir()
    assert taken_record_dirs(str(tmp_path), eps) == [str(tmp_path / sid)]


def test_write_run_writes_the_report_of_failed_episodes(episode_set, tmp_path):
    from personal.grounding.pog_session import LazyEmbedder, SceneMaps, write_run

    s, log = _session(episode_set, tmp_path)
    s.start_scene(s.next_scene(), 0.0)
    s.fail_queue("no_grounding_node", "never subscribed", 1.0)
    cfg = PogConfig(map_source="saved", upper_bound="none", methods=METHODS)
    maps = SceneMaps(cfg, s.scenes, s.episodes, tmp_path, None, log, [])
    report = write_run(tmp_path, cfg, s, {}, maps, None, ["no grounding node"], LazyEmbedder("lit", False, log), 0, log)
    text = report.read_text()
    assert report == tmp_path.resolve() / "report.md" and "INCOMPLETE RUN" in text and (tmp_path / "summary.json").exists()


def test_the_node_parameters_defaults_are_the_configs_and_bad_choices_are_refused():
    import pytest

    from personal.grounding.pog_session import PARAMETERS, PogConfig, config_from

    p = {name: default for name, (default, _) in PARAMETERS.items()}
    assert config_from(p) == PogConfig()
    cfg = config_from({**p, "splits": " easy, ,hard", "explore_width": 64, "sensor": "d435"})
    assert cfg.splits == ["easy", "hard"] and cfg.explore_size == (64, 240) and cfg.sensor_args["sensor"] == "d435"
    with pytest.raises(ValueError, match="map_source"):
        config_from({**p, "map_source": "nowhere"})
    with pytest.raises(ValueError):
        config_from({**p, "methods": "qs,no-such-method"})

"""Navigation after ownership changes (`personal pan dynamic`): each changed query is driven three
times, reading the memory's summary, the pre-event summary and the ORACLE ownership, always aimed
at the after-event targets."""
from personal.memory.dynamic import make_script, script_queries
from personal.navigation.eval.pan_dynamic import run_dynamic_find, summarize_dynamic_find, write_dynamic_find_report
from personal.navigation.eval.pan_run import generate_pan_set, make_components
from personal.world.model import SPLITS


def _first_episode(seed=300):
    scenes, eps = generate_pan_set(1, SPLITS, 1, seed)
    return scenes, sorted(eps, key=lambda e: SPLITS.index(e.split))[:1]


def test_each_changed_query_is_driven_with_each_description(tmp_path, monkeypatch):
    scenes, eps = _first_episode()
    ep, scene = eps[0], scenes[eps[0].scene_id]
    driven = []
    import personal.navigation.loop as loop_mod

    real = loop_mod.run_episode
    monkeypatch.setattr(loop_mod, "run_episode", lambda sim, e, loop, keep_map=False: driven.append((e, keep_map))
                        or real(sim, e, loop, keep_map=keep_map))
    comps = make_components("oracle")  # ORACLE captions: fast and deterministic, enough for the plumbing
    records, events = run_dynamic_find(scenes, eps, "value-map-rpg-owner", comps, max_steps=5, work_dir=tmp_path)

    script = make_script(scene, ep, 0)
    queries = [q for q in script_queries(scene, script, 1, 0) if all(scene.object(o).floor == ep.floor_id for o in q.after)]
    assert any(q.changed for q in queries) and len(events) == len(script.events)
    assert len(records) == 3 * len(queries) == len(driven)
    assert all(not keep for _, keep in driven)  # every query from a blind start
    for q, i in zip(queries, range(0, len(driven), 3)):
        trio = [e for e, _ in driven[i:i + 3]]
        assert [e.episode_id.rsplit(":", 1)[1] for e in trio] == ["memory", "original", "truth"]
        assert all(list(e.target_object_ids) == list(q.after) and e.owner == q.owner for e in trio)
        assert trio[1].summary == ep.summary  # the baseline reads what the episode said before the events
        assert trio[0].start_position == ep.start_position
    assert driven[0][0].summary != ep.summary  # the memory's summary has read the events
    assert {r["condition"] for r in records} == {"memory", "original", "truth"}
    assert all(r["steps"] <= 5 for r in records)


def _rec(key, cond, success, changed=False):
    return {"scene_id": "s", "episode_id": "e", "owner": key, "category": "mug", "query": f"Find {key}'s mug.",
            "changed": changed, "after": ["o"], "before": ["o"], "kinds": [], "memory_right": True,
            "condition": cond, "success": success, "spl": 0.5 if success else 0.0, "steps": 10}


def test_summary_counts_unchanged_queries_made_worse_or_better(tmp_path):
    records = [_rec("a", "memory", False), _rec("a", "original", True), _rec("a", "truth", True),
               _rec("b", "memory", True), _rec("b", "original", False), _rec("b", "truth", True),
               _rec("c", "memory", True), _rec("c", "original", True), _rec("c", "truth", True),
               _rec("d", "memory", True, True), _rec("d", "original", False, True), _rec("d", "truth", True, True)]
    s = summarize_dynamic_find(records)
    assert (s["unchanged_worse"], s["unchanged_better"]) == (1, 1)
    assert s["changed"]["queries"] == 1 and s["changed"]["memory"]["sr"] == 1.0 and s["changed"]["original"]["sr"] == 0.0
    assert abs(s["unchanged"]["memory"]["sr"] - 2 / 3) < 1e-9
    report = write_dynamic_find_report(tmp_path, records, {"method": "m", "encoder": "lit"}).read_text()
    assert "| changed | memory (after the events) | 100.0 |" in report and "ORACLE ownership (upper bound)" in report


def test_dynamic_report_joins_runs_and_names_a_missing_file(tmp_path):
    import json

    from typer.testing import CliRunner

    from personal.navigation.cli import app

    halves = []
    for i, keys in enumerate((("a", "b"), ("c",))):
        run = tmp_path / f"half{i}"
        run.mkdir()
        rows = [_rec(k, c, c != "original") for k in keys for c in ("memory", "original", "truth")]
        (run / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        (run / "events.jsonl").write_text(json.dumps({"right": True}) + "\n")
        (run / "summary.json").write_text(json.dumps({"meta": {"method": "m", "homes": f"h{i}", "wall time (s)": 10}}))
        halves.append(str(run))
    res = CliRunner().invoke(app, ["dynamic-report", str(tmp_path / "joint"), *halves])
    assert res.exit_code == 0, res.output
    s = json.loads((tmp_path / "joint" / "summary.json").read_text())
    assert s["unchanged"]["queries"] == 3 and s["unchanged_better"] == 3 and s["meta"]["events read right"] == "2/2"
    assert s["meta"]["wall time (s)"] == 20
    res = CliRunner().invoke(app, ["dynamic-report", str(tmp_path / "joint2"), str(tmp_path / "nowhere")])
    assert res.exit_code == 2 and "nowhere/records.jsonl: missing" in res.output

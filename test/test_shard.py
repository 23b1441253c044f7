"""Sharded evaluations (personal/runs/shard.py, issue 16): the merged per-episode results of a
sharded run — local child graphs (workers:=2) or Dask tasks — are those of a serial run; an
interrupted run resumes without redoing finished shards; a shard whose Dask worker is killed
mid-shard completes on the other worker.

Small evaluations (the cost is the graphs' start-up): three generated households (two on Dask),
two splits, one episode each, ORACLE top-down maps, three methods including the seeded Random one. The main job's
serial and sharded runs (explore_graph maps, learned encoder) are compared by bench/bench_scale.py. The Dask tests run the scheduler and two
workers as separate processes bound to 127.0.0.1 inside a private network namespace that has only
loopback (``unshare -n``), so nothing can leave the machine."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from personal.benchmarks import KINDS
from personal.runs.shard import DONE, Shard, child_arguments, plan_digest, plan_shards

ROOT = Path(__file__).resolve().parents[1]
ARGS = ["scenes:=3", "splits:=easy,hard", "episodes_per_split:=1", "map_source:=oracle", "encoder:=oracle",
        "resolution:=0.5", "methods:=random,qs,rpg"]
# timings differ from run to run; everything else of a record must be identical
TIMING = {"latency_ms"}
TIMING_INFO = {"extract_ms", "embed_ms"}


def _launch(args, out_dir: Path, *extra, timeout=400, env=None) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "personal", "launch", "pog_eval", *args, f"out_dir:={out_dir}", *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env)


def _records(out_dir: Path) -> list[dict]:
    runs = sorted(p for p in out_dir.iterdir() if (p / "results.json").is_file())
    assert runs, f"no run folder with results.json in {out_dir}"
    out = []
    for r in json.loads((runs[-1] / "results.json").read_text()):
        r = {k: v for k, v in r.items() if k not in TIMING}
        r["info"] = {k: v for k, v in r.get("info", {}).items() if k not in TIMING_INFO}
        out.append(r)
    return sorted(out, key=lambda r: (r["episode_id"], r["method"]))


@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    out = tmp_path_factory.mktemp("serial")
    proc = _launch(ARGS, out)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    records = _records(out)
    assert len(records) == 3 * 2 * 1 * 3 and all(r["failure"] is None for r in records)
    return records


def test_plan_by_household_or_episode_chunk():
    from personal.grounding.eval.pog_run import generate_episode_set

    scenes, eps = generate_episode_set(3, ["easy", "hard"], 2, 0)
    shards = plan_shards(eps, workers=2)
    assert [s.scene_ids for s in shards] == [(sid,) for sid in scenes]  # one shard per household
    assert sorted(i for s in shards for i in s.episode_ids) == sorted(e.episode_id for e in eps)
    one = [e for e in eps if e.scene_id == shards[0].scene_ids[0]]
    chunks = plan_shards(one, workers=3)  # one household: consecutive chunks, one per worker
    assert len(chunks) == 3 and [i for s in chunks for i in s.episode_ids] == [e.episode_id for e in one]
    kind = KINDS["pog_eval"]
    args = child_arguments(kind, {}, {"workers": "2", "scenes": "3", "out_dir": "x", "top_k": "5"})
    # sharding, episode-source and output arguments are the coordinator's; the merged report computes the bound;
    # the shards' episode folders already carry the summary style's wording
    assert args == {"top_k": "5", "upper_bound": "none", "summary_style": "verbatim"}
    assert plan_digest("pog_eval", args, shards, eps) == plan_digest("pog_eval", dict(args), list(shards), list(eps))
    assert plan_digest("pog_eval", {"top_k": "4"}, shards, eps) != plan_digest("pog_eval", args, shards, eps)


def test_a_varied_summary_run_shards_the_varied_episodes():
    kind = KINDS["pog_eval"]
    values = {"episodes_dir": "", "scenes": 1, "splits": "easy", "episodes_per_split": 2, "seed": 0}
    _, verbatim = kind.load({**values, "summary_style": "verbatim"})
    _, varied = kind.load({**values, "summary_style": "varied"})
    assert [e.episode_id for e in varied] == [e.episode_id for e in verbatim]
    assert all(a.summary != b.summary for a, b in zip(varied, verbatim))


def test_interrupted_sharded_run_resumes_and_merges_to_the_serial_results(serial, tmp_path):
    """workers:=2 (two child graphs at once, three shards), stopped (SIGTERM) as soon as the first
    shard is kept, so the third has just started; the re-run with the same out_dir reuses it, runs only the rest, and the merged per-episode
    results are the serial run's."""
    cmd = [sys.executable, "-m", "personal", "launch", "pog_eval", *ARGS, f"out_dir:={tmp_path}", "workers:=2"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT, start_new_session=True)
    lines = []
    try:
        for line in proc.stdout:  # stop the coordinator as soon as the first shard is kept
            lines.append(line)
            if line.startswith("[personal shard] shard ") and " done: " in line:
                os.killpg(proc.pid, signal.SIGTERM)
                break
        code = proc.wait(60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert code in (143, 0), "".join(lines[-40:])
    finished = [p.parent.name for p in (tmp_path / "shards").rglob(DONE)]
    assert finished, "".join(lines[-40:])
    again = _launch(ARGS, tmp_path, "workers:=2")
    assert again.returncode == 0, again.stdout[-3000:]
    out = again.stdout
    assert 1 <= len(finished) < 3, "".join(lines[-40:])
    assert f"{len(finished)} already finished (reused)" in out and "3 shard(s)" in out
    for name in finished:  # a finished shard is not run again
        assert f"shard {name} done" not in out
    assert f"episodes done {len(serial) // 3}/{len(serial) // 3}" in out  # progress is the total over shards
    assert _records(tmp_path) == serial
    run = max(p for p in tmp_path.iterdir() if (p / "report.html").is_file())
    meta = json.loads((run / "summary.json").read_text())["meta"]
    assert meta["sharding"]["workers"] == 2 and sorted(meta["sharding"]["reused shards"]) == sorted(finished)
    assert meta["episode count"] == len(serial) // 3 and "INCOMPLETE RUN" not in meta


# -- Dask, inside a network namespace with loopback only ------------------------------------------------

CLUSTER = ROOT / "test" / "dask_loopback.py"


def _netns_ok() -> bool:
    try:
        return subprocess.run(["unshare", "-n", "true"], capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


needs_netns = pytest.mark.skipif(not _netns_ok(), reason="needs `unshare -n` (root): the Dask tests run in a loopback-only namespace")


def _dask(tmp_path: Path, kill: bool) -> tuple[subprocess.CompletedProcess, Path]:
    """Two households (two shards) on the two workers: the serial run's first two households."""
    out = tmp_path / "out"
    args = [a if not a.startswith("scenes:=") else "scenes:=2" for a in ARGS]
    script = ("ip link set lo up && ip link set lo multicast on && "
              f"exec {sys.executable} {CLUSTER} --out {out} --work {tmp_path / 'cluster'} {'--kill-mid-shard' if kill else ''} "
              + " ".join(args))
    proc = subprocess.run(["unshare", "-n", "bash", "-c", script], capture_output=True, text=True, timeout=500, cwd=ROOT)
    return proc, out


@needs_netns
def test_dask_shards_merge_to_the_serial_results_after_a_worker_is_killed(serial, tmp_path):
    proc, out = _dask(tmp_path, kill=True)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-3000:]
    assert "killed worker" in proc.stdout and "only loopback: ['lo']" in proc.stdout
    two = [r for r in serial if r["scene_id"] in ("synth_00000", "synth_00001")]  # scene k: seed + k, either way
    assert _records(out) == two  # Dask shards, one of them rerun after its worker died: the serial results
    assert "shard folders left in the workers' local directories: []" in proc.stdout
    assert not (tmp_path / "cluster").exists()


def test_a_dask_task_hands_the_runs_secrets_to_its_child_graphs_environment_only(tmp_path, monkeypatch):
    """A Dask worker does not inherit the coordinator's environment: the secrets travel as the task's
    argument and reach the child graph's environment, never its command line (run as a worker would,
    with the child graph replaced by a recorder)."""
    import personal.runner
    from personal.runs.shard import Kind, run_shard_task, secret_environment

    seen = {}

    def fake_child(cmd, env, timeout_s, log, keep):
        seen.update(cmd=cmd, env=env)
        return 0, []

    monkeypatch.setattr(personal.runner, "run_child", fake_child)
    monkeypatch.delenv("PERSONAL_MQTT_PASSWORD", raising=False)

    class Probe(Kind):
        graph = "home_eval"

        @staticmethod
        def collect(out_dir):
            return {"records": [{"ok": 1}]}

    secrets = secret_environment({"mqtt_password": "hunter2-s3cret", "mqtt_username": "me", "api_token": ""})
    assert secrets == {"PERSONAL_MQTT_PASSWORD": "hunter2-s3cret"}
    out = run_shard_task(Probe(), {"mqtt_username": "me"}, Shard("s0", ("synth_0",), ("e0",)), {}, 60.0, secrets)
    assert out["code"] == 0 and out["records"] == [{"ok": 1}]
    assert seen["env"]["PERSONAL_MQTT_PASSWORD"] == "hunter2-s3cret"
    assert not any("hunter2" in a for a in seen["cmd"]) and "PERSONAL_MQTT_PASSWORD" not in os.environ

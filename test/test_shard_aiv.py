"""Sharded aiv_eval (PInVerify, issue 16) through the same layer as POG / PAN (personal/runs/shard.py):
episode windows of one index as child graphs (workers:=2) and as Dask tasks merge to the serial
run's per-episode records (random next-best views: seeded per episode); a re-run with the same
out_dir reuses finished shards and reruns only a shard that did not finish.

Small: one generated dataset of 3 targets (9 episodes), three child graphs for the local runs, two
on a loopback-only Dask cluster (``unshare -n``, as test/test_shard.py)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from personal.benchmarks import KINDS
from personal.runs.shard import DONE, chunk_shards
from personal.verification.writer import write_dataset
from test_shard import CLUSTER, needs_netns

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.timeout(900)
ARGS = ["nbv:=random", "seed:=3", "horizon:=4"]


def _launch(index: str, out: Path, *extra: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "personal", "launch", "aiv_eval", f"index:={index}", f"out_dir:={out}", *ARGS, *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=ROOT)


def _records(out: Path) -> list[dict]:
    lines = (out / "results_MV-random.jsonl").read_text().splitlines()
    return [json.loads(x) for x in lines if x.strip()]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    root = tmp_path_factory.mktemp("aivshard")
    index = write_dataset(root / "data", n_targets=3, seed=5)["index"]
    proc = _launch(index, root / "serial")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    records = _records(root / "serial")
    assert len(records) == 9 and [r["index"] for r in records] == list(range(9)) and not any(r["error"] for r in records)
    return index, records


def test_plan_is_episode_windows_of_the_index():
    shards = chunk_shards("episodes", [str(i) for i in range(9)], 2)
    assert [s.episode_ids for s in shards] == [tuple("0123"), tuple("45678")] and shards[0].name == "episodes0-3"
    assert len(chunk_shards("episodes", ["0", "1"], 4)) == 2  # never an empty shard
    kind = KINDS["aiv_eval"]
    payload = kind.payload({"index": "/d/i.jsonl", "generated": None}, [], shards[1])
    assert payload == {"index": "/d/i.jsonl", "generated": None, "start": 4, "limit": 5}
    with pytest.raises(FileNotFoundError, match="file system they share"):  # a worker that cannot see a user's index says so
        kind.prepare(payload, Path("/nonexistent"))


def test_sharded_run_merges_to_the_serial_records_and_resumes(dataset, tmp_path):
    index, serial = dataset
    first = _launch(index, tmp_path, "workers:=2")
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-2000:]
    assert "2 shard(s) (episodes0-3, episodes4-8)" in first.stdout and "episodes done 9/9" in first.stdout
    assert _records(tmp_path) == serial  # same starts, same random views, same verdicts
    metrics = json.loads((tmp_path / "metrics.json").read_text())["MV-random"]
    assert metrics["metrics"]["n"] == 9 and metrics["sharding"]["shards"] == 2
    # a run stopped before its second shard finished: that shard's marker is missing
    dones = sorted((tmp_path / "shards").rglob(DONE))
    assert [d.parent.name for d in dones] == ["episodes0-3", "episodes4-8"]
    dones[1].unlink()
    (tmp_path / "results_MV-random.jsonl").unlink()
    again = _launch(index, tmp_path, "workers:=2")
    assert again.returncode == 0, again.stdout[-3000:]
    assert "1 already finished (reused)" in again.stdout
    assert "shard episodes0-3 done" not in again.stdout and "shard episodes4-8 done" in again.stdout
    assert _records(tmp_path) == serial  # the shard ran a second time into the same folder: same records
    assert len(list((tmp_path / "shards").rglob("run-*"))) == 3  # each run of a shard has its own folder


@needs_netns
def test_dask_shards_merge_to_the_serial_records(dataset, tmp_path):
    index, serial = dataset
    out = tmp_path / "out"
    script = ("ip link set lo up && ip link set lo multicast on && "
              f"exec {sys.executable} {CLUSTER} --graph aiv_eval --out {out} --work {tmp_path / 'cluster'} "
              f"index:={index} " + " ".join(ARGS))
    proc = subprocess.run(["unshare", "-n", "bash", "-c", script], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-3000:]
    assert "only loopback: ['lo']" in proc.stdout and "2 shard(s) as tasks" in proc.stdout
    assert _records(out) == serial
    assert "shard folders left in the workers' local directories: []" in proc.stdout
    assert not (tmp_path / "cluster").exists()

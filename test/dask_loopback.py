"""A sharded evaluation (pog_eval by default) on a real Dask cluster: a scheduler and two workers
bound to 127.0.0.1 as separate processes, then ``personal launch <graph> cluster:=dask``. Run by test/test_shard*.py
inside ``unshare -n`` (a network namespace with only loopback).

    python test/dask_loopback.py --out OUT --work WORK [--graph G] [--kill-mid-shard] name:=value ...

With ``--kill-mid-shard`` the worker running the first shard to report progress is killed (its
process group, SIGKILL) while that shard runs; Dask reruns the shard on the other worker. Every
process this script started is ended by process group; WORK (the workers' ``--local-directory``)
is removed at the end. Exit code: the coordinator's."""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def start(cmd: list[str], log: Path) -> subprocess.Popen:
    return subprocess.Popen(cmd, stdout=open(log, "w"), stderr=subprocess.STDOUT, start_new_session=True, cwd=ROOT)


def end(proc: subprocess.Popen, sig: int = signal.SIGTERM, wait: float = 15.0) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, sig)
            proc.wait(wait)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        except ProcessLookupError:
            pass


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--graph", default="pog_eval")
    ap.add_argument("--kill-mid-shard", action="store_true")
    ap.add_argument("args", nargs="*")
    a = ap.parse_args()
    print(f"interfaces: only loopback: {[name for _, name in socket.if_nameindex()]}", flush=True)
    work = Path(a.work)
    work.mkdir(parents=True)
    sched_file = work / "scheduler.json"
    procs: dict[str, subprocess.Popen] = {}
    try:
        procs["scheduler"] = start([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", "0",
                                    "--no-dashboard", "--scheduler-file", str(sched_file)], work / "scheduler.log")
        deadline = time.monotonic() + 60
        while not sched_file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        address = json.loads(sched_file.read_text())["address"]
        assert address.startswith("tcp://127.0.0.1:"), address
        for name in ("w1", "w2"):
            (work / name).mkdir()
            procs[name] = start([sys.executable, "-m", "distributed.cli.dask_worker", address, "--host", "127.0.0.1",
                                 "--nthreads", "1", "--nworkers", "1", "--no-nanny", "--no-dashboard", "--name", name,
                                 "--local-directory", str(work / name)], work / f"{name}.log")
        from distributed import Client

        with Client(address, timeout="60s") as client:
            client.wait_for_workers(2, timeout=120)
            names = {addr: w["name"] for addr, w in client.scheduler_info()["workers"].items()}
        print(f"scheduler {address} with workers {names} (127.0.0.1)", flush=True)
        cmd = [sys.executable, "-m", "personal", "launch", a.graph, *a.args, f"out_dir:={a.out}", "cluster:=dask",
               f"scheduler:={address}", "workers:=2", "--verbose"]
        coord = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT, start_new_session=True)
        procs["coordinator"] = coord
        killed = None
        for line in coord.stdout:
            sys.stdout.write(line)
            m = re.search(r"\[([^\]@]+)@([^\]]+)\] .*(pre-exploring|POG evaluation:)", line)  # the shard's graph is running
            if a.kill_mid_shard and killed is None and m:
                killed = names.get(m.group(2), m.group(2))
                end(procs[killed], signal.SIGKILL)
                print(f"killed worker {killed} (SIGKILL, process group) while it ran shard {m.group(1)}", flush=True)
        code = coord.wait()
        left = sorted(str(p.relative_to(work)) for name in ("w1", "w2") if name != killed for p in (work / name).rglob("shard-*"))
        print(f"shard folders left in the workers' local directories: {left}", flush=True)
        print(f"coordinator exit code {code}", flush=True)
        return code
    finally:
        for proc in reversed(list(procs.values())):
            end(proc)
        for log in sorted(work.glob("*.log")):
            text = log.read_text(errors="replace")
            if "Traceback" in text:
                print(f"--- {log.name} ---\n{text[-2000:]}", flush=True)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

"""Sharded evaluations: one evaluation graph split into shards that run as child graphs — several at
once on this machine (``workers:=N``) or as tasks on a Dask cluster (``cluster:=dask``) — and merged
into one report whose per-episode results are those of a serial run.

    personal launch pog_eval workers:=2                       # 2 child graphs at a time, this machine
    personal launch pan_eval cluster:=dask scheduler:=tcp://head:8786 workers:=64
    personal launch aiv_eval workers:=4                       # also home_eval

How it works (docs/scaling.md):

- **Plan.** The coordinator (this module; it is not a ROS node) loads the evaluation's full set of
  units exactly as the graph would and splits it (the graph's *kind* below says how): POG / PAN by
  household, one household into ``workers`` chunks of consecutive episodes, each shard written as its
  own PersONAL episode folder (``episodes_dir:=<shard>``); AIV into windows of consecutive episodes of
  one index (``start:=a limit:=n``); home into windows of consecutive households
  (``first_household:=a households:=n``). A shard is the same graph on a part of the same units, with
  the same seeds — hence the same per-episode results. (PeRM does not shard: docs/scaling.md says why.)
- **Run.** A shard is ``personal launch <graph> … workers:=1`` on a ROS domain of its own
  (``personal.runner.child_domain``), started with ``run_child`` so it dies with its parent. Local
  shards run on ``workers`` threads of the coordinator; Dask shards are tasks (``run_shard_task``)
  that do the same on a worker and return the records — a shard whose worker dies is rerun by Dask on
  another worker. Stale Fast DDS shared memory of killed shards is reclaimed after each shard.
- **Keep.** A finished shard's records go to ``<out_dir>/shards/<plan>/<shard>/results.json``, then
  ``done.json`` is renamed into place: a re-run of the same evaluation (same arguments, same
  ``out_dir``) reuses every finished shard and runs only the others. A shard run twice writes the
  same files again (a shard is a pure function of its input and arguments; each run of it writes a
  fresh folder).
- **Merge.** Records are put in the serial run's order and the graph's own report writer writes the
  report: POG / PAN into ``<out_dir>/<UTC time>/`` (``results.json``, ``summary.json``, ``report.md``,
  ``report.html``), AIV / home into ``out_dir`` itself, as their graphs do. Progress is the
  total over shards: ``episodes done k/N`` (``households done k/N`` for home).

Exit codes are the graph's: 0 done; 3 the report is written but a shard failed or was incomplete
(named in the report's ``INCOMPLETE RUN`` entry); 2 bad arguments / unwritable out_dir.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from personal import exit_codes

# graph arguments the coordinator consumes (never passed to a shard's child graph)
SHARDING_ARGUMENTS = ("workers", "cluster", "scheduler", "shard_timeout_s")
DONE = "done.json"
SHARD_RESULTS = "results.json"
IMAGES = "images"  # a shard's sample plots (maps/*.png, trajectories/*.png), copied into the merged run folder
IMAGE_FOLDERS = ("maps", "trajectories")


@dataclass(frozen=True)
class Shard:
    """A unit of work: a set of households (or a chunk of one household's episodes)."""

    name: str
    scene_ids: tuple[str, ...]
    episode_ids: tuple[str, ...]


@dataclass
class ShardOutcome:
    shard: Shard
    code: int
    records: list[dict] = field(default_factory=list)
    meta: dict = field(default_factory=dict)
    images: dict = field(default_factory=dict)
    seconds: float = 0.0
    where: str = ""
    reused: bool = False
    errors: str = ""


# -- the evaluations that shard ---------------------------------------------------------------------------
#
# A kind says, for one graph: what the evaluation's units are (episodes) and how they split into shards
# (``plan``), what a shard's input is (``payload``, picklable: it travels to Dask workers),
# how a shard's child graph gets it (``prepare``, run where the shard runs: extra graph arguments), where
# the child's records are (``collect``), the serial order of records (``record_key``) and how merged
# records become the graph's report (``run_dir`` / ``write``). The kinds of the four evaluations that
# shard live with their benchmarks (personal/grounding/eval/pog_shard.py, navigation/eval/pan_shard.py,
# verification/shard.py, smarthome/shard.py); personal.benchmarks.KINDS names them by graph.


class Kind:
    """Defaults of every kind."""

    graph = ""
    unit = "episodes"  # what progress counts
    source_arguments: tuple[str, ...] = ()  # the coordinator's; a shard's child graph gets its own (``prepare``)

    def digest_items(self, context, units: Sequence) -> Sequence:
        return units

    def describe(self, context, units: Sequence) -> str | None:
        return None

    @staticmethod
    def prepare(payload, work_dir: Path) -> dict[str, str]:
        return {k: str(v) for k, v in payload.items()}

    def run_dir(self, out_root: Path) -> Path:
        from personal.runs.output import new_run_dir

        return new_run_dir(out_root)

    def episodes_done(self, line: str, n_methods: int) -> int | None:
        m = re.search(r"episodes done (\d+)/\d+", line)
        return int(m.group(1)) if m else None


class ReportInOutDirKind(Kind):
    """Graphs that write their report into ``out_dir`` itself (no run folder per run)."""

    def run_dir(self, out_root: Path) -> Path:
        from personal.runs.output import run_folder

        return run_folder(out_root)


class EpisodeFolderKind(Kind):
    """POG and PAN: PersONAL episodes; a shard is a household (or a chunk of one household's episodes),
    written as its own episode folder (``episodes_dir:=<shard folder>``); the child writes a run folder."""

    def plan(self, values: Mapping[str, Any], workers: int):
        """(context, units, shards): the full set as the graph would load it, split into shards."""
        scenes, episodes = self.load(values)
        return scenes, episodes, plan_shards(episodes, workers)

    def payload(self, context, units: Sequence, shard: Shard):
        ids = set(shard.episode_ids)
        return [context[s] for s in shard.scene_ids if s in context], [e for e in units if e.episode_id in ids]

    @staticmethod
    def prepare(payload, work_dir: Path) -> dict[str, str]:
        from personal.world.habitat_format import write_episode_set

        scenes, episodes = payload
        folder = Path(work_dir) / "episodes"
        if folder.exists():
            shutil.rmtree(folder)
        write_episode_set(folder, list(scenes), list(episodes))
        return {"episodes_dir": str(folder.resolve())}

    @staticmethod
    def collect(out_dir: Path) -> dict | None:
        """The child's run folder under ``out_dir``: {records, meta, images}, or None."""
        made = sorted(p for p in Path(out_dir).iterdir() if (p / "results.json").is_file()) if Path(out_dir).is_dir() else []
        if not made:
            return None
        summary = made[-1] / "summary.json"
        return {"records": json.loads((made[-1] / "results.json").read_text()),
                "meta": json.loads(summary.read_text()).get("meta", {}) if summary.is_file() else {},
                "images": {str(p.relative_to(made[-1])): p.read_bytes() for sub in IMAGE_FOLDERS
                           for p in sorted((made[-1] / sub).glob("*.png"))}}

    def record_key(self, values: Mapping[str, Any], units: Sequence) -> Callable[[dict], tuple]:
        """The serial run's order: episode order of the full set, then the method order."""
        order = {e.episode_id: i for i, e in enumerate(units)}
        methods = {m: i for i, m in enumerate(self.methods(values))}
        return lambda r: (order.get(r["episode_id"], len(order)), methods.get(r["method"], len(methods)))


def sharding_requested(values: Mapping[str, Any]) -> bool:
    return int(values.get("workers", 1)) > 1 or values.get("cluster", "local") == "dask"


# -- plan ----------------------------------------------------------------------------------------------


def plan_shards(episodes: Sequence, workers: int) -> list[Shard]:
    """One shard per household, in order of first appearance; a single household is cut into
    ``workers`` chunks of consecutive episodes (so one big household still spreads)."""
    order = list(dict.fromkeys(e.scene_id for e in episodes))
    if len(order) == 1 and workers > 1 and len(episodes) > 1:
        n = min(workers, len(episodes))
        bounds = [round(i * len(episodes) / n) for i in range(n + 1)]
        return [Shard(f"{order[0]}-part{i + 1}of{n}", (order[0],), tuple(e.episode_id for e in episodes[bounds[i]:bounds[i + 1]]))
                for i in range(n)]
    return [Shard(sid, (sid,), tuple(e.episode_id for e in episodes if e.scene_id == sid)) for sid in order]


def child_arguments(kind, values: Mapping[str, Any], overrides: Mapping[str, str]) -> dict[str, str]:
    """The user's arguments as a shard's child graph gets them: without the sharding and
    episode-source arguments (the shard's episode folder replaces them) and without the live view."""
    from personal.runner import is_secret

    drop = set(SHARDING_ARGUMENTS) | set(kind.source_arguments) | {"out_dir", "viz", "viz_port"}
    return {**{k: str(v) for k, v in overrides.items() if k not in drop and not is_secret(k)},
            **getattr(kind, "child_fixed", {})}


def secret_environment(values: Mapping[str, Any]) -> dict[str, str]:
    """Secret arguments of the run, for a shard's child graph: as ``PERSONAL_<NAME>`` in its
    environment, never on its command line (see personal.runner, secrets)."""
    from personal.runner import is_secret, secret_env_name

    return {secret_env_name(k): str(v) for k, v in values.items() if is_secret(k) and v not in ("", None)}


def chunk_shards(prefix: str, ids: Sequence[str], workers: int) -> list[Shard]:
    """``ids`` (in the serial order) cut into ``workers`` chunks of consecutive ids, one shard each."""
    n = max(1, min(workers, len(ids)))
    bounds = [round(i * len(ids) / n) for i in range(n + 1)]
    return [Shard(f"{prefix}{ids[bounds[i]]}-{ids[bounds[i + 1] - 1]}", (), tuple(ids[bounds[i]:bounds[i + 1]]))
            for i in range(n) if bounds[i + 1] > bounds[i]]


def plan_digest(graph: str, child_args: Mapping[str, str], shards: Sequence[Shard], items: Sequence) -> str:
    """Names the plan's shard folder: same graph, arguments and units -> same folder (resume).
    ``items``: the units (objects with ``to_dict``) or JSON-able digest material."""
    h = hashlib.sha256()
    h.update(json.dumps({"graph": graph, "args": dict(sorted(child_args.items())),
                         "shards": [(s.name, s.episode_ids) for s in shards]}, sort_keys=True).encode())
    for e in items:
        h.update(json.dumps(e.to_dict() if hasattr(e, "to_dict") else e, sort_keys=True, default=str).encode())
    return h.hexdigest()[:12]


# -- one shard -------------------------------------------------------------------------------------------


def shard_command(graph: str, args: Mapping[str, str], out_dir: Path) -> list[str]:
    items = [f"{k}:={v}" for k, v in args.items()] + [f"out_dir:={out_dir}", "workers:=1"]
    return [sys.executable, "-m", "personal", "launch", graph, *items]


def run_shard(kind: Kind, args: Mapping[str, str], shard: Shard, payload: Any, work_dir: Path, timeout_s: float,
              log: Callable[[str], None] | None = None, secrets: Mapping[str, str] | None = None) -> dict:
    """Run one shard as a child graph on a ROS domain of its own, in ``work_dir``: give it its input
    (the kind's ``prepare``), launch, and return {code, records, meta, images, seconds, errors, where}.
    ``secrets``: ``PERSONAL_<NAME>`` variables (:func:`secret_environment`) for the child's
    environment only, never its command line. Safe to run twice: each run writes into a fresh
    folder under ``work_dir/runs``."""
    import socket
    import tempfile

    from personal.runner import child_domain, reclaim_shared_memory, run_child

    graph = kind.graph
    work_dir = Path(work_dir)
    (work_dir / "runs").mkdir(parents=True, exist_ok=True)
    attempt = Path(tempfile.mkdtemp(prefix="run-", dir=work_dir / "runs")).resolve()
    cmd = shard_command(graph, {**args, **kind.prepare(payload, work_dir)}, attempt)
    t0 = time.perf_counter()
    try:
        with child_domain() as env:
            env["PYTHONUNBUFFERED"] = "1"
            env.update(secrets or {})
            code, tail = run_child(cmd, env, timeout_s, log, keep=lambda line: True)
    finally:
        reclaim_shared_memory()  # a killed shard leaves its Fast DDS segments behind
    out = {"code": code, "records": [], "meta": {}, "seconds": round(time.perf_counter() - t0, 1), "where": socket.gethostname()}
    made = kind.collect(attempt)
    if made:
        out.update(made)
    if code == 0 and shard.episode_ids and not (made and made.get("records")):
        # a child that made no progress (no input, nothing scored) failed, whatever its exit code said
        code = out["code"] = exit_codes.INCOMPLETE
        tail = tail + ["the child graph exited 0 without writing a single result (no progress)"]
    if code != 0 or not made:
        out["errors"] = " | ".join([l for l in tail if "ERROR" in l or "error:" in l or "timed out" in l] or tail[-3:])[-800:]
    return out


def run_shard_task(kind: Kind, args: Mapping[str, str], shard: Shard, payload: Any, timeout_s: float,
                   secrets: Mapping[str, str] | None = None) -> dict:
    """A Dask task: ``run_shard`` in a scratch folder of the worker's local directory, which is
    removed afterwards; progress goes to the client as ``shard-progress`` events. A worker does not
    inherit the coordinator's environment, so the run's secrets travel as the task's ``secrets``
    argument (encrypted on the wire with a ``tls://`` scheduler) and reach only the child graph's
    environment."""
    import tempfile

    try:
        from distributed import get_worker

        worker = get_worker()
        base = worker.local_directory
        emit = lambda line: worker.log_event("shard-progress", {"shard": shard.name, "worker": str(worker.name), "line": line})  # noqa: E731
    except (ImportError, ValueError):
        base, emit = None, None
    with tempfile.TemporaryDirectory(prefix=f"shard-{shard.name}-", dir=base) as tmp:
        return run_shard(kind, args, shard, payload, Path(tmp), timeout_s, emit, secrets)


# -- the coordinator ---------------------------------------------------------------------------------------


class Progress:
    """``episodes done k/N`` over every shard (the total moves when any shard reports)."""

    def __init__(self, kind, total: int, n_methods: int, say: Callable[[str], None], verbose: bool) -> None:
        self.kind, self.total, self.n_methods, self.say, self.verbose = kind, total, n_methods, say, verbose
        self.done: dict[str, int] = {}
        self.lock = threading.Lock()
        self.t0 = time.monotonic()

    def line(self, shard: Shard, text: str, where: str = "") -> None:
        k = self.kind.episodes_done(text, self.n_methods)
        if self.verbose:
            self.say(f"  [{shard.name}{'@' + where if where else ''}] {text.strip()}")
        if k is not None:
            self.set(shard, min(k, len(shard.episode_ids)))

    def set(self, shard: Shard, k: int) -> None:
        with self.lock:
            if self.done.get(shard.name) == k:
                return
            self.done[shard.name] = k
            self.say(f"{self.kind.unit} done {sum(self.done.values())}/{self.total} ({time.monotonic() - self.t0:.0f} s)")


class ShardedRun:
    def __init__(self, kind: Kind, overrides: Mapping[str, str], values: Mapping[str, Any],
                 say: Callable[[str], None] = print, verbose: bool = False) -> None:
        self.kind = kind
        self.graph, self.values, self.say = kind.graph, dict(values), say
        self.workers = int(values["workers"])
        self.cluster = str(values["cluster"])
        self.timeout_s = float(values["shard_timeout_s"])
        self.args = child_arguments(self.kind, values, overrides)
        self.context, self.episodes, self.shards = self.kind.plan(values, self.workers)
        self.digest = plan_digest(self.graph, self.args, self.shards, self.kind.digest_items(self.context, self.episodes))
        self.out_root = Path(values["out_dir"])
        self.shard_root = self.out_root / "shards" / self.digest
        self.progress = Progress(self.kind, len(self.episodes), len(self.kind.methods(values)), say, verbose)

    # files of a shard
    def shard_dir(self, shard: Shard) -> Path:
        return self.shard_root / shard.name

    def finished(self, shard: Shard) -> ShardOutcome | None:
        d = self.shard_dir(shard)
        try:
            done = json.loads((d / DONE).read_text())
            records = json.loads((d / SHARD_RESULTS).read_text())
        except (OSError, ValueError):
            return None
        return ShardOutcome(shard, 0, records, done.get("meta", {}), {}, done.get("seconds", 0.0), done.get("where", ""), reused=True)

    def keep(self, shard: Shard, result: dict) -> ShardOutcome:
        """Write a finished shard (results first, then ``done.json`` renamed into place)."""
        outcome = ShardOutcome(shard, int(result["code"]), result.get("records", []), result.get("meta", {}),
                               result.get("images", {}), result.get("seconds", 0.0), result.get("where", ""), errors=result.get("errors", ""))
        if outcome.code == 0 and outcome.records:
            d = self.shard_dir(shard)
            d.mkdir(parents=True, exist_ok=True)
            (d / SHARD_RESULTS).write_text(json.dumps(outcome.records, allow_nan=True))
            for rel, data in outcome.images.items():
                (d / IMAGES / rel).parent.mkdir(parents=True, exist_ok=True)
                (d / IMAGES / rel).write_bytes(data)
            tmp = d / f".{DONE}.{os.getpid()}.{threading.get_ident()}"
            tmp.write_text(json.dumps({"shard": shard.name, "episodes": len(shard.episode_ids), "meta": outcome.meta,
                                       "seconds": outcome.seconds, "where": outcome.where}, allow_nan=True))
            os.replace(tmp, d / DONE)
        return outcome


    # executors
    def run_local(self, todo: list[Shard]) -> list[ShardOutcome]:
        """``workers`` threads, each running one child graph at a time (daemon threads: if the
        coordinator dies, so do they, and the kernel stops their child graphs)."""
        import queue

        jobs: queue.Queue = queue.Queue()
        for s in todo:
            jobs.put(s)
        results: "queue.Queue[ShardOutcome]" = queue.Queue()

        def work() -> None:
            while True:
                try:
                    shard = jobs.get_nowait()
                except queue.Empty:
                    return
                try:
                    result = run_shard(self.kind, self.args, shard, self.kind.payload(self.context, self.episodes, shard),
                                       self.shard_dir(shard), self.timeout_s, lambda line, s=shard: self.progress.line(s, line))
                except Exception as exc:  # a shard that cannot start is a failed shard, not a dead coordinator
                    result = {"code": 1, "errors": f"{type(exc).__name__}: {exc}"}
                results.put(self.finish_shard(shard, result))

        threads = [threading.Thread(target=work, name=f"shard-worker-{i}", daemon=True) for i in range(min(self.workers, len(todo)))]
        for t in threads:
            t.start()
        out = []
        while len(out) < len(todo):  # the main thread waits in short steps: Ctrl-C / SIGTERM reach it
            try:
                out.append(results.get(timeout=0.2))
            except queue.Empty:
                continue
        return out

    def run_dask(self, todo: list[Shard]) -> list[ShardOutcome]:
        try:
            from distributed import Client, as_completed
        except ImportError:
            raise SystemExit("error: cluster:=dask needs Dask distributed: pip install -r requirements-cluster.txt "
                             "(or pip install .[cluster])") from None
        address = str(self.values["scheduler"]) or os.environ.get("DASK_SCHEDULER_ADDRESS", "")
        if not address:
            raise SystemExit("error: cluster:=dask needs scheduler:=tcp://host:port or $DASK_SCHEDULER_ADDRESS")
        self.say(f"Dask scheduler {address}: {len(todo)} shard(s) as tasks")
        by_name = {s.name: s for s in todo}
        with Client(address, timeout="30s", set_as_default=False) as client:
            def on_event(event) -> None:  # (time, {shard, worker, line}) from run_shard_task
                msg = event[1]
                self.progress.line(by_name[msg["shard"]], msg["line"], msg.get("worker", ""))

            client.subscribe_topic("shard-progress", on_event)
            futures = {}
            for s in todo:
                fut = client.submit(run_shard_task, self.kind, self.args, s, self.kind.payload(self.context, self.episodes, s),
                                    self.timeout_s, secret_environment(self.values),
                                    key=f"shard-{self.digest}-{s.name}", pure=False)
                futures[fut] = s
            out = []
            for fut in as_completed(futures, loop=client.loop):
                shard = futures[fut]
                try:
                    result = fut.result()
                except Exception as exc:  # KilledWorker after Dask's retries, or the task raised
                    result = {"code": 1, "errors": f"{type(exc).__name__}: {exc}"}
                out.append(self.finish_shard(shard, result))
            return out

    def finish_shard(self, shard: Shard, result: dict) -> ShardOutcome:
        outcome = self.keep(shard, result)
        if outcome.code == 0:
            self.progress.set(shard, len(shard.episode_ids))
            self.say(f"shard {shard.name} done: {len(shard.episode_ids)} episodes in {outcome.seconds} s"
                     + (f" on {outcome.where}" if outcome.where else ""))
        else:
            self.say(f"ERROR: shard {shard.name} failed (exit code {outcome.code}): {outcome.errors}")
        return outcome

    # the whole run
    def run(self) -> int:
        from personal.runs.output import OutputDirError

        try:
            run_dir = self.kind.run_dir(self.out_root)
        except OutputDirError as exc:
            self.say(f"error: cannot write the results: {exc}")
            return 2
        t0 = time.monotonic()
        outcomes = {s.name: o for s in self.shards if (o := self.finished(s)) is not None}
        todo = [s for s in self.shards if s.name not in outcomes]
        self.say(f"{self.graph}: {len(self.episodes)} {self.kind.unit} in {len(self.shards)} shard(s) "
                 f"({', '.join(s.name for s in self.shards)}); {self.workers} worker(s), cluster {self.cluster}; "
                 f"shards kept in {self.shard_root}" + (f"; {len(outcomes)} already finished (reused)" if outcomes else ""))
        for o in outcomes.values():
            self.progress.set(o.shard, len(o.shard.episode_ids))
        if todo:
            ran = self.run_dask(todo) if self.cluster == "dask" else self.run_local(todo)
            outcomes.update({o.shard.name: o for o in ran})
        return self.merge(run_dir, [outcomes[s.name] for s in self.shards], time.monotonic() - t0)

    def merge(self, run_dir: Path, outcomes: list[ShardOutcome], seconds: float) -> int:
        """Records in the serial run's order (episode, then the method order), one report."""
        records = sorted((r for o in outcomes for r in o.records), key=self.kind.record_key(self.values, self.episodes))
        incomplete = [f"shard {o.shard.name}: exit code {o.code}: {o.errors}"[:800] for o in outcomes if o.code != 0]
        incomplete += [f"shard {o.shard.name}: {line}" for o in outcomes for line in o.meta.get("INCOMPLETE RUN", [])]
        meta = merged_meta([o.meta for o in outcomes if o.meta])
        meta.update({
            "episode count": len(self.episodes),
            "wall time (s)": round(seconds, 1),
            "sharding": {"shards": len(outcomes), "workers": self.workers, "cluster": self.cluster,
                         "reused shards": [o.shard.name for o in outcomes if o.reused],
                         "shard seconds": {o.shard.name: o.seconds for o in outcomes},
                         "shard folder": str(self.shard_root)},
        })
        if (source := self.kind.describe(self.context, self.episodes)) is not None:
            meta["episode source"] = source
        if incomplete:
            meta["INCOMPLETE RUN"] = incomplete
        else:
            meta.pop("INCOMPLETE RUN", None)
        merge_files(run_dir, [self.shard_dir(o.shard) / IMAGES for o in outcomes])  # before the report, which shows them
        self.kind.write(run_dir, records, meta, self.values)
        self.say(f"{self.graph} sharded run done: {len(records)} records from {len(outcomes)} shard(s) in {seconds:.1f} s; "
                 f"report: {(run_dir / 'report.md').resolve()}")
        print(f"report: {(run_dir / 'report.md').resolve()}", flush=True)
        if incomplete:
            self.say("ERROR: run incomplete: " + "; ".join(incomplete) + "; exit code 3")
            return 3
        return 0


def merge_files(run_dir: Path, folders: Sequence[Path]) -> None:
    """Each shard's kept files next to the merged report, in shard order: sample plots are copied,
    JSON-lines logs (e.g. transcripts) are concatenated."""
    logs: set[Path] = set()
    for folder in folders:
        for f in sorted(folder.rglob("*")) if folder.is_dir() else []:
            if not f.is_file():
                continue
            dest = run_dir / f.relative_to(folder)
            dest.parent.mkdir(parents=True, exist_ok=True)
            if f.suffix == ".jsonl":
                with open(dest, "ab" if dest in logs else "wb") as fh:
                    fh.write(f.read_bytes())
                logs.add(dest)
            else:
                shutil.copyfile(f, dest)


def merged_meta(metas: Sequence[dict]) -> dict:
    """The shards' report metadata as one: per-household dicts are joined, the rest is the first shard's."""
    if not metas:
        return {}
    out = dict(metas[0])
    for m in metas[1:]:
        for k, v in m.items():
            if isinstance(v, dict) and isinstance(out.get(k), dict):
                out[k] = {**out[k], **v}
            elif isinstance(v, list) and isinstance(out.get(k), list) and k != "map resolution (m)":
                out[k] = out[k] + [x for x in v if x not in out[k]]
    return out


def run_sharded(kind: Kind, overrides: Mapping[str, str], values: Mapping[str, Any], verbose: bool = False) -> int:
    """``personal launch <graph> workers:=N [cluster:=dask]`` for the graph's kind (personal.benchmarks.KINDS):
    plan, run, merge; the exit code."""
    from personal.runner import _raise_on_termination, _restore_handlers, _Terminated

    def say(text: str) -> None:
        print(f"[personal shard] {text}", flush=True)

    os.environ.update(secret_environment(values))  # local shards' child graphs inherit them; not their argv
    previous = _raise_on_termination()
    try:
        return ShardedRun(kind, overrides, values, say, verbose).run()
    except KeyboardInterrupt:
        say("interrupted: shards in progress are stopped; finished shards are kept for a re-run")
        return 130
    except _Terminated as exc:
        say(f"{exc}: shards in progress are stopped; finished shards are kept for a re-run")
        return 128 + exc.signum
    finally:
        _restore_handlers(previous)

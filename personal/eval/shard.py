"""Sharded evaluations: one evaluation graph split into shards that run as child graphs — several at
once on this machine (``workers:=N``) or as tasks on a Dask cluster (``cluster:=dask``) — and merged
into one run folder whose per-episode results are those of a serial run.

    personal launch pog_eval workers:=2                       # 2 child graphs at a time, this machine
    personal launch pan_eval cluster:=dask scheduler:=tcp://head:8786 workers:=64

How it works (docs/scaling.md):

- **Plan.** The coordinator (this module; it is not a ROS node) loads the evaluation's full episode
  set exactly as the graph would (generated or ``episodes_dir``) and splits it by household; one
  household is split into ``workers`` chunks of consecutive episodes. Each shard is written as its
  own PersONAL episode folder, so a shard is the same graph with ``episodes_dir:=<shard>`` — same
  scenes, seeds and episodes, hence the same per-episode results.
- **Run.** A shard is ``personal launch <graph> … workers:=1`` on a ROS domain of its own
  (``personal.runner.child_domain``), started with ``run_child`` so it dies with its parent. Local
  shards run on ``workers`` threads of the coordinator; Dask shards are tasks (``run_shard_task``)
  that do the same on a worker and return the records — a shard whose worker dies is rerun by Dask on
  another worker. Stale Fast DDS shared memory of killed shards is reclaimed after each shard.
- **Keep.** A finished shard's records go to ``<out_dir>/shards/<plan>/<shard>/results.json``, then
  ``done.json`` is renamed into place: a re-run of the same evaluation (same arguments, same
  ``out_dir``) reuses every finished shard and runs only the others. A shard run twice writes the
  same files again (a shard is a pure function of its episode folder and arguments).
- **Merge.** Records are put in the serial run's episode order and the graph's own report writer
  writes ``results.json``, ``summary.json``, ``report.md`` and ``report.html`` into
  ``<out_dir>/<UTC time>/``. Progress is the total over shards: ``episodes done k/N``.

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


class PogKind:
    graph = "pog_eval"
    report = "pog"
    source_arguments = ("episodes_dir", "scenes", "episodes_per_split", "splits")

    def load(self, values: Mapping[str, Any]):
        from personal.eval.pog_run import generate_episode_set, load_episode_folder

        splits = [s.strip() for s in str(values["splits"]).split(",") if s.strip()]
        if values["episodes_dir"]:
            scenes, episodes, _ = load_episode_folder(values["episodes_dir"], splits)
        else:
            scenes, episodes = generate_episode_set(int(values["scenes"]), splits, int(values["episodes_per_split"]),
                                                    int(values["seed"]))
        return scenes, episodes

    def methods(self, values: Mapping[str, Any]) -> list[str]:
        from personal.grounding.methods import parse_method_list

        return parse_method_list(values["methods"])

    def episodes_done(self, line: str, n_methods: int) -> int | None:
        m = re.search(r"episodes done (\d+)/\d+", line)
        return int(m.group(1)) if m else None

    def write(self, run_dir: Path, records: list[dict], meta: dict, values: Mapping[str, Any]) -> None:
        from personal.eval.pog import EpisodeResult, write_report
        from personal.report_html import write_report_html

        write_report(run_dir, [EpisodeResult.from_dict(r) for r in records], meta, self.methods(values))
        write_report_html(run_dir, self.report)


class PanKind:
    graph = "pan_eval"
    report = "pan"
    source_arguments = ("episodes_dir", "scenes", "episodes_per_scene", "split")

    def load(self, values: Mapping[str, Any]):
        from sim_bridge.bridge_logic import generate_episodes, load_episodes

        if values["backend"] != "synthetic":
            raise ValueError("sharded pan_eval runs the synthetic backend (habitat shards: run one graph per machine)")
        if values["episodes_dir"]:
            return load_episodes(values["episodes_dir"], values["split"])
        return generate_episodes(values["split"], int(values["scenes"]), int(values["seed"]), int(values["episodes_per_scene"]))

    def methods(self, values: Mapping[str, Any]) -> list[str]:
        return [m.strip() for m in str(values["methods"]).split(",") if m.strip()]

    def episodes_done(self, line: str, n_methods: int) -> int | None:
        m = re.search(r"\[(\d+)/\d+\] \S+ \[\w+\] ", line)  # "[k/runs] <episode> [split] <method>: ..."
        return int(m.group(1)) // max(1, n_methods) if m else None

    def write(self, run_dir: Path, records: list[dict], meta: dict, values: Mapping[str, Any]) -> None:
        from personal.eval.pan import PanEpisodeResult, write_report
        from personal.eval.pan_run import EXPLORERS, LABELS
        from personal.report_html import write_report_html

        methods = self.methods(values)
        write_report(run_dir, [PanEpisodeResult.from_dict(r) for r in records], meta, methods, LABELS,
                     [m for m in methods if m in EXPLORERS])
        write_report_html(run_dir, self.report)


KINDS = {k.graph: k for k in (PogKind(), PanKind())}


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
    drop = set(SHARDING_ARGUMENTS) | set(kind.source_arguments) | {"out_dir", "viz", "viz_port"}
    return {k: str(v) for k, v in overrides.items() if k not in drop}


def plan_digest(graph: str, child_args: Mapping[str, str], shards: Sequence[Shard], episodes: Sequence) -> str:
    """Names the plan's shard folder: same graph, arguments and episodes -> same folder (resume)."""
    from personal.world.model import Episode  # noqa: F401  (episodes are dataclasses with to_dict)

    h = hashlib.sha256()
    h.update(json.dumps({"graph": graph, "args": dict(sorted(child_args.items())),
                         "shards": [(s.name, s.episode_ids) for s in shards]}, sort_keys=True).encode())
    for e in episodes:
        h.update(json.dumps(e.to_dict(), sort_keys=True, default=str).encode())
    return h.hexdigest()[:12]


# -- one shard -------------------------------------------------------------------------------------------


def shard_command(graph: str, args: Mapping[str, str], episodes_dir: Path, out_dir: Path) -> list[str]:
    items = [f"{k}:={v}" for k, v in args.items()] + [f"episodes_dir:={episodes_dir}", f"out_dir:={out_dir}", "workers:=1"]
    return [sys.executable, "-m", "personal", "launch", graph, *items]


def run_shard(graph: str, args: Mapping[str, str], shard: Shard, scenes: Sequence, episodes: Sequence,
              work_dir: Path, timeout_s: float, log: Callable[[str], None] | None = None) -> dict:
    """Run one shard as a child graph on a ROS domain of its own, in ``work_dir``: write its episode
    folder, launch, and return {code, records, meta, seconds, errors, where}. Safe to run twice
    (each run writes a fresh run folder under ``work_dir/runs``)."""
    import socket

    from personal.runner import child_domain, reclaim_shared_memory, run_child
    from personal.world.habitat_format import write_episode_set

    work_dir = Path(work_dir)
    folder = work_dir / "episodes"
    if folder.exists():
        shutil.rmtree(folder)
    write_episode_set(folder, list(scenes), list(episodes))
    runs = work_dir / "runs"
    before = set(runs.iterdir()) if runs.is_dir() else set()
    cmd = shard_command(graph, args, folder.resolve(), runs.resolve())
    t0 = time.perf_counter()
    try:
        with child_domain() as env:
            env["PYTHONUNBUFFERED"] = "1"
            code, tail = run_child(cmd, env, timeout_s, log, keep=lambda line: True)
    finally:
        reclaim_shared_memory()  # a killed shard leaves its Fast DDS segments behind
    out = {"code": code, "records": [], "meta": {}, "seconds": round(time.perf_counter() - t0, 1), "where": socket.gethostname()}
    made = sorted(p for p in (set(runs.iterdir()) if runs.is_dir() else set()) - before if (p / "results.json").is_file())
    if made:
        out["records"] = json.loads((made[-1] / "results.json").read_text())
        summary = made[-1] / "summary.json"
        out["meta"] = json.loads(summary.read_text()).get("meta", {}) if summary.is_file() else {}
        out["images"] = {str(p.relative_to(made[-1])): p.read_bytes() for sub in IMAGE_FOLDERS
                         for p in sorted((made[-1] / sub).glob("*.png"))}
    if code != 0 or not made:
        out["errors"] = " | ".join([l for l in tail if "ERROR" in l or "error:" in l or "timed out" in l] or tail[-3:])[-800:]
    return out


def run_shard_task(graph: str, args: Mapping[str, str], shard: Shard, scenes: Sequence, episodes: Sequence,
                   timeout_s: float) -> dict:
    """A Dask task: ``run_shard`` in a scratch folder of the worker's local directory, which is
    removed afterwards; progress goes to the client as ``shard-progress`` events."""
    import tempfile

    try:
        from distributed import get_worker

        worker = get_worker()
        base = worker.local_directory
        emit = lambda line: worker.log_event("shard-progress", {"shard": shard.name, "worker": str(worker.name), "line": line})  # noqa: E731
    except (ImportError, ValueError):
        base, emit = None, None
    with tempfile.TemporaryDirectory(prefix=f"shard-{shard.name}-", dir=base) as tmp:
        return run_shard(graph, args, shard, scenes, episodes, Path(tmp), timeout_s, emit)


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
            self.say(f"episodes done {sum(self.done.values())}/{self.total} ({time.monotonic() - self.t0:.0f} s)")


class ShardedRun:
    def __init__(self, graph: str, overrides: Mapping[str, str], values: Mapping[str, Any],
                 say: Callable[[str], None] = print, verbose: bool = False) -> None:
        self.kind = KINDS[graph]
        self.graph, self.values, self.say = graph, dict(values), say
        self.workers = int(values["workers"])
        self.cluster = str(values["cluster"])
        self.timeout_s = float(values["shard_timeout_s"])
        self.args = child_arguments(self.kind, values, overrides)
        self.scenes, self.episodes = self.kind.load(values)
        self.shards = plan_shards(self.episodes, self.workers)
        self.digest = plan_digest(graph, self.args, self.shards, self.episodes)
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

    def shard_inputs(self, shard: Shard):
        ids = set(shard.episode_ids)
        return [self.scenes[s] for s in shard.scene_ids if s in self.scenes], [e for e in self.episodes if e.episode_id in ids]

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
                scenes, eps = self.shard_inputs(shard)
                try:
                    result = run_shard(self.graph, self.args, shard, scenes, eps, self.shard_dir(shard), self.timeout_s,
                                       lambda line, s=shard: self.progress.line(s, line))
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
                scenes, eps = self.shard_inputs(s)
                fut = client.submit(run_shard_task, self.graph, self.args, s, scenes, eps, self.timeout_s,
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
        from personal.eval.output import OutputDirError, new_run_dir

        try:
            run_dir = new_run_dir(self.out_root)
        except OutputDirError as exc:
            self.say(f"error: cannot write the results: {exc}")
            return 2
        t0 = time.monotonic()
        outcomes = {s.name: o for s in self.shards if (o := self.finished(s)) is not None}
        todo = [s for s in self.shards if s.name not in outcomes]
        self.say(f"{self.graph}: {len(self.episodes)} episodes in {len(self.shards)} shard(s) "
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
        order = {e.episode_id: i for i, e in enumerate(self.episodes)}
        methods = {m: i for i, m in enumerate(self.kind.methods(self.values))}
        records = sorted((r for o in outcomes for r in o.records),
                         key=lambda r: (order.get(r["episode_id"], len(order)), methods.get(r["method"], len(methods))))
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
        if incomplete:
            meta["INCOMPLETE RUN"] = incomplete
        else:
            meta.pop("INCOMPLETE RUN", None)
        self.kind.write(run_dir, records, meta, self.values)
        for o in outcomes:  # each shard's sample plots (maps / trajectories) next to the merged report
            images = self.shard_dir(o.shard) / IMAGES
            if images.is_dir():
                shutil.copytree(images, run_dir, dirs_exist_ok=True)
        self.say(f"{self.graph} sharded run done: {len(records)} records from {len(outcomes)} shard(s) in {seconds:.1f} s; "
                 f"report: {(run_dir / 'report.md').resolve()}")
        print(f"report: {(run_dir / 'report.md').resolve()}", flush=True)
        if incomplete:
            self.say("ERROR: run incomplete: " + "; ".join(incomplete) + "; exit code 3")
            return 3
        return 0


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


def run_sharded(graph: str, overrides: Mapping[str, str], values: Mapping[str, Any], verbose: bool = False) -> int:
    """``personal launch <graph> workers:=N [cluster:=dask]``: plan, run, merge; the exit code."""
    from personal.runner import _raise_on_termination, _restore_handlers, _Terminated

    def say(text: str) -> None:
        print(f"[personal shard] {text}", flush=True)

    previous = _raise_on_termination()
    try:
        return ShardedRun(graph, overrides, values, say, verbose).run()
    except KeyboardInterrupt:
        say("interrupted: shards in progress are stopped; finished shards are kept for a re-run")
        return 130
    except _Terminated as exc:
        say(f"{exc}: shards in progress are stopped; finished shards are kept for a re-run")
        return 128 + exc.signum
    finally:
        _restore_handlers(previous)

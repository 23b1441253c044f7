"""How a sharded ``aiv_eval`` splits one index into windows of episodes and merges them
(personal.runs.shard)."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from personal.runs.shard import ReportInOutDirKind, Shard, chunk_shards


class AivKind(ReportInOutDirKind):
    """PInVerify (``aiv_eval``): the pair episodes of one index; a shard is a window of consecutive
    episodes of the same index (``index:=<the index> start:=a limit:=n``), so every episode keeps its
    position in the index — the seed of its start sector and of its random next-best views. Episodes
    are independent (one verifier and tracker state per episode), so they split evenly into
    ``workers`` windows. A generated dataset (``index:=`` empty) is generated once by the coordinator
    into ``data_dir`` (reused when present, as the graph does); a Dask worker that does not see the
    coordinator's file regenerates the same dataset from ``targets`` / ``data_seed``; a user's index
    must be on a file system the workers share."""

    graph = "aiv_eval"
    source_arguments = ("index", "data_dir", "targets", "data_seed", "start", "limit")

    def plan(self, values: Mapping[str, Any], workers: int):
        from personal.verification.reader import load_index

        index, generated = str(values["index"]), None
        if not index:  # the replayer's own rule: generate into data_dir unless it is there
            from personal.verification.writer import write_dataset

            generated = (int(values["targets"]), int(values["data_seed"]))
            found = Path(values["data_dir"]) / "val" / "pv_index_all.jsonl"
            index = str(found) if found.is_file() else write_dataset(Path(values["data_dir"]), *generated)["index"]
        index = str(Path(index).resolve())
        start, limit = int(values["start"]), int(values["limit"])
        pairs = load_index(index, strict=not values["lenient"])[start:(start + limit) if limit else None]
        context = {"index": index, "generated": generated,
                   "sha256": hashlib.sha256(Path(index).read_bytes()).hexdigest()}
        return context, pairs, chunk_shards("episodes", [str(p.index) for p in pairs], workers)

    def digest_items(self, context, units: Sequence) -> list:
        return [context["sha256"], context["generated"], [p.key for p in units]]

    def describe(self, context, units: Sequence) -> str:
        return f"index: {context['index']} ({len(units)} episodes)"

    def payload(self, context, units: Sequence, shard: Shard):
        first = int(shard.episode_ids[0])
        return {"index": context["index"], "generated": context["generated"], "start": first, "limit": len(shard.episode_ids)}

    @staticmethod
    def prepare(payload, work_dir: Path) -> dict[str, str]:
        index = Path(payload["index"])
        if not index.is_file():
            if payload["generated"] is None:
                import socket

                raise FileNotFoundError(f"index {index} not found on {socket.gethostname()}: the workers need the "
                                        "dataset on a file system they share with the coordinator")
            from personal.verification.writer import write_dataset

            index = Path(write_dataset(Path(work_dir) / "data", *payload["generated"])["index"])
        return {"index": str(index), "start": str(payload["start"]), "limit": str(payload["limit"])}

    @staticmethod
    def collect(out_dir: Path) -> dict | None:
        """The planner's ``results_<run>.jsonl`` once its ``metrics.json`` (written last) is there."""
        out_dir = Path(out_dir)
        found = sorted(out_dir.glob("results_*.jsonl")) if (out_dir / "metrics.json").is_file() else []
        if len(found) != 1:
            return None
        records = [json.loads(line) for line in found[0].read_text().splitlines() if line.strip()]
        return {"records": records, "meta": {"run": found[0].stem[len("results_"):]}, "images": {}}

    def methods(self, values: Mapping[str, Any]) -> list[str]:
        return [self.run_name(values)]

    @staticmethod
    def run_name(values: Mapping[str, Any]) -> str:
        return str(values["run_name"]) or ("SV" if values["mode"] == "single" else f"MV-{values['nbv']}")

    def record_key(self, values: Mapping[str, Any], units: Sequence) -> Callable[[dict], tuple]:
        return lambda r: (int(r["index"]),)  # the episode's position in the index: the serial order

    def write(self, run_dir: Path, records: list[dict], meta: dict, values: Mapping[str, Any]) -> None:
        from dataclasses import asdict

        from personal.verification.agent import AgentConfig
        from personal.verification.metrics import compute_metrics, write_report

        name = self.run_name(values)
        with open(run_dir / f"results_{name}.jsonl", "w") as fh:
            fh.writelines(json.dumps(r) + "\n" for r in records)
        mode = values["mode"]
        config = AgentConfig(mode=mode, nbv=values["nbv"] if mode == "multi" else "none", horizon=int(values["horizon"]),
                             seed=int(values["seed"]), min_coverage=float(values["min_coverage"]))
        sharding = meta.get("sharding", {})
        notes = [meta.get("episode source", ""), "run through the aiv_eval graph (ROS topics), sharded: "
                 f"{sharding.get('shards')} shard(s), {sharding.get('workers')} worker(s), cluster {sharding.get('cluster')}, "
                 f"{meta.get('wall time (s)')} s"] + [f"INCOMPLETE RUN: {line}" for line in meta.get("INCOMPLETE RUN", [])]
        write_report({name: {"metrics": compute_metrics(records), "config": asdict(config), "sharding": sharding}}, run_dir,
                     title="PInVerify evaluation (aiv_eval graph)", notes=notes)

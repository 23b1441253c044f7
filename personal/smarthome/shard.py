"""How a sharded ``home_eval`` splits households into windows and merges their task rows
(personal.runs.shard)."""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from personal.runs.shard import ReportInOutDirKind, Shard, chunk_shards


class HomeKind(ReportInOutDirKind):
    """PersonalHomeBench (``home_eval``): generated households; a shard is a window of consecutive
    households (``first_household:=a households:=n``: household i keeps seed ``seed + i`` and its tasks
    their seed), each scored on its own (tool state and memories are the household's), so they split
    evenly into ``workers`` windows. The merged summary is computed from the merged task rows (the
    safety probe's counts are summed over shards); transcripts are concatenated in household order."""

    graph = "home_eval"
    unit = "households"
    source_arguments = ("households", "first_household")

    def plan(self, values: Mapping[str, Any], workers: int):
        first, n = int(values["first_household"]), int(values["households"])
        ids = [str(i) for i in range(first, first + n)]
        return None, ids, chunk_shards("households", ids, workers)

    def payload(self, context, units: Sequence, shard: Shard):
        return {"first_household": int(shard.episode_ids[0]), "households": len(shard.episode_ids)}

    @staticmethod
    def collect(out_dir: Path) -> dict | None:
        """The evaluator's task rows once its ``summary.json`` (written at the end) is there."""
        out_dir = Path(out_dir)
        if not (out_dir / "summary.json").is_file():
            return None
        s = json.loads((out_dir / "summary.json").read_text())
        rows = [json.loads(line) for line in (out_dir / "results.jsonl").read_text().splitlines() if line.strip()]
        transcripts = out_dir / "transcripts.jsonl"
        return {"records": rows, "images": {"transcripts.jsonl": transcripts.read_bytes()} if transcripts.is_file() else {},
                "meta": {"agent": s["agent"], "safety probe": {str(s.get("first_household", 0)): s["safety_probe"]}}}

    def methods(self, values: Mapping[str, Any]) -> list[str]:
        return [str(values["agent"])]

    def record_key(self, values: Mapping[str, Any], units: Sequence) -> Callable[[dict], tuple]:
        return lambda r: ()  # shards are consecutive households, merged in shard order: the serial order

    def episodes_done(self, line: str, n_methods: int) -> int | None:
        m = re.search(r"household (\d+)/\d+ \(", line)  # "household k/n (<id>) done"
        return int(m.group(1)) if m else None

    def write(self, run_dir: Path, records: list[dict], meta: dict, values: Mapping[str, Any]) -> None:
        from personal.smarthome.evaluate import EvalConfig, finish_report, scores_from_rows

        max_items = int(values["max_items"])
        cfg = EvalConfig(out_dir=str(run_dir), households=int(values["households"]), seed=int(values["seed"]),
                         agent=str(values["agent"]), endpoint=str(values["endpoint"]), model=str(values["model"]),
                         judge=bool(values["judge"]), max_items=None if max_items < 0 else max_items,
                         families=tuple(f.strip() for f in str(values["families"]).split(",") if f.strip()),
                         first=int(values["first_household"]))
        probes = list(meta.get("safety probe", {}).values())
        probe = {k: sum(p[k] for p in probes) for k in ("households_with_active_condition", "hazard_steps_refused", "correct", "total")}
        with open(run_dir / "results.jsonl", "w") as fh:
            fh.writelines(json.dumps(r) + "\n" for r in records)
        summary = finish_report(scores_from_rows(records), cfg, run_dir, meta.get("agent", cfg.agent), meta.get("wall time (s)", 0.0), probe)
        sharding = {k: v for k, v in meta.items() if k in ("sharding", "INCOMPLETE RUN")}
        (run_dir / "summary.json").write_text(json.dumps({**summary, **sharding}, indent=2))

"""How a sharded ``pan_eval`` plans, loads and merges its households (personal.runs.shard)."""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Mapping

from personal.runs.shard import EpisodeFolderKind


class PanKind(EpisodeFolderKind):
    graph = "pan_eval"
    source_arguments = ("episodes_dir", "scenes", "episodes_per_scene", "split")
    child_fixed = {"upper_bound": "none"}  # the merged report computes the ORACLE-encoder bound once for the whole set

    def load(self, values: Mapping[str, Any]):
        from personal.sim.bridge_logic import generate_episodes, load_episodes

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
        from personal.navigation.eval.pan import PanEpisodeResult, write_report
        from personal.navigation.eval.pan_run import EXPLORERS, LABELS, is_oracle_encoder, oracle_encoder_upper_bound
        from personal.navigation.eval.pan_page import html_page
        from personal.runs.report_html import write_report_html
        from personal.sim.sensor_model import sensor_spec

        methods = self.methods(values)
        upper = None
        if values.get("upper_bound", "none") != "none" and not is_oracle_encoder(str(values.get("encoder", "lit"))):
            scenes, episodes = self.load(values)
            upper = oracle_encoder_upper_bound(
                scenes, episodes, methods, max_steps=int(values["max_steps"]), extractor=str(values["extractor"]),
                sensor=sensor_spec(values.get("sensor", "ideal"), values.get("sensor_overrides", ""),
                                   int(values.get("sensor_seed", 0))))
        write_report(run_dir, [PanEpisodeResult.from_dict(r) for r in records], meta, methods, LABELS,
                     [m for m in methods if m in EXPLORERS], upper_bound=upper)
        write_report_html(run_dir, html_page)

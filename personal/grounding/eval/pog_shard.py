"""How a sharded ``pog_eval`` plans, loads and merges its households (personal.runs.shard)."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from personal.runs.shard import EpisodeFolderKind


class PogKind(EpisodeFolderKind):
    graph = "pog_eval"
    source_arguments = ("episodes_dir", "scenes", "episodes_per_split", "splits")
    # the merged report computes the bound once for the whole set; the episode folder the parent writes for
    # a shard already carries the chosen summary style's wording (a child rewording it again would refuse)
    child_fixed = {"upper_bound": "none", "summary_style": "verbatim"}

    def load(self, values: Mapping[str, Any]):
        from personal.grounding.eval.pog_run import generate_episode_set, load_episode_folder

        splits = [s.strip() for s in str(values["splits"]).split(",") if s.strip()]
        if values["episodes_dir"]:
            scenes, episodes, _ = load_episode_folder(values["episodes_dir"], splits)
        else:
            scenes, episodes = generate_episode_set(int(values["scenes"]), splits, int(values["episodes_per_split"]),
                                                    int(values["seed"]),
                                                    summary_style=str(values.get("summary_style", "verbatim")))
        return scenes, episodes

    def methods(self, values: Mapping[str, Any]) -> list[str]:
        from personal.grounding.methods import parse_method_list

        return parse_method_list(values["methods"])

    def write(self, run_dir: Path, records: list[dict], meta: dict, values: Mapping[str, Any]) -> None:
        from personal.grounding.eval.pog import EpisodeResult, write_report
        from personal.grounding.eval.pog_run import oracle_upper_bound
        from personal.grounding.eval.pog_page import html_page
        from personal.runs.report_html import write_report_html

        methods = self.methods(values)
        upper = None
        if values.get("upper_bound", "none") != "none" and not meta.get("encoder_is_oracle"):
            scenes, episodes = self.load(values)  # the whole set: the bound is computed once, not per shard
            upper = oracle_upper_bound(scenes, episodes, methods, float(values["resolution"]), str(values["extractor"]))
        meta["summary style"] = str(values.get("summary_style", "verbatim"))  # the children were told "verbatim"
        if not values.get("episodes_dir"):
            meta["other summary style"] = "not computed in a sharded run (the shards' maps are not kept)"
        write_report(run_dir, [EpisodeResult.from_dict(r) for r in records], meta, methods, upper_bound=upper)
        write_report_html(run_dir, html_page)

"""Graph ``aiv_eval``: PInVerify active instance verification over topics.

The capture server (dataset replayer) serves a PInVerify-format folder (``index``)
or a dataset it generates from the synthetic simulator; the verifier node turns each
view into per-attribute evidence, tracks it and decides; the view planner (required
node) drives the episodes, picks the next view (NBV) and writes the report, then exits.
"""
from personal.graphs import SHARD_ARGUMENTS, Arg, Choice, FileName, Graph, NodeSpec, Range, SEED, at_least

GRAPH = Graph(
    name="aiv_eval",
    description="PInVerify: capture replayer + verifier + view planner -> results, metrics.json, report.md.",
    arguments={
        "index": ("", "PInVerify index .jsonl; empty = generate a dataset into data_dir"),
        "data_dir": ("runs/aiv_data", "generated dataset folder (reused when present)"),
        "targets": (30, "generated target objects (3 pairs each, 1:1:1)", at_least(1, 100_000)),
        "data_seed": (0, "generator base seed", SEED),
        "seed": (0, "start-sector and random-NBV seed", SEED),
        "mode": ("multi", "single | multi", Choice(("single", "multi"))),
        "nbv": ("fps", "random | fps | llm (llm needs PERSONAL_LLM_BASE_URL/PERSONAL_LLM_MODEL)", Choice(("random", "fps", "llm"))),
        "decomposer": ("builtin", "builtin | llm", Choice(("builtin", "llm"))),
        "verifier": ("builtin", "builtin | vlm", Choice(("builtin", "vlm"))),
        "detection": ("mask", "mask (GT mask) | box (GT box only)", Choice(("mask", "box"))),
        "min_coverage": (0.0, "judgeable attribute weight seen before a unanimity stop (0 = paper rule)", Range(0.0, 1.0)),
        "horizon": (6, "steps per episode", at_least(1, 1000)),
        "limit": (0, "evaluate only the first N episodes (0 = all)", at_least(0)),
        "start": (0, "skip the first N episodes of the index (with limit: a window; sharded runs use it)", at_least(0)),
        "out_dir": ("runs/aiv_eval", "report folder"),
        "run_name": ("", "run name in the report (default SV / MV-<nbv>)", FileName()),
        "lenient": (False, "accept unknown index/meta fields"),
        **SHARD_ARGUMENTS,
    },
    nodes=[
        NodeSpec(
            name="aiv_replayer", executable="aiv_replayer", module="nodes.aiv_replayer_node",
            parameters={"index": Arg("index"), "data_dir": Arg("data_dir"), "targets": Arg("targets"),
                        "data_seed": Arg("data_seed"), "seed": Arg("seed"), "horizon": Arg("horizon"),
                        "lenient": Arg("lenient")},
        ),
        NodeSpec(
            name="aiv_verifier", executable="aiv_verifier", module="nodes.verifier_node",
            parameters={"mode": Arg("mode"), "horizon": Arg("horizon"), "min_coverage": Arg("min_coverage"),
                        "decomposer": Arg("decomposer"), "verifier": Arg("verifier"), "detection": Arg("detection")},
        ),
        NodeSpec(
            name="aiv_view_planner", executable="aiv_view_planner", module="nodes.view_planner_node",
            parameters={"mode": Arg("mode"), "nbv": Arg("nbv"), "horizon": Arg("horizon"), "seed": Arg("seed"),
                        "min_coverage": Arg("min_coverage"), "limit": Arg("limit"), "start": Arg("start"), "out_dir": Arg("out_dir"),
                        "run_name": Arg("run_name"), "lenient": Arg("lenient")},
            required=True,
        ),
    ],
)

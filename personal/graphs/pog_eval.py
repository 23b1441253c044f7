"""Graph ``pog_eval``: the main job — PersONAL Personalized Object Grounding (POG).

Pre-exploration with mapping builds each scene's feature map; then every episode's
query goes through every configured method in the grounding node; the evaluator (the
required node) scores the answers against the episode ground truth, writes the run
folder and exits, which stops the graph.

Maps (``map_source``): ``explore_graph`` (default) — each scene is pre-explored by the ROS
``explore`` graph (sim bridge + mapping node + frontier explore node, run as a child graph on
its own ROS domain; maps saved to ``maps_dir/<scene_id>/`` and reused next time only if they
were built from the same scene, cell size and encoder); ``explore`` — the evaluator
pre-explores in-process with the mapping library (frontier explorer + MapBuilder on the
synthetic simulator, 160x120 render) and hands the map to the grounding node on
``feature_map``; ``topic`` — maps come from a
mapping node on ``feature_map`` + ``feature_map/descriptor``; ``saved`` — ``maps_dir/<scene>/``;
``oracle`` — ORACLE top-down maps from the scene ground truth. With ``explore_graph``,
``record_dir:=DIR`` records each scene's sensor topics to ``DIR/<scene_id>/`` for ``pog_replay``.
"""
from personal.graphs import SENSOR_ARGUMENTS, SHARD_ARGUMENTS, Arg, Choice, Graph, NodeSpec, SEED, at_least, positive

METHODS = "random,centre,qs,rpg,rpg-owner,rpg-scene,rpg-owner-scene"

GRAPH = Graph(
    name="pog_eval",
    description="PersONAL POG: pre-exploration + mapping, grounding node (Random/Centre/QS/RPG/RPG-owner and their scene-relative variants), evaluator -> report with an ORACLE upper bound beside it.",
    arguments={
        "episodes_dir": ("", "PersONAL-format episode folder; empty = generate a set"),
        "splits": ("easy,medium,hard", "splits to evaluate (comma separated)", Choice(("easy", "medium", "hard"), multiple=True)),
        "scenes": (3, "generated households", at_least(1, 1000)),
        "episodes_per_split": (10, "generated episodes per split and scene", at_least(1, 10_000)),
        "seed": (0, "generator seed", SEED),
        "methods": (METHODS, "grounding methods (comma separated)", Choice(("random", "centre", "center", "qs", "rpg", "rpg-owner", "rpg_owner", "rpg-scene", "rpg-owner-scene"), multiple=True)),
        "encoder": ("lit", "encoder of map cells and texts: lit (default: the learned image tower, RGB only, MiniLM texts) | oracle (ORACLE: ground-truth captions + MiniLM, an upper bound) | clip | siglip"),
        "model_path": ("", "local model directory for encoder clip | siglip | blip2 (with map_source:=saved maps built by it)"),
        "extractor": ("builtin", "ownership-phrase extractor: builtin (rules on the summary) | episode (the episode file's extracted_summary, as the paper's RPG) | llm", Choice(("builtin", "episode", "llm"))),
        "llm_base_url": ("", "OpenAI-compatible endpoint for extractor:=llm (else $OPENAI_BASE_URL)"),
        "llm_model": ("", "chat model for extractor:=llm (else $OPENAI_MODEL)"),
        "upper_bound": ("oracle-topdown", "the report adds the same episodes grounded on ORACLE top-down caption maps "
                        "(scene ground truth), labelled as an upper bound, beside a non-oracle run | none",
                        Choice(("oracle-topdown", "none"))),
        "map_source": ("explore_graph", "explore_graph | explore | topic | saved | oracle", Choice(("explore_graph", "explore", "topic", "saved", "oracle"))),
        "maps_dir": ("maps", "maps folder (<maps_dir>/<scene_id>/features.yaml): read by saved, written by explore_graph"),
        "reuse_maps": (True, "explore_graph: reuse <maps_dir>/<scene_id>/ when built from the same scene, resolution and encoder"),
        "record_dir": ("", "explore_graph: also record each scene's sensor topics to <record_dir>/<scene_id>/ (rosbag2 MCAP; replay with pog_replay)"),
        "resolution": (0.5, "feature-map cell size in metres", positive(10.0)),
        "explore_steps": (2500, "pre-exploration step budget per scene", at_least(1, 100_000)),
        "explore_width": (320, "explore_graph: rendered image width, px (a 0.5 m feature map needs no 640x480)", at_least(8, 4096)),
        "explore_height": (240, "explore_graph: rendered image height, px", at_least(8, 4096)),
        "top_k": (3, "RPG peaks per phrase", at_least(1, 1000)),
        "nhood": (1, "RPG dilation radius (cells)", at_least(0, 1000)),
        "nms_r": (1, "RPG NMS radius (cells)", at_least(0, 1000)),
        "backend": ("numpy", "numpy | torch", Choice(("numpy", "torch"))),
        "summary_style": ("verbatim", "verbatim (summaries quote the generator's captions) | varied (the owned objects in "
                          "other words); the report adds the other style grounded on the same maps", Choice(("verbatim", "varied"))),
        "out_dir": ("runs/pog_eval", "run folders are created under this"),
        **SHARD_ARGUMENTS,
        **SENSOR_ARGUMENTS,  # the exploration camera (map_source explore / explore_graph)
    },
    # the live view also follows each scene's exploration graph (its own ROS domain, announced here)
    live_view={"parameters": {"follow_domain_topic": "viz/child_domain"}},
    nodes=[
        NodeSpec(
            name="grounding",
            executable="grounding_node",
            module="nodes.grounding_node",
            parameters={
                "methods": Arg("methods"), "encoder": Arg("encoder"), "model_path": Arg("model_path"), "extractor": Arg("extractor"),
                "llm_base_url": Arg("llm_base_url"), "llm_model": Arg("llm_model"),
                "top_k": Arg("top_k"), "nhood": Arg("nhood"), "nms_r": Arg("nms_r"), "backend": Arg("backend"),
            },
        ),
        NodeSpec(
            name="pog_evaluator",
            executable="pog_evaluator",
            module="nodes.pog_evaluator_node",
            parameters={
                "episodes_dir": Arg("episodes_dir"), "splits": Arg("splits"), "scenes": Arg("scenes"),
                "episodes_per_split": Arg("episodes_per_split"), "seed": Arg("seed"), "methods": Arg("methods"),
                "map_source": Arg("map_source"), "maps_dir": Arg("maps_dir"), "reuse_maps": Arg("reuse_maps"), "resolution": Arg("resolution"),
                "record_dir": Arg("record_dir"),
                "explore_steps": Arg("explore_steps"), "explore_width": Arg("explore_width"),
                "explore_height": Arg("explore_height"), "encoder": Arg("encoder"), "extractor": Arg("extractor"),
                "upper_bound": Arg("upper_bound"), "summary_style": Arg("summary_style"), "out_dir": Arg("out_dir"),
                "sensor": Arg("sensor"), "sensor_overrides": Arg("sensor_overrides"), "sensor_seed": Arg("sensor_seed"),
            },
            required=True,
        ),
    ],
)

"""Graph ``pog_replay``: POG evaluation from recorded sensor bags — the same grounding node and
evaluator as ``pog_eval``, with each scene's map built by replaying ``<bags_dir>/<scene_id>/``
into a mapping node (child graph ``bag_map``: bag player + mapping node, the map saved when
the bag ends). Record the bags with
``personal launch pog_eval map_source:=explore_graph record_dir:=<bags_dir>`` and pass the same
episode-set arguments (episodes_dir or scenes/splits/episodes_per_split/seed) and resolution:
the report then has the live run's metrics, with frames integrated live vs replayed per scene.
RealSense-layout bags (``camera/camera/…``) replay with ``camera_prefix:=camera/camera``.
"""
from personal.graphs import Arg, Graph, NodeSpec, positive
from personal.graphs.pog_eval import GRAPH as POG_EVAL

SHARED = ("episodes_dir", "splits", "scenes", "episodes_per_split", "seed", "methods", "encoder", "model_path", "extractor",
          "llm_base_url", "llm_model", "resolution", "top_k", "nhood", "nms_r", "backend", "upper_bound")
GROUNDING = next(n for n in POG_EVAL.nodes if n.name == "grounding")

GRAPH = Graph(
    name="pog_replay",
    description="PersONAL POG from recorded sensor bags: bag replay + mapping per scene, grounding node, evaluator -> report.",
    arguments={
        **{k: POG_EVAL.arguments[k] for k in SHARED},
        "bags_dir": ("bags", "recorded bags, one per scene: <bags_dir>/<scene_id>/ (from pog_eval record_dir)"),
        "replay_rate": (1.0, "playback rate of the bags, > 0 (1 = recorded timing; identical maps measured up to 4)", positive(100.0)),
        "camera_prefix": ("camera", "camera topic prefix in the bags: camera (sim bridge) | camera/camera (RealSense)"),
        "out_dir": ("runs/pog_replay", "run folders are created under this (replayed maps in <run>/replayed_maps/)"),
    },
    live_view={"parameters": {"follow_domain_topic": "viz/child_domain"}},  # each scene's bag replay graph too
    nodes=[
        GROUNDING,
        NodeSpec(
            name="pog_evaluator",
            executable="pog_evaluator",
            module="nodes.pog_evaluator_node",
            parameters={
                **{k: Arg(k) for k in ("episodes_dir", "splits", "scenes", "episodes_per_split", "seed", "methods",
                                       "resolution", "encoder", "extractor", "out_dir", "bags_dir", "replay_rate",
                                       "camera_prefix", "upper_bound")},
                "map_source": "bag",
            },
            required=True,
        ),
    ],
)

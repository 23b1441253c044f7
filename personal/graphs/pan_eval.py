"""Graph ``pan_eval``: PersONAL Personalized Active Navigation (PAN) through ROS topics.

The sim bridge replays the episodes; the navigation node drives each (episode, policy) run
with discrete actions, building its maps online from the bridge's depth / instance ids /
camera pose; the evaluator (required node) restarts episodes, starts runs, scores them
(SR = STOP within 1.0 m of the target object's extent, SPL, DTG), writes the run folder and
exits, which stops the graph. The bridge, the navigation node and the evaluator read the same
episode source (the navigation node only for ORACLE perception captions and the oracle policy).
The default encoder is the learned ``lit`` tower; the evaluator adds the ORACLE encoder's
explorers on the same episodes beside it, labelled as an upper bound (``upper_bound``).
"""
from personal.graphs import SENSOR_ARGUMENTS, SHARD_ARGUMENTS, Arg, Choice, Graph, NodeSpec, SEED, at_least, positive

METHODS = "random-frontier,value-map-qs,value-map-rpg,value-map-rpg-owner,oracle"
SOURCE = ("episodes_dir", "split", "scenes", "seed")
SIMULATOR = ("backend", "scenes_dir", "scene_dataset_config")

GRAPH = Graph(
    name="pan_eval",
    description="PersONAL PAN: sim bridge + navigation node (random frontier / value-map QS, RPG, RPG-owner / ORACLE) + evaluator -> report.",
    arguments={
        "episodes_dir": ("", "PersONAL-format episode folder (generated, or the public files' {split} parent); empty = generate a set"),
        "backend": ("synthetic", "simulator: synthetic | habitat (needs episodes_dir, and scenes_dir for HM3D)", Choice(("synthetic", "habitat"))),
        "scenes_dir": ("", "habitat: folder the episodes' scene_id paths are relative to (default: episodes_dir)"),
        "scene_dataset_config": ("", "habitat: scene dataset config; empty = the one each episode names"),
        "split": ("all", "easy | medium | hard | all", Choice(("easy", "medium", "hard", "all"))),
        "scenes": (3, "generated households", at_least(1, 1000)),
        "seed": (100, "generator seed (scene k uses seed + k)", SEED),
        "episodes_per_scene": (1, "generated episodes per scene and split", at_least(1, 10_000)),
        "methods": (METHODS, "policies to evaluate (comma separated)", Choice(("random-frontier", "value-map-qs", "value-map-rpg", "value-map-rpg-owner", "oracle"), multiple=True)),
        "max_steps": (500, "step budget per episode (PersONAL: 500)", at_least(1, 100_000)),
        "encoder": ("lit", "feature encoder: lit (default: the learned image tower, RGB-D, MiniLM texts) | oracle (ORACLE: "
                            "ground-truth captions + MiniLM, an upper bound) | clip | siglip | blip2 (with model_path)"),
        "upper_bound": ("oracle-encoder", "the report adds the value-map explorers re-run with the ORACLE encoder on the same "
                        "episodes (in the evaluator, synthetic backend), labelled as an upper bound, beside a non-oracle run | none",
                        Choice(("oracle-encoder", "none"))),
        "model_path": ("", "local model directory for encoder clip | siglip | blip2 (HM3D: no ORACLE captions)"),
        "extractor": ("builtin", "ownership-phrase extractor: builtin | llm", Choice(("builtin", "llm"))),
        "out_dir": ("runs/pan_eval", "run folders are created under this"),
        **SHARD_ARGUMENTS,
        **SENSOR_ARGUMENTS,
        "rate": (2.0, "bridge re-publish rate in Hz (actions are answered at once regardless)", positive(1000.0)),
    },
    nodes=[
        NodeSpec(
            name="sim_bridge",
            executable="sim_bridge",
            module="sim_bridge.bridge_node",
            parameters={**{k: Arg(k) for k in SOURCE + SIMULATOR}, "episodes_per_scene": Arg("episodes_per_scene"),
                        "rate": Arg("rate"), "log_every": 30.0, "sensor": Arg("sensor"), "sensor_overrides": Arg("sensor_overrides"), "sensor_seed": Arg("sensor_seed"),},
        ),
        NodeSpec(
            name="navigation",
            executable="navigation_node",
            module="nodes.navigation_node",
            parameters={**{k: Arg(k) for k in SOURCE}, "autostart": False, "max_steps": Arg("max_steps"),
                        "encoder": Arg("encoder"), "model_path": Arg("model_path"), "extractor": Arg("extractor")},
        ),
        NodeSpec(
            name="pan_evaluator",
            executable="pan_evaluator",
            module="nodes.pan_evaluator_node",
            parameters={**{k: Arg(k) for k in SOURCE + SIMULATOR}, "episodes_per_scene": Arg("episodes_per_scene"),
                        "methods": Arg("methods"), "max_steps": Arg("max_steps"), "out_dir": Arg("out_dir"),
                        "encoder": Arg("encoder"), "upper_bound": Arg("upper_bound"), "extractor": Arg("extractor"),
                        "sensor": Arg("sensor"), "sensor_overrides": Arg("sensor_overrides"), "sensor_seed": Arg("sensor_seed"),},
            required=True,
        ),
    ],
)

"""Graph ``sim``: the sim bridge alone, replaying (or generating) an episode set."""
from personal.graphs import SENSOR_ARGUMENTS, Arg, Choice, Graph, NodeSpec, SEED, at_least, positive

GRAPH = Graph(
    name="sim",
    description="Sim bridge replaying a PersONAL episode set (generated on the fly unless episodes_dir is given).",
    arguments={
        "episodes_dir": ("", "PersONAL-format episode folder (generated, or the public files' {split} parent); empty = generate one"),
        "scenes_dir": ("", "folder the episodes' scene_id paths are relative to (backend habitat; default: episodes_dir)"),
        "scene_dataset_config": ("", "habitat-sim scene dataset config; empty = the one each episode names"),
        "split": ("all", "split to replay or generate (easy|medium|hard|all)", Choice(("easy", "medium", "hard", "all"))),
        "scenes": (1, "number of scenes to generate", at_least(1, 1000)),
        "seed": (0, "generator seed", SEED),
        "backend": ("synthetic", "simulator backend (synthetic|habitat|auto)", Choice(("synthetic", "habitat", "auto"))),
        "rate": (10.0, "publish rate in Hz", positive(1000.0)),
        "use_sim_time": (False, "publish /clock and stamp with simulated time"),
        **SENSOR_ARGUMENTS,
    },
    nodes=[
        NodeSpec(
            name="sim_bridge",
            executable="sim_bridge",
            module="sim_bridge.bridge_node",
            parameters={
                "episodes_dir": Arg("episodes_dir"),
                "scenes_dir": Arg("scenes_dir"),
                "scene_dataset_config": Arg("scene_dataset_config"),
                "split": Arg("split"),
                "scenes": Arg("scenes"),
                "seed": Arg("seed"),
                "backend": Arg("backend"),
                "rate": Arg("rate"),
                "publish_clock": Arg("use_sim_time"),
                "sensor": Arg("sensor"), "sensor_overrides": Arg("sensor_overrides"), "sensor_seed": Arg("sensor_seed"),
            },
            required=True,
        )
    ],
)

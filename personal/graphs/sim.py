"""Graph ``sim``: the sim bridge alone, replaying (or generating) an episode set."""
from personal.graphs import Arg, Graph, NodeSpec

GRAPH = Graph(
    name="sim",
    description="Sim bridge replaying a PersONAL episode set (generated on the fly unless episodes_dir is given).",
    arguments={
        "episodes_dir": ("", "PersONAL-format episode folder; empty = generate one"),
        "split": ("all", "split to replay or generate (easy|medium|hard|all)"),
        "scenes": (1, "number of scenes to generate"),
        "seed": (0, "generator seed"),
        "backend": ("synthetic", "simulator backend (synthetic|habitat|auto)"),
        "rate": (10.0, "publish rate in Hz"),
        "use_sim_time": (False, "publish /clock and stamp with simulated time"),
    },
    nodes=[
        NodeSpec(
            name="sim_bridge",
            executable="sim_bridge",
            module="sim_bridge.bridge_node",
            parameters={
                "episodes_dir": Arg("episodes_dir"),
                "split": Arg("split"),
                "scenes": Arg("scenes"),
                "seed": Arg("seed"),
                "backend": Arg("backend"),
                "rate": Arg("rate"),
                "publish_clock": Arg("use_sim_time"),
            },
            required=True,
        )
    ],
)

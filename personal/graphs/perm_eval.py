"""Graph ``perm_eval``: tabletop sim + policy node + PeRM evaluator (LIBERO-PeRM-style SR/SA)."""
from personal.graphs import Arg, Choice, Graph, NodeSpec, PORT, Range, at_least

# personal.manipulation.preferences.PREFERENCES (listed here: graph modules import no library code)
PREFERENCE_IDS = ("speed_up", "slow_down", "smooth", "keep_away", "move_higher", "close_to_ground", "rotate_when_placing",
                  "push", "grasp_by_handle", "prefer_red", "prefer_blue", "prefer_bigger", "prefer_smaller")

GRAPH = Graph(
    name="perm_eval",
    description="Personalized manipulation eval: robosuite Panda tabletop, policy node (openpi-servable), evaluator.",
    arguments={
        "backend": ("robosuite", "tabletop simulator (robosuite | kinematic stand-in)", Choice(("robosuite", "kinematic"))),
        "policy": ("learned", "policy backend (learned BC checkpoint | scripted ORACLE | openpi | http)", Choice(("learned", "scripted", "openpi", "http"))),
        "checkpoint": ("", "learned policy checkpoint (\"\" = the shipped one)"),
        "policy_host": ("127.0.0.1", "openpi server host (policy:=openpi)"),
        "policy_port": (8000, "openpi server port (policy:=openpi)", PORT),
        "policy_url": ("http://127.0.0.1:8000/act", "OpenVLA-style /act URL (policy:=http)"),
        "serve_port": (-1, "policy node also serves the openpi protocol on this port (-1 = off)", Range(-1, 65535)),
        "missions": ("bin,mat", "missions (comma separated)", Choice(("bin", "mat", "handle"), multiple=True)),
        "prefs": ("speed_up,slow_down,smooth,keep_away,move_higher,rotate_when_placing,prefer_red,prefer_bigger",
                  "preference ids (comma separated)", Choice(PREFERENCE_IDS, multiple=True)),
        "seeds": ("0,1,2", "layout seeds (comma separated)"),
        "suites": ("none,single", "suites: none,single,comprepref,compose,conflict", Choice(("none", "single", "comprepref", "compose", "conflict"), multiple=True)),
        "out_dir": ("runs/perm_eval_graph", "results.jsonl + report.md folder"),
        "image_every": (10, "render the two cameras every N control steps (1 for image-based policies)", at_least(1, 10_000)),
        "max_steps": (400, "control steps per episode (20 Hz)", at_least(1, 100_000)),
        "strips": (2, "rollouts with frame strips in the report", at_least(0, 1000)),
    },
    nodes=[
        NodeSpec(name="tabletop_sim", executable="tabletop_sim", module="nodes.tabletop_sim_node",
                 parameters={"backend": Arg("backend"), "image_every": Arg("image_every"),
                             "max_steps": Arg("max_steps"), "lockstep": True}),
        NodeSpec(name="policy", executable="policy_node", module="nodes.policy_node",
                 parameters={"backend": Arg("policy"), "checkpoint": Arg("checkpoint"), "host": Arg("policy_host"), "port": Arg("policy_port"),
                             "url": Arg("policy_url"), "serve_port": Arg("serve_port"), "mode": "lockstep"}),
        NodeSpec(name="perm_evaluator", executable="perm_evaluator", module="nodes.perm_evaluator_node",
                 # policy / backend / checkpoint: the report flags a learned policy off its training simulator
                 parameters={"policy": Arg("policy"), "backend": Arg("backend"), "checkpoint": Arg("checkpoint"),
                             "missions": Arg("missions"), "prefs": Arg("prefs"), "seeds": Arg("seeds"),
                             "suites": Arg("suites"), "out_dir": Arg("out_dir"), "strips": Arg("strips")},
                 required=True),
    ],
)

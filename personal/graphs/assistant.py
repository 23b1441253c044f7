"""Graph ``assistant``: the household assistant over the simulator — sim bridge, mapping and
grounding (the live semantic map and grounding queries on it), the navigation node (driven by
FindObject goals, verify before stop), the appliance node (RunRoutine), the household memory and
the assistant node serving ``assistant/run_routine``, ``assistant/find_object`` and
``assistant/verify_object`` (nodes/assistant_node.py). It runs until stopped; goals come from
``personal assistant find|verify|routine`` or any ActionClient. The assistant node (required)
restarts the bridge's episode for each FindObject goal (``episode/reset``) and reads its summary;
The bridge takes actions after a STOP (``continue_after_stop``, never scored) so that VerifyObject
can look again at what FindObject found; the memory learns the episode's household once
(``seed_from_episode``) and FindObject grounds with the memory's current ownership.
VerifyObject runs the verifier in the assistant (the aiv_verifier node reads PInVerify capture
episodes, which the live simulator does not produce). With ``arm:=sim`` (default) the tabletop
simulator and the policy node serve HandOver goals (``assistant/hand_over``): a tabletop task
with the person's manipulation preferences from the memory in the policy's prompt.
"""
from personal.graphs import SENSOR_ARGUMENTS, Arg, Choice, Graph, NodeSpec, SEED, at_least, positive

SOURCE = ("episodes_dir", "split", "scenes", "seed")
VALUE_MAP = ("value-map-qs", "value-map-rpg", "value-map-rpg-owner")

GRAPH = Graph(
    name="assistant",
    description="Household assistant: sim bridge + mapping + grounding + navigation + appliances + memory + assistant "
                "node (FindObject / VerifyObject / RunRoutine / HandOver actions); arm:=sim adds the tabletop simulator and "
                "the policy node.",
    arguments={
        "episodes_dir": ("", "PersONAL-format episode folder; empty = generate a set"),
        "backend": ("synthetic", "simulator: synthetic | habitat", Choice(("synthetic", "habitat"))),
        "split": ("easy", "easy | medium | hard | all", Choice(("easy", "medium", "hard", "all"))),
        "scenes": (1, "generated households", at_least(1, 1000)),
        "seed": (0, "generator seed (scene k uses seed + k)", SEED),
        "episodes_per_scene": (1, "generated episodes per scene and split", at_least(1, 10_000)),
        "encoder": ("lit", "feature encoder of the maps and the value-map policy: lit (learned) | oracle (ORACLE captions, "
                           "an upper bound) | clip | siglip | blip2 (with model_path)"),
        "model_path": ("", "local model directory for encoder clip | siglip | blip2"),
        "policy": ("value-map-rpg-owner", "navigation policy of FindObject goals (verify adds +verify)", Choice(VALUE_MAP)),
        "reject_unsure": (True, "verify before stop: an unsure verdict rejects the candidate too (the search goes on)"),
        "grounding_methods": ("rpg-owner", "grounding node methods (comma separated)",
                              Choice(("random", "centre", "qs", "rpg", "rpg-owner"), multiple=True)),
        "maps_dir": ("maps", "where the mapping node saves maps"),
        "memory_dir": ("memory", "household memories: <memory_dir>/<household>.sqlite"),
        "household": ("home", "household id (memory file name)"),
        "household_seed": (0, "household served by the appliance node", SEED),
        "nav_timeout_s": (20.0, "FindObject aborts when the navigation node is silent this long, s", positive(3600.0)),
        "rate": (2.0, "bridge re-publish rate in Hz (actions are answered at once regardless)", positive(1000.0)),
        "arm": ("sim", "HandOver's arm: sim (tabletop simulator + policy node) | none", Choice(("sim", "none"))),
        "arm_backend": ("robosuite", "tabletop simulator of arm:=sim (robosuite | kinematic stand-in)",
                        Choice(("robosuite", "kinematic"))),
        "arm_policy": ("learned", "manipulation policy of arm:=sim (learned BC checkpoint | scripted ORACLE)",
                       Choice(("learned", "scripted"))),
        **SENSOR_ARGUMENTS,
    },
    nodes=[
        NodeSpec(name="sim_bridge", executable="sim_bridge", module="sim_bridge.bridge_node",
                 parameters={**{k: Arg(k) for k in SOURCE}, "backend": Arg("backend"),
                             "episodes_per_scene": Arg("episodes_per_scene"), "rate": Arg("rate"), "sensor": Arg("sensor"),
                             "sensor_overrides": Arg("sensor_overrides"), "sensor_seed": Arg("sensor_seed"),
                             "continue_after_stop": True}),
        NodeSpec(name="mapping", executable="mapping_node", module="nodes.mapping_node",
                 parameters={"encoder": Arg("encoder"), "model_path": Arg("model_path"), "episodes_dir": Arg("episodes_dir"),
                             "maps_dir": Arg("maps_dir"), "feature_process": True}),
        NodeSpec(name="grounding", executable="grounding_node", module="nodes.grounding_node",
                 parameters={"methods": Arg("grounding_methods"), "encoder": Arg("encoder"), "model_path": Arg("model_path")}),
        NodeSpec(name="navigation", executable="navigation_node", module="nodes.navigation_node",
                 parameters={**{k: Arg(k) for k in SOURCE}, "autostart": False, "policy": Arg("policy"),
                             "encoder": Arg("encoder"), "model_path": Arg("model_path"),
                             "reject_unsure": Arg("reject_unsure")}),
        NodeSpec(name="appliance_node", executable="appliance_node", module="nodes.appliance_node",
                 parameters={"seed": Arg("household_seed")}),
        NodeSpec(name="memory", executable="memory_node", module="nodes.memory_node",
                 parameters={"memory_dir": Arg("memory_dir"), "household": Arg("household"), "seed_from_episode": True}),
        NodeSpec(name="tabletop_sim", executable="tabletop_sim", module="nodes.tabletop_sim_node",
                 parameters={"backend": Arg("arm_backend"), "image_every": 10, "lockstep": True}, when=("arm", "sim")),
        NodeSpec(name="policy", executable="policy_node", module="nodes.policy_node",
                 parameters={"backend": Arg("arm_policy"), "mode": "lockstep"}, when=("arm", "sim")),
        NodeSpec(name="assistant", executable="assistant_node", module="nodes.assistant_node",
                 parameters={"memory_dir": Arg("memory_dir"), "household": Arg("household"), "policy": Arg("policy"),
                             "nav_timeout_s": Arg("nav_timeout_s"), "arm_policy": Arg("arm_policy"),
                             "arm_backend": Arg("arm_backend")},
                 required=True),
    ],
)

"""Graph ``home_eval``: the appliance-control node (optionally mirrored to MQTT) and the
PersonalHomeBench evaluator (scripted reference agent by default, or an LLM endpoint)."""
from personal.graphs import SHARD_ARGUMENTS, Arg, Choice, Graph, NodeSpec, PORT, SEED, at_least

GRAPH = Graph(
    name="home_eval",
    description="PersonalHomeBench: appliance node (+ Home Assistant MQTT mirror) and the home_eval evaluator.",
    arguments={
        "households": (20, "generated households to evaluate", at_least(1, 100_000)),
        "seed": (0, "first household seed", SEED),
        "first_household": (0, "skip the first N households (seeds seed+N ...; sharded runs use it)", at_least(0)),
        "agent": ("reference", "reference (scripted, runs answer programs) | tools (LLM with tools) | sole (LLM, full context)", Choice(("reference", "tools", "sole"))),
        "endpoint": ("", "OpenAI-compatible base URL for agent:=tools|sole, e.g. http://127.0.0.1:8000/v1"),
        "model": ("", "model name sent to the endpoint"),
        "judge": (False, "use the endpoint as the semantic-equivalence judge after exact match fails"),
        "max_items": (-1, "IG items per household (-1 = all)", at_least(-1)),
        "families": ("IG,MC,CF,FR,PG", "task families (comma separated)", Choice(("IG", "MC", "CF", "FR", "PG"), multiple=True)),
        "out_dir": ("runs/home_eval", "report.md, results, transcripts and plots"),
        "household_seed": (0, "household served by the appliance node", SEED),
        "mqtt_local_broker": (False, "start a password-protected Mosquitto on loopback and mirror the appliances to it"),
        "mqtt_host": ("", "external MQTT broker host (e.g. Home Assistant's); empty = no MQTT"),
        "mqtt_port": (1883, "external MQTT broker port", PORT),
        "mqtt_username": ("", "external MQTT user"),
        "mqtt_password": ("", "external MQTT password"),
        **SHARD_ARGUMENTS,
    },
    nodes=[
        NodeSpec(name="appliance_node", executable="appliance_node", module="nodes.appliance_node",
                 parameters={"seed": Arg("household_seed"), "mqtt_local_broker": Arg("mqtt_local_broker"),
                             "mqtt_host": Arg("mqtt_host"), "mqtt_port": Arg("mqtt_port"),
                             "mqtt_username": Arg("mqtt_username"), "mqtt_password": Arg("mqtt_password")}),
        NodeSpec(name="home_eval", executable="home_eval", module="nodes.home_eval_node",
                 parameters={"households": Arg("households"), "seed": Arg("seed"), "first_household": Arg("first_household"), "agent": Arg("agent"),
                             "endpoint": Arg("endpoint"), "model": Arg("model"), "judge": Arg("judge"),
                             "max_items": Arg("max_items"), "families": Arg("families"), "out_dir": Arg("out_dir")},
                 required=True),
    ],
)

"""Graph ``explore``: PersONAL pre-exploration of a synthetic scene — sim bridge + mapping
node + frontier-exploration node; the maps are saved under ``<maps_dir>/<scene_id>/`` when
no reachable frontier is left (or the 2,500-step budget is spent), then the graph stops.

With ``encoder:=lit`` (default) the feature map holds the learned image tower's patch features
(RGB only); ``encoder:=oracle`` ORACLE features (ground-truth instance ids + captions embedded
with MiniLM, an upper bound); ``encoder:=none`` maps geometry only."""
from personal.graphs import SENSOR_ARGUMENTS, Arg, Choice, Graph, NodeSpec, SEED, at_least, positive

GRAPH = Graph(
    name="explore",
    description="Pre-explore a synthetic scene (sim bridge + mapping + frontier exploration) and save its maps.",
    arguments={
        "seed": (0, "generator seed (scene synth_<seed>)", SEED),
        "episodes_dir": ("", "PersONAL-format episode folder; empty = generate one scene"),
        "scene": ("", "with episodes_dir: the scene to explore (its first easy episode's start); empty = the first"),
        "all_episodes": (False, "with episodes_dir: explore every (easy) episode's scene in turn from its start, saving "
                                "each scene's maps: one graph start-up for several scenes (the POG evaluator writes one "
                                "episode per scene)"),
        "backend": ("synthetic", "simulator backend (synthetic|habitat|auto)", Choice(("synthetic", "habitat", "auto"))),
        "scenes_dir": ("", "habitat: folder the episodes' scene_id paths are relative to (default: episodes_dir)"),
        "scene_dataset_config": ("", "habitat: scene dataset config; empty = the one each episode names"),
        "encoder": ("lit", "feature encoder: lit (learned, RGB only) | oracle (ORACLE) | none | clip | siglip | blip2"),
        "model_path": ("", "local model directory for clip / siglip / blip2 (lit: default = the shipped checkpoint)"),
        "feature_resolution": (1.0, "feature-map cell size, m", positive(10.0)),
        "maps_dir": ("maps", "maps are saved to <maps_dir>/<scene_id>/"),
        "max_steps": (2500, "exploration budget (PersONAL: 2,500)", at_least(1, 100_000)),
        "rate": (10.0, "sensor re-publish rate of the bridge, Hz", positive(1000.0)),
        "map_timeout": (60.0, "s the explorer waits at most for the map of the newest pose before deciding on the latest "
                              "map (a bound, not a pace: it acts as soon as the pose is mapped, so exploration is the same "
                              "under any load; a recorded run waits for every pose: its replay must map the same frames)",
                        positive(3600.0)),
        "width": (640, "rendered image width, px (the RealSense's 640; pog_eval explores at 320)", at_least(8, 4096)),
        "height": (480, "rendered image height, px (the RealSense's 480; pog_eval explores at 240)", at_least(8, 4096)),
        **SENSOR_ARGUMENTS,
    },
    nodes=[
        NodeSpec(
            name="sim_bridge",
            executable="sim_bridge",
            module="sim_bridge.bridge_node",
            parameters={
                "episodes_dir": Arg("episodes_dir"),
                "scene": Arg("scene"),
                "scenes_dir": Arg("scenes_dir"),
                "scene_dataset_config": Arg("scene_dataset_config"),
                "seed": Arg("seed"),
                "scenes": 1,
                "episodes_per_scene": 1,
                "split": "easy",
                "backend": Arg("backend"),
                "rate": Arg("rate"),
                "width": Arg("width"),
                "height": Arg("height"),
                "sensor": Arg("sensor"), "sensor_overrides": Arg("sensor_overrides"), "sensor_seed": Arg("sensor_seed"),
            },
        ),
        NodeSpec(
            name="mapping",
            executable="mapping_node",
            module="nodes.mapping_node",
            parameters={
                "encoder": Arg("encoder"),
                "model_path": Arg("model_path"),
                "episodes_dir": Arg("episodes_dir"),
                "feature_resolution": Arg("feature_resolution"),
                "maps_dir": Arg("maps_dir"),
                # the encoder runs in a child process, one frame behind the geometry (same maps)
                "feature_process": True,
            },
        ),
        NodeSpec(
            name="explore",
            executable="explore_node",
            module="nodes.explore_node",
            parameters={"max_steps": Arg("max_steps"), "map_timeout": Arg("map_timeout"), "all_episodes": Arg("all_episodes")},
            required=True,
        ),
    ],
)

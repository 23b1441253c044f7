"""Graph ``locobot``: the personal stack on a real LoCoBot (wx250s) with a RealSense.

Start the Interbotix LoCoBot driver and the RealSense driver with aligned depth first
(see README "Real robot"), then this graph. Everything is wired by remappings and
parameters: the robot namespace (``ns``, default ``locobot``), the RealSense topic prefix
(``camera_prefix``: ``camera`` or ``camera/camera`` depending on the driver version), the
base topics ``<ns>/mobile_base/cmd_vel`` and ``<ns>/mobile_base/odom``.

Without a localisation node, maps live in the odometry frame (``map_frame:=odom``).
The feature map needs a real image encoder (``encoder:=clip|siglip|blip2`` with
``model_path`` pointing at local weights); the ORACLE encoder only exists in simulation.

Navigation: the navigation node waits for a ``<ns>/nav/start`` command carrying the query
and the ownership summary, then drives the base through the base driver (``<ns>/action`` →
``<ns>/agent_state``), pairing observations with ``sync:=live`` (the first RealSense frame
after each executed action, the base standing still).
"""
from personal.graphs import Arg, Choice, FileName, Graph, NodeSpec, Range, Template, at_least, positive

NS = Template("{ns}")
CAMERA_TOPICS = ("color/image_raw", "aligned_depth_to_color/image_raw", "color/camera_info")

GRAPH = Graph(
    name="locobot",
    description="Real LoCoBot + RealSense: base driver, mapping, grounding and navigation in the robot namespace.",
    arguments={
        "ns": ("locobot", "robot namespace of the Interbotix driver"),
        "camera_prefix": ("camera", "RealSense topic prefix inside the namespace: camera | camera/camera"),
        "camera_xyz": ([0.0, 0.0, 0.88], "optical-frame origin in base_link, m (used when TF is absent)", Range(-5.0, 5.0)),
        "encoder": ("clip", "feature encoder: clip | siglip | blip2 (local weights) | none"),
        "model_path": ("", "local model directory for the encoder"),
        "feature_resolution": (1.0, "feature-map cell size, m", positive(10.0)),
        "map_frame": ("odom", "frame of the maps (odom without a localisation node)"),
        "maps_dir": ("maps", "map/save writes <maps_dir>/<map_name>/"),
        "map_name": ("locobot", "folder name for saved maps", FileName(allow_empty=False)),
        "methods": ("rpg-owner,rpg,qs", "grounding methods"),
        "max_linear": (0.3, "base driver velocity limit, m/s", positive(2.0)),
        "max_angular": (1.0, "base driver velocity limit, rad/s", positive(6.3)),
        "nav_policy": ("value-map-rpg-owner", "navigation policy when nav/start names none: "
                                              "random-frontier | value-map-qs | value-map-rpg | value-map-rpg-owner", Choice(("random-frontier", "value-map-qs", "value-map-rpg", "value-map-rpg-owner"))),
        "max_steps": (500, "navigation step budget (nav/start may set its own)", at_least(1, 100_000)),
        "settle_s": (0.3, "navigation: skip camera frames this young after an action ended, s", Range(0.0, 10.0)),
        "nav_threshold": (-2.0, "value-map detection threshold (cosine); -2: the encoder's own (personal/navigation/thresholds.py)", Range(-2.0, 1.0)),
        "phrase_floor": (-2.0, "RPG scorers' least ownership-phrase similarity; -2: the encoder's own", Range(-2.0, 1.0)),
    },
    # the live view in the robot namespace, reading the RealSense topics where the driver puts them
    live_view={"namespace": NS, "remappings": [(f"camera/{t}", Template("{camera_prefix}/" + t)) for t in CAMERA_TOPICS]},
    nodes=[
        NodeSpec(
            name="base_driver",
            executable="base_driver",
            module="nodes.base_driver_node",
            namespace=NS,
            parameters={"camera_xyz": Arg("camera_xyz"), "max_linear": Arg("max_linear"),
                        "max_angular": Arg("max_angular")},
            remappings=[("cmd_vel", "mobile_base/cmd_vel"), ("odom", "mobile_base/odom")],
            required=True,
        ),
        NodeSpec(
            name="mapping",
            executable="mapping_node",
            module="nodes.mapping_node",
            namespace=NS,
            parameters={
                "encoder": Arg("encoder"), "model_path": Arg("model_path"),
                "feature_resolution": Arg("feature_resolution"), "pose_source": "camera_pose",
                "map_frame": Arg("map_frame"), "maps_dir": Arg("maps_dir"), "map_name": Arg("map_name"),
            },
            remappings=[(f"camera/{t}", Template("{camera_prefix}/" + t)) for t in CAMERA_TOPICS],
        ),
        NodeSpec(
            name="grounding",
            executable="grounding_node",
            module="nodes.grounding_node",
            namespace=NS,
            parameters={"methods": Arg("methods"), "encoder": Arg("encoder"), "model_path": Arg("model_path")},
        ),
        NodeSpec(
            name="navigation",
            executable="navigation_node",
            module="nodes.navigation_node",
            namespace=NS,
            parameters={
                "encoder": Arg("encoder"), "model_path": Arg("model_path"), "sync": "live", "settle_s": Arg("settle_s"),
                "map_frame": Arg("map_frame"),
                "autostart": False, "policy": Arg("nav_policy"), "max_steps": Arg("max_steps"),
                "threshold": Arg("nav_threshold"), "phrase_floor": Arg("phrase_floor"),
            },
            # action / agent_state / camera/pose: the base driver's, in the same namespace
            remappings=[(f"camera/{t}", Template("{camera_prefix}/" + t)) for t in CAMERA_TOPICS]
            + [("odom", "mobile_base/odom")],
        ),
    ],
)

"""Graph ``locobot``: the personal stack on a real LoCoBot (wx250s) with a RealSense.

Start the Interbotix LoCoBot driver (with its RealSense, ``use_camera:=true
rs_camera_align_depth:=true``) first (docs/locobot_deploy.md), then this graph. Everything is
wired from the drivers' own conventions (``personal/robot/conventions.py``, each value citing its
upstream file), selected by profile arguments:

- ``base:=create3|kobuki``: the odometry and velocity topics (``<ns>/mobile_base/odom`` +
  ``<ns>/mobile_base/cmd_vel`` on a Create 3, ``<ns>/odom`` + ``<ns>/commands/velocity`` on a
  Kobuki) and the URDF root link;
- ``camera:=interbotix|rs_launch`` with ``realsense:=4.55|4.54`` (realsense-ros 4.55 or newer /
  4.54 or older): where the RealSense topics are.

The camera pose comes from TF (``<ns>/odom`` -> ``camera_color_optical_frame``, through the URDF's
pan and tilt links that robot_state_publisher moves from ``<ns>/joint_states``), interpolated at
each depth image's stamp by the mapping node; ``camera_pose:=fixed`` is an explicit opt-in that
uses the URDF's mount numbers instead. Maps live in ``<ns>/odom`` (a frame that exists in TF)
unless ``map_frame`` names a localisation frame. The feature map needs a real image encoder
(``encoder:=clip|siglip|blip2`` with ``model_path``); the ORACLE encoder only exists in simulation.

Navigation: the navigation node waits for a ``<ns>/nav/start`` command carrying the query
and the ownership summary, then drives the base through the base driver (``<ns>/action`` →
``<ns>/agent_state``), pairing observations with ``sync:=live`` (the first RealSense frame
after each executed action, the base standing still). LOOK_UP / LOOK_DOWN move the pan/tilt
through ``<ns>/commands/joint_group`` (interbotix_xs_msgs/JointGroupCommand, group ``camera``).
"""
from personal.graphs import Arg, Choice, FileName, Graph, NodeSpec, Range, Select, Template, at_least, positive
from personal.robot import conventions as C

NS = Template("{ns}")
CAMERA_TOPICS = C.CAMERA_TOPICS
CAMERA_KEY = Template("{camera}/{realsense}")
REALSENSE = {"4.55": "4.55", "4.54": "4.54"}  # argument value -> the version whose layout it selects


def camera_topic(topic: str) -> Select:
    """Where the chosen camera profile puts ``topic`` (relative to ns, or absolute)."""
    return Select(CAMERA_KEY, {f"{cam}/{rs}": f"{C.camera_layout(cam, v).prefix}/{topic}"
                               for cam in C.CAMERAS for rs, v in REALSENSE.items()})


CAMERA_REMAPS = [(f"camera/{t}", camera_topic(t)) for t in CAMERA_TOPICS]
ODOM = Select("base", {b: p.odom_topic for b, p in C.BASES.items()})
CMD_VEL = Select("base", {b: p.cmd_vel_topic for b, p in C.BASES.items()})
MAP_FRAME = Select("map_frame", {"odom": C.odom_frame("{ns}")}, passthrough=True)

GRAPH = Graph(
    name="locobot",
    description="Real LoCoBot + RealSense: base driver, mapping, grounding and navigation in the robot namespace.",
    arguments={
        "ns": ("locobot", "robot namespace of the Interbotix driver"),
        "base": ("create3", "mobile base: create3 | kobuki (odometry / velocity topics, URDF root link)",
                 Choice(tuple(C.BASES))),
        "camera": ("interbotix", "how the RealSense runs: interbotix (xslocobot_control use_camera:=true) | "
                                 "rs_launch (realsense2_camera rs_launch.py)", Choice(C.CAMERAS)),
        "realsense": ("4.55", "realsense-ros release: 4.55 (4.55 or newer: private ~/ topics) | 4.54 (4.54 or older)",
                      Choice(tuple(REALSENSE))),
        "camera_pose": ("tf", "camera pose: tf (<ns>/odom -> camera_color_optical_frame, pan/tilt via joint_states) | "
                              "fixed (URDF mount numbers at the measured pan/tilt; opt-in)", Choice(("tf", "fixed"))),
        "encoder": ("clip", "feature encoder: clip | siglip | blip2 (local weights) | none"),
        "model_path": ("", "local model directory for the encoder"),
        "feature_resolution": (1.0, "feature-map cell size, m", positive(10.0)),
        "map_frame": ("odom", "frame of the maps: odom = <ns>/odom (no localisation node), or a TF frame such as map"),
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
    live_view={"namespace": NS, "remappings": CAMERA_REMAPS},
    nodes=[
        NodeSpec(
            name="base_driver",
            executable="base_driver",
            module="nodes.base_driver_node",
            namespace=NS,
            parameters={"base": Arg("base"), "camera_pose": Arg("camera_pose"), "max_linear": Arg("max_linear"),
                        "max_angular": Arg("max_angular")},
            remappings=[("cmd_vel", CMD_VEL), ("odom", ODOM)],
            required=True,
        ),
        NodeSpec(
            name="mapping",
            executable="mapping_node",
            module="nodes.mapping_node",
            namespace=NS,
            parameters={
                "encoder": Arg("encoder"), "model_path": Arg("model_path"),
                "feature_resolution": Arg("feature_resolution"),
                # TF at each depth image's stamp (interpolated); fixed: the base driver's camera/pose
                "pose_source": Select("camera_pose", {"tf": "tf", "fixed": "camera_pose"}),
                # colour vs aligned depth (and, camera_pose:=fixed, camera/pose at 20 Hz odometry): within 30 ms
                "sync_slop": 0.03,
                "map_frame": MAP_FRAME, "maps_dir": Arg("maps_dir"), "map_name": Arg("map_name"),
            },
            remappings=CAMERA_REMAPS,
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
                "map_frame": MAP_FRAME,
                "autostart": False, "policy": Arg("nav_policy"), "max_steps": Arg("max_steps"),
                "threshold": Arg("nav_threshold"), "phrase_floor": Arg("phrase_floor"),
            },
            # action / agent_state / camera/pose: the base driver's, in the same namespace
            remappings=CAMERA_REMAPS + [("odom", ODOM)],
        ),
    ],
)

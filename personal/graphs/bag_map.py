"""Graph ``bag_map``: replay a recorded sensor bag into the mapping node and save the map —
bag player (the required node) + mapping node. The player plays, reliably and with the
recorded timing (``rate``), the bag topics the mapping node subscribes to (the ``episode``
descriptor first), tells the mapping node the input has ended (``map/flush``: a frame that cannot
complete, e.g. a last depth image without its pose, is skipped), waits until it reports
(``map/progress``) that it has handled the last played frame and calls ``map/save``:
the map lands in ``<maps_dir>/<scene_id>/`` (or ``<map_name>``), then the graph stops.

Bags from the sim bridge (``personal launch pog_eval map_source:=explore_graph record_dir:=…``)
play as they are. A RealSense bag (``camera/camera/…`` topics, 16UC1 depth in mm) plays with
``camera_prefix:=camera/camera`` (the mapping node's camera topics are remapped onto the
bag's), odometry from e.g. ``odom_topic:=locobot/mobile_base/odom`` with ``pose_source:=odom``
and a real image ``encoder``.
"""
from personal.graphs import Arg, Choice, FileName, Graph, NodeSpec, Template, positive

CAMERA_TOPICS = ("aligned_depth_to_color/image_raw", "color/camera_info", "color/image_raw", "semantic/image_raw", "pose")

GRAPH = Graph(
    name="bag_map",
    description="Replay a sensor bag into the mapping node and save the map (bag player + mapping node).",
    arguments={
        "bag": ("", "rosbag2 MCAP bag directory (metadata.yaml + .mcap)"),
        "episodes_dir": ("", "episode folder whose scenes/ hold the ORACLE captions (generated scenes need none)"),
        "encoder": ("lit", "feature encoder: lit (learned, RGB only) | oracle (ORACLE) | none | clip | siglip | blip2"),
        "model_path": ("", "local model directory for clip / siglip / blip2"),
        "feature_resolution": (1.0, "feature-map cell size, m (use the recording run's)", positive(10.0)),
        "maps_dir": ("maps", "the map is saved to <maps_dir>/<map_name or scene_id>/"),
        "map_name": ("", "folder name of the saved map (default: the scene id of the bag's episode)", FileName()),
        "rate": (1.0, "playback rate, > 0 (1 = recorded timing; identical maps measured up to 4; 0 = unpaced loses frames)", positive(100.0)),
        "camera_prefix": ("camera", "camera topic prefix in the bag: camera (sim bridge) | camera/camera (RealSense)"),
        "pose_source": ("camera_pose", "camera_pose (sim bridge camera/pose) | odom (base odometry + camera mount)", Choice(("camera_pose", "odom"))),
        "odom_topic": ("odom", "odometry topic in the bag (pose_source:=odom)"),
        "wait_subscribers": (180.0, "seconds the player waits for the mapping node (it loads its encoder first)", positive(86_400.0)),
        "drain_s": (2.0, "map/save once the mapping node has integrated nothing for this long after the last message", positive(3600.0)),
    },
    nodes=[
        NodeSpec(
            name="mapping",
            executable="mapping_node",
            module="nodes.mapping_node",
            parameters={
                "encoder": Arg("encoder"), "model_path": Arg("model_path"), "episodes_dir": Arg("episodes_dir"),
                "feature_resolution": Arg("feature_resolution"), "maps_dir": Arg("maps_dir"), "map_name": Arg("map_name"),
                "pose_source": Arg("pose_source"), "sensor_qos": "reliable",
            },
            remappings=[(f"camera/{t}", Template("{camera_prefix}/" + t)) for t in CAMERA_TOPICS]
            + [("odom", Template("{odom_topic}"))],
        ),
        NodeSpec(
            name="bag_player",
            executable="bag_player",
            module="nodes.bag_player_node",
            parameters={
                "bag": Arg("bag"), "rate": Arg("rate"), "reliable": True, "latched_first": True, "subscribed_only": True,
                "wait_subscribers": Arg("wait_subscribers"), "done_service": "map/save", "flush_service": "map/flush",
                "drain_s": Arg("drain_s"),
                "idle_topic": "map/status", "progress_topic": "map/progress",
            },
            required=True,
        ),
    ],
)

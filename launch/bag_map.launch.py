"""ros2 launch personal bag_map.launch.py bag:=DIR [camera_prefix:=camera/camera ...] — graph `bag_map` (personal/graphs/bag_map.py)."""
from personal.launch_support import graph_launch_description


def generate_launch_description():
    return graph_launch_description("bag_map")

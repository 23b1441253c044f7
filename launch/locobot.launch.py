"""ros2 launch personal locobot.launch.py [ns:=locobot camera_prefix:=camera/camera ...] — graph `locobot` (personal/graphs/locobot.py)."""
from personal.launch_support import graph_launch_description


def generate_launch_description():
    return graph_launch_description("locobot")

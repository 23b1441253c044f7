"""ros2 launch personal locobot.launch.py [ns:=locobot base:=create3 camera:=interbotix realsense:=4.55 ...] — graph `locobot` (personal/graphs/locobot.py)."""
from personal.launch_support import graph_launch_description


def generate_launch_description():
    return graph_launch_description("locobot")

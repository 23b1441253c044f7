"""ros2 launch personal pan_eval.launch.py [scenes:=3 methods:=... ] — graph `pan_eval` (personal/graphs/pan_eval.py)."""
from personal.launch_support import graph_launch_description


def generate_launch_description():
    return graph_launch_description("pan_eval")

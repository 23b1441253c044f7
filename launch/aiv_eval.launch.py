"""ros2 launch personal aiv_eval.launch.py [index:=... nbv:=random ...] — graph `aiv_eval` (personal/graphs/aiv_eval.py)."""
from personal.launch_support import graph_launch_description


def generate_launch_description():
    return graph_launch_description("aiv_eval")

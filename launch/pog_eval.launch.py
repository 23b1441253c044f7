"""ros2 launch personal pog_eval.launch.py [scenes:=3 map_source:=explore ...] — graph `pog_eval` (personal/graphs/pog_eval.py)."""
from personal.launch_support import graph_launch_description


def generate_launch_description():
    return graph_launch_description("pog_eval")

"""ros2 launch personal explore.launch.py [seed:=3 encoder:=oracle ...] — graph `explore` (personal/graphs/explore.py)."""
from personal.launch_support import graph_launch_description


def generate_launch_description():
    return graph_launch_description("explore")

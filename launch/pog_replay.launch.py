"""ros2 launch personal pog_replay.launch.py bags_dir:=DIR [episodes_dir:=… resolution:=…] — graph `pog_replay` (personal/graphs/pog_replay.py)."""
from personal.launch_support import graph_launch_description


def generate_launch_description():
    return graph_launch_description("pog_replay")

"""ros2 launch personal assistant.launch.py [seed:=0 encoder:=lit ...] — graph `assistant` (personal/graphs/assistant.py)."""
from personal.launch_support import graph_launch_description


def generate_launch_description():
    return graph_launch_description("assistant")

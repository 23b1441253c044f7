"""ros2 launch personal sim.launch.py [split:=hard scenes:=3 ...] — graph `sim` (personal/graphs/sim.py)."""
from personal.launch_support import graph_launch_description


def generate_launch_description():
    return graph_launch_description("sim")

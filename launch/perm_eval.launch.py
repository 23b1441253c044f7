"""ros2 launch personal perm_eval.launch.py [backend:=kinematic seeds:=0,1 ...] — graph `perm_eval` (personal/graphs/perm_eval.py)."""
from personal.launch_support import graph_launch_description


def generate_launch_description():
    return graph_launch_description("perm_eval")

"""ros2 launch personal home_eval.launch.py [households:=20 agent:=tools endpoint:=...] — graph `home_eval`
(personal/graphs/home_eval.py)."""
from personal.launch_support import graph_launch_description


def generate_launch_description():
    return graph_launch_description("home_eval")

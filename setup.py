"""ament_python package `personal` (also pip-installable into a plain venv)."""
from glob import glob

from setuptools import find_packages, setup

PACKAGE = "personal"

# One console script per node (so `ros2 run personal <name>` works) plus the CLI.
NODES = {
    "sim_bridge": "sim_bridge.bridge_node:main",
    "bag_recorder": "nodes.bag_recorder_node:main",
    "bag_player": "nodes.bag_player_node:main",
    "base_driver": "nodes.base_driver_node:main",
    "kinematic_base": "nodes.kinematic_base_node:main",
    "locobot_double": "sim_bridge.locobot_double:main",
    "tabletop_sim": "nodes.tabletop_sim_node:main",
    "policy_node": "nodes.policy_node:main",
    "perm_evaluator": "nodes.perm_evaluator_node:main",
    "grounding_node": "nodes.grounding_node:main",
    "pog_evaluator": "nodes.pog_evaluator_node:main",
    "mapping_node": "nodes.mapping_node:main",
    "explore_node": "nodes.explore_node:main",
    "aiv_replayer": "nodes.aiv_replayer_node:main",
    "aiv_verifier": "nodes.verifier_node:main",
    "aiv_view_planner": "nodes.view_planner_node:main",
    "appliance_node": "nodes.appliance_node:main",
    "home_eval": "nodes.home_eval_node:main",
    "navigation_node": "nodes.navigation_node:main",
    "pan_evaluator": "nodes.pan_evaluator_node:main",
    "viz_node": "nodes.viz_node:main",
    "memory_node": "nodes.memory_node:main",
    "assistant_node": "nodes.assistant_node:main",
}

setup(
    name=PACKAGE,
    version="0.1.0",
    packages=find_packages(include=["personal", "personal.*", "nodes", "nodes.*", "sim_bridge", "sim_bridge.*"]),
    package_data={"personal": ["config/*.xml", "config/*.yaml", "assistant/days/*.yaml", "manipulation/checkpoints/*/*", "models/weights/*/*", "models/data/*"]},
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/" + PACKAGE]),
        ("share/" + PACKAGE, ["package.xml"]),
        ("share/" + PACKAGE + "/launch", glob("launch/*.launch.py")),
        ("share/" + PACKAGE + "/msg", glob("msg/*.msg")),
        ("share/" + PACKAGE + "/srv", glob("srv/*.srv")),
        ("share/" + PACKAGE + "/action", glob("action/*.action")),
        ("share/" + PACKAGE + "/maps", glob("maps/*.yaml") + glob("maps/*.pgm")),
        ("share/" + PACKAGE + "/viz", glob("viz/*.rviz")),
        ("share/" + PACKAGE + "/viz/layouts", glob("viz/layouts/*.json")),
    ],
    install_requires=["setuptools"],
    # sharded evaluations on a Dask cluster (cluster:=dask): pip install .[cluster] (pins: requirements-cluster.txt)
    extras_require={"cluster": ["dask==2026.8.0", "distributed==2026.8.0"]},
    zip_safe=False,
    maintainer="personal developers",
    maintainer_email="dev@personal.invalid",
    description="ROS 2 stack for personalized embodied agents",
    license="Apache-2.0",
    entry_points={
        "console_scripts": ["personal = personal.cli:main"]
        + [f"{name} = {target}" for name, target in NODES.items()],
    },
)

"""The simulator's ROS nodes: ``bridge_node`` (the sim bridge) and ``locobot_double`` (a LoCoBot
stand-in). The simulator itself (backends, renderer, sensor model) is the library's
``personal.sim``; this package sits on the top floor and may import ``nodes`` helpers."""
from personal.stacks import enable_stack_dumps

enable_stack_dumps()  # as every node process (nodes/__init__.py): stacks on SIGUSR1

"""The simulator's ROS nodes: ``bridge_node`` (the sim bridge) and ``locobot_double`` (a LoCoBot
stand-in). The simulator itself (backends, renderer, sensor model) is the library's
``personal.sim``; this package sits on the top floor and may import ``nodes`` helpers."""

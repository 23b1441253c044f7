"""The assistant: long tasks on one home's memory (ROS 2 actions in nodes/assistant_node.py)."""

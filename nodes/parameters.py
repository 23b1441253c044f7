"""Declare a node's parameters from a table kept as data in the library module the node calls:
``{name: (default, description)}``, so names, defaults and descriptions are read (and tested) without rclpy."""
from __future__ import annotations

from rclpy.node import Node


def declare_parameters(node: Node, table: dict[str, tuple]) -> dict:
    """Declare every parameter of ``table`` with its description; return {name: value}."""
    from rcl_interfaces.msg import ParameterDescriptor

    return {name: node.declare_parameter(name, default, ParameterDescriptor(description=description)).value
            for name, (default, description) in table.items()}

"""The one way every node process starts, spins and stops (used by each node's ``main``), and
the one way every node subscribes to a topic.

``run_node(Factory)`` spins until Ctrl-C or the launcher's SIGINT; ``until`` makes it spin
until the node says it is done; ``exit_code`` turns the node's result into the process exit
status (130 on Ctrl-C), which is what a graph's required node reports to the runner.

``subscribe(node, MsgType, topic, callback, qos)`` is how every node in nodes/ and sim_bridge/
subscribes (callbacks receive the typed message): the single place where a guard around all
subscription callbacks belongs.
"""
from __future__ import annotations

from typing import Callable, TypeVar

import rclpy
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node

N = TypeVar("N", bound=Node)
M = TypeVar("M")


def subscribe(node: Node, msg_type: type[M], topic: str, callback: Callable[[M], None], qos, **kwargs):
    """``node.create_subscription`` for every subscription of the project's nodes (see above)."""
    return node.create_subscription(msg_type, topic, callback, qos, **kwargs)


def run_node(factory: Callable[[], N], args=None, until: Callable[[N], bool] | None = None,
             exit_code: Callable[[N], int | None] | None = None,
             on_exit: Callable[[N], None] | None = None) -> None:
    rclpy.init(args=args)
    node: N | None = None
    code: int | None = None
    try:
        node = factory()
        if until is None:
            rclpy.spin(node)
        else:
            while rclpy.ok() and not until(node):
                rclpy.spin_once(node, timeout_sec=0.1)
        if exit_code is not None:
            code = exit_code(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        code = 130 if exit_code is not None else None
    finally:
        if node is not None:
            if on_exit is not None:
                on_exit(node)
            node.destroy_node()
        rclpy.try_shutdown()
    if code is not None:
        raise SystemExit(code)


def run_until_exit_code(factory: Callable[[], N], args=None) -> None:
    """For nodes that set ``self.exit_code`` when their work is done (evaluators, planners)."""
    run_node(factory, args, until=lambda n: n.exit_code is not None,
             exit_code=lambda n: n.exit_code if n.exit_code is not None else 1)

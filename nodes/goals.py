"""The client side of an action goal, robust to a lost message: its request (``send_goal``) and its
result (``wait_result``); and a service call said again until answered (``call_until_answered``).

``ActionClient.wait_for_server`` returns once the client has matched the server's endpoints, but the
match need not be mutual yet: a goal request sent then can reach a server reader that has not matched
the client's writer, and Fast DDS drops it (the same race as a topic's first message, eProsima/Fast-DDS
issue 2641). rclpy's client then waits for an answer forever. ``send_goal`` says the request again under
the same goal id every ``resend_s`` until one is answered. A server that got both answers the first and
turns the second down as a duplicate (rclpy/action/server.py: ``goal_exists``); the first answer wins.
"""
from __future__ import annotations

import time
import uuid
from typing import Callable

from rclpy.node import Node
from rclpy.task import Future

GOAL_RESEND_S = 5.0


def send_goal(node: Node, client, goal, feedback_callback: Callable | None = None,
              resend_s: float = GOAL_RESEND_S) -> Future:
    """``client.send_goal_async(goal, feedback_callback)``, said again every ``resend_s`` (on a timer of
    ``node``, the client's node) until the server answers. The returned future completes with the
    first goal handle answered, accepted or not."""
    from unique_identifier_msgs.msg import UUID

    goal_id = UUID(uuid=list(uuid.uuid4().bytes))
    return _until_answered(node, lambda: client.send_goal_async(goal, feedback_callback, goal_uuid=goal_id), resend_s)


def call_until_answered(node: Node, client, request, resend_s: float = GOAL_RESEND_S) -> Future:
    """``client.call_async(request)``, said again every ``resend_s`` until one call is answered: only
    for a request that is safe to repeat (``episode/reset`` before a run starts; ``episode/load`` under
    one request id, which the bridge answers once). Cancel the returned future to stop saying it."""
    return _until_answered(node, lambda: client.call_async(request), resend_s)


def _until_answered(node: Node, send_once: Callable[[], Future], resend_s: float) -> Future:
    """A future of the first answer to ``send_once()``, which a timer of ``node`` calls again every
    ``resend_s`` until that future is done (answered or cancelled)."""
    answered = Future()

    def first_answer(sent: Future) -> None:
        if not answered.done():
            answered.set_result(sent.result())

    def send() -> None:
        if not answered.done():
            send_once().add_done_callback(first_answer)

    timer = node.create_timer(resend_s, send)
    answered.add_done_callback(lambda _: node.destroy_timer(timer))
    send()
    return answered


def wait_result(node, handle, retry_after_s: float = 2.0, spin=None, between=None):
    """The goal's result, asked again while the goal is already over but no result came. A result
    response is lost when the goal ends before the server's result writer has matched this client's
    reader (CI, under load: the CLI then waited forever). The status topic is transient-local, so
    the terminal status still arrives; the server keeps results (result_timeout), so asking again
    is answered. ``between`` runs on every spin (a caller's cancel logic)."""
    import rclpy
    from action_msgs.msg import GoalStatus

    terminal = (GoalStatus.STATUS_SUCCEEDED, GoalStatus.STATUS_CANCELED, GoalStatus.STATUS_ABORTED)
    spin = spin or (lambda: rclpy.spin_once(node, timeout_sec=0.05))
    future, over_since = handle.get_result_async(), None
    while not future.done():
        if between is not None:
            between()
        spin()
        if handle.status not in terminal:
            continue
        now = time.monotonic()
        over_since = over_since or now
        if now - over_since > retry_after_s:
            future, over_since = handle.get_result_async(), now
    return future.result()

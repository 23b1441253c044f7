"""The client side of an action goal, robust to a lost message: its request (``send_goal``) and its
result (``wait_result``); and a service call said again until answered (``call_until_answered``).

``ActionClient.wait_for_server`` returns once the client has matched the server's endpoints, but the
match need not be mutual yet: a goal request sent then can reach a server reader that has not matched
the client's writer, and Fast DDS drops it (the same race as a topic's first message, eProsima/Fast-DDS
issue 2641). rclpy's client then waits for an answer forever. ``send_goal`` says the request again under
the same goal id every ``resend_s`` until one is answered. A server that got both answers the first and
turns the second down as a duplicate (rclpy/action/server.py: ``goal_exists``); the first answer wins.
The answer can be lost too (the server's response writer not yet matched): then the only answer is the
duplicate's rejection, and the action's status topic, which lists the goals the server holds, says the
goal was accepted.
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
    first goal handle answered accepted, or with a rejection that is not a duplicate's: a resent request
    turned down while the server's status topic lists the goal id means the first request was accepted
    and its answer lost (CI, once: the goal ran and sent feedback, the client saw "rejected"); the
    future then completes with a handle for that goal, accepted."""
    from rclpy.action.client import ClientGoalHandle
    from unique_identifier_msgs.msg import UUID

    goal_id = UUID(uuid=list(uuid.uuid4().bytes))
    held = _StatusWatch(node, client, bytes(goal_id.uuid))
    answered, sends, reached = Future(), [], []

    def on_answer(sent: Future, nth: int) -> None:
        handle = sent.result()
        reached.append(nth)  # the server answers: saying it again would only be turned down
        if answered.done():
            return
        if handle.accepted or nth == 1:  # the first request cannot be anyone's duplicate
            answered.set_result(handle)
        else:
            held.then(lambda listed: answered.done() or answered.set_result(
                ClientGoalHandle(client, goal_id, _accepted_copy(handle)) if listed else handle), resend_s)

    def send() -> None:
        if not answered.done() and not reached:
            sends.append(client.send_goal_async(goal, feedback_callback, goal_uuid=goal_id))
            nth = len(sends)
            sends[-1].add_done_callback(lambda sent: on_answer(sent, nth))

    timer = node.create_timer(resend_s, send)
    answered.add_done_callback(lambda _: (node.destroy_timer(timer), held.close()))
    send()
    return answered


def _accepted_copy(rejected):
    """The goal response of a rejected rclpy ``ClientGoalHandle``, said accepted (the server's own
    answer type; rclpy keeps it as ``_goal_response`` from Humble to Kilted)."""
    response = type(rejected._goal_response)()
    response.accepted, response.stamp = True, rejected._goal_response.stamp
    return response


class _StatusWatch:
    """Watches the action's status topic (transient local: the server's latest list) for one goal id."""

    def __init__(self, node: Node, client, goal_uuid: bytes) -> None:
        from action_msgs.msg import GoalStatusArray
        from rclpy.qos import qos_profile_action_status_default

        from nodes.lifecycle import subscribe

        self.node, self.goal_uuid, self.listed, self._waiting, self._timers = node, goal_uuid, False, [], []
        name = getattr(client, "_action_name", None)  # rclpy keeps the name there (Humble to Kilted)
        self._sub = None if name is None else subscribe(  # with the guard every subscription has
            node, GoalStatusArray, f"{name}/_action/status", self._on_status, qos_profile_action_status_default)

    def _on_status(self, msg) -> None:
        if any(bytes(s.goal_info.goal_id.uuid) == self.goal_uuid for s in msg.status_list):
            self.listed = True
            waiting, self._waiting = self._waiting, []
            for decide in waiting:
                decide(True)

    def then(self, decide: Callable[[bool], object], within_s: float) -> None:
        """``decide(True)`` once the goal id is listed, or ``decide(False)`` after ``within_s``."""
        if self.listed or self._sub is None:
            decide(self.listed)
            return
        self._waiting.append(decide)

        def give_up() -> None:
            self.node.destroy_timer(timer)
            self._timers.remove(timer)
            if decide in self._waiting:
                self._waiting.remove(decide)
                decide(False)

        timer = self.node.create_timer(within_s, give_up)
        self._timers.append(timer)

    def close(self) -> None:
        for timer in self._timers:
            self.node.destroy_timer(timer)
        self._timers.clear()
        if self._sub is not None:
            self.node.destroy_subscription(self._sub)
            self._sub = None


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

"""The one way every node process starts, spins and stops (used by each node's ``main``), and
the one way every node subscribes to a topic or offers a service.

``run_node(Factory)`` spins until Ctrl-C, SIGTERM or the launcher's SIGINT; ``until`` makes it
spin until the node says it is done; ``exit_code`` turns the node's result into the process exit
status (130 on Ctrl-C, 143 on SIGTERM), which is what a graph's required node reports to the runner.
A node module run as a program (``Factory`` defined in ``__main__``) then ends its process without
the interpreter's module teardown (``personal.exit_codes.exit_process``).
SIGTERM ends the process even while a callback is blocked (say, waiting on a child graph): it
raises in the main thread, so ``finally`` blocks run and children are stopped.

``subscribe(node, MsgType, topic, callback, qos)`` is how every node in nodes/ and sim_bridge/
subscribes (callbacks receive the typed message), and ``serve(node, SrvType, name, callback)``
how every node offers a service (``serve_action`` an action; ``wait_until`` is the bounded wait of
an async callback). Both wrap the callback in the one guard of the project
(docs/reliability.md): an exception raised by a callback drops that message (or answers that
request with ``success = False``), is logged at warning level with the topic and the reason,
and the node keeps running. ``dropped_messages(node)`` counts what was dropped, per topic.
"""
from __future__ import annotations

import signal
import time
import traceback
from typing import Callable, TypeVar

import rclpy
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node

from personal.exit_codes import exit_process

N = TypeVar("N", bound=Node)
M = TypeVar("M")

LOG_FIRST = 3  # warnings logged per topic before throttling
LOG_EVERY_S = 5.0  # then at most one warning per topic this often, with the count in between


class _Guard:
    """Per-node record of dropped messages and the throttle of their warnings."""

    def __init__(self, node: Node) -> None:
        self.node = node
        self.dropped: dict[str, int] = {}
        self.last_reason: dict[str, str] = {}
        self._logged_at: dict[str, float] = {}
        self._unlogged: dict[str, int] = {}

    def wrap(self, where: str, name: Callable[[], str], callback: Callable, on_error: Callable | None = None):
        def guarded(*args):
            try:
                return callback(*args)
            except Exception as exc:  # noqa: BLE001 - the node must survive any message
                self._record(where, name(), exc)
                return on_error(*args, exc) if on_error is not None else None

        return guarded

    def _record(self, where: str, topic: str, exc: Exception) -> None:
        reason = f"{type(exc).__name__}: {exc}"
        self.dropped[topic] = self.dropped.get(topic, 0) + 1
        self.last_reason[topic] = reason
        now = time.monotonic()
        if self.dropped[topic] > LOG_FIRST and now - self._logged_at.get(topic, 0.0) < LOG_EVERY_S:
            self._unlogged[topic] = self._unlogged.get(topic, 0) + 1
            return
        also = self._unlogged.pop(topic, 0)
        self._logged_at[topic] = now
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        self.node.get_logger().warning(
            f"{where} '{topic}': dropped a {'message' if where == 'topic' else 'request'} ({reason}; at "
            f"{frame.filename.rsplit('/', 1)[-1]}:{frame.lineno})"
            + (f"; {also} more dropped since the last warning" if also else ""))


def _guard(node: Node) -> _Guard:
    guard = getattr(node, "_personal_guard", None)
    if guard is None:
        guard = _Guard(node)
        node._personal_guard = guard
    return guard


def subscribe(node: Node, msg_type: type[M], topic: str, callback: Callable[[M], None], qos, **kwargs):
    """``node.create_subscription`` with the guard (see above) around ``callback``."""
    holder: list = []
    name = lambda: holder[0].topic_name if holder else topic  # noqa: E731 - the resolved name, once known
    sub = node.create_subscription(msg_type, topic, _guard(node).wrap("topic", name, callback), qos, **kwargs)
    holder.append(sub)
    return sub


def serve(node: Node, srv_type, name: str, callback: Callable, **kwargs):
    """``node.create_service`` with the guard: a request whose callback raises is answered with an
    empty response (``success = False`` and the reason in ``message`` where the type has them)."""

    def failed(request, response, exc):
        if hasattr(response, "success"):
            response.success = False
        if hasattr(response, "message"):
            response.message = f"{type(exc).__name__}: {exc}"
        return response

    holder: list = []
    resolved = lambda: getattr(holder[0], "service_name", name) if holder else name  # noqa: E731 - resolved where rclpy says
    srv = node.create_service(srv_type, name, _guard(node).wrap("service", resolved, callback, failed), **kwargs)
    holder.append(srv)
    return srv


def serve_action(node: Node, action_type, name: str, execute: Callable, **kwargs):
    """An ``rclpy.action.ActionServer`` with the guard: every goal is accepted, every cancel request
    too (``execute`` decides when to honour it); an ``execute`` coroutine that raises aborts its goal
    with the reason in the result's ``why`` / ``message`` (and ``success = False``), logged like a
    dropped message, and the server keeps serving."""
    from rclpy.action import ActionServer, CancelResponse, GoalResponse

    async def guarded(handle):
        try:
            return await execute(handle)
        except Exception as exc:  # noqa: BLE001 - one goal fails, not the node
            _guard(node)._record("action", name, exc)
            if handle.is_active:
                handle.abort()
            result = action_type.Result()
            for text in ("why", "message"):
                if hasattr(result, text):
                    setattr(result, text, f"{type(exc).__name__}: {exc}")
            if hasattr(result, "success"):
                result.success = False
            return result

    return ActionServer(node, action_type, name, execute_callback=guarded,
                        goal_callback=lambda goal: GoalResponse.ACCEPT,
                        cancel_callback=lambda handle: CancelResponse.ACCEPT, **kwargs)


async def sleep(node: Node, seconds: float) -> None:
    """Wait in an async callback without blocking the executor (a one-shot timer)."""
    from rclpy.task import Future

    done = Future()

    def fire():
        timer.cancel()
        if not done.done():
            done.set_result(None)

    timer = node.create_timer(seconds, fire)
    await done
    node.destroy_timer(timer)


async def wait_until(node: Node, predicate: Callable[[], M], timeout_s: float, period_s: float = 0.05) -> M | None:
    """Poll ``predicate`` until it returns something truthy (returned) or ``timeout_s`` passes
    (``None``): the bounded wait of every call into another node; the caller names what did not answer."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value or time.monotonic() > deadline:
            return value or None
        await sleep(node, period_s)


def dropped_messages(node: Node) -> dict[str, int]:
    """Messages (and service requests) dropped by the guard so far, by resolved topic name."""
    return dict(_guard(node).dropped)


class Terminated(Exception):
    """SIGTERM, raised in the main thread (see the module docstring)."""


def _raise_terminated(signum, frame):
    raise Terminated()


def _stop(node: Node | None, on_exit, previous) -> None:
    signal.signal(signal.SIGTERM, _raise_terminated)  # a second SIGTERM during clean-up ends it too
    try:
        if node is not None:
            if on_exit is not None:
                on_exit(node)
            node.destroy_node()
    finally:
        rclpy.try_shutdown()
        signal.signal(signal.SIGTERM, previous)


def run_node(factory: Callable[[], N], args=None, until: Callable[[N], bool] | None = None,
             exit_code: Callable[[N], int | None] | None = None,
             on_exit: Callable[[N], None] | None = None) -> None:
    # before rclpy.init, so rclpy's own handler (which wakes the executor) chains to this one
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    rclpy.init(args=args)
    node: N | None = None
    code: int | None = None
    try:
        node = factory()
        if until is None:
            rclpy.spin(node)
        else:
            # one executor for the whole loop: rclpy.spin_once(node) adds the node to the global executor
            # and removes it again for every single callback (measurable in a lock-step loop)
            from rclpy.executors import SingleThreadedExecutor

            executor = SingleThreadedExecutor()
            executor.add_node(node)
            while rclpy.ok() and not until(node):
                if node.executor is executor:
                    executor.spin_once(timeout_sec=0.1)
                else:  # something spun the node on another executor meanwhile
                    rclpy.spin_once(node, timeout_sec=0.1)
            executor.remove_node(node)
        if exit_code is not None:
            code = exit_code(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        code = 130 if exit_code is not None else None
    except Terminated:
        code = 143
    except Exception:
        if rclpy.ok():
            raise
        # a SIGINT shut rcl down under the node (rclpy's handler runs first): an rcl call failed
        # ("the given context is not valid") before Python's KeyboardInterrupt came; an interrupt
        code = 130 if exit_code is not None else None
    finally:
        try:
            _stop(node, on_exit, previous)
        except KeyboardInterrupt:  # that KeyboardInterrupt, raised at the clean-up's first signal call
            rclpy.try_shutdown()
            signal.signal(signal.SIGTERM, previous)
            code = 130 if exit_code is not None else None
    if getattr(factory, "__module__", None) == "__main__":  # the node's own process (python -m <node module>)
        exit_process(code or 0)
    if code is not None:
        raise SystemExit(code)


def run_until_exit_code(factory: Callable[[], N], args=None) -> None:
    """For nodes that set ``self.exit_code`` when their work is done (evaluators, planners)."""
    run_node(factory, args, until=lambda n: n.exit_code is not None,
             exit_code=lambda n: n.exit_code if n.exit_code is not None else 1)

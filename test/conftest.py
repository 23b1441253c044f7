"""Session-wide ROS test setup and fixtures.

The environment is set at import time, before any test module imports rclpy:
- a ROS_DOMAIN_ID unique to this pytest session (1..101, claimed with a lock file, starting
  from the pid) so concurrent sessions on one machine do not see each other; each pytest-xdist
  worker (bin/test runs two) claims its own;
- ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST and the shipped Fast DDS shared-memory
  profile (personal.ros_env);
- ROS_PYTHON_CHECK_FIELDS=1: the generated message classes check every field's type and range
  (in the test process and in the nodes it starts).

Fixtures:
- ``ros_context``: an rclpy Context, a node factory and an executor spinning in a
  thread that is shut down *and joined* at teardown (an unjoined spin thread aborts
  the interpreter with exit code 134).
- ``run_node``: start a node module as a subprocess with --ros-args for the duration
  of a test; stopped (SIGINT, then SIGTERM/SIGKILL) at teardown.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from personal.ros_env import ros_environment

ROOT = Path(__file__).resolve().parents[1]

# A suite started as a bare `cmd &` job of a non-interactive shell inherits SIGINT ignored, and every process
# it starts would too (ignored signals survive exec): the tests that stop a graph or a node with SIGINT, as a
# terminal's Ctrl-C does, would then see it ignored. Give this process Python's own SIGINT handling (its
# children then start with the default) and no blocked signals. (`personal launch` resets its nodes' signals
# itself: test_runner.py checks that with SIGINT ignored in the runner.)
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
signal.pthread_sigmask(signal.SIG_SETMASK, [])


def _claim_domain_id() -> int:
    """A domain id in 1..101 that no other pytest session on this host holds: start from the
    pid and take the first id whose lock file we can flock (held until this process exits)."""
    import fcntl

    lock_dir = Path(tempfile.gettempdir()) / "personal_ros_domains"
    lock_dir.mkdir(exist_ok=True)
    for k in range(101):
        candidate = 1 + (os.getpid() + k) % 101
        handle = open(lock_dir / f"{candidate}.lock", "w")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            continue
        _DOMAIN_LOCK.append(handle)  # keep it open (and locked) for the whole session
        return candidate
    return 1 + os.getpid() % 101


_DOMAIN_LOCK: list = []
# The processes a test starts inherit the session's id (nodes never import this file). A pytest process
# whose parent claimed the id it inherits is a pytest-xdist worker (PYTEST_XDIST_WORKER, set before this file
# loads), or a pytest session that a test started: it claims its own, so that two workers' graphs, or a
# nested session's, never share a domain.
_INHERITED_FROM_PARENT = os.environ.get("PERSONAL_TEST_DOMAIN_PID") == str(os.getppid())
if "PERSONAL_TEST_DOMAIN_ID" not in os.environ or _INHERITED_FROM_PARENT:
    os.environ["PERSONAL_TEST_DOMAIN_ID"] = str(_claim_domain_id())
    os.environ["PERSONAL_TEST_DOMAIN_PID"] = str(os.getpid())
os.environ["ROS_DOMAIN_ID"] = os.environ["PERSONAL_TEST_DOMAIN_ID"]
# generated message classes check field types and ranges only with this set (read at import)
os.environ["ROS_PYTHON_CHECK_FIELDS"] = "1"
os.environ.update(ros_environment({**os.environ, "ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}))
ROS_DOMAIN_ID = int(os.environ["ROS_DOMAIN_ID"])


def only_run(out_root) -> Path:
    """The one run folder an evaluation made under ``out_root`` (its ``.run.lock`` file is not one)."""
    runs = [p for p in Path(out_root).iterdir() if p.is_dir()]
    assert len(runs) == 1, f"expected one run folder in {out_root}, found {[p.name for p in runs]}"
    return runs[0]


# Every wait of a test (wait_for, LoggedProcess.wait_for_log) is multiplied by this: bin/test sets 2 when two
# workers share the 2 cores, where a node's start-up or a discovery round can take twice as long. A wait ends
# as soon as its condition holds, so a larger bound costs time only where a test fails.
TIMEOUT_SCALE = float(os.environ.get("PERSONAL_TEST_TIMEOUT_SCALE", "1") or 1)


def pytest_collection_modifyitems(config, items):
    """A test's pytest-timeout mark (a hang guard) is scaled as its waits are, so that a doubled wait never
    outlasts it: a two-worker run once failed on the file's 90 s guard inside a 120 s wait."""
    if TIMEOUT_SCALE == 1:
        return
    for item in items:
        mark = item.get_closest_marker("timeout")
        seconds = mark and (mark.args[0] if mark.args else mark.kwargs.get("timeout"))
        if seconds:
            item.add_marker(pytest.mark.timeout(float(seconds) * TIMEOUT_SCALE), append=False)


def wait_for(predicate: Callable[[], Any], timeout: float = 10.0, period: float = 0.02) -> Any:
    """Poll ``predicate`` until truthy (at most ``timeout`` x TIMEOUT_SCALE s); return its value, or raise
    TimeoutError."""
    timeout *= TIMEOUT_SCALE
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"condition not met within {timeout:.1f} s")
        time.sleep(period)


def cancel_goal(handle, timeout: float = 30.0):
    """Cancel an accepted action goal and wait for its result: the goal must end CANCELED; returns
    the result message."""
    from action_msgs.msg import GoalStatus

    cancel = handle.cancel_goal_async()
    wait_for(cancel.done, 20)
    done = handle.get_result_async()
    wait_for(done.done, timeout)
    assert done.result().status == GoalStatus.STATUS_CANCELED, done.result().status
    return done.result().result


class RosTestContext:
    """An rclpy Context with nodes spun by a background executor thread."""

    def __init__(self, domain_id: int = ROS_DOMAIN_ID) -> None:
        import rclpy
        from rclpy.context import Context
        from rclpy.executors import SingleThreadedExecutor

        self.rclpy = rclpy
        self.domain_id = domain_id
        self.context = Context()
        rclpy.init(context=self.context, domain_id=domain_id)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.nodes: list = []
        self._client_nodes: dict[int, object] = {}  # id(ActionClient) -> its node
        self.error: str = ""  # the traceback that ended the spin thread before close()
        self._closing = False
        self._thread = threading.Thread(target=self._spin, name="ros_context_spin", daemon=True)
        self._thread.start()

    def _spin(self) -> None:
        try:
            self.executor.spin()
        except Exception:  # noqa: BLE001
            if self._closing:  # executor shut down under us at teardown
                return
            # a callback of a node in this process (a double, a test subscriber) raised: every node here
            # stops with it, so say so (it once looked like a hung graph: nothing published any more)
            import traceback

            self.error = traceback.format_exc()
            print(f"ros_context_spin died:\n{self.error}", file=sys.stderr, flush=True)

    def make_node(self, name: str, **kwargs):
        node = self.rclpy.create_node(name, context=self.context, **kwargs)
        self.nodes.append(node)
        self.executor.add_node(node)
        return node

    def action_client(self, node_name: str, action_type, name: str):
        """An ActionClient on a new node of this context. The node joins the spinning executor only once
        the client is built: rclpy's ActionClient.__init__ adds itself to its node before it has its
        lock (rclpy/action/client.py), so a spin that meets it half-built dies with AttributeError
        '_lock' (seen once in CI, then every action in the test timed out)."""
        from rclpy.action import ActionClient

        node = self.rclpy.create_node(node_name, context=self.context)
        client = ActionClient(node, action_type, name)
        self.nodes.append(node)
        self.executor.add_node(node)
        self._client_nodes[id(client)] = node
        return client

    def node_of(self, client):
        """The node an ``action_client`` was built on."""
        return self._client_nodes[id(client)]

    def send_goal(self, client, goal, feedback: list | None = None, timeout: float = 20.0):
        """A goal through ``client`` (from ``action_client``) as the project's clients send it
        (nodes/goals.py: said again until answered), its feedback appended to ``feedback``; the goal
        handle, asserted accepted."""
        from nodes.goals import send_goal

        on_feedback = None if feedback is None else (lambda m: feedback.append(m.feedback))
        sent = send_goal(self.node_of(client), client, goal, on_feedback)
        wait_for(sent.done, timeout)
        assert sent.result().accepted, f"goal {goal} rejected"
        return sent.result()

    def add_node(self, node):
        self.nodes.append(node)
        self.executor.add_node(node)
        return node

    def close(self) -> None:
        self._closing = True
        self.executor.shutdown(timeout_sec=5.0)
        self._thread.join(timeout=10.0)
        for node in self.nodes:
            node.destroy_node()
        self.rclpy.try_shutdown(context=self.context)
        if self.error:
            raise AssertionError(f"the test's ROS executor thread died while the test ran:\n{self.error}")


@pytest.fixture
def ros_context():
    pytest.importorskip("rclpy")
    ctx = RosTestContext()
    try:
        yield ctx
    finally:
        ctx.close()


@pytest.fixture
def private_ros_context():
    """A ``ros_context`` on a ROS domain of its own (claimed for this test only), and the environment
    for the processes it starts: ``(ctx, env)``. For end-to-end tests whose topics (``/locobot/...``)
    other tests' graphs use too — a graph left over from an earlier test in the session's shared domain
    could otherwise answer, or publish TF, in this one."""
    pytest.importorskip("rclpy")
    from personal.ros_env import claim_domain_id

    domain, lock = claim_domain_id()
    ctx = RosTestContext(domain_id=domain)
    try:
        yield ctx, {**os.environ, "ROS_DOMAIN_ID": str(domain), "PERSONAL_TEST_DOMAIN_ID": str(domain)}
    finally:
        ctx.close()
        lock.close()


class LoggedProcess:
    """A process in its own process group, its output in a log file; ``stop`` sends SIGINT, then
    SIGTERM, then SIGKILL to the group (what Ctrl-C, the launcher and the kernel would do)."""

    def __init__(self, cmd: list[str], name: str, cwd=ROOT, env: dict | None = None) -> None:
        self.name = name
        self._log = tempfile.NamedTemporaryFile(prefix=f"{name}_", suffix=".log", delete=False)
        self.proc = subprocess.Popen(cmd, cwd=cwd, env=dict(os.environ) if env is None else env, stdout=self._log,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        _TEST_PROCESSES.append(self)

    def log(self) -> str:
        return Path(self._log.name).read_text(errors="replace")

    def wait_for_log(self, text: str, timeout: float = 20.0) -> str:
        try:
            wait_for(lambda: text in self.log() or self.proc.poll() is not None, timeout)
        except TimeoutError:
            self.dump_stacks()
            raise AssertionError(f"{self.name} did not log {text!r} within {timeout * TIMEOUT_SCALE:g} s:\n"
                                 f"{self.log()[-12000:]}") from None
        out = self.log()
        if text not in out:
            raise AssertionError(f"{self.name} exited ({self.proc.returncode}) before logging {text!r}:\n{out}")
        return out

    def dump_stacks(self, wait_s: float = 2.0) -> bool:
        """Ask the process (a node, or a graph runner, which asks its nodes) for its Python stacks
        into its log (personal/stacks.py): what a hung test's log then says."""
        import faulthandler

        from personal.stacks import dump_stacks

        # this test process's own threads too (in-process doubles spin here): into the captured stderr
        faulthandler.dump_traceback(file=sys.__stderr__, all_threads=True)
        if not dump_stacks([self.proc.pid]):
            return False
        time.sleep(wait_s)
        return True

    def stop(self, timeout: float = 8.0) -> int:
        if self.proc.poll() is None:
            for sig, wait in ((signal.SIGINT, timeout), (signal.SIGTERM, 3.0), (signal.SIGKILL, 3.0)):
                try:
                    os.killpg(self.proc.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    self.proc.wait(wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
        self._log.close()
        return self.proc.returncode

    def remove_log(self) -> None:
        os.unlink(self._log.name)


class NodeProcess(LoggedProcess):
    """A node module running as a subprocess; output goes to a log file."""

    def __init__(self, module: str, name: str, parameters: dict | None, remappings: list | None, namespace: str = ""):
        from personal.runner import node_command

        cmd = node_command(module, name, namespace=namespace, parameters=parameters or {}, remappings=remappings or [])
        super().__init__(cmd, name)


# The processes the running test started (LoggedProcess and NodeProcess), for its failure report.
_TEST_PROCESSES: list[LoggedProcess] = []
FAILURE_LOG_TAIL = 6000  # characters of each process's log in a failed test's report


@pytest.fixture(autouse=True)
def _processes_of_this_test():
    _TEST_PROCESSES.clear()
    yield
    _TEST_PROCESSES.clear()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed test's report carries the log of every process it started, and the Python stacks of those
    still running. A test that only waits (``wait_for`` on a topic or an action's feedback, or a
    pytest-timeout) otherwise says nothing about its nodes: their logs were deleted at teardown, and a stall
    seen once in CI could not be diagnosed."""
    report = yield
    if report.when == "call" and report.failed and _TEST_PROCESSES:
        running = [p for p in _TEST_PROCESSES if p.proc.poll() is None]
        if running:
            from personal.stacks import dump_stacks

            if dump_stacks([p.proc.pid for p in running]):
                time.sleep(2.0)  # faulthandler writes from a signal handler: give it a moment
        for proc in _TEST_PROCESSES:
            state = "running" if proc.proc.poll() is None else f"exited {proc.proc.returncode}"
            report.sections.append((f"log of {proc.name} (pid {proc.proc.pid}, {state})",
                                    proc.log()[-FAILURE_LOG_TAIL:]))
    return report


@pytest.fixture
def run_node():
    procs: list[NodeProcess] = []

    def start(module: str, name: str, parameters: dict | None = None, remappings: list | None = None, namespace: str = ""):
        proc = NodeProcess(module, name, parameters, remappings, namespace)
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        proc.stop()
        proc.remove_log()


def _session_processes() -> dict[int, str]:
    """Processes other than this one that carry this session's domain id in their environment (so
    were started by it, directly or not): pid -> command line."""
    tag = f"PERSONAL_TEST_DOMAIN_ID={os.environ['PERSONAL_TEST_DOMAIN_ID']}".encode()
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if tag in (entry / "environ").read_bytes().split(b"\0"):
                found[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # gone, or not ours to read
            continue
    return found


_OUTLIVED: list[str] = []  # "<test id>: <pid> <command>" for processes a test left running


@pytest.fixture(autouse=True)
def _report_processes_a_test_leaves():
    """Diagnostics for cross-talk between tests: a process (a node, a graph) that a test started and that
    is still alive after it is listed in the run's summary ("processes left running")."""
    if not Path("/proc/self/environ").exists():
        yield
        return
    before = set(_session_processes())
    yield
    # multiprocessing's resource tracker is one per process by design and ends with this one: not a leak
    left = {pid: cmd for pid, cmd in _session_processes().items()
            if pid not in before and "multiprocessing.resource_tracker" not in cmd}
    if left:
        test = os.environ.get("PYTEST_CURRENT_TEST", "?").rsplit(" ", 1)[0]
        _OUTLIVED.extend(f"{test}: {pid} {cmd[:160]}" for pid, cmd in sorted(left.items()))


# Test files that start whole ROS graphs: the runner's (`personal launch`), or three or more node processes in
# one test. Under two workers (bin/test) one worker runs all of them, one at a time, so two graphs never share
# the 2 cores: two graph-heavy files at once timed out five graph tests in one of three full runs
# (a fresh clone of 559885a, 2026-12-07). Files with one or two node processes per test stay units of their own.
GRAPH_TEST_FILES = frozenset(f"test/test_{name}.py" for name in (
    "assistant_day", "assistant_find_verify", "explore_all_episodes", "graph_faults", "habitat_bridge_e2e",
    "locobot_double", "map_file_faults", "mapping_node", "pan_graph", "pog_eval_graph", "pog_replay", "shard",
    "shard_aiv", "shard_home", "sim_bridge", "typed_graph", "verification_graph"))


def xdist_scope(nodeid: str) -> str:
    """The unit of work a pytest-xdist worker takes under --dist loadfile: the test's file, as in
    pytest-xdist's own LoadFileScheduling (a module's fixtures are built once, its tests run in order),
    except that every file of GRAPH_TEST_FILES is one unit, "graph"."""
    path = nodeid.split("::", 1)[0]
    return "graph" if path in GRAPH_TEST_FILES else path


def pytest_xdist_make_scheduler(config, log):
    """--dist loadfile with the graph files kept together (xdist_scope). (pytest-xdist's own
    --dist loadgroup would need xdist_group marks, but xdist 3.8 names the group in ``item._nodeid``,
    which pytest 9 no longer reads.)"""
    if config.getoption("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class GraphAwareScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return xdist_scope(nodeid)

    return GraphAwareScheduling(config, log)


def pytest_sessionfinish(session, exitstatus):
    """Remove Fast DDS shm segments left by killed processes (cheap; skipped if fastdds is absent). Once,
    by the controller when the workers are done: a worker that finished first would clean while the other
    one's graphs still run."""
    fastdds = Path(sys.executable).parent / "fastdds"
    if fastdds.exists() and "PYTEST_XDIST_WORKER" not in os.environ:
        try:
            subprocess.run([str(fastdds), "shm", "clean"], capture_output=True, timeout=20, env=ros_environment())
        except (OSError, subprocess.TimeoutExpired):
            pass


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """The fuzz figures of test/test_fuzz_nodes.py (messages per node, garbage frames, dropped by the
    guard, crashes), when those tests ran; also written to $PERSONAL_FUZZ_FIGURES if set."""
    import json

    if _OUTLIVED:
        terminalreporter.section("processes left running after the test that started them")
        for line in _OUTLIVED:
            terminalreporter.write_line(line)
    try:
        from fuzz_support import FIGURES, figures_table
    except ImportError:
        return
    if not FIGURES:
        return
    terminalreporter.section("fuzz figures (issue 15)")
    for line in figures_table(FIGURES):
        terminalreporter.write_line(line)
    if os.environ.get("PERSONAL_FUZZ_FIGURES"):
        Path(os.environ["PERSONAL_FUZZ_FIGURES"]).write_text(json.dumps(FIGURES, indent=1))

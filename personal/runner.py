"""Start a graph as supervised processes (``personal launch <graph>``), and child graphs.

Each node runs as ``python -m <module> --ros-args -r __node:=<name> ...`` in its own
process group, with the ROS environment of ``personal.ros_env``. Output lines are
prefixed with the node name. Ctrl-C, or the exit of a node marked ``required``, stops
every child: SIGINT, then SIGTERM, then SIGKILL, each after a timeout. The runner
returns the exit code of the required node that ended the graph (130 on Ctrl-C).

Faults (docs/reliability.md):
- A node that is not ``required`` is needed by the others: if it exits while the graph runs
  (crash, kill, bad parameters), the runner says so and stops the graph with a non-zero code
  (the node's, 128 + signal when killed, else 1) — a run never ends 0 on top of a dead node.
- Every process started here (nodes, child graphs: :func:`spawn`) gets the parent-death
  signal, so it is stopped whatever kills its parent, SIGKILL included. :func:`run_child`
  runs a child graph (``personal launch ...``) on a ROS domain of its own (:func:`child_domain`)
  and stops it when the caller is interrupted or times out.
- :func:`reclaim_shared_memory` (``fastdds shm clean``) removes the Fast DDS shared-memory
  files of processes that no longer exist; the runner calls it when a graph starts and ends.
"""
from __future__ import annotations

import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Callable, Iterable, Iterator, Mapping

import yaml

from personal.graphs import Graph, ResolvedNode
from personal.ros_env import ros_environment
from personal.stacks import STACK_SIGNAL, catches, dump_stacks

_COLOURS = ("36", "33", "35", "32", "34", "31", "96", "93", "95", "92")


def format_parameter_value(value: Any) -> str:
    """Value text for ``-p name:=value``; rcl parses it as YAML, so quote where YAML would change it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return repr(value)
    if isinstance(value, float):
        text = repr(value)  # keep a "." so YAML reads 1e-05 as a float
        return text.replace("e", ".0e") if "e" in text and "." not in text else text
    if isinstance(value, str):
        try:
            same = yaml.safe_load(value) == value
        except yaml.YAMLError:
            same = False
        return value if same and value else yaml.safe_dump(value, default_style="'").strip().removesuffix("\n...")
    if isinstance(value, (list, tuple)):
        return yaml.safe_dump(list(value), default_flow_style=True, width=1 << 30).strip()
    raise TypeError(f"unsupported parameter value {value!r} ({type(value).__name__})")


def node_command(
    module: str,
    name: str,
    namespace: str = "",
    parameters: Mapping[str, Any] | None = None,
    remappings: Iterable[tuple[str, str]] = (),
    python: str = sys.executable,
) -> list[str]:
    cmd = [python, "-u", "-m", module, "--ros-args", "-r", f"__node:={name}"]
    if namespace:
        cmd += ["-r", f"__ns:={namespace if namespace.startswith('/') else '/' + namespace}"]
    for key, value in (parameters or {}).items():
        cmd += ["-p", f"{key}:={format_parameter_value(value)}"]
    for src, dst in remappings:
        cmd += ["-r", f"{src}:={dst}"]
    return cmd


# -- secrets -------------------------------------------------------------------------------------------
#
# A parameter whose name says it is a secret never goes on a command line (``ps`` shows argv to every
# user, and the runner logs each node's start line): the runner writes it to a 0600 ROS parameter file
# in a 0700 folder of its own, passed as ``--params-file`` and removed when the graph ends. A graph
# argument that is a secret may also come from the environment, ``PERSONAL_<NAME>`` (e.g.
# ``PERSONAL_MQTT_PASSWORD``), so that it is not on the runner's own command line either.

_SECRET_SUFFIXES = ("password", "secret", "token", "api_key", "apikey")


def is_secret(name: str) -> bool:
    return name.lower().endswith(_SECRET_SUFFIXES)


def secret_env_name(name: str) -> str:
    return f"PERSONAL_{name.upper()}"


def split_secrets(parameters: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(plain, secret) parameters."""
    plain = {k: v for k, v in parameters.items() if not is_secret(k)}
    return plain, {k: v for k, v in parameters.items() if is_secret(k)}


def write_secret_params(folder: Path, node_name: str, secrets: Mapping[str, Any]) -> Path:
    """A ROS 2 parameter file (``/**: ros__parameters: {...}``) readable by this user only."""
    path = Path(folder) / f"{node_name}.params.yaml"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        yaml.safe_dump({"/**": {"ros__parameters": dict(secrets)}}, fh)
    return path


_RESET_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _die_with_parent() -> None:
    """In the child, before exec: default SIGINT / SIGTERM handling and no blocked signals, and ask
    Linux to SIGTERM it when the runner dies.

    The runner stops its nodes with SIGINT, then SIGTERM. Ignored signals and the blocked-signal
    mask survive exec, so a runner started with SIGINT ignored (a bare ``cmd &`` job of a
    non-interactive shell: bash ignores SIGINT for it) would otherwise pass that on, and its nodes
    would stop only through the SIGTERM fallback. The parent-death signal covers SIGKILL and
    crashes, where nothing else would stop processes living in their own sessions."""
    for sig in _RESET_SIGNALS:
        signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    if sys.platform.startswith("linux"):
        import ctypes

        PR_SET_PDEATHSIG = 1
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def spawn(cmd: list[str], env: Mapping[str, str] | None = None, **popen_kwargs: Any) -> subprocess.Popen:
    """Start a process that cannot outlive its parent: its own session (a terminal's Ctrl-C reaches
    the parent only, which stops it in order) and SIGTERM from the kernel when the parent dies,
    however it dies. Linux delivers that signal when the *thread* that started the child ends, so
    start long-lived children from the main thread (or a thread that lives as long)."""
    return subprocess.Popen(cmd, env=None if env is None else dict(env), start_new_session=True,
                            preexec_fn=_die_with_parent, **popen_kwargs)


def stop_process(proc: subprocess.Popen, grace_s: float = 12.0) -> int:
    """SIGTERM ``proc`` (a child runner then stops its own nodes), SIGKILL after ``grace_s``."""
    if proc.poll() is None:
        try:
            proc.terminate()
            proc.wait(grace_s)
        except subprocess.TimeoutExpired:
            proc.kill()
        except ProcessLookupError:
            pass
    return proc.wait()


def exit_status(code: int) -> int:
    """A process exit status for a Popen return code (killed by signal N -> 128 + N)."""
    return 128 - code if code < 0 else code


def describe_exit(code: int) -> str:
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


_DOMAIN_LISTENERS: list[Callable[[int], None]] = []


def watch_child_domains(callback: Callable[[int], None]) -> Callable[[], None]:
    """Call ``callback(domain_id)`` when a child graph's domain is claimed and ``callback(-1)`` when
    it ends (the POG evaluator announces them to the live view, which then subscribes there too).
    Returns the function that stops the watch: a destroyed node must not stay a listener."""
    _DOMAIN_LISTENERS.append(callback)
    return lambda: _DOMAIN_LISTENERS.remove(callback) if callback in _DOMAIN_LISTENERS else None


@contextmanager
def child_domain() -> Iterator[dict[str, str]]:
    """Environment for a child graph on a ROS_DOMAIN_ID of its own (held until the block ends),
    so its topics never reach the parent graph or another run."""
    from personal.ros_env import claim_domain_id

    domain, lock = claim_domain_id()
    for listener in _DOMAIN_LISTENERS:
        listener(domain)
    try:
        yield ros_environment({**os.environ, "ROS_DOMAIN_ID": str(domain)})
    finally:
        for listener in _DOMAIN_LISTENERS:
            listener(-1)
        lock.close()


def run_child(cmd: list[str], env: Mapping[str, str], timeout_s: float, log: Callable[[str], None] | None = None,
              keep: Callable[[str], bool] = lambda line: False) -> tuple[int, list[str]]:
    """Run a child ``personal`` command (a child graph) to its end; forward the output lines ``keep``
    selects to ``log``; return (exit status, last 40 lines). After ``timeout_s`` it is stopped, even if
    silent. If the caller is interrupted meanwhile (Ctrl-C, SIGTERM, any exception), the child is
    stopped before the exception goes on, and the parent-death signal covers SIGKILL."""
    lines: queue.Queue = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    deadline = time.monotonic() + timeout_s
    tail: list[str] = []
    timed_out = False
    proc: subprocess.Popen | None = None
    try:
        with stop_signals_held():  # an interrupt is raised once ``proc`` is set, so the child is stopped
            proc = spawn(cmd, env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
            threading.Thread(target=pump, name="child_output", daemon=True).start()
        while True:
            try:  # short waits: the main thread stays responsive to signals while the child runs
                line = lines.get(timeout=0.2)
            except queue.Empty:
                if time.monotonic() > deadline:
                    timed_out = True
                    break
                continue
            if line is None:
                break
            tail = (tail + [line.rstrip()])[-40:]
            if log and keep(line):
                log(line.strip())
        code = stop_process(proc) if timed_out else proc.wait()
    except BaseException:
        if proc is not None:
            stop_process(proc)
        raise
    if timed_out:
        tail.append(f"timed out after {timeout_s:.0f} s")
        code = code or -signal.SIGTERM
    return exit_status(code), tail


_CLEAN_COUNTS = re.compile(r"(\d+) zombie (ports|segments) cleaned")


def _fastdds_clean() -> str:
    """Run Fast DDS's ``fastdds shm clean`` and return what it printed: the venv's copy of the tool
    (pip ROS) is loaded in-process (its ``Clean`` class, no interpreter start-up), else the
    ``fastdds`` on PATH (a ROS install) runs as a command. OSError when neither exists."""
    script = Path(sys.prefix) / "tools" / "fastdds" / "shm" / "clean.py"
    if script.is_file():
        import contextlib
        import importlib.util
        import io

        spec = importlib.util.spec_from_file_location("_fastdds_shm_clean", script)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            module.Clean().run(force=False)
        return out.getvalue()
    found = shutil.which("fastdds")
    if not found:
        raise OSError("the fastdds tool is not installed")
    return subprocess.run([found, "shm", "clean"], capture_output=True, text=True, timeout=60).stdout


def _shm_usage(shm: Path) -> int:
    try:
        return sum(p.stat().st_blocks * 512 for p in shm.iterdir() if p.name.startswith(("fastdds_", "sem.fastdds_")))
    except OSError:
        return 0


def reclaim_shared_memory(shm: Path = Path("/dev/shm")) -> dict:
    """``fastdds shm clean``: remove the Fast DDS shared-memory segments and ports whose owner is
    gone (their lock files are no longer held), leaving those of live processes alone. Returns
    {segments, ports, freed_mb} or {skipped: why}."""
    before = _shm_usage(shm)
    try:
        out = _fastdds_clean()
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"skipped": f"fastdds shm clean failed: {exc}"}
    counts = {kind: int(n) for n, kind in _CLEAN_COUNTS.findall(out)}
    return {"segments": counts.get("segments", 0), "ports": counts.get("ports", 0),
            "freed_mb": round(max(0, before - _shm_usage(shm)) / 1e6, 1)}


@dataclass
class _Child:
    node: ResolvedNode
    proc: subprocess.Popen
    reader: threading.Thread | None = None
    reported: bool = field(default=False)
    last_line: float = 0.0  # time.monotonic() of its last output line (the stack dumps' wait)


class GraphRunner:
    def __init__(
        self,
        graph: Graph,
        overrides: Mapping[str, str] | None = None,
        out: IO[str] | None = None,
        colour: bool | None = None,
        sigint_timeout: float = 5.0,
        sigterm_timeout: float = 3.0,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.graph = graph
        self.nodes = graph.resolve(overrides)
        self.out = out or sys.stdout
        self.colour = self.out.isatty() if colour is None else colour
        self.sigint_timeout = sigint_timeout
        self.sigterm_timeout = sigterm_timeout
        self.env = ros_environment(env)
        self.children: list[_Child] = []
        self._secrets_dir: Path | None = None  # 0700 folder of the secret parameter files, removed at the end
        self.dead_node: str | None = None  # a needed (non-required) node that exited while the graph ran
        self._stacks_requested = False  # SIGUSR1 to the runner: forward to the nodes (supervise)
        self._lock = threading.Lock()
        self._width = max((len(n.name) for n in self.nodes), default=0)

    # -- output ---------------------------------------------------------------
    def _prefix(self, index: int, name: str) -> str:
        text = f"[{name}]".ljust(self._width + 2)
        return f"\033[{_COLOURS[index % len(_COLOURS)]}m{text}\033[0m" if self.colour else text

    def _emit(self, prefix: str, line: str) -> None:
        with self._lock:
            self.out.write(f"{prefix} {line.rstrip()}\n")
            self.out.flush()

    def _pump(self, index: int, child: _Child) -> None:
        prefix = self._prefix(index, child.node.name)
        assert child.proc.stdout is not None
        for line in child.proc.stdout:
            child.last_line = time.monotonic()
            self._emit(prefix, line)

    def log(self, message: str) -> None:
        self._emit("[personal launch]", message)

    # -- lifecycle --------------------------------------------------------------
    def start(self) -> None:
        for index, node in enumerate(self.nodes):
            spec = node.spec
            plain, secrets = split_secrets(node.parameters)
            cmd = node_command(spec.module, spec.name, node.namespace, plain, node.remappings)
            if secrets:  # a file, not argv: `ps` and the start line below never show them
                if self._secrets_dir is None:
                    import tempfile

                    self._secrets_dir = Path(tempfile.mkdtemp(prefix="personal-secrets-"))
                cmd += ["--params-file", str(write_secret_params(self._secrets_dir, node.name, secrets))]
            with stop_signals_held():  # a Ctrl-C now is raised once the child is listed and read
                # own process group (Ctrl-C reaches the runner only); dies with the runner, even on SIGKILL
                proc = spawn(cmd, self.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, errors="replace", bufsize=1)
                child = _Child(node, proc)
                self.children.append(child)
                self.log(f"started {spec.name} (pid {proc.pid}): {' '.join(cmd[1:])}")
                child.reader = threading.Thread(target=self._pump, args=(index, child), daemon=True)
                child.reader.start()

    def _signal_all(self, sig: int) -> None:
        for child in self.children:
            if child.proc.poll() is None:
                try:
                    os.killpg(child.proc.pid, sig)
                except ProcessLookupError:
                    pass

    def _wait_all(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if all(c.proc.poll() is not None for c in self.children):
                return True
            time.sleep(0.05)
        return all(c.proc.poll() is not None for c in self.children)

    def stop(self) -> None:
        """SIGINT every running child, then SIGTERM, then SIGKILL."""
        for sig, timeout in ((signal.SIGINT, self.sigint_timeout), (signal.SIGTERM, self.sigterm_timeout), (signal.SIGKILL, 5.0)):
            if all(c.proc.poll() is not None for c in self.children):
                break
            if sig != signal.SIGINT:
                stuck = [c.node.name for c in self.children if c.proc.poll() is None]
                if sig == signal.SIGTERM:  # where a node hangs, before it is killed (personal/stacks.py)
                    self.request_stacks(f"{', '.join(stuck)} still running {self.sigint_timeout:g} s after SIGINT")
                self.log(f"sending {signal.Signals(sig).name} to {', '.join(stuck)}")
            self._signal_all(sig)
            self._wait_all(timeout)
        for child in self.children:
            if child.reader is not None:
                child.reader.join(timeout=2.0)
            if not child.reported and child.proc.returncode is not None:
                child.reported = True
                self.log(f"{child.node.name} stopped (exit code {child.proc.returncode})")

    def request_stacks(self, why: str, wait_s: float = 10.0, quiet_s: float = 0.3) -> list[str]:
        """Ask every running node for its Python stacks (SIGUSR1, personal/stacks.py); they follow
        in the log under each node's name. Waits (at most ``wait_s``) until every node asked has
        printed since and then been quiet for ``quiet_s``: a loaded machine can take over a second
        to dump (a fixed 1 s wait lost a dump in CI, and 5 s one at load 6 on 2 cores). Returns the
        nodes asked."""
        running = {c.proc.pid: c for c in self.children if c.proc.poll() is None}
        catching = {pid: c for pid, c in running.items() if catches(pid)}
        # said before the signal: a node's dump can reach the log before this thread writes the next line
        self.log(f"{why}: Python stacks of {', '.join(c.node.name for c in catching.values()) or 'no node (none catches SIGUSR1)'} follow")
        since = time.monotonic()
        asked = [running[pid] for pid in dump_stacks(catching)]
        deadline = since + wait_s
        while asked and time.monotonic() < deadline:
            now = time.monotonic()
            if all(c.last_line > since and now - c.last_line > quiet_s for c in asked):
                break
            time.sleep(0.05)
        return [c.node.name for c in asked]

    def supervise(self, poll: float = 0.05) -> int:
        """Wait until a required node exits (its exit code), any other node exits (a failure:
        the graph cannot do its work without it), or Ctrl-C. A SIGUSR1 to the runner asks every
        node for its stacks."""
        while True:
            if self._stacks_requested:
                self._stacks_requested = False
                self.request_stacks("SIGUSR1 to the runner")
            for child in self.children:
                code = child.proc.poll()
                if code is None or child.reported:
                    continue
                child.reported = True
                self.log(f"{child.node.name} exited with code {code}")
                if child.node.spec.required:
                    self.log(f"required node {child.node.name} ended: stopping the graph")
                    return exit_status(code)
                self.dead_node = child.node.name
                self.log(f"ERROR: node {child.node.name} died ({describe_exit(code)}) while the graph was running: "
                         "stopping the graph; this run failed")
                return exit_status(code) or 1
            time.sleep(poll)

    def reclaim(self, when: str) -> None:
        """Fast DDS shared memory of dead processes (killed runs leave ~34 MB each)."""
        freed = reclaim_shared_memory()
        if freed.get("segments") or freed.get("ports"):
            self.log(f"{when}: reclaimed stale Fast DDS shared memory of dead processes: {freed['segments']} segments, "
                     f"{freed['ports']} ports, {freed['freed_mb']} MB")

    def run(self) -> int:
        previous = _raise_on_termination()
        if threading.current_thread() is threading.main_thread():
            previous[STACK_SIGNAL] = signal.signal(STACK_SIGNAL, self._on_stack_request)
        try:
            self.reclaim("start")
            self.start()
            code = self.supervise()
        except KeyboardInterrupt:
            self.log("interrupted: stopping the graph")
            code = 130
        except _Terminated as exc:
            self.log(f"{exc}: stopping the graph")
            code = 128 + exc.signum
        finally:
            self.stop()
            self.reclaim("exit")
            if self._secrets_dir is not None:
                shutil.rmtree(self._secrets_dir, ignore_errors=True)
            _restore_handlers(previous)
        return code

    def _on_stack_request(self, signum, frame) -> None:
        # `kill -USR1 <runner>`: handled by supervise, as a signal handler must not take the log's lock
        self._stacks_requested = True


class _Terminated(Exception):
    def __init__(self, signum: int) -> None:
        super().__init__(f"received {signal.Signals(signum).name}")
        self.signum = signum


_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _raise_on_termination() -> dict:
    """SIGTERM / SIGHUP stop the graph like Ctrl-C (children live in their own process
    groups, so without this they would outlive a terminated runner). SIGINT is (re)installed as
    Python's KeyboardInterrupt and the three are unblocked: a runner started as a bare ``cmd &``
    from a script inherits SIGINT ignored (bash does that to background jobs), and would otherwise
    shrug off ``kill -INT`` and end 0 later; now it stops the graph and exits 130."""
    if threading.current_thread() is not threading.main_thread():
        return {}

    def handler(signum, frame):
        raise _Terminated(signum)

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGHUP)}
    previous[signal.SIGINT] = signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
    return previous


@contextmanager
def stop_signals_held():
    """Hold SIGINT / SIGTERM / SIGHUP (the main thread's mask; a spawned child clears it before exec)
    while a child is started and registered: put on the runner's list with its output reader, or
    inside run_child's try. One that arrives meanwhile is raised on leaving, once the child can be
    stopped. Before, a Ctrl-C raised in between left a node running unsignalled (seen in CI: the
    reader thread's start waited, on a loaded machine, until the node had printed)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def _restore_handlers(previous: dict) -> None:
    for sig, handler in previous.items():
        signal.signal(sig, handler)


def run_graph(graph: Graph, overrides: Mapping[str, str] | None = None, **kwargs: Any) -> int:
    return GraphRunner(graph, overrides, **kwargs).run()

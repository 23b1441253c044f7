"""Start a graph as supervised processes (``personal launch <graph>``).

Each node runs as ``python -m <module> --ros-args -r __node:=<name> ...`` in its own
process group, with the ROS environment of ``personal.ros_env``. Output lines are
prefixed with the node name. Ctrl-C, or the exit of a node marked ``required``, stops
every child: SIGINT, then SIGTERM, then SIGKILL, each after a timeout. The runner
returns the exit code of the required node that ended the graph (130 on Ctrl-C, else
the first non-zero exit code of the nodes, or 0).
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import IO, Any, Iterable, Mapping

import yaml

from personal.graphs import Graph, ResolvedNode
from personal.ros_env import ros_environment

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


def _die_with_parent() -> None:
    """In the child, before exec: ask Linux to SIGTERM it when the runner dies.

    The runner stops its nodes itself on SIGINT/SIGTERM; this covers SIGKILL and crashes,
    where nothing else would stop processes living in their own sessions."""
    if sys.platform.startswith("linux"):
        import ctypes

        PR_SET_PDEATHSIG = 1
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


@dataclass
class _Child:
    node: ResolvedNode
    proc: subprocess.Popen
    reader: threading.Thread | None = None
    reported: bool = field(default=False)


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
            self._emit(prefix, line)

    def log(self, message: str) -> None:
        self._emit("[personal launch]", message)

    # -- lifecycle --------------------------------------------------------------
    def start(self) -> None:
        for index, node in enumerate(self.nodes):
            spec = node.spec
            cmd = node_command(spec.module, spec.name, node.namespace, node.parameters, node.remappings)
            proc = subprocess.Popen(
                cmd,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                errors="replace",
                bufsize=1,
                start_new_session=True,  # own process group: Ctrl-C reaches the runner only
                preexec_fn=_die_with_parent,  # a SIGKILLed runner must not orphan its nodes
            )
            child = _Child(node, proc)
            child.reader = threading.Thread(target=self._pump, args=(index, child), daemon=True)
            child.reader.start()
            self.children.append(child)
            self.log(f"started {spec.name} (pid {proc.pid}): {' '.join(cmd[1:])}")

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
                self.log(f"sending {signal.Signals(sig).name} to {', '.join(stuck)}")
            self._signal_all(sig)
            self._wait_all(timeout)
        for child in self.children:
            if child.reader is not None:
                child.reader.join(timeout=2.0)
            if not child.reported and child.proc.returncode is not None:
                child.reported = True
                self.log(f"{child.node.name} stopped (exit code {child.proc.returncode})")

    def supervise(self, poll: float = 0.05) -> int:
        """Wait until a required node exits, every node exits, or Ctrl-C; return the exit code."""
        first_failure = 0
        while True:
            for child in self.children:
                code = child.proc.poll()
                if code is None or child.reported:
                    continue
                child.reported = True
                self.log(f"{child.node.name} exited with code {code}")
                if code and not first_failure:
                    first_failure = code
                if child.node.spec.required:
                    self.log(f"required node {child.node.name} ended: stopping the graph")
                    return code
            if all(c.reported for c in self.children):
                return first_failure
            time.sleep(poll)

    def run(self) -> int:
        previous = _raise_on_termination()
        try:
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
            _restore_handlers(previous)
        return code


class _Terminated(Exception):
    def __init__(self, signum: int) -> None:
        super().__init__(f"received {signal.Signals(signum).name}")
        self.signum = signum


def _raise_on_termination() -> dict:
    """SIGTERM / SIGHUP stop the graph like Ctrl-C (children live in their own process
    groups, so without this they would outlive a terminated runner)."""
    if threading.current_thread() is not threading.main_thread():
        return {}

    def handler(signum, frame):
        raise _Terminated(signum)

    return {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGHUP)}


def _restore_handlers(previous: dict) -> None:
    for sig, handler in previous.items():
        signal.signal(sig, handler)


def run_graph(graph: Graph, overrides: Mapping[str, str] | None = None, **kwargs: Any) -> int:
    return GraphRunner(graph, overrides, **kwargs).run()

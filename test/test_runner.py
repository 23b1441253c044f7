"""The graph runner: argument formation, required-node exit, Ctrl-C handling."""
import glob
import io
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from personal.graphs import Graph, NodeSpec
from personal.ros_env import FASTDDS_PROFILE, ros_environment
from personal.runner import GraphRunner, format_parameter_value, node_command

# Dummy "nodes": plain python modules that print their argv and behave as told.
DUMMY = textwrap.dedent(
    """
    import glob, os, signal, sys, time
    modes = [a.split(":=", 1)[1] for a in sys.argv if a.startswith("mode:=")]
    mode = modes[0] if modes else "wait"
    ready_dir = os.environ["DUMMY_READY_DIR"]
    if mode.startswith("exit"):
        print("args", " ".join(sys.argv[1:]), flush=True)
        # exit only once another dummy has its SIGINT handling in place (python start-up takes
        # seconds on a loaded machine; a fixed sleep raced it); "exitgo": once the test says go
        deadline = time.monotonic() + 60
        wanted = "go" if mode.startswith("exitgo") else "ready-*"
        while not glob.glob(os.path.join(ready_dir, wanted)) and time.monotonic() < deadline:
            time.sleep(0.02)
        sys.exit(int(mode[6:] if mode.startswith("exitgo") else mode[4:]))
    if mode.endswith("_stacks"):  # as every node process does (nodes/__init__.py)
        from personal.stacks import enable_stack_dumps
        enable_stack_dumps()
    if mode.startswith("ignore_int"):
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        print("args", " ".join(sys.argv[1:]), flush=True)  # inside try: SIGINT may follow at once
        open(os.path.join(ready_dir, f"ready-{os.getpid()}"), "w").close()
        while True:
            time.sleep(0.05)
    except KeyboardInterrupt:
        print("got SIGINT", flush=True)
        sys.exit(0)
    """
)


@pytest.fixture
def dummy_pkg(tmp_path, monkeypatch):
    (tmp_path / "dummy_node.py").write_text(DUMMY)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.setenv("DUMMY_READY_DIR", str(tmp_path))
    return tmp_path


_RUNNERS = []


@pytest.fixture(autouse=True)
def _stop_leftovers():
    """Children run in their own sessions: make sure a failing test leaves none behind."""
    yield
    while _RUNNERS:
        _RUNNERS.pop().stop()


def _runner(nodes, **kw):
    out = io.StringIO()
    graph = Graph("test", "dummy graph", nodes, arguments={"mode": ("wait", "")})
    runner = GraphRunner(graph, out=out, colour=False, sigint_timeout=5.0, sigterm_timeout=1.0, **kw)
    _RUNNERS.append(runner)
    return runner, out


def _with_mode(mode):
    # the dummy reads "mode:=..." from its --ros-args; a remap rule carries it unchanged
    return [("mode", mode)]


def test_parameter_and_remap_arguments():
    cmd = node_command("pkg.node", "bridge", "robot1", {"split": "hard", "n": 3, "rate": 2.5, "flag": True,
                                                        "empty": "", "num_str": "42", "xs": [1, 2]},
                       [("image", "/camera/color/image_raw")], python="py")
    assert cmd[:6] == ["py", "-u", "-m", "pkg.node", "--ros-args", "-r"]
    assert cmd[6] == "__node:=bridge"
    assert cmd[7:9] == ["-r", "__ns:=/robot1"]
    params = [cmd[i + 1] for i, a in enumerate(cmd) if a == "-p"]
    assert params == ["split:=hard", "n:=3", "rate:=2.5", "flag:=true", "empty:=''", "num_str:='42'", "xs:=[1, 2]"]
    assert cmd[-2:] == ["-r", "image:=/camera/color/image_raw"]
    assert format_parameter_value(1e-5) == "1.0e-05"


def test_ros_environment():
    env = ros_environment({"PATH": "/usr/bin"})
    assert env["FASTDDS_DEFAULT_PROFILES_FILE"] == str(FASTDDS_PROFILE) and FASTDDS_PROFILE.is_file()
    assert env["ROS_AUTOMATIC_DISCOVERY_RANGE"] == "LOCALHOST"
    assert env["AMENT_PREFIX_PATH"].split(os.pathsep)[0] == sys.prefix
    kept = ros_environment({"ROS_AUTOMATIC_DISCOVERY_RANGE": "SUBNET", "AMENT_PREFIX_PATH": f"/opt/ros{os.pathsep}{sys.prefix}"})
    assert kept["ROS_AUTOMATIC_DISCOVERY_RANGE"] == "SUBNET"
    assert kept["AMENT_PREFIX_PATH"] == f"/opt/ros{os.pathsep}{sys.prefix}"
    # idle OpenMP threads of torch / numba sleep in every node, unless the caller chose a policy
    assert env["OMP_WAIT_POLICY"] == "PASSIVE"
    assert ros_environment({"OMP_WAIT_POLICY": "ACTIVE"})["OMP_WAIT_POLICY"] == "ACTIVE"


def test_cli_sets_passive_openmp_before_any_import():
    """`personal ...` processes (pan, pog, perception commands) get the policy before torch starts."""
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    code = ("import os, sys; sys.argv = ['personal', '--help']\n"
            "from personal.cli import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print('policy', os.environ.get('OMP_WAIT_POLICY'), 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120).stdout
    assert out.strip().splitlines()[-1] == "policy PASSIVE False"


def test_required_node_exit_code_stops_the_others(dummy_pkg):
    runner, out = _runner([
        NodeSpec("worker", "x", "dummy_node", parameters={"p": 1}),
        NodeSpec("boss", "x", "dummy_node", remappings=_with_mode("exit3"), required=True),
    ])
    t0 = time.monotonic()
    assert runner.run() == 3
    assert time.monotonic() - t0 < 30  # bounded (no hang), with room for a loaded machine
    text = out.getvalue()
    assert "[boss]   args --ros-args -r __node:=boss -r mode:=exit3" in text  # prefix padded to the longest name
    assert "[worker] args --ros-args -r __node:=worker -p p:=1" in text
    assert "required node boss ended" in text
    assert "[worker] got SIGINT" in text  # stopped cleanly with SIGINT
    assert all(c.proc.returncode is not None for c in runner.children)


@pytest.mark.parametrize("mode, code", [("exit5", 5), ("exit0", 1)])
def test_a_needed_node_dying_stops_the_graph_with_a_failure(dummy_pkg, mode, code):
    """issue 15, finding 9: a dead node went unnoticed and the run still ended 0. Now the death of any
    node that is not the required one stops the graph with a non-zero code, even if it exited 0."""
    runner, out = _runner([
        NodeSpec("helper", "x", "dummy_node", remappings=_with_mode(mode)),
        NodeSpec("boss", "x", "dummy_node", required=True),
    ])
    t0 = time.monotonic()
    assert runner.run() == code
    assert time.monotonic() - t0 < 30  # bounded (no hang), with room for a loaded machine
    text = out.getvalue()
    assert "ERROR: node helper died" in text and "this run failed" in text and runner.dead_node == "helper"
    assert "[boss]   got SIGINT" in text  # prefix padded to the longest name


def test_a_killed_node_is_reported_with_its_signal(dummy_pkg):
    runner, out = _runner([NodeSpec("victim", "x", "dummy_node"), NodeSpec("boss", "x", "dummy_node", required=True)])
    runner.start()
    wait = time.monotonic() + 20
    while "[victim] args" not in out.getvalue() and time.monotonic() < wait:
        time.sleep(0.05)
    os.kill(runner.children[0].proc.pid, signal.SIGKILL)
    try:
        code = runner.supervise()
    finally:
        runner.stop()
    assert code == 128 + signal.SIGKILL and "node victim died (killed by SIGKILL)" in out.getvalue()


def test_sigterm_then_sigkill_escalation(dummy_pkg):
    runner, out = _runner([
        NodeSpec("stubborn", "x", "dummy_node", remappings=_with_mode("ignore_int")),
        NodeSpec("boss", "x", "dummy_node", remappings=_with_mode("exit0"), required=True),
    ])
    assert runner.run() == 0
    assert "sending SIGTERM to stubborn" in out.getvalue()
    assert runner.children[0].proc.returncode == -signal.SIGTERM


def test_a_node_hung_after_sigint_gives_its_stacks_before_sigterm(dummy_pkg):
    # one node that prints its stacks on SIGUSR1 (as every node process does) and one that would die of it
    runner, out = _runner([
        NodeSpec("hung", "x", "dummy_node", remappings=_with_mode("ignore_int_stacks")),
        NodeSpec("plain", "x", "dummy_node", remappings=_with_mode("ignore_int")),
        NodeSpec("boss", "x", "dummy_node", remappings=_with_mode("exit0"), required=True),
    ])
    assert runner.run() == 0
    text = out.getvalue()
    asked = text.index("still running 5 s after SIGINT: Python stacks of hung follow")
    assert "plain" not in text[asked:].split("\n")[0].split("stacks of")[1]  # it does not catch SIGUSR1: not signalled
    assert asked < text.index("sending SIGTERM to hung, plain")
    assert "dummy_node.py" in text[asked:] and "most recent call first" in text[asked:], text[asked:]  # faulthandler's dump, under the node's name
    # SIGUSR1 did not end either: both ended by the SIGTERM that followed
    assert [c.proc.returncode for c in runner.children[:2]] == [-signal.SIGTERM, -signal.SIGTERM]


def test_sigusr1_to_the_runner_asks_every_node_for_its_stacks(dummy_pkg):
    runner, out = _runner([
        NodeSpec("sleeper", "x", "dummy_node", remappings=_with_mode("wait_stacks")),
        NodeSpec("boss", "x", "dummy_node", remappings=_with_mode("exitgo0"), required=True),
    ])

    def poke():
        deadline = time.monotonic() + 60
        while not glob.glob(str(dummy_pkg / "ready-*")) and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGUSR1)  # what `kill -USR1 <runner pid>` does
        while "dummy_node.py" not in out.getvalue() and time.monotonic() < deadline:
            time.sleep(0.05)
        (dummy_pkg / "go").touch()

    t = threading.Thread(target=poke)
    t.start()
    assert runner.run() == 0
    t.join()
    text = out.getvalue()
    assert "SIGUSR1 to the runner: Python stacks of sleeper follow" in text and "dummy_node.py" in text
    assert signal.getsignal(signal.SIGUSR1) is not runner._on_stack_request  # restored after the run


def test_ctrl_c_stops_every_node(dummy_pkg, tmp_path):
    """Run `personal launch`'s runner in a subprocess and send it SIGINT like a terminal would."""
    script = tmp_path / "run_graph.py"
    script.write_text(textwrap.dedent(
        """
        import sys
        from personal.graphs import Graph, NodeSpec
        from personal.runner import run_graph
        g = Graph("t", "", [NodeSpec("n1", "x", "dummy_node"), NodeSpec("n2", "x", "dummy_node", required=True)])
        sys.exit(run_graph(g, colour=False, sigint_timeout=3.0))
        """
    ))
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env=os.environ, start_new_session=True)
    lines = []
    while sum("args --ros-args" in line for line in lines) < 2:
        line = proc.stdout.readline()
        assert line, "".join(lines)
        lines.append(line)
    os.killpg(proc.pid, signal.SIGINT)  # the terminal signals the whole foreground group
    rest, _ = proc.communicate(timeout=20)
    text = "".join(lines) + rest
    assert proc.returncode == 130, text
    assert "[n1] got SIGINT" in text and "[n2] got SIGINT" in text
    assert "interrupted: stopping the graph" in text


def test_ctrl_c_while_a_node_starts_still_stops_it(dummy_pkg, tmp_path):
    """A Ctrl-C that lands while the runner is starting a node (here: at once after its spawn) must
    still reach that node. It used to be raised before the node was on the runner's list, and the
    node was left running unsignalled (a CI failure of test_ctrl_c_stops_every_node)."""
    script = tmp_path / "run_graph.py"
    script.write_text(textwrap.dedent(
        """
        import os, signal, sys
        import personal.runner as runner
        from personal.graphs import Graph, NodeSpec
        real_spawn = runner.spawn
        def spawn_then_interrupt(cmd, *args, **kwargs):
            proc = real_spawn(cmd, *args, **kwargs)
            if "__node:=n2" in cmd:
                os.kill(os.getpid(), signal.SIGINT)
            return proc
        runner.spawn = spawn_then_interrupt
        g = Graph("t", "", [NodeSpec("n1", "x", "dummy_node"), NodeSpec("n2", "x", "dummy_node", required=True)])
        sys.exit(runner.run_graph(g, colour=False, sigint_timeout=3.0))
        """
    ))
    proc = subprocess.run([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, env=os.environ, timeout=60)
    assert proc.returncode == 130, proc.stdout
    assert "interrupted: stopping the graph" in proc.stdout
    assert "started n2" in proc.stdout and "n2 stopped" in proc.stdout, proc.stdout


def test_run_child_interrupted_at_its_spawn_stops_the_child(tmp_path):
    """run_child interrupted right after it spawned its child: the child is stopped before the
    KeyboardInterrupt goes on (the spawn used to sit outside the try that stops it)."""
    script = tmp_path / "parent.py"
    script.write_text(textwrap.dedent(
        """
        import os, signal, sys, time
        import personal.runner as runner
        real_spawn, spawned = runner.spawn, []
        def spawn_then_interrupt(cmd, *args, **kwargs):
            spawned.append(real_spawn(cmd, *args, **kwargs))
            os.kill(os.getpid(), signal.SIGINT)
            return spawned[-1]
        runner.spawn = spawn_then_interrupt
        try:
            runner.run_child([sys.executable, "-c", "import time; time.sleep(60)"], None, 60)
        except KeyboardInterrupt:
            print("interrupted; child exit", spawned[0].poll(), flush=True)
        """
    ))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=os.environ, timeout=60).stdout
    assert "interrupted; child exit" in out and "child exit None" not in out, out


def test_runner_rejects_unknown_argument():
    from personal.graphs import GraphError

    graph = Graph("g", "", [NodeSpec("a", "x", "dummy_node")], arguments={"k": (1, "")})
    with pytest.raises(GraphError, match="has no argument 'z'"):
        GraphRunner(graph, {"z": "1"})


def test_sigterm_to_runner_stops_children(dummy_pkg, tmp_path):
    """A terminated runner (e.g. a CI timeout) must not leave its node processes behind."""
    script = tmp_path / "run_graph.py"
    script.write_text(textwrap.dedent(
        """
        import sys
        from personal.graphs import Graph, NodeSpec
        from personal.runner import run_graph
        sys.exit(run_graph(Graph("t", "", [NodeSpec("n1", "x", "dummy_node")]), colour=False))
        """
    ))
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env=os.environ, start_new_session=True)
    lines = []
    while not any("args --ros-args" in line for line in lines):
        line = proc.stdout.readline()
        assert line, "".join(lines)
        lines.append(line)
    proc.terminate()
    rest, _ = proc.communicate(timeout=20)
    text = "".join(lines) + rest
    assert proc.returncode == 128 + signal.SIGTERM, text
    assert "received SIGTERM: stopping the graph" in text and "[n1] got SIGINT" in text


def _ignore_and_block_sigint():
    # what a non-interactive shell does to a bare `cmd &` job (SIGINT ignored), and a blocked SIGINT on top
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGINT])


def test_nodes_take_sigint_when_the_runner_ignores_it(dummy_pkg, tmp_path):
    """Ignored signals and the signal mask survive exec: a runner started with SIGINT ignored (and blocked)
    must still give its nodes default SIGINT handling, so that they stop on the first SIGINT of the
    runner's stop sequence, not on the SIGTERM fallback."""
    script = tmp_path / "run_graph.py"
    script.write_text(textwrap.dedent(
        """
        import sys
        from personal.graphs import Graph, NodeSpec
        from personal.runner import run_graph
        sys.exit(run_graph(Graph("t", "", [NodeSpec("n1", "x", "dummy_node")]), colour=False, sigint_timeout=20.0))
        """
    ))
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env=os.environ, start_new_session=True, preexec_fn=_ignore_and_block_sigint)
    lines = []
    while not any("args --ros-args" in line for line in lines):
        line = proc.stdout.readline()
        assert line, "".join(lines)
        lines.append(line)
    start = time.monotonic()
    proc.terminate()  # the runner stops its node: SIGINT first, SIGTERM only 20 s later
    rest, _ = proc.communicate(timeout=40)
    elapsed = time.monotonic() - start
    text = "".join(lines) + rest
    assert proc.returncode == 128 + signal.SIGTERM, text
    assert "[n1] got SIGINT" in text and "sending SIGTERM" not in text, text
    assert elapsed < 15.0, text


def test_cli_launch_and_graphs():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run([sys.executable, "-m", "personal", "graphs", "-v"], capture_output=True, text=True, cwd=root)
    assert out.returncode == 0, out.stderr
    assert "sim " in out.stdout and "node sim_bridge <- sim_bridge.bridge_node (required)" in out.stdout
    bad = subprocess.run([sys.executable, "-m", "personal", "launch", "sim", "nope:=1"], capture_output=True,
                         text=True, cwd=root)
    assert bad.returncode == 2 and "graph 'sim' has no argument 'nope'" in bad.stderr
    unknown = subprocess.run([sys.executable, "-m", "personal", "launch", "no_such_graph"], capture_output=True,
                             text=True, cwd=root)
    assert unknown.returncode == 2 and "unknown graph 'no_such_graph'" in unknown.stderr
    dry = subprocess.run([sys.executable, "-m", "personal", "launch", "sim", "split:=hard", "--dry-run"],
                         capture_output=True, text=True, cwd=root)
    assert dry.returncode == 0, dry.stderr
    assert "-m sim_bridge.bridge_node --ros-args -r __node:=sim_bridge -p " in dry.stdout
    assert " -p split:=hard -p scenes:=1 " in dry.stdout


def test_nodes_die_with_a_killed_runner(tmp_path):
    """SIGKILL leaves the runner no chance to stop its nodes: the kernel must (PR_SET_PDEATHSIG)."""
    (tmp_path / "sleeper_node.py").write_text("import time\nprint('up', flush=True)\ntime.sleep(120)\n")
    script = tmp_path / "run_graph.py"
    script.write_text(textwrap.dedent(
        """
        import sys
        from personal.graphs import Graph, NodeSpec
        from personal.runner import GraphRunner
        g = Graph("t", "", [NodeSpec("a", "a", "sleeper_node"), NodeSpec("b", "b", "sleeper_node")])
        r = GraphRunner(g, colour=False)
        r.start()
        print("pids", *[c.proc.pid for c in r.children], flush=True)
        r.supervise()
        """
    ))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.getcwd()])}
    runner = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, env=env)
    line = ""
    while not line.startswith("pids"):
        line = runner.stdout.readline()
        assert line or runner.poll() is None, "runner ended before starting its nodes"
    pids = [int(p) for p in line.split()[1:]]
    time.sleep(1.0)
    assert all(_alive(p) for p in pids), "the sleeper nodes should be running"
    runner.kill()
    runner.wait(5)
    deadline = time.monotonic() + 10
    alive = pids
    while alive and time.monotonic() < deadline:
        alive = [p for p in pids if _alive(p)]
        time.sleep(0.1)
    assert not alive, f"nodes {alive} outlived their SIGKILLed runner"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie has exited; only a running process counts
    with open(f"/proc/{pid}/stat") as f:
        return f.read().split()[2] != "Z"


def test_a_background_job_of_a_script_still_stops_on_sigint(dummy_pkg, tmp_path):
    """`personal launch … &` from a non-interactive script: bash starts the job with SIGINT ignored
    (issue 28, item 9: the runner ignored `kill -INT` and exited 0). It must stop its graph and exit 130."""
    script = tmp_path / "run_graph.py"
    script.write_text(textwrap.dedent(
        """
        import sys
        from personal.graphs import Graph, NodeSpec
        from personal.runner import run_graph
        sys.exit(run_graph(Graph("t", "", [NodeSpec("n1", "x", "dummy_node")]), colour=False, sigint_timeout=20.0))
        """
    ))
    out = tmp_path / "out.txt"
    probe = tmp_path / "probe.py"
    probe.write_text("import signal\nprint('job ignores SIGINT:', signal.getsignal(signal.SIGINT) == signal.SIG_IGN)\n")
    shell = (f"{sys.executable} {script} > {out} 2>&1 &\n"
             "pid=$!\n"
             f"for i in $(seq 600); do grep -q 'args --ros-args' {out} && break; sleep 0.05; done\n"
             f"{sys.executable} {probe} &\nwait $!\n"
             # one that ignores it ends anyway; the watchdog takes its sleep down with it when it is killed
             "kill -INT $pid\n(trap 'kill $s; exit' TERM; sleep 30 & s=$!; wait $s; kill -TERM $pid) >/dev/null 2>&1 &\n"
             "watchdog=$!\n"
             "wait $pid\necho \"rc=$?\"\nkill $watchdog\n")
    repo = str(Path(__file__).resolve().parents[1])  # the runner of this tree, whatever is installed
    env = {**os.environ, "PYTHONPATH": f"{dummy_pkg}{os.pathsep}{repo}"}
    proc = subprocess.run(["bash", "-c", shell], capture_output=True, text=True, timeout=60, env=env)
    text = out.read_text()
    assert "job ignores SIGINT: True" in proc.stdout, proc.stdout  # bash does start `cmd &` jobs with SIGINT ignored
    assert "rc=130" in proc.stdout, proc.stdout + text
    assert "interrupted: stopping the graph" in text and "[n1] got SIGINT" in text, text


def test_secret_parameters_never_reach_argv_or_the_start_line(dummy_pkg, tmp_path):
    """mqtt_password (any *password / *token / *secret parameter) goes to the node in a 0600 parameter
    file, not on its command line: `ps` and the runner's "started" line do not show it (issue 28, item 9)."""
    import yaml

    secret = "hunter2-s3cret"
    spec = NodeSpec("n1", "x", "dummy_node", parameters={"mqtt_password": secret, "mqtt_username": "me"})
    runner, out = _runner([spec])
    runner.start()
    try:
        deadline = time.monotonic() + 30
        while "args --ros-args" not in out.getvalue() and time.monotonic() < deadline:
            time.sleep(0.05)
        argv = open(f"/proc/{runner.children[0].proc.pid}/cmdline", "rb").read().split(b"\0")
        assert not any(secret.encode() in a for a in argv), argv
        assert secret not in out.getvalue() and "mqtt_username:=me" in out.getvalue()
        params = Path(argv[argv.index(b"--params-file") + 1].decode())
        assert params.stat().st_mode & 0o077 == 0 and params.parent.stat().st_mode & 0o077 == 0
        assert yaml.safe_load(params.read_text()) == {"/**": {"ros__parameters": {"mqtt_password": secret}}}
    finally:
        runner.stop()


def test_the_params_file_reaches_a_real_rclpy_node(tmp_path):
    """rclpy reads the secret from --params-file as it would from -p (the node code is unchanged)."""
    from personal.runner import node_command, write_secret_params

    code = ("import rclpy; from rclpy.node import Node; rclpy.init(); n = Node('probe'); "
            "print('value', n.declare_parameter('mqtt_password', '').value); rclpy.shutdown()")
    (tmp_path / "probe_node.py").write_text(code)
    cmd = node_command("probe_node", "probe") + ["--params-file", str(write_secret_params(tmp_path, "probe", {"mqtt_password": "pw1"}))]
    env = {**ros_environment(), "PYTHONPATH": str(tmp_path)}
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env)
    assert "value pw1" in out.stdout, out.stdout + out.stderr


def test_secret_graph_arguments_come_from_the_environment(monkeypatch):
    from personal.graphs import get_graph
    from personal.launch_cli import secret_arguments_from_env

    monkeypatch.setenv("PERSONAL_MQTT_PASSWORD", "from-env")
    g = get_graph("home_eval")
    assert secret_arguments_from_env(g, {}) == {"mqtt_password": "from-env"}
    assert secret_arguments_from_env(g, {"mqtt_password": "given"}) == {}

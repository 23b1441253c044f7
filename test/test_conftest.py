"""The test session's own set-up (test/conftest.py)."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_each_xdist_worker_claims_its_own_ros_domain(tmp_path):
    """bin/test runs two pytest-xdist workers; a worker inherits the controller's environment (its domain
    id included) and must claim a domain of its own, or two workers' graphs would hear each other."""
    env = {**os.environ, "PERSONAL_DOMAIN_PROBE_DIR": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:dash", "-p", "no:cacheprovider", "-q", "-n", "2",
                           "--dist", "each", "test/xdist_domain_probe.py"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    seen = {p.name: p.read_text().split() for p in tmp_path.iterdir()}
    assert sorted(seen) == ["gw0", "gw1"], seen
    for ros_domain, test_domain in seen.values():
        assert ros_domain == test_domain  # the nodes a worker starts inherit the same id
    assert seen["gw0"][0] != seen["gw1"][0], seen
    assert os.environ["ROS_DOMAIN_ID"] not in (seen["gw0"][0], seen["gw1"][0])  # nor this session's


def test_graph_files_are_one_xdist_unit_and_other_files_keep_their_own():
    """With two workers, one worker runs every file that starts multi-process graphs, one at a time;
    any other file stays one unit of its own, as under pytest-xdist's --dist loadfile."""
    import conftest
    from xdist.scheduler import LoadFileScheduling

    class LoadFile:  # the two config reads the scheduler makes
        @staticmethod
        def getoption(name):
            return "loadfile"

        @staticmethod
        def getvalue(name):
            return ["2*popen"] if name == "tx" else None

    class Load(LoadFile):
        @staticmethod
        def getoption(name):
            return "load"

    sched = conftest.pytest_xdist_make_scheduler(LoadFile(), None)
    assert isinstance(sched, LoadFileScheduling)
    assert sched._split_scope("test/test_pog_replay.py::test_a[x::y]") == "graph"
    assert sched._split_scope("test/test_assistant_find_verify.py::test_b") == "graph"
    assert sched._split_scope("test/test_tf.py::test_c") == "test/test_tf.py"
    assert conftest.pytest_xdist_make_scheduler(Load(), None) is None  # other --dist modes are xdist's own
    missing = [f for f in conftest.GRAPH_TEST_FILES if not (ROOT / f).is_file()]
    assert not missing, f"GRAPH_TEST_FILES names files that do not exist: {missing}"


def test_a_failed_test_reports_its_processes_logs_and_stacks():
    """A graph test that fails by waiting (on a topic, an action's feedback, or pytest-timeout) reports the
    log of every process it started, with the stacks of those still running: where the node hung."""
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:dash", "-p", "no:cacheprovider", "-q",
                           "test/failure_report_probe.py"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    out = proc.stdout
    assert proc.returncode == 1, out[-3000:] + proc.stderr[-2000:]
    assert "TimeoutError: condition not met" in out, out[-3000:]
    section = out[out.index("log of hung_child"):]
    assert "running" in section.splitlines()[0] and "probe child is up" in section, out[-3000:]
    assert "stuck_here" in section, out[-3000:]  # the child's stack, dumped while it hung


def test_timeout_marks_scale_with_the_waits():
    """Under PERSONAL_TEST_TIMEOUT_SCALE a marked test's hang guard grows with its waits (pytest-timeout reads
    the closest timeout mark), so a doubled wait never outlasts it."""
    for scale, expected in (("2", "timeout mark: 60.0"), ("1", "timeout mark: 30")):
        proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:dash", "-p", "no:cacheprovider", "-q", "-s",
                               "-k", "reports_its_timeout", "test/failure_report_probe.py"],
                              cwd=ROOT, env={**os.environ, "PERSONAL_TEST_TIMEOUT_SCALE": scale},
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0 and expected in proc.stdout, proc.stdout[-2000:] + proc.stderr[-2000:]

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

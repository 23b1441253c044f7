"""Run only by test_conftest.py (not collected by name): each pytest-xdist worker writes the ROS domain
the session's conftest gave it."""
import os
from pathlib import Path


def test_write_this_workers_domain():
    out = Path(os.environ["PERSONAL_DOMAIN_PROBE_DIR"])
    worker = os.environ.get("PYTEST_XDIST_WORKER", "controller")
    (out / worker).write_text(f'{os.environ["ROS_DOMAIN_ID"]} {os.environ["PERSONAL_TEST_DOMAIN_ID"]}')

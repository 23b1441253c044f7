"""Run only by test_conftest.py (not collected by name): a test that starts a process which logs and then
hangs, and fails while waiting on it, as a stalled graph test does."""
import sys

import pytest

from conftest import LoggedProcess, wait_for

CHILD = ("import faulthandler, signal, time\n"
         "faulthandler.register(signal.SIGUSR1, all_threads=True)\n"
         "print('probe child is up', flush=True)\n"
         "def stuck_here():\n"
         "    time.sleep(60)\n"
         "stuck_here()\n")


@pytest.fixture
def hung_child():
    child = LoggedProcess([sys.executable, "-c", CHILD], "hung_child")
    yield child
    child.stop(timeout=1.0)  # at teardown, as run_node stops its nodes: after the report is made


def test_a_wait_on_a_hung_process_fails(hung_child):
    hung_child.wait_for_log("probe child is up", timeout=20)
    wait_for(lambda: False, 0.2)  # what a test waiting on a topic that never comes sees


@pytest.mark.timeout(30)
def test_reports_its_timeout(request):
    print(f"timeout mark: {request.node.get_closest_marker('timeout').args[0]}")

"""The launchers a CMake install (`colcon build`) puts in lib/personal, run as `ros2 run` runs them.

They are written by cmake/personal_launchers.cmake, the file CMakeLists.txt includes; the test runs
it in CMake's script mode, so these are byte for byte the scripts an install gets. The mapping node
started from its launcher, with the learned encoder in its spawn-started feature process, must
write a feature map (issue 27, finding 5: the unguarded launcher was re-imported by spawn and the
encoder never loaded, yet the run exited 0 without features)."""
from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conftest import LoggedProcess, wait_for

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def launchers(tmp_path_factory) -> Path:
    cmake = shutil.which("cmake")
    assert cmake, "cmake missing: run scripts/bootstrap.sh"
    out = tmp_path_factory.mktemp("install") / "lib" / "personal"
    subprocess.run([cmake, f"-DPERSONAL_SETUP_PY={ROOT / 'setup.py'}", f"-DPERSONAL_LAUNCHER_DIR={out}", "-P",
                    str(ROOT / "cmake" / "personal_launchers.cmake")], check=True, capture_output=True, timeout=60)
    return out


def _guarded(path: Path) -> bool:
    """The script's only call of sys.exit sits under `if __name__ == "__main__":`."""
    tree = ast.parse(path.read_text())
    for stmt in tree.body:
        if isinstance(stmt, ast.If) and ast.unparse(stmt.test) in ('__name__ == "__main__"', "__name__ == '__main__'"):
            return "sys.exit(" in ast.unparse(stmt) and "sys.exit(" not in "".join(
                ast.unparse(s) for s in tree.body if s is not stmt)
    return False


def test_every_setup_py_node_gets_a_guarded_launcher(launchers):
    from test_launch_files import _setup_nodes

    nodes = _setup_nodes()
    assert sorted(p.name for p in launchers.iterdir()) == sorted([*nodes, "personal"])
    for name, target in nodes.items():
        text = (launchers / name).read_text()
        module, func = target.split(":")
        assert f"from {module} import {func}\n" in text and _guarded(launchers / name), name


class Launched(LoggedProcess):
    """A launcher run as `ros2 run personal <name> --ros-args ...` runs it (python <script>)."""

    def __init__(self, script: Path, name: str, parameters: dict) -> None:
        from personal.ros_env import ros_environment
        from personal.runner import format_parameter_value

        cmd = [sys.executable, "-u", str(script), "--ros-args", "-r", f"__node:={name}"]
        for key, value in parameters.items():
            cmd += ["-p", f"{key}:={format_parameter_value(value)}"]
        super().__init__(cmd, name, cwd=tempfile.gettempdir(), env=ros_environment(dict(os.environ)))

    def stop(self) -> None:
        super().stop(timeout=10)
        self.remove_log()


def test_installed_mapping_launcher_runs_the_spawn_encoder_and_writes_a_feature_map(launchers, tmp_path):
    maps = tmp_path / "maps"
    procs = []
    try:
        procs.append(Launched(launchers / "sim_bridge", "sim_bridge",
                              {"seed": 3, "scenes": 1, "episodes_per_scene": 1, "split": "easy", "rate": 10.0,
                               "width": 160, "height": 120}))
        mapping = Launched(launchers / "mapping_node", "mapping",
                           {"encoder": "lit", "feature_process": True, "maps_dir": str(maps), "feature_resolution": 1.0})
        procs.append(mapping)
        explore = Launched(launchers / "explore_node", "explore", {"max_steps": 6})
        procs.append(explore)
        wait_for(lambda: explore.proc.poll() is not None, timeout=240)
        assert explore.proc.returncode == 0, explore.log()[-3000:]
        assert "feature process ready: " in mapping.log(), mapping.log()[-3000:]
        assert "failed to load the encoder" not in mapping.log() and "bootstrapping phase" not in mapping.log()
        saved = maps / "synth_00003"
        assert (saved / "features.yaml").is_file(), (sorted(p.name for p in saved.iterdir()) if saved.exists() else
                                                    "no map saved", mapping.log()[-3000:])
        from personal.mapping.feature_map import FeatureMap

        fmap = FeatureMap.load(saved)
        assert fmap.dim > 0 and float(fmap.confidence.sum()) > 0 and float(abs(fmap.embeddings).sum()) > 0
    finally:
        for p in procs:
            p.stop()

"""A contract fake of ``habitat_sim`` 0.3 for tests (never installed or shipped as habitat_sim).

Tests put ``test/fakes`` on the import path (``sys.path`` in-process, ``PYTHONPATH`` for
launched nodes) so ``import habitat_sim`` finds this package. It implements exactly the API
subset ``personal.sim.backends.habitat`` calls, with the semantics of habitat-sim 0.3's source
(each module cites the files and functions it follows), and refuses everything else:
an attribute the real API lacks raises ``AttributeError``, one the real API has but the fake
does not implement raises ``NotImplementedError``.

It loads a PLY stage (with its stage config, scene dataset config and semantic mesh, oriented
by habitat-sim's rules), renders it with the project's synthetic ray-caster in habitat's frame
and builds a heightfield navmesh from it for collisions and geodesics.

Top-level names as ``src_python/habitat_sim/__init__.py`` exports them.
"""
from __future__ import annotations

from . import agent, nav, utils  # noqa: F401
from ._config import CameraSensorSpec, NavMeshSettings, SensorSubType, SensorType, SimulatorConfiguration  # noqa: F401
from .agent import ActionSpec, ActuationSpec, Agent, AgentConfiguration, AgentState, SixDOFPose  # noqa: F401
from .nav import MultiGoalShortestPath, PathFinder, ShortestPath  # noqa: F401
from .simulator import Configuration, Simulator  # noqa: F401

__version__ = "0.3.3"
IS_CONTRACT_FAKE = True  # lets a test tell the fake from a real install

_REAL_TOP_LEVEL = {
    "attributes", "attributes_managers", "geo", "gfx", "logging", "metadata", "physics", "scene", "sensor",
    "sensors", "sim", "simulator", "registry", "MapStringString", "ObjectControls", "PyRobotNoisyActuationSpec",
    "SceneNodeControl", "controls", "default_controls", "object_controls", "pyrobot_noisy_controls",
    "ReplayRenderer", "ReplayRendererConfiguration", "RigidState", "SceneGraph", "SceneNode", "SceneNodeType",
    "audio_enabled", "built_with_bullet", "cuda_enabled", "stage_id", "GreedyFollowerCodes", "GreedyGeodesicFollower",
    "HitRecord", "VectorGreedyCodes", "AudioSensor", "AudioSensorSpec", "EquirectangularSensor",
    "EquirectangularSensorSpec", "FisheyeSensorDoubleSphereSpec", "FisheyeSensorModelType", "FisheyeSensorSpec",
    "RLRAudioPropagationChannelLayout", "RLRAudioPropagationChannelLayoutType", "RLRAudioPropagationConfiguration",
    "Sensor", "SensorFactory", "SensorSpec", "VisualSensorSpec", "errors", "bindings",
}


def __getattr__(name):
    if name in _REAL_TOP_LEVEL:
        raise NotImplementedError(f"habitat_sim.{name} exists but the contract fake does not implement it")
    raise AttributeError(f"habitat-sim 0.3 has no attribute habitat_sim.{name}")

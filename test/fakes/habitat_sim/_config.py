"""Configuration value classes of the contract fake.

Field names and defaults are read from habitat-sim 0.3's pybind11 bindings and C++ headers:

- ``SensorType``, ``SemanticSensorTarget``: ``src/esp/bindings/SensorBindings.cpp`` (``py::enum_``).
- ``CameraSensorSpec``: ``SensorBindings.cpp`` (``SensorSpec``, ``VisualSensorSpec``,
  ``CameraSensorSpec`` classes) with defaults from ``src/esp/sensor/Sensor.h``
  (position (0, 1.5, 0), orientation 0), ``VisualSensor.h`` (resolution [128, 128] as
  [height, width], channels 4, near 0.01, far 1000), ``VisualSensor.cpp`` (sensor_type
  COLOR), ``CameraSensor.h`` / ``.cpp`` (hfov 90°, uuid "rgba_camera", subtype PINHOLE).
- ``SimulatorConfiguration``: ``src/esp/bindings/SimBindings.cpp``
  (``initSimConfigBindings``) with defaults from ``src/esp/sim/SimulatorConfiguration.h``.
- ``NavMeshSettings``: ``src/esp/bindings/ShortestPathBindings.cpp`` with defaults from
  ``NavMeshSettings::setDefaults`` in ``src/esp/nav/PathFinder.h``.
"""
from __future__ import annotations

import enum

from ._strict import Strict


class SensorType(enum.Enum):
    NONE = 0
    CUSTOM = 1
    COLOR = 2
    DEPTH = 3
    SEMANTIC = 4
    AUDIO = 5


class SensorSubType(enum.Enum):
    NONE = 0
    CUSTOM = 1
    PINHOLE = 2
    ORTHOGRAPHIC = 3
    FISHEYE = 4
    EQUIRECTANGULAR = 5
    IMPULSERESPONSE = 6


class SemanticSensorTarget(enum.Enum):
    """``habitat_sim.sensor.SemanticSensorTarget`` (``SensorBindings.cpp``; not re-exported at the top
    level). The default of ``VisualSensorSpec.semantic_target`` is ``SEMANTIC_ID`` (``VisualSensor.h``)."""

    DRAWABLE_ID = 0
    SEMANTIC_ID = 1
    OBJECT_ID = 2


class CameraSensorSpec(Strict):
    """``habitat_sim.CameraSensorSpec``. ``resolution`` is [height, width] (the real
    ``VisualSensor::framebufferSize`` swaps it to [W, H]); ``hfov`` is in degrees
    (the real property converts through ``magnum.Deg`` and reads back as ``magnum.Degd``; the fake
    keeps the number). ``semantic_target`` defaults to ``SEMANTIC_ID`` as in ``VisualSensor.h``."""

    _real_name = "CameraSensorSpec"
    _fields = {
        "uuid": "rgba_camera", "sensor_type": SensorType.COLOR, "sensor_subtype": SensorSubType.PINHOLE,
        "position": [0.0, 1.5, 0.0], "orientation": [0.0, 0.0, 0.0], "noise_model": "None",
        "near": 0.01, "far": 1000.0, "resolution": [128, 128], "gpu2gpu_transfer": False, "channels": 4,
        "semantic_target": SemanticSensorTarget.SEMANTIC_ID, "clear_color": [0.0, 0.0, 0.0, 1.0], "hfov": 90.0, "ortho_scale": 0.1,
    }
    _real_only = ("noise_model_kwargs", "is_visual_sensor_spec")

    def check(self) -> None:
        """What ``CameraSensorSpec::sanityCheck`` and ``VisualSensor::setResolution`` assert,
        plus the types the fake can honour."""
        if not isinstance(self.sensor_type, SensorType):
            raise TypeError(f"sensor {self.uuid!r}: sensor_type must be a habitat_sim.SensorType, got {self.sensor_type!r}")
        if self.sensor_type not in (SensorType.COLOR, SensorType.DEPTH, SensorType.SEMANTIC):
            raise NotImplementedError(f"sensor {self.uuid!r}: the contract fake renders COLOR, DEPTH and SEMANTIC only")
        if self.sensor_type == SensorType.SEMANTIC and self.semantic_target != SemanticSensorTarget.SEMANTIC_ID:
            raise NotImplementedError(f"sensor {self.uuid!r}: the contract fake renders semantic ids (SEMANTIC_ID) only")
        if self.sensor_subtype != SensorSubType.PINHOLE:
            raise NotImplementedError(f"sensor {self.uuid!r}: the contract fake renders pinhole cameras only")
        res = list(self.resolution)
        if len(res) != 2 or not all(int(v) == v and v > 0 for v in res):
            raise ValueError(f"sensor {self.uuid!r}: resolution must be [height, width] > 0, got {self.resolution!r}")
        if not 0.0 < float(self.hfov) < 180.0:
            raise ValueError(f"sensor {self.uuid!r}: hfov must be in (0, 180) degrees, got {self.hfov!r}")
        if len(list(self.position)) != 3 or len(list(self.orientation)) != 3:
            raise ValueError(f"sensor {self.uuid!r}: position and orientation must have three components")


class SimulatorConfiguration(Strict):
    """``habitat_sim.SimulatorConfiguration`` (``sim::SimulatorConfiguration``)."""

    _real_name = "SimulatorConfiguration"
    _fields = {
        "scene_dataset_config_file": "default", "scene_id": "", "random_seed": 0, "default_agent_id": 0,
        "gpu_device_id": 0, "allow_sliding": True, "create_renderer": True,
        "leave_context_with_background_renderer": False, "frustum_culling": True, "enable_physics": False,
        "use_semantic_textures": True, "enable_gfx_replay_save": False,
        "physics_config_file": "./data/default.physics_config.json", "override_scene_light_defaults": False,
        "scene_light_setup": "no_lights", "load_semantic_mesh": True, "force_separate_semantic_scene_graph": False,
        "requires_textures": True, "navmesh_settings": None, "enable_hbao": False,
    }


class NavMeshSettings(Strict):
    """``habitat_sim.NavMeshSettings``; ``set_defaults`` = ``NavMeshSettings::setDefaults``."""

    _real_name = "NavMeshSettings"
    _fields = {
        "cell_size": 0.05, "cell_height": 0.2, "agent_height": 1.5, "agent_radius": 0.1, "agent_max_climb": 0.2,
        "agent_max_slope": 45.0, "region_min_size": 20.0, "region_merge_size": 20.0, "edge_max_len": 12.0,
        "edge_max_error": 1.3, "verts_per_poly": 6.0, "detail_sample_dist": 6.0, "detail_sample_max_error": 1.0,
        "filter_low_hanging_obstacles": True, "filter_ledge_spans": True, "filter_walkable_low_height_spans": True,
        "include_static_objects": False,
    }
    _real_only = ("read_from_json", "write_to_json")

    def set_defaults(self) -> None:
        for name, default in type(self)._fields.items():
            setattr(self, name, default)

"""The sim bridge with a camera model: its frames go through it; a bad preset is refused by name."""
import pytest

pytest.importorskip("rclpy")


def _bridge(ros_context, **extra):
    from rclpy.parameter import Parameter
    from sim_bridge.bridge_node import SimBridgeNode

    params = {"scenes": 1, "seed": 0, "episodes_per_scene": 1, "split": "easy", "rate": 20.0, "log_every": 0.0,
              "width": 64, "height": 48, **extra}
    return ros_context.add_node(SimBridgeNode(context=ros_context.context,
                                              parameter_overrides=[Parameter(k, value=v) for k, v in params.items()]))


def test_bridge_frames_go_through_the_camera_model(ros_context):
    import numpy as np

    from personal.sim.sensor_model import SensorBackend

    ideal = _bridge(ros_context)
    noisy = _bridge(ros_context, sensor="d435", sensor_overrides="hfov_deg=69", sensor_seed=4)
    assert not isinstance(ideal.backend, SensorBackend) and ideal.backend.camera.hfov_deg == 79.0
    assert isinstance(noisy.backend, SensorBackend) and noisy.backend.camera.hfov_deg == 69.0
    assert noisy.obs.extras["sensor"] == "d435" and "ideal_depth" in noisy.obs.extras
    assert not np.array_equal(noisy.obs.depth, noisy.obs.extras["ideal_depth"])


def test_bridge_refuses_an_unknown_sensor_by_name(ros_context):
    bad = _bridge(ros_context, sensor="kinect")
    assert bad.backend is None

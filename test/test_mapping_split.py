"""The mapping node publishes a frame's occupancy before it encodes the frame's features (the explore
loop decides on the occupancy meanwhile, issue 16): ``integrate_geometry`` then ``integrate_features``
must build exactly the maps of ``integrate``, frame after frame."""
import numpy as np

from personal.mapping.pipeline import MapBuilder, MapConfig
from personal.world.generator import generate_scene
from personal.sim.backends.base import Action, AgentState, CameraSpec
from personal.sim.backends.synthetic import SyntheticBackend


def _frames(n=8):
    scene = generate_scene(3)
    be = SyntheticBackend(camera=CameraSpec(width=160, height=120), render_threads=1)
    be.load_scene(scene)
    room = scene.rooms[0]
    x, y = be.snap_to_navigable((room.bounds[0] + room.bounds[2]) / 2, (room.bounds[1] + room.bounds[3]) / 2)
    frames = [be.reset(state=AgentState(x, y, 0.0, 0.0))]
    for i in range(n - 1):
        frames.append(be.step((Action.TURN_LEFT, Action.MOVE_FORWARD, Action.MOVE_FORWARD)[i % 3]))
    return frames


def _fake_features(depth, rgb, ids, fp):
    """A deterministic stand-in encoder: one group per instance id, an embedding from the id."""
    groups = np.asarray(ids.reshape(-1)[fp.pixels], np.int64)  # pixels: flat indices into the image
    uniq, inv = np.unique(groups, return_inverse=True)
    emb = np.stack([np.cos(np.arange(8) * (u + 1.0)) for u in uniq]).astype(np.float32)
    return inv.astype(np.int64), emb


def test_geometry_then_features_equals_integrate():
    frames = _frames()
    cfg = MapConfig(feature_resolution=0.5)
    a = MapBuilder(cfg, feature_dim=8, encoder_name="fake", features=_fake_features)
    b = MapBuilder(cfg, feature_dim=8, encoder_name="fake", features=_fake_features)
    for o in frames:
        a.integrate(o.depth, o.K, o.T_map_camera, rgb=o.rgb, instance_ids=o.instance_ids, agent_xy=(o.state.x, o.state.y))
        fp = b.integrate_geometry(o.depth, o.K, o.T_map_camera, agent_xy=(o.state.x, o.state.y))
        b.integrate_features(o.depth, o.K, fp, o.rgb, o.instance_ids)
    assert a.feature_map.confidence.sum() > 0  # features were integrated at all
    assert_same_maps(a, b)


def assert_same_maps(a: MapBuilder, b: MapBuilder) -> None:
    """Feature map, occupancy and cloud of two builders are equal, bit for bit."""
    for name in ("embeddings", "confidence"):
        assert np.array_equal(getattr(a.feature_map, name), getattr(b.feature_map, name)), name
    for name, value in vars(a.occupancy).items():
        if isinstance(value, np.ndarray):
            assert np.array_equal(value, getattr(b.occupancy, name)), name
    assert np.array_equal(a.cloud(), b.cloud())

"""MapBuilder end to end on the synthetic simulator (ORACLE features), saved maps and the
`personal map show` PNG."""
import re

import numpy as np
import pytest
import yaml

from personal.mapping.exploration import ExplorerConfig, FrontierExplorer
from personal.mapping.feature_map import EncoderMismatchError, FeatureMap
from personal.mapping.occupancy import OccupancyGrid
from personal.mapping.pipeline import MapBuilder, MapConfig
from personal.mapping.session import explore


@pytest.fixture(scope="module")
def toy_map(tmp_path_factory):
    from personal.models.oracle import OracleCaptionEncoder, captions_from_scene
    from personal.sim.backends.base import AgentState, CameraSpec
    from personal.sim.backends.synthetic import SyntheticBackend
    from personal.sim.toy_scene import two_room_scene

    scene = two_room_scene()
    backend = SyntheticBackend(camera=CameraSpec(width=160, height=120))
    backend.load_scene(scene)
    enc = OracleCaptionEncoder(captions_from_scene(scene))
    mb = MapBuilder(MapConfig(stride=1), feature_dim=enc.dim, encoder_name=enc.name, features=enc.frame_features)
    obs = backend.reset(state=AgentState(2.0, 1.0, 0.0, 0.0))
    result = explore(backend, obs, mb, FrontierExplorer(ExplorerConfig()))
    out = mb.save(tmp_path_factory.mktemp("maps") / "toy", extra={"scene_id": scene.scene_id})
    return scene, enc, mb, result, out


def test_builder_maps_geometry_and_oracle_features(toy_map):
    scene, enc, mb, result, out = toy_map
    assert result.reason == "no reachable frontier" and result.steps < 2500
    fm = mb.feature_map
    assert fm.encoder == "oracle-captions-minilm"
    # every object was seen; the query for each caption peaks in the cell of that object
    for obj in scene.objects:
        if obj.room_id == "room_c":  # the closet has no door: never seen
            continue
        sim = fm.similarity(enc.encode_text([obj.caption])[0])
        iy, ix = np.unravel_index(np.nanargmax(sim), sim.shape)
        cx, cy = fm.geometry.center(iy, ix)
        assert obj.box.distance_2d(float(cx), float(cy)) <= 0.75, (obj.caption, float(cx), float(cy))
    cloud = mb.cloud()
    assert cloud.shape[1] == 3 and 1000 < len(cloud) and cloud[:, 2].max() < 2.7
    stages = mb.timer.summary()
    assert {"backproject", "occupancy", "features", "feature_map", "cloud"} <= set(stages)


def test_saved_map_folder(toy_map):
    scene, enc, mb, result, out = toy_map
    index = yaml.safe_load((out / "map.yaml").read_text())
    assert index["encoder"] == enc.name and index["scene_id"] == scene.scene_id
    occ = OccupancyGrid.load(out / index["occupancy"])
    np.testing.assert_array_equal(occ.state(), mb.occupancy.state())
    fm = FeatureMap.load(out, expected_encoder=enc.name)
    np.testing.assert_array_equal(fm.embeddings, mb.feature_map.embeddings)
    with pytest.raises(EncoderMismatchError, match="siglip:tiny"):
        FeatureMap.load(out, expected_encoder="siglip:tiny")


def test_map_show_writes_a_png(toy_map, tmp_path):
    from typer.testing import CliRunner

    from personal.mapping.cli import app

    scene, enc, mb, result, out = toy_map
    png = tmp_path / "show.png"
    res = CliRunner().invoke(app, ["show", str(out), "--query", "the red box", "--out", str(png)])
    assert res.exit_code == 0, res.output
    from PIL import Image

    assert Image.open(png).size[0] > 300
    assert "oracle-captions-minilm" in res.output
    best = eval(res.output.split("  ", 1)[1].strip())["best_xy"]  # summary dict printed by the command
    assert scene.object("box_2").box.distance_2d(*best) <= 0.75
    bad = CliRunner().invoke(app, ["show", str(tmp_path), "--out", str(png)])
    # rich wraps the error inside a box at the terminal's width, so a longer tmp path (xdist's popen-gwN) splits it
    unboxed = " ".join(re.sub("[\u2500-\u257f]", " ", bad.output).split())
    assert bad.exit_code != 0 and "not a saved map" in unboxed, bad.output

"""pog_eval reuses a saved pre-exploration map only when it was built from the same scene,
cell size and encoder — scene ids alone repeat across generator versions and folders."""
import dataclasses
import json

from personal.grounding.eval.pog_run import remember_map_source, reusable_map
from personal.world.generator import generate_scene


def test_reuse_only_for_the_same_scene_resolution_and_encoder(tmp_path):
    scene = generate_scene(0)
    map_dir = tmp_path / scene.scene_id
    assert reusable_map(map_dir, scene, 0.5, "oracle") == (False, "no saved map")
    map_dir.mkdir()
    (map_dir / "features.yaml").write_text("{}")
    ok, why = reusable_map(map_dir, scene, 0.5, "oracle")
    assert not ok and "source.json" in why  # a map of unknown origin is not trusted
    remember_map_source(map_dir, scene, 0.5, "oracle")
    assert reusable_map(map_dir, scene, 0.5, "oracle") == (True, "matches")
    assert reusable_map(map_dir, scene, 1.0, "oracle") == (False, "built for a different resolution")
    assert reusable_map(map_dir, scene, 0.5, "clip")[0] is False
    other = dataclasses.replace(generate_scene(1), scene_id=scene.scene_id)  # same id, other house
    assert reusable_map(map_dir, other, 0.5, "oracle") == (False, "built for a different scene_digest")


def test_a_map_explored_at_another_image_size_is_not_reused(tmp_path):
    from personal.world.generator import generate_scene

    scene = generate_scene(0)
    map_dir = tmp_path / scene.scene_id
    map_dir.mkdir()
    (map_dir / "features.yaml").write_text("{}")
    remember_map_source(map_dir, scene, 0.5, "lit", (320, 240))
    assert reusable_map(map_dir, scene, 0.5, "lit", (320, 240)) == (True, "matches")
    assert reusable_map(map_dir, scene, 0.5, "lit", (640, 480)) == (False, "built for a different image_size")
    # a map built with other weights under the same encoder name (a replaced checkpoint) is rebuilt
    src = json.loads((map_dir / "source.json").read_text())
    assert src["encoder_weights"]
    src["encoder_weights"] = "0" * 16
    (map_dir / "source.json").write_text(json.dumps(src))
    assert reusable_map(map_dir, scene, 0.5, "lit", (320, 240)) == (False, "built for a different encoder_weights")
    # a lit map from before the tower inferred in float32 (no precision recorded: bf16 autocast) is rebuilt
    remember_map_source(map_dir, scene, 0.5, "lit", (320, 240))
    src = json.loads((map_dir / "source.json").read_text())
    assert src["inference_precision"] == "float32"
    del src["inference_precision"]
    (map_dir / "source.json").write_text(json.dumps(src))
    assert reusable_map(map_dir, scene, 0.5, "lit", (320, 240)) == (False, "built for a different inference_precision")

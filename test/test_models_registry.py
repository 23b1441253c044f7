"""Encoders and policy backends by name: the registries import no implementation until one is
named, every registered name resolves, and the shipped crop tower built by name gives the
embeddings recorded before the registry and the proposal pipeline moved (issue 29)."""
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from personal.models.base import make_encoder

REFERENCE = Path(__file__).parent / "data" / "lit_shipped_reference.npz"


def test_registries_import_no_implementation_until_named():
    code = ("import sys, personal.models.base, personal.manipulation.policies\n"
            "bad = [m for m in sys.modules if m.startswith(('personal.perception', 'personal.models.hf_vlm', "
            "'personal.models.oracle', 'personal.manipulation.learned', 'personal.manipulation.policies.scripted', "
            "'torch'))]\n"
            "print(bad)\nsys.exit(1 if bad else 0)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


def test_every_registered_name_resolves():
    pytest.importorskip("torch")
    from personal.manipulation.policies.registry import POLICY_BACKENDS
    from personal.models.base import ENCODERS
    from personal.plugins import load

    for table in (ENCODERS, POLICY_BACKENDS):
        for name, spec in table.items():
            assert callable(load(spec)), (name, spec)


def test_unknown_names_and_bad_specs_are_clear_errors():
    from personal.plugins import lookup

    with pytest.raises(ValueError, match=r"unknown encoder 'nope' \(known: .*lit"):
        make_encoder("nope")
    with pytest.raises(ValueError, match="not 'module:attr'"):
        lookup({"x": "personal.models.base"}, "x", "thing")


def lit_reference_outputs() -> dict:
    """The shipped crop tower's outputs on fixed inputs: random images, and the RGB-D proposals of
    three rendered views of household 5. Recorded into REFERENCE with the code before issue 29
    (commit 88e35b2): ``PYTHONPATH=<that checkout> python -c "import numpy as np, sys;
    sys.path.insert(0, 'test'); import test_models_registry as t; np.savez_compressed(t.REFERENCE, **t.lit_reference_outputs())"``."""
    from personal.world.generator import generate_scene
    from personal.world.mesh import scene_mesh
    from personal.sim.backends.base import AgentState, CameraSpec
    from personal.sim.backends.synthetic import camera_pose
    from personal.sim.render import Renderer

    enc = make_encoder("lit")
    rng = np.random.default_rng(0)
    out = {"image": enc.encode_image([rng.integers(0, 256, (64, 64, 3), dtype=np.uint8) for _ in range(3)]),
           "text": enc.encode_text(["the red backpack under the desk", "a mug"])}
    scene = generate_scene(5)
    cam = CameraSpec(width=160, height=120)
    r = Renderer(scene_mesh(scene), cam, nthreads=1)
    for k, o in enumerate(scene.objects[i] for i in (2, 7, 13)):  # views with 6, 9 and 13 proposals
        T = camera_pose(AgentState(o.box.center[0] - 1.8, o.box.center[1], 0.0, 0.0, -0.3), cam)
        rgb, depth, _ = r.render(T)
        regions, emb, weights = enc.dense_regions(rgb, depth, cam.intrinsics(), T)
        out.update({f"regions{k}": regions.astype(np.int16), f"emb{k}": emb, f"objectness{k}": weights})
    return out


def test_shipped_lit_by_name_gives_the_recorded_embeddings():
    pytest.importorskip("torch")
    ref = np.load(REFERENCE)
    got = lit_reference_outputs()
    assert sorted(got) == sorted(ref.files)
    assert sum(len(ref[k]) for k in ref.files if k.startswith("emb")) >= 20  # the views do have proposals
    for k in ref.files:
        if k.startswith("regions"):
            np.testing.assert_array_equal(got[k], ref[k], err_msg=k)
        else:  # recorded under bf16 autocast, the tower now runs in float32 (and another CPU may round differently)
            np.testing.assert_allclose(got[k], ref[k], atol=2e-2, err_msg=k)

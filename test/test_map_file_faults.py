"""A saved feature map is an untrusted file (issue 28, item 9): a tampered features.yaml or .npz gives
MapFileError naming the file and field — in the POG evaluator a recorded failure — never a traceback,
never a file read outside the map's folder, never an allocation bigger than the descriptor allows."""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
import yaml

from personal.mapping.feature_map import FeatureMap, MapFileError


def _saved(folder: Path, shape=(4, 5, 8)) -> Path:
    fm = FeatureMap(dim=shape[2], resolution=0.5, encoder="lit")
    fm.embeddings = np.random.default_rng(0).random(shape, dtype=np.float32)
    fm.confidence = np.ones(shape[:2], np.float32)
    from personal.mapping.grid import GridGeometry

    fm.geometry = GridGeometry(0.5, (0.0, 0.0), shape[:2])
    return fm.save(folder)


def _edit(path: Path, **fields) -> Path:
    meta = yaml.safe_load(path.read_text())
    meta.update(fields)
    path.write_text(yaml.safe_dump(meta))
    return path


def test_an_honest_map_round_trips(tmp_path):
    fm = FeatureMap.load(_saved(tmp_path))
    assert fm.embeddings.shape == (4, 5, 8) and fm.geometry.resolution == 0.5


@pytest.mark.parametrize("field, value, match", [
    ("resolution", 0, "field 'resolution'"),
    ("resolution", float("nan"), "field 'resolution'"),
    ("resolution", "fine", "field 'resolution'"),
    ("origin", [0.0], "field 'origin'"),
    ("origin", [float("inf"), 0.0], "field 'origin'"),
    ("shape", [4, 5], "field 'shape'"),
    ("shape", [4, 5, 9], "does not end with the encoder dimension"),
    ("shape", [100000, 100000, 8], "over the limit"),
    ("encoder", "lit", "field 'encoder'"),
    ("data", "/etc/passwd", "field 'data'"),
    ("data", "../../elsewhere.npz", "field 'data'"),
    ("data", "missing.npz", "not found"),
])
def test_tampered_descriptor_fields_are_named(tmp_path, field, value, match):
    path = _edit(_saved(tmp_path), **{field: value})
    with pytest.raises(MapFileError, match=match) as err:
        FeatureMap.load(path)
    assert str(path) in str(err.value) or str(tmp_path) in str(err.value)


def test_a_yaml_python_tag_is_refused_not_run(tmp_path):
    path = _saved(tmp_path)
    marker = tmp_path / "ran"
    path.write_text(path.read_text() + f"x: !!python/object/apply:os.system ['touch {marker}']\n")
    with pytest.raises(MapFileError, match=r"features.yaml: not a plain YAML map descriptor \(ConstructorError"):
        FeatureMap.load(path)
    assert not marker.exists()


def test_not_a_mapping_and_garbage_yaml(tmp_path):
    path = _saved(tmp_path)
    path.write_text("- just\n- a list\n")
    with pytest.raises(MapFileError, match="must be a YAML mapping"):
        FeatureMap.load(path)
    path.write_text("a: [unclosed\n")
    with pytest.raises(MapFileError, match="not a plain YAML"):
        FeatureMap.load(path)


def _bomb(npz: Path, shape, real_shape) -> None:
    """A zip whose embeddings.npy is `real_shape` of zeros (compresses ~1000x): a small file, a big array,
    written in chunks (the test itself never holds it)."""
    with zipfile.ZipFile(npz, "w", zipfile.ZIP_DEFLATED) as zf:
        with zf.open("embeddings.npy", "w", force_zip64=True) as fh:
            np.lib.format.write_array_header_1_0(fh, {"descr": "<f4", "fortran_order": False, "shape": real_shape})
            chunk = bytes(1 << 20)
            for _ in range(int(np.prod(real_shape)) * 4 // len(chunk)):
                fh.write(chunk)
        buf = io.BytesIO()
        np.lib.format.write_array(buf, np.zeros(shape[:2], np.float32))
        zf.writestr("confidence.npy", buf.getvalue())


def test_a_zip_bomb_is_refused_before_it_is_decompressed(tmp_path):
    """400 MB of zeros in a ~400 kB .npz under a descriptor of a tiny map: refused from the member's
    header, with no allocation near 400 MB (before: allocated, then the shape check failed)."""
    path = _saved(tmp_path)
    _bomb(tmp_path / "features.npz", (4, 5, 8), (12500, 1000, 8))
    assert (tmp_path / "features.npz").stat().st_size < 1_000_000
    code = ("import sys, tracemalloc; from personal.mapping.feature_map import FeatureMap, MapFileError\n"
            "tracemalloc.start()\n"
            "try:\n    FeatureMap.load(sys.argv[1])\nexcept MapFileError as e:\n    print('refused', e)\n"
            "print('peak_mb', tracemalloc.get_traced_memory()[1] >> 20)")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=60, env=env)
    assert "refused" in out.stdout and "has shape (12500, 1000, 8), the descriptor says [4, 5, 8]" in out.stdout, out.stdout + out.stderr
    assert int(out.stdout.split("peak_mb ")[1]) < 50, out.stdout  # NumPy's allocations are traced


def test_object_arrays_in_the_npz_are_refused(tmp_path):
    path = _saved(tmp_path)
    np.savez(tmp_path / "features.npz", embeddings=np.zeros((4, 5, 8), np.float32), confidence=np.array([[None] * 5] * 4))
    with pytest.raises(MapFileError, match="dtype"):
        FeatureMap.load(path)


def test_pog_eval_records_a_tampered_saved_map_as_a_failure(tmp_path):
    """The main job on map_source:=saved with resolution 0 in the scene's features.yaml: the scene's
    episodes are recorded failures (map_invalid), the run ends non-zero, and no traceback."""
    maps = tmp_path / "maps" / "synth_00000"
    _edit(_saved(maps, shape=(4, 5, 512)), resolution=0)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    out = subprocess.run([sys.executable, "-m", "personal", "launch", "pog_eval", "map_source:=saved",
                          f"maps_dir:={tmp_path / 'maps'}", "scenes:=1", "episodes_per_split:=1", "splits:=easy",
                          "methods:=centre", "upper_bound:=none", f"out_dir:={tmp_path / 'out'}"],
                         capture_output=True, text=True, timeout=240, env=env)
    text = out.stdout + out.stderr
    assert "Traceback" not in text, text[-3000:]
    assert "unusable saved map" in text and "field 'resolution'" in text, text[-3000:]
    rows = [json.loads(l) for f in (tmp_path / "out").glob("*/results.jsonl") for l in f.read_text().splitlines()]
    assert rows and all(r.get("failure") == "map_invalid" or "map_invalid" in json.dumps(r) for r in rows), rows
    assert out.returncode != 0

"""Habitat backend without habitat-sim: a clear error naming the conda package, and the
factory's fallback. (Frames: test_frames.py; behaviour through the contract fake:
test_habitat_contract.py.)"""
import pytest

from personal.sim.backends import habitat_available, make_backend
from personal.sim.backends.habitat import HabitatBackend
from personal.sim.backends.synthetic import SyntheticBackend

needs_no_habitat = pytest.mark.skipif(habitat_available(), reason="habitat_sim is installed here")


@needs_no_habitat
def test_clear_import_error():
    with pytest.raises(ImportError) as e:
        HabitatBackend()
    msg = str(e.value)
    assert "habitat-sim" in msg and "conda install" in msg
    with pytest.raises(ImportError, match="habitat-sim"):
        make_backend("habitat")


@needs_no_habitat
def test_auto_falls_back_to_synthetic():
    assert isinstance(make_backend("auto"), SyntheticBackend)


def test_factory():
    assert isinstance(make_backend("synthetic", render_threads=1), SyntheticBackend)
    with pytest.raises(ValueError, match="unknown simulator backend 'mujoco'"):
        make_backend("mujoco")

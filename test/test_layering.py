"""Package layering (issue 29, docs/architecture.md): imports read with ast from every file under
personal/, nodes/ and sim_bridge/ (personal.runs.imports). A unit never imports a higher floor, no
units import each other in a circle, and (once part B lands) no files do; each rule is first shown
to fail on a synthetic bad graph."""
import pytest

from personal.runs import imports as im


@pytest.fixture(scope="module")
def files():
    return im.file_graph(im.read_sources())


@pytest.fixture(scope="module")
def units(files):
    return im.unit_graph(files)


def synthetic(edges: dict[str, str]) -> dict[str, set[str]]:
    """A file graph from {module: source} without touching the disk."""
    return im.file_graph({m: (text, m.count(".") == 1 and m.endswith("__init__")) for m, text in edges.items()})


def test_the_reader_sees_absolute_relative_and_lazy_imports():
    src = "from personal.world.model import Box\ndef f():\n    from .pog import x\n    import personal.sim.render\n"
    found = im.imports_of(src, "personal.grounding.eval.pog_run", is_package=False)
    assert {"personal.world.model", "personal.grounding.eval.pog", "personal.sim.render"} <= found
    assert not any(m.startswith("numpy") for m in im.imports_of("import numpy", "personal.x", False))


def test_a_lower_floor_importing_a_higher_one_is_caught():
    graph = synthetic({"personal.world.model": "def f():\n    from personal.grounding.pipeline import MapView\n",
                       "personal.grounding.pipeline": "from personal.world.model import Box\n"})
    assert im.upward_edges(im.unit_graph(graph)) == [("personal.world", "personal.grounding")]
    assert im.cycles(im.unit_graph(graph)) == [["personal.grounding", "personal.world"]]
    assert im.cycles(graph) == [["personal.grounding.pipeline", "personal.world.model"]]


def test_a_library_importing_the_bridge_or_nodes_is_caught():
    graph = synthetic({"personal.mapping.cli": "from sim_bridge.bridge_node import main\nimport nodes.tf\n",
                       "sim_bridge.bridge_node": "", "nodes.tf": ""})
    assert im.upward_edges(im.unit_graph(graph)) == [("personal.mapping", "nodes"), ("personal.mapping", "sim_bridge")]


def test_a_stale_import_path_is_caught():
    sources = {"personal.world.model": ("", False), "personal.grounding.pipeline": ("from personal.eval.pog import x\n", False)}
    assert im.unresolved(sources) == ["personal.grounding.pipeline -> personal.eval.pog",
                                      "personal.grounding.pipeline -> personal.eval.pog.x"]


def test_every_import_of_a_repository_module_names_a_file():
    sources = im.read_sources()
    assert im.unresolved(sources, {**sources, **im.read_other_sources()}) == []


def test_every_unit_has_a_floor(units):
    assert im.unplaced(units) == [], "place new packages in personal.runs.imports.FLOORS"


def test_no_unit_imports_a_higher_floor(units):
    assert im.upward_edges(units) == []


def test_no_circle_between_units(units):
    assert im.cycles(units) == []


def test_the_library_never_imports_nodes_or_the_bridge(units):
    assert [(a, b) for a, t in units.items() if a.startswith("personal") for b in t if b in ("nodes", "sim_bridge")] == []


def test_runs_imports_no_benchmark_or_domain(units):
    assert {b for b in units["personal.runs"] if im.floor_of(b) >= im.floor_of("personal.sim")} == set()


def test_no_circle_between_files(files):
    assert im.cycles(files) == []

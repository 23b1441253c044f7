"""The repository's import graph, read with ``ast`` (nothing is imported), and its layering rules.

Files are grouped into *units*: a top-level package of the library (``personal.grounding`` with its
subpackages), a module directly under ``personal/`` (``personal.cli``, ``personal.paths`` ...: the
root package is a namespace of small modules, not one layer), ``nodes`` and ``sim_bridge``. Each unit
sits on a *floor* (``FLOORS``, docs/architecture.md); a unit may import units on its own floor or
lower ones, never higher ones, and no two units (or files) may import each other in a circle.
``scripts/import_graph.py`` prints the graph; ``test/test_layering.py`` enforces the rules.
"""
from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TOP = ("personal", "nodes", "sim_bridge")

# Floors, lowest first. A unit not named here is an error (the test says which), so a new package
# has to be placed on purpose.
FLOORS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("base", ("personal", "personal.paths", "personal.files", "personal.exit_codes", "personal.ros_env",
              "personal.tf", "personal.llm_reply", "personal.depth", "personal.plugins", "personal.interfaces",
              "personal.msg", "personal.stacks", "personal.resend")),
    ("robot", ("personal.robot",)),
    ("graphs", ("personal.graphs", "personal.runner", "personal.bags", "personal.viz")),
    ("world", ("personal.world",)),
    ("runs", ("personal.runs",)),
    ("sim", ("personal.sim",)),
    ("models", ("personal.models",)),
    ("perception", ("personal.perception",)),
    ("mapping", ("personal.mapping",)),
    ("domains", ("personal.grounding", "personal.verification", "personal.smarthome", "personal.manipulation")),
    ("memory", ("personal.memory",)),
    ("navigation", ("personal.navigation",)),
    ("assistant", ("personal.assistant",)),
    ("apps", ("personal.benchmarks", "personal.cli", "personal.robot_cli", "personal.launch_cli",
              "personal.launch_support", "personal.__main__")),
    ("nodes", ("nodes",)),
    ("bridge", ("sim_bridge",)),
)
# Units read as one by the package check (for a circle that a later change is to split); none now.
MERGED: dict[str, str] = {}


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(source: str, name: str, is_package: bool) -> set[str]:
    """Modules (in TOP) that ``source`` (module ``name``) imports, at any depth of the file."""
    out = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative import
                parts = name.split(".")
                base = parts[: len(parts) - node.level + (1 if is_package else 0)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.add(mod)
            out.update(f"{mod}.{a.name}" for a in node.names)
    return {m for m in out if m.split(".")[0] in TOP}


def read_sources(root: Path = ROOT) -> dict[str, tuple[str, bool]]:
    """{module: (source, is_package)} for every .py file under TOP."""
    return {module_name(p, root): (p.read_text(), p.name == "__init__.py")
            for top in TOP for p in sorted((root / top).rglob("*.py"))}


def file_graph(sources: dict[str, tuple[str, bool]]) -> dict[str, set[str]]:
    """module -> the repository modules it imports (``from a import b``: ``a.b`` if a module, else ``a``)."""
    graph: dict[str, set[str]] = defaultdict(set)
    for mod, (text, is_pkg) in sources.items():
        graph[mod]  # every file is a node
        for target in imports_of(text, mod, is_pkg):
            target_mod = target if target in sources else target.rsplit(".", 1)[0]
            if target_mod in sources and target_mod != mod:
                graph[mod].add(target_mod)
    return graph


def unit_of(module: str) -> str:
    """The unit (see the module doc) a module belongs to."""
    parts = module.split(".")
    if parts[0] != "personal":
        return parts[0]
    unit = ".".join(parts[:2])
    return MERGED.get(unit, unit)


def unit_graph(files: dict[str, set[str]]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = defaultdict(set)
    for a, targets in files.items():
        graph[unit_of(a)]
        graph[unit_of(a)].update(unit_of(b) for b in targets if unit_of(b) != unit_of(a))
    return graph


def floor_of(unit: str) -> int | None:
    for i, (_, units) in enumerate(FLOORS):
        if unit in units or MERGED.get(unit) in units:
            return i
    return None


def unplaced(units: dict[str, set[str]]) -> list[str]:
    return sorted(u for u in units if floor_of(u) is None)


def upward_edges(units: dict[str, set[str]]) -> list[tuple[str, str]]:
    """(a, b): unit ``a`` imports ``b`` on a higher floor."""
    return sorted((a, b) for a, targets in units.items() for b in targets
                  if None not in (floor_of(a), floor_of(b)) and floor_of(b) > floor_of(a))


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one member (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10000))
    try:
        for v in sorted(graph):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return sorted(out)


GENERATED = ("personal.msg", "personal.srv", "personal.action")  # rosidl's, not in the tree


def unresolved(sources: dict[str, tuple[str, bool]], readers: dict[str, tuple[str, bool]] | None = None) -> list[str]:
    """``reader -> module`` for each import of a repository module that names no file (a stale path
    after a move); ``readers`` (default: ``sources``) may add tests, benchmarks and scripts."""
    out = []
    for mod, (text, is_pkg) in sorted((readers or sources).items()):
        for target in sorted(imports_of(text, mod, is_pkg)):
            if target.startswith(GENERATED) or target in sources or target.rsplit(".", 1)[0] in sources:
                continue
            out.append(f"{mod} -> {target}")
    return out


def read_other_sources(root: Path = ROOT, folders: tuple[str, ...] = ("test", "bench", "scripts")) -> dict[str, tuple[str, bool]]:
    """Python files outside the packages that import them (tests, benchmarks, scripts), by path."""
    return {str(p.relative_to(root)): (p.read_text(), False) for folder in folders
            for p in sorted((root / folder).rglob("*.py")) if "node_modules" not in p.parts}

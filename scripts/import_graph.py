#!/usr/bin/env python3
"""Print the package import graph of the repository (personal.*, nodes, sim_bridge) and its cycles.

Reads every .py file's top-level and function-level imports with ``ast`` (nothing is imported),
groups files by package (``personal.eval``, ``personal.grounding``, ``sim_bridge.backends`` ...) and
prints ``a -> b`` edges, then each strongly connected component of more than one package (an
import circle between packages) and each file-level circle. Used to read the layering before and
after a restructuring (issue 29)."""
from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOP = ("personal", "nodes", "sim_bridge")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, name: str) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative import
                base = name.split(".")[: -node.level] if path.name != "__init__.py" else name.split(".")[: len(name.split(".")) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.add(mod)
            out.update(f"{mod}.{a.name}" for a in node.names)
    return {m for m in out if m.split(".")[0] in TOP}


def package_of(module: str, packages: set[str]) -> str:
    """A module's package; a module directly under ``personal/`` (cli, runner, paths ...) is its own
    unit: the root package is a namespace of small modules, not one layer."""
    parts = module.split(".")
    for k in range(len(parts), 0, -1):
        pkg = ".".join(parts[:k])
        if pkg in packages and pkg != "personal":
            return pkg
    return module


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one member (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
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

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main() -> int:
    files = {module_name(p): p for top in TOP for p in (ROOT / top).rglob("*.py")}
    packages = {m for m, p in files.items() if p.name == "__init__.py"}
    file_graph: dict[str, set[str]] = defaultdict(set)
    pkg_graph: dict[str, set[str]] = defaultdict(set)
    for mod, path in files.items():
        home = package_of(mod, packages)
        for target in imports(path, mod):
            target_mod = target if target in files else target.rsplit(".", 1)[0]
            if target_mod not in files or target_mod == mod:
                continue
            file_graph[mod].add(target_mod)
            other = package_of(target_mod, packages)
            if other != home:
                pkg_graph[home].add(other)
    print("# package imports")
    for a in sorted(pkg_graph):
        print(f"{a} -> {', '.join(sorted(pkg_graph[a]))}")
    print("\n# circles between packages")
    for comp in cycles(pkg_graph) or [["none"]]:
        print(" <-> ".join(comp))
    print("\n# circles between files")
    for comp in cycles(file_graph) or [["none"]]:
        print(" <-> ".join(comp))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

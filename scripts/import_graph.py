#!/usr/bin/env python3
"""Print the import graph of the repository (personal.*, nodes, sim_bridge): unit edges with their
floors, upward edges, and the circles between units and between files (personal.runs.imports;
the rules are enforced by test/test_layering.py, drawn in docs/architecture.md)."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from personal.runs import imports as im  # noqa: E402


def main() -> int:
    files = im.file_graph(im.read_sources())
    units = im.unit_graph(files)
    print("# unit imports (floor: unit -> units)")
    for a in sorted(units, key=lambda u: (im.floor_of(u) if im.floor_of(u) is not None else -1, u)):
        if units[a]:
            floor = im.floor_of(a)
            print(f"{im.FLOORS[floor][0] if floor is not None else '?'}: {a} -> {', '.join(sorted(units[a]))}")
    print("\n# units on no floor")
    print("\n".join(im.unplaced(units)) or "none")
    print("\n# upward imports")
    print("\n".join(f"{a} -> {b}" for a, b in im.upward_edges(units)) or "none")
    print("\n# circles between units")
    print("\n".join(" <-> ".join(c) for c in im.cycles(units)) or "none")
    print("\n# circles between files")
    print("\n".join(" <-> ".join(c) for c in im.cycles(files)) or "none")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

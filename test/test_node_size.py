"""Issue 29: a node file stays short (it parses parameters and messages, calls the library, publishes);
logic that grows belongs in personal/, testable without rclpy."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 250


def long_files(folders=("nodes", "sim_bridge"), limit=MAX_LINES, root=ROOT) -> dict[str, int]:
    """{relative path: line count} of every Python file in ``folders`` longer than ``limit`` lines."""
    counts = {str(p.relative_to(root)): len(p.read_text().splitlines())
              for folder in folders for p in sorted((root / folder).glob("*.py"))}
    return {path: n for path, n in counts.items() if n > limit}


def test_a_long_file_is_caught(tmp_path):
    (tmp_path / "nodes").mkdir()
    (tmp_path / "nodes" / "big_node.py").write_text("x = 1\n" * (MAX_LINES + 1))
    (tmp_path / "nodes" / "small_node.py").write_text("x = 1\n" * MAX_LINES)
    assert long_files(("nodes",), root=tmp_path) == {"nodes/big_node.py": MAX_LINES + 1}


def test_every_node_file_is_at_most_250_lines():
    assert long_files() == {}, f"move logic into personal/ (and parameter tables into data): {long_files()}"


def test_no_line_was_crammed():
    wide = [f"{p.relative_to(ROOT)}:{i}" for folder in ("nodes", "sim_bridge") for p in sorted((ROOT / folder).glob("*.py"))
            for i, line in enumerate(p.read_text().splitlines(), 1) if len(line) > 140]
    assert wide == []

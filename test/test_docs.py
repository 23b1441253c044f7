"""The README and docs/ stay true: every command in their shell blocks parses, every relative link
resolves. ``personal`` commands are parsed by the CLI itself (click's own parser, every option
and argument; ``launch`` also validates the graph and its ``name:=value`` arguments, as
``--dry-run`` would); ``ros2 launch personal`` lines are checked against the graph's arguments;
bench scripts answer ``--help`` and know the options used; other programs (ros2 topic, rviz2,
ssh...) are external and listed in EXTERNAL."""
from __future__ import annotations

import importlib.util
import re
import shlex
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
EXTERNAL = {"for", "do", "done", "sed", "rosdep", "ros2", "rviz2", "ssh", "git", "pip", "apt-get", "sudo", "colcon", "source", "cd", "export", "mkdir", "cp",
            "ls", "echo", "cat", "conda", "curl", "wget", "docker", "mosquitto_sub", "mosquitto_pub", "chromium",
            "python3", "bash", "rm", "huggingface-cli", "sh", "tar", "unzip", "foxglove-studio"}


def shell_blocks(text: str):
    for m in re.finditer(r"^```(bash|sh|shell|console)?\s*\n(.*?)^```", text, re.M | re.S):
        if m.group(1) is None and not re.search(r"^(bin/|\.venv/|personal |python |ros2 )", m.group(2), re.M):
            continue  # a plain block that is not a shell session (yaml, output)
        yield m.group(2)


def commands(page: Path) -> list[list[str]]:
    out = []
    for block in shell_blocks(page.read_text()):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.strip().removeprefix("$ ")
            if not line or line.startswith("#"):
                continue
            for part in re.split(r"\s(?:&&|\|\||\||;)\s", line):
                try:
                    argv = shlex.split(part, comments=True)
                except ValueError as exc:
                    raise AssertionError(f"{page.name}: cannot split {part!r}: {exc}") from None
                if argv:
                    out.append(argv)
    return out


ALL = [(p, argv) for p in PAGES for argv in commands(p)]


@lru_cache(maxsize=1)
def cli():
    import typer

    from personal.cli import _register, app

    _register()
    return typer.main.get_command(app)


def parse_personal(args: list[str]) -> None:
    """Parse with the CLI's own click commands (no callback runs)."""
    import click

    cmd, name, parent = cli(), "personal", None
    while True:
        ctx = cmd.make_context(name, list(args), parent=parent)
        if not isinstance(cmd, click.Group):
            break
        rest = [*getattr(ctx, "_protected_args", []), *ctx.args]
        if not rest:
            break
        sub = cmd.get_command(ctx, rest[0])
        assert sub is not None, f"no command {rest[0]!r} under {name!r}"
        cmd, name, parent, args = sub, rest[0], ctx, rest[1:]
    if name == "launch":
        from personal.graphs import get_graph, parse_assignments

        graph = ctx.params["graph"]
        get_graph(graph).argument_values(parse_assignments(list(ctx.params.get("assignments") or [])))


@lru_cache(maxsize=None)
def bench_help(script: str) -> str:
    proc = subprocess.run([sys.executable, script, "--help"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"{script} --help failed:\n{proc.stderr[-2000:]}"
    return proc.stdout


def check(argv: list[str]) -> str:
    """Check one command; return how it was checked."""
    prog, rest = argv[0], argv[1:]
    if prog in ("bin/personal", "personal"):
        parse_personal(rest)
        return "personal"
    if prog.endswith("python") or prog.endswith("python3.11"):
        if rest[:2] == ["-m", "personal"]:
            parse_personal(rest[2:])
            return "personal"
        if rest[:1] == ["-m"]:
            assert importlib.util.find_spec(rest[1]) is not None, f"no module {rest[1]}"
            return "module"
        if rest[:1] == ["-c"]:
            compile(rest[1], "<doc>", "exec")
            return "python -c"
        script = rest[0]
        assert (ROOT / script).is_file(), f"no script {script}"
        if script.startswith("bench/"):
            text = bench_help(script)
            for opt in (a.split("=")[0] for a in rest[1:] if a.startswith("--")):
                assert opt in text, f"{script} has no option {opt}"
        return "script"
    if prog == "bin/test":
        assert (ROOT / "bin/test").stat().st_mode & 0o111
        return "bin/test"
    if prog == "ros2" and rest[:2] == ["launch", "personal"]:
        from personal.graphs import get_graph, parse_assignments

        get_graph(rest[2].removesuffix(".launch.py")).argument_values(parse_assignments(rest[3:]))
        return "ros2 launch"
    if prog in EXTERNAL or prog.startswith(("/", "$")):
        return "external"
    raise AssertionError(f"unknown program {prog!r}: check it here or add it to EXTERNAL")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_command_parses(page):
    checked = []
    for p, argv in ALL:
        if p != page:
            continue
        try:
            checked.append(check(argv))
        except (AssertionError, Exception) as exc:  # click.UsageError, GraphError, ...
            raise AssertionError(f"{page.name}: `{shlex.join(argv)}`: {type(exc).__name__}: {exc}") from None
    if page.name == "README.md":
        assert checked.count("personal") >= 1 and "bin/test" in checked


def test_the_readme_gives_the_two_commands_and_stays_short():
    text = (ROOT / "README.md").read_text()
    assert "bin/personal launch pog_eval" in text and "\nbin/test" in text
    assert len(text.splitlines()) < 150


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_resolves(page):
    text = page.read_text()
    targets = re.findall(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", text) + re.findall(r'<img[^>]+src="([^"]+)"', text)
    missing = []
    for target in targets:
        if re.match(r"^(https?:|mailto:|#|data:)", target):
            continue
        path = (page.parent / target.split("#")[0]).resolve()
        if not path.exists():
            missing.append(target)
    assert not missing, f"{page.relative_to(ROOT)}: links that do not resolve: {missing}"

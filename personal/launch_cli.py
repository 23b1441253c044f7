"""`personal launch <graph> [name:=value ...]` and `personal graphs`."""
from __future__ import annotations

from typing import List, Optional

import typer


def launch(
    graph: str = typer.Argument(..., help="Graph name (see `personal graphs`)."),
    assignments: Optional[List[str]] = typer.Argument(None, help="Graph arguments as name:=value."),
    sigint_timeout: float = typer.Option(5.0, help="Seconds to wait after SIGINT before SIGTERM."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print each node's command line and exit."),
) -> None:
    """Start a graph as supervised processes; Ctrl-C stops every node."""
    from personal.graphs import GraphError, get_graph, parse_assignments
    from personal.runner import run_graph

    try:
        g = get_graph(graph)
        overrides = parse_assignments(assignments or [])
        g.argument_values(overrides)  # validate before starting anything
    except GraphError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2)
    if dry_run:
        import shlex

        from personal.runner import node_command

        for node in g.resolve(overrides):
            spec = node.spec
            cmd = node_command(spec.module, spec.name, node.namespace, node.parameters, node.remappings)
            typer.echo(shlex.join(cmd))
        raise typer.Exit(0)
    raise typer.Exit(run_graph(g, overrides, sigint_timeout=sigint_timeout))


def graphs(verbose: bool = typer.Option(False, "--verbose", "-v", help="Show nodes and arguments.")) -> None:
    """List the graphs `personal launch` can start."""
    from personal.graphs import all_graphs

    for name, g in sorted(all_graphs().items()):
        typer.echo(f"{name:16s} {g.description}")
        if verbose:
            for arg, (default, desc) in g.arguments.items():
                typer.echo(f"    {arg + ':=' + repr(default):<32} {desc}")
            for node in g.nodes:
                flag = " (required)" if node.required else ""
                typer.echo(f"    node {node.name} <- {node.module}{flag}")


def register(app: typer.Typer) -> None:
    app.command("launch", context_settings={"allow_extra_args": False})(launch)
    app.command("graphs")(graphs)

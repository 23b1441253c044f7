"""`personal launch <graph> [name:=value ...]` and `personal graphs`."""
from __future__ import annotations

from typing import List, Optional

import typer


def launch(
    graph: str = typer.Argument(..., help="Graph name (see `personal graphs`)."),
    assignments: Optional[List[str]] = typer.Argument(None, help="Graph arguments as name:=value."),
    sigint_timeout: float = typer.Option(5.0, help="Seconds to wait after SIGINT before SIGTERM."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print each node's command line and exit."),
    domain_id: str = typer.Option("", "--domain-id", help="ROS_DOMAIN_ID of every node: a number, or 'auto' = a free "
                                  "one claimed for this run (so concurrent graphs never cross-talk); default: inherited."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Sharded runs (workers:=N, cluster:=dask): every shard's "
                                 "output lines too, prefixed with the shard."),
) -> None:
    """Start a graph as supervised processes; Ctrl-C stops every node."""
    from personal.graphs import GraphError, get_graph, parse_assignments
    from personal.runner import run_graph

    try:
        g = get_graph(graph)
        overrides = parse_assignments(assignments or [])
        overrides = {**secret_arguments_from_env(g, overrides), **overrides}
        values = g.argument_values(overrides)  # validate before starting anything
    except GraphError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2)
    from personal.runs.shard import sharding_requested

    if sharding_requested(values) and not dry_run:  # the coordinator: shards as child graphs (docs/scaling.md)
        from personal.benchmarks import KINDS
        from personal.runs.shard import run_sharded

        raise typer.Exit(run_sharded(KINDS[graph], overrides, values, verbose=verbose))
    if dry_run:
        import shlex

        from personal.runner import node_command, split_secrets

        for node in g.resolve(overrides):
            spec = node.spec
            plain, secrets = split_secrets(node.parameters)
            cmd = node_command(spec.module, spec.name, node.namespace, plain, node.remappings)
            cmd += ["--params-file", f"<0600 file: {', '.join(secrets)}>"] if secrets else []
            typer.echo(shlex.join(cmd))
        raise typer.Exit(0)
    env, lock = _domain_environment(domain_id)
    try:
        code = run_graph(g, overrides, sigint_timeout=sigint_timeout, env=env)
    finally:
        if lock is not None:
            lock.close()
    raise typer.Exit(code)


def secret_arguments_from_env(g, overrides) -> dict[str, str]:
    """Secret graph arguments (``mqtt_password`` ...) not given as ``name:=value``, from
    ``PERSONAL_<NAME>``: how a secret reaches the graph without being on any command line."""
    import os

    from personal.runner import is_secret, secret_env_name

    return {name: os.environ[secret_env_name(name)] for name in g.arguments
            if is_secret(name) and name not in overrides and secret_env_name(name) in os.environ}


def _domain_environment(domain_id: str):
    """(environment for the nodes or None, lock held while the graph runs or None)."""
    import os

    if not domain_id:
        return None, None
    if domain_id == "auto":
        from personal.ros_env import claim_domain_id

        number, lock = claim_domain_id()
    elif domain_id.isdigit() and int(domain_id) <= 232:
        number, lock = int(domain_id), None
    else:
        typer.echo(f"error: --domain-id must be 0..232 or 'auto', got {domain_id!r}", err=True)
        raise typer.Exit(2)
    typer.echo(f"[personal launch] ROS_DOMAIN_ID={number}")
    return {**os.environ, "ROS_DOMAIN_ID": str(number)}, lock


def graphs(verbose: bool = typer.Option(False, "--verbose", "-v", help="Show nodes and arguments.")) -> None:
    """List the graphs `personal launch` can start."""
    from personal.graphs import all_graphs

    for name, g in sorted(all_graphs().items()):
        typer.echo(f"{name:16s} {g.description}")
        if verbose:
            for arg, (default, desc, *check) in g.arguments.items():
                valid = f" [{check[0].text()}]" if check else ""
                typer.echo(f"    {arg + ':=' + repr(default):<32} {desc}{valid}")
            for node in g.nodes:
                flag = " (required)" if node.required else ""
                typer.echo(f"    node {node.name} <- {node.module}{flag}")


def register(app: typer.Typer) -> None:
    app.command("launch", context_settings={"allow_extra_args": False})(launch)
    app.command("graphs")(graphs)

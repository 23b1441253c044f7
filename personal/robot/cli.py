"""``personal robot check``: is the live robot (or its double) what the ``locobot`` graph needs?"""
from __future__ import annotations

import json
from dataclasses import asdict
from typing import List, Optional

import typer

app = typer.Typer(no_args_is_help=True)


@app.command("check")
def check(assignments: Optional[List[str]] = typer.Argument(None, help="the locobot graph's name:=value arguments "
                                                                        "(ns, base, camera, realsense)"),
          duration: float = typer.Option(3.0, help="seconds to watch the topics (rates, first messages)"),
          as_json: bool = typer.Option(False, "--json", help="print the findings as JSON")) -> None:
    """List every interface the locobot graph needs — present or missing, type and type hash, QoS
    compatibility, rate, TF chain, odometry-vs-image clock offset, depth encoding — with the exact
    fix for each problem. Exit 1 when there is a problem."""
    from personal.graphs import GraphError, get_graph, parse_assignments
    from personal.robot.check import diagnose, format_findings

    try:
        values = get_graph("locobot").argument_values(parse_assignments(list(assignments or [])))
    except (GraphError, ValueError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2)
    from personal.ros_env import apply_ros_environment

    apply_ros_environment()
    from nodes.robot_check import run_check

    findings = diagnose(values, run_check(values, duration))
    typer.echo(json.dumps([asdict(f) for f in findings], indent=1) if as_json else format_findings(findings))
    raise typer.Exit(0 if all(f.ok for f in findings) else 1)

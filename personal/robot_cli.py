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
          duration: float = typer.Option(4.0, help="seconds to watch the topics (discovery, rates, first messages)"),
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
    import subprocess
    import sys

    from personal.robot.check import observation_from_json
    from personal.ros_env import ros_environment

    # the probe is a node module, started by name as `personal launch` starts nodes (the library imports no node)
    proc = subprocess.run([sys.executable, "-m", "nodes.robot_check", json.dumps(values, default=str), str(duration)],
                          env=ros_environment(), capture_output=True, text=True, timeout=duration + 120)
    if proc.returncode != 0 or not proc.stdout.strip():
        typer.echo(f"error: the probe failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}", err=True)
        raise typer.Exit(2)
    findings = diagnose(values, observation_from_json(json.loads(proc.stdout.strip().splitlines()[-1])))
    typer.echo(json.dumps([asdict(f) for f in findings], indent=1) if as_json else format_findings(findings))
    raise typer.Exit(0 if all(f.ok for f in findings) else 1)

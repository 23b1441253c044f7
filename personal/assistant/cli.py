"""``personal assistant find|verify|routine|handover ...``: one goal to a running ``assistant`` graph
(``personal launch assistant``), feedback streamed, the project's exit code; ``personal assistant
day SCRIPT``: a scripted household day (personal.assistant.day) and its report.

The ROS clients are ``nodes/assistant_client.py`` and ``nodes/assistant_day.py`` (rclpy lives in
nodes/, not in this library); they run as a child process with the runner's ROS environment, and its arguments are passed on as
given (``personal assistant find --help`` lists them)."""
from __future__ import annotations

import subprocess
import sys

import typer

CONTEXT = {"allow_extra_args": True, "ignore_unknown_options": True, "help_option_names": []}


def client_command(args: list[str]) -> list[str]:
    if args[:1] == ["day"]:
        return [sys.executable, "-u", "-m", "nodes.assistant_day", *args[1:]]
    return [sys.executable, "-u", "-m", "nodes.assistant_client", *args]


def assistant(ctx: typer.Context) -> None:
    """Send a goal to the assistant graph: find QUERY [--requester NAME] [--max-steps N] [--no-verify] |
    verify QUERY X Y [--max-views N] | routine PERSON ROUTINE [--steps-json JSON] |
    handover PERSON bin|mat|handle [--seed N] [--preference IDS] | day SCRIPT [--out DIR]
    (a scripted household day, report in DIR); --help for details."""
    from personal.ros_env import ros_environment

    proc = subprocess.Popen(client_command(list(ctx.args) or ["--help"]), env=ros_environment())
    while True:
        try:
            raise typer.Exit(proc.wait())
        except KeyboardInterrupt:  # the client got the SIGINT too: it cancels the goal, then exits 130
            continue


def register(app: typer.Typer) -> None:
    app.command("assistant", context_settings=CONTEXT)(assistant)

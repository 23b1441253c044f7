"""The `personal` command line. Each area adds its sub-app here."""
from __future__ import annotations

import typer

app = typer.Typer(help="personal — personalized embodied agents on ROS 2.", no_args_is_help=True)


def _register() -> None:
    # Sub-apps are imported lazily by area so one area's heavy imports do not slow the others.
    from personal.launch_cli import register as register_launch

    register_launch(app)  # `personal launch <graph>`, `personal graphs`
    from personal.world.cli import app as world_app

    app.add_typer(world_app, name="world", help="Generate and inspect synthetic households.")
    from personal.mapping.cli import app as map_app

    app.add_typer(map_app, name="map", help="Occupancy + semantic feature maps (build, show).")
    from personal.navigation.cli import app as pan_app

    app.add_typer(pan_app, name="pan", help="Personalized Active Navigation (PAN): offline eval and reports.")
    from personal.bags.cli import app as bag_app

    app.add_typer(bag_app, name="bag", help="Record, play and inspect rosbag2 (MCAP) bags.")
    from personal.manipulation.cli import app as perm_app

    app.add_typer(perm_app, name="perm", help="Personalized manipulation (LIBERO-PeRM): eval, serve, prefs.")
    from personal.perception.cli import app as perception_app

    app.add_typer(perception_app, name="perception", help="Learned perception: training views, image-tower training, evaluation.")
    from personal.robot_cli import app as robot_app

    app.add_typer(robot_app, name="robot", help="The real LoCoBot: `robot check` lists what the locobot graph needs, with fixes.")
    from personal.grounding.eval.pog_cli import app as pog_app

    app.add_typer(pog_app, name="pog", help="Personalized Object Grounding (PersONAL POG) without ROS.")
    from personal.memory.cli import app as memory_app

    app.add_typer(memory_app, name="memory", help="The household memory: `memory dynamic` measures grounding after ownership events.")
    from personal.verification.cli import app as verify_app

    app.add_typer(verify_app, name="verify", help="Active instance verification (PInVerify): datasets, offline eval.")
    from personal.smarthome.cli import app as home_app

    app.add_typer(home_app, name="home", help="PersonalHomeBench: households, tools, plans, MQTT mirror, home_eval.")
    from personal.assistant.cli import register as register_assistant

    register_assistant(app)  # `personal assistant find|verify|routine`: goals to the assistant graph
    app.command("report")(report)


def report(
    run_dir: str = typer.Argument(..., help="An evaluation's run folder (with report.md)."),
    kind: str = typer.Option(..., "--kind", help="pog | pan | aiv | perm | home"),
) -> None:
    """Rebuild a run folder's self-contained report.html (tables, plots, gallery)."""
    from personal.benchmarks import write_report_html
    from personal.runs.report_html import ReportError

    try:
        typer.echo(f"report: {write_report_html(run_dir, kind).resolve()}")
    except (ReportError, ValueError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2)


def main() -> None:
    from personal.ros_env import passive_openmp

    passive_openmp()  # before any sub-app imports torch or numba
    _register()
    from personal import exit_codes
    from personal.runs.output import OutputDirError

    try:
        app()
    except OutputDirError as exc:  # a results file that cannot be written mid-run (full disk ...): named, no traceback
        typer.echo(f"error: {exc}", err=True)
        raise SystemExit(exit_codes.FAILED) from None


if __name__ == "__main__":
    main()

"""`personal memory ...`: the household memory without ROS."""
from __future__ import annotations

import typer

app = typer.Typer(help="The household memory: dynamic ownership measured.", no_args_is_help=True)


@app.callback()
def _main() -> None:
    """(typer keeps a one-command app a group with this.)"""


@app.command("dynamic")
def dynamic(
    households: str = typer.Option("0,1,2", help="generated household seeds (held-out 0-2; validation 20000+)"),
    episodes_per_split: int = typer.Option(10, help="POG episodes per split and household"),
    splits: str = typer.Option("easy,medium,hard", help="comma-separated splits"),
    encoder: str = typer.Option("lit", help="the learned encoder (its pre-exploration map); ORACLE is reported beside it"),
    methods: str = typer.Option("rpg-owner,rpg-owner-scene", help="comma-separated grounding methods"),
    maps_dir: str = typer.Option("maps", help="learned maps are kept in <maps_dir>/<scene_id>/dynamic-<encoder>/"),
    unchanged: int = typer.Option(2, help="unchanged queries sampled per episode"),
    seed: int = typer.Option(0, help="script seed (styles and objects the events pick)"),
    max_steps: int = typer.Option(2500, help="pre-exploration budget per household"),
    out_dir: str = typer.Option("runs/memory_dynamic", help="run folders are created under this"),
) -> None:
    """Event scripts change who owns what; ground the changed and unchanged queries with the
    memory's summary and with the original one, on the same maps; write results.jsonl + report.md."""
    from personal.memory.dynamic import run_dynamic
    from personal.runs.output import OutputDirError, new_run_dir

    try:
        seeds = [int(s) for s in households.split(",") if s.strip()]
        run = new_run_dir(out_dir)
    except (ValueError, OutputDirError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2)
    run_dynamic(run, seeds=seeds, episodes_per_split=episodes_per_split, splits=[s.strip() for s in splits.split(",") if s.strip()],
                encoder=encoder, methods=[m.strip() for m in methods.split(",") if m.strip()], maps_dir=maps_dir,
                unchanged=unchanged, seed=seed, max_steps=max_steps, say=typer.echo)
    typer.echo((run / "report.md").read_text())
    typer.echo(f"report: {run.resolve() / 'report.md'}")

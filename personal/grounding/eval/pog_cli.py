"""`personal pog ...`: POG evaluation without ROS (same library as the pog_eval graph)."""
from __future__ import annotations

import typer

app = typer.Typer(help="Personalized Object Grounding (PersONAL POG) without ROS.", no_args_is_help=True)


@app.command("eval")
def eval_offline(
    scenes: int = typer.Option(3, help="generated households"),
    episodes_per_split: int = typer.Option(10, help="generated episodes per split and scene"),
    splits: str = typer.Option("easy,medium,hard", help="comma-separated splits"),
    seed: int = typer.Option(0, help="generator seed"),
    episodes_dir: str = typer.Option("", help="PersONAL episode folder instead of a generated set"),
    map_source: str = typer.Option("explore", help="explore | saved | oracle"),
    maps_dir: str = typer.Option("maps", help="saved maps (<maps_dir>/<scene_id>/features.yaml)"),
    resolution: float = typer.Option(0.5, help="feature-map cell size (m)"),
    methods: str = typer.Option("random,centre,qs,rpg,rpg-owner", help="comma-separated methods"),
    encoder: str = typer.Option("lit", help="encoder: lit (learned, RGB only) | oracle (ORACLE captions + MiniLM)"),
    extractor: str = typer.Option("builtin", help="builtin (rules on the summary) | episode (the episode file's extracted_summary, as the paper's RPG) | llm"),
    out_dir: str = typer.Option("runs/pog_offline", help="run folders are created under this"),
    preset: str = typer.Option("default", help="household size: default | hm3d (HM3D-sized, docs/simulator.md)"),
    summary_style: str = typer.Option("verbatim", help="verbatim (summaries quote the captions) | varied (other words; generated episodes only)"),
) -> None:
    """Evaluate every episode with every method and write the run folder."""
    from personal.grounding.eval import pog_run
    from personal.grounding.methods import parse_method_list
    from personal.world.generator import PRESETS

    if preset not in PRESETS:
        typer.echo(f"error: --preset must be one of {', '.join(PRESETS)}, got {preset!r}", err=True)
        raise typer.Exit(2)

    from personal.world.summary_style import SUMMARY_STYLES

    if summary_style not in SUMMARY_STYLES or (episodes_dir and summary_style != "verbatim"):
        typer.echo(f"error: --summary-style must be one of {', '.join(SUMMARY_STYLES)} (varied only for generated "
                   f"episodes), got {summary_style!r}", err=True)
        raise typer.Exit(2)
    if map_source not in ("explore", "saved", "oracle"):
        typer.echo(f"error: --map-source must be explore, saved or oracle, got {map_source!r}", err=True)
        raise typer.Exit(2)
    from personal.runs.output import OutputDirError, new_run_dir

    try:  # before the maps are built: an unwritable out_dir must not be found at the end
        run = new_run_dir(out_dir)
    except OutputDirError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2)
    split_list = [s.strip() for s in splits.split(",") if s.strip()]
    inputs = pog_run.build_eval_inputs(
        scenes=scenes, splits=split_list, episodes_per_split=episodes_per_split, resolution=resolution, seed=seed,
        encoder=encoder, extractor=extractor, methods=parse_method_list(methods), episodes_dir=episodes_dir,
        maps_dir=maps_dir if map_source == "saved" else "", build_maps=map_source != "saved",
        explore=map_source == "explore", progress=lambda m: typer.echo(m), preset=preset, summary_style=summary_style,
    )
    pog_run.run_offline(inputs, run, progress=_progress(len(inputs.episodes)), meta_extra={"summary style": summary_style})
    typer.echo(f"report: {run.resolve() / 'report.md'}")


@app.command("compare")
def compare(
    encoder: str = typer.Option("lit", help="the encoder under test (lit = the shipped learned image tower)"),
    model_path: str = typer.Option("", help="the encoder's checkpoint folder (default: its shipped one), e.g. "
                                   "personal/models/weights/lit-minilm-household-dr"),
    upper_bound: str = typer.Option("oracle", help="the ORACLE encoder reported beside it as an upper bound"),
    scenes: int = typer.Option(3, help="generated households (evaluation seeds start at --seed)"),
    episodes_per_split: int = typer.Option(10, help="generated episodes per split and household"),
    splits: str = typer.Option("easy,medium,hard", help="comma-separated splits"),
    seed: int = typer.Option(0, help="first household seed"),
    resolution: float = typer.Option(0.5, help="feature-map cell size (m)"),
    max_steps: int = typer.Option(2500, help="pre-exploration budget per household"),
    out_dir: str = typer.Option("runs/pog_compare", help="run folders are created under this"),
    sensor: str = typer.Option("ideal", help="camera model of the exploration: ideal | d435 | d435-harsh"),
    sensor_overrides: str = typer.Option("", help="preset fields to override, e.g. hfov_deg=69,height_m=1.25"),
    sensor_seed: int = typer.Option(0, help="seed of the camera model's noise"),
    width: int = typer.Option(320, min=8, help="rendered image width, px"),
    height: int = typer.Option(240, min=8, help="rendered image height, px"),
) -> None:
    """POG with a learned encoder and the ORACLE upper bound on the same households, episodes and
    exploration frames; the report leads with the learned encoder."""
    from personal.grounding.eval import pog_run
    from personal.runs.output import OutputDirError, new_run_dir
    from personal.sim.sensor_model import SensorSpecError, sensor_spec

    try:  # before any household is explored
        spec = sensor_spec(sensor, sensor_overrides, sensor_seed)
        run = new_run_dir(out_dir)
    except (OutputDirError, SensorSpecError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2)
    pog_run.compare_offline(run, encoder=encoder, upper_bound=upper_bound, scenes=scenes,
                            splits=[s.strip() for s in splits.split(",") if s.strip()], episodes_per_split=episodes_per_split,
                            resolution=resolution, seed=seed, max_steps=max_steps, progress=typer.echo, sensor=spec,
                            width=width, height=height, model_path=model_path)
    typer.echo(f"report: {run.resolve() / 'report.md'}")


@app.command("robustness")
def robustness(
    presets: str = typer.Option("ideal,d435,d435-harsh", help="camera presets (comma separated; personal/sim/sensor_model.py); "
                                "'d435[gains]' keeps one component of a preset (depth, gains, rgb_noise, blur, odometry; "
                                "'+' joins several), to see which part of a camera costs the encoder"),
    sensor_overrides: str = typer.Option("", help="fields overridden in every preset, e.g. hfov_deg=69 or height_m=1.25"),
    encoder: str = typer.Option("lit", help="the encoder under test: a registered name that loads without a model_path (lit)"),
    model_path: str = typer.Option("", help="the encoder's checkpoint folder (default: its shipped one)"),
    upper_bound: str = typer.Option("oracle", help="the ORACLE encoder reported beside it"),
    scenes: int = typer.Option(1, help="generated households (seeds --seed ...)"),
    episodes_per_split: int = typer.Option(3, help="generated episodes per split and household"),
    splits: str = typer.Option("easy,medium,hard", help="comma-separated splits"),
    seed: int = typer.Option(0, help="first household seed"),
    max_steps: int = typer.Option(2500, help="pre-exploration budget per household and preset"),
    sensor_seed: int = typer.Option(0, help="seed of the camera model's noise"),
    out_dir: str = typer.Option("runs/pog_robustness", help="run folders are created under this"),
) -> None:
    """The same episodes grounded under each camera preset, learned beside ORACLE: one table."""
    from personal.grounding.eval import pog_run
    from personal.runs.output import OutputDirError, new_run_dir
    from personal.sim.sensor_model import SensorSpecError, sensor_spec

    names = [p.strip() for p in presets.split(",") if p.strip()]
    try:  # before any household is explored
        for p in names:
            sensor_spec(p, sensor_overrides, sensor_seed)
        run = new_run_dir(out_dir)
    except (OutputDirError, SensorSpecError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2)
    pog_run.robustness_offline(run, presets=names, overrides=sensor_overrides, encoder=encoder, upper_bound=upper_bound,
                               scenes=scenes, splits=[s.strip() for s in splits.split(",") if s.strip()],
                               episodes_per_split=episodes_per_split, seed=seed, max_steps=max_steps,
                               sensor_seed=sensor_seed, progress=typer.echo, model_path=model_path)
    typer.echo((run / "robustness.md").read_text())
    typer.echo(f"table: {run.resolve() / 'robustness.md'}")


def _progress(total: int):
    step = max(1, total // 10)

    def show(done: int, n: int) -> None:
        if done % step == 0 or done == n:
            typer.echo(f"episodes done {done}/{n}")

    return show

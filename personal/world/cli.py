"""`personal world ...`: generate synthetic households with PersONAL episodes and draw them."""
from __future__ import annotations

import json
from pathlib import Path

import typer

app = typer.Typer(help="Generate and inspect synthetic households.", no_args_is_help=True)


@app.command()
def generate(
    out: Path = typer.Option(..., "--out", help="Output folder (episode set)."),
    split: str = typer.Option("all", "--split", help="easy | medium | hard | all"),
    scenes: int = typer.Option(3, "--scenes", min=1, help="Number of households."),
    episodes_per_scene: int = typer.Option(10, "--episodes-per-scene", min=1),
    seed: int = typer.Option(0, "--seed", help="Base seed; scene k uses seed + k."),
    two_floors: bool = typer.Option(False, "--two-floors", help="Stack a second floor at z = 3 m."),
    preset: str = typer.Option("default", "--preset", help="Household size: default | hm3d (HM3D-sized, docs/simulator.md)."),
) -> None:
    """Write {split}/content/{scene}.json.gz (PersONAL habitat format) plus scenes/ (JSON + PLY mesh)."""
    from rich.progress import track

    from personal.world.episodes import check_split_constraints, generate_episodes
    from personal.world.generator import generate_scene
    from personal.world.habitat_format import write_episode_set
    from personal.world.model import SPLITS

    from personal.world.generator import PRESETS

    splits = SPLITS if split == "all" else (split,)
    if any(s not in SPLITS for s in splits):
        raise typer.BadParameter(f"--split must be one of {', '.join(SPLITS)} or all, got {split!r}")
    if preset not in PRESETS:
        raise typer.BadParameter(f"--preset must be one of {', '.join(PRESETS)}, got {preset!r}")
    n_obj = n_eps = n_files = 0
    for k in track(range(scenes), description="households (scene, episodes, view points, mesh)"):
        s = generate_scene(seed + k, two_floors=two_floors, preset=preset)
        eps = []
        for sp in splits:
            for e in generate_episodes(s, sp, episodes_per_scene, seed):
                check_split_constraints(e.ownership, sp)
                eps.append(e)
        n_files += len(write_episode_set(out, [s], eps))  # one scene at a time: same files, steady progress
        n_obj += len(s.objects)
        n_eps += len(eps)
    typer.echo(f"{scenes} scenes ({n_obj} objects), {n_eps} episodes, {n_files} content files -> {out}")


@app.command()
def show(
    source: Path = typer.Argument(..., help="Episode folder, or a *.scene.json file."),
    out: Path = typer.Option(Path("topdown.png"), "--out", help="PNG to write."),
    episode: str = typer.Option(None, "--episode", help="Episode id (default: the first one in the folder)."),
    scene_id: str = typer.Option(None, "--scene", help="Scene id when SOURCE is a folder and no episode is chosen."),
    floor: int = typer.Option(None, "--floor", help="Floor index (default: the episode's floor or 0)."),
    label_all: bool = typer.Option(False, "--label-all", help="Label every object, not only the owned ones."),
) -> None:
    """Render a top-down PNG with rooms, objects and owners labelled."""
    from personal.world.habitat_format import EpisodeFormatError, load_episode_set, load_scene
    from personal.world.topdown import render_topdown

    try:
        if source.is_file():
            scene, ep = load_scene(source), None
        else:
            scenes, eps = load_episode_set(source)
            if episode is not None:
                matches = [e for e in eps if e.episode_id == episode]
                if not matches:
                    raise typer.BadParameter(f"episode {episode!r} not in {source} (first ids: {[e.episode_id for e in eps[:5]]})")
                ep = matches[0]
            elif scene_id is not None:
                ep = None
                if scene_id not in scenes:
                    raise typer.BadParameter(f"scene {scene_id!r} not in {source}; have {sorted(scenes)}")
            else:
                ep = eps[0]
            scene = scenes[ep.scene_id if ep else scene_id]
    except (EpisodeFormatError, json.JSONDecodeError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    fl = floor if floor is not None else (ep.floor_id if ep else 0)
    path = render_topdown(scene, out, floor=fl, episode=ep, label_all=label_all)
    typer.echo(f"wrote {path}" + (f" ({ep.episode_id}: {ep.query})" if ep else ""))

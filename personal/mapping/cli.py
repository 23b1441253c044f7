"""`personal map ...`: build maps of synthetic scenes and draw them with a text query."""
from __future__ import annotations

from pathlib import Path

import typer

app = typer.Typer(help="Occupancy + semantic feature maps.", no_args_is_help=True)


def encoder_for_map(name: str, model_path: str = ""):
    """The encoder a saved map was built with (text side only is needed for queries)."""
    from personal.models.base import make_encoder
    from personal.models.oracle import ORACLE_NAME

    if name == ORACLE_NAME:
        return make_encoder(ORACLE_NAME)
    kind = name.split(":", 1)[0]
    if not model_path:
        raise typer.BadParameter(f"map was built with encoder {name!r}: pass --model-path to that model's local directory")
    enc = make_encoder(kind, model_path=model_path)
    if enc.name != name:
        raise typer.BadParameter(f"--model-path gives encoder {enc.name!r} but the map was built with {name!r}")
    return enc


def render_map_png(map_dir: Path, out: Path, query: str = "", model_path: str = "", encoder=None) -> dict:
    """Top-down PNG: occupancy (grey unknown, white free, black occupied) with the feature
    map's cosine similarity to ``query`` overlaid. Returns a summary (best cell, encoder)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from personal.mapping.feature_map import FeatureMap
    from personal.mapping.occupancy import OccupancyGrid

    occ = OccupancyGrid.load(map_dir / "occupancy.yaml")
    st = occ.state()
    shade = np.where(st == -1, 0.55, np.where(st == 0, 1.0, 0.0))
    fig, ax = plt.subplots(figsize=(8, 8 * st.shape[0] / max(st.shape[1], 1) + 0.5))
    x0, y0, x1, y1 = occ.geometry.bounds
    ax.set_facecolor((0.55, 0.55, 0.55))  # outside the occupancy grid reads as unknown, like its grey cells
    ax.imshow(shade, origin="lower", cmap="gray", vmin=0, vmax=1, extent=(x0, x1, y0, y1), interpolation="nearest")
    summary: dict = {"occupancy_shape": list(st.shape)}
    title = map_dir.name
    if query:
        if not (map_dir / "features.yaml").exists():
            raise typer.BadParameter(f"{map_dir} has no features.yaml: cannot score a query")
        fm_meta = FeatureMap.load(map_dir)
        enc = encoder or encoder_for_map(fm_meta.encoder, model_path)
        fm = FeatureMap.load(map_dir, expected_encoder=enc.name, expected_dim=enc.dim)
        sim = fm.similarity(enc.encode_text([query])[0])
        fx0, fy0, fx1, fy1 = fm.geometry.bounds
        im = ax.imshow(np.ma.masked_invalid(sim), origin="lower", cmap="viridis", alpha=0.6,
                       extent=(fx0, fx1, fy0, fy1), interpolation="nearest")
        fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04, label=f"cosine similarity to {query!r}")
        if np.isfinite(sim).any():
            iy, ix = np.unravel_index(np.nanargmax(sim), sim.shape)
            bx, by = fm.geometry.center(iy, ix)
            ax.plot([float(bx)], [float(by)], "r*", markersize=16, label="best cell")
            ax.legend(loc="upper right")
            summary.update(best_xy=[float(bx), float(by)], best_similarity=float(sim[iy, ix]))
        summary["encoder"] = fm.encoder
        title += f"  |  query {query!r}  |  encoder {fm.encoder}"
    ax.set_title(title, fontsize=9)
    ax.set_xlabel("x (m, map frame)")
    ax.set_ylabel("y (m)")
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return summary


@app.command()
def show(
    map_dir: Path = typer.Argument(..., help="A saved map folder (maps/<name>/ with occupancy.yaml, features.yaml)."),
    query: str = typer.Option("", "--query", "-q", help="Text scored against every feature-map cell."),
    out: Path = typer.Option(Path("map.png"), "--out", "-o", help="PNG to write."),
    model_path: str = typer.Option("", "--model-path", help="Local model directory (CLIP/SigLIP/BLIP-2 maps)."),
) -> None:
    """Draw the occupancy grid with the similarity of each cell to --query overlaid."""
    if not (map_dir / "occupancy.yaml").exists():
        raise typer.BadParameter(f"{map_dir} is not a saved map (no occupancy.yaml)")
    summary = render_map_png(map_dir, out, query, model_path)
    typer.echo(f"wrote {out}  {summary}")


@app.command()
def explore(
    out: Path = typer.Option(..., "--out", help="Map folder to write (e.g. maps/synth_00003)."),
    seed: int = typer.Option(3, "--seed", help="Generated household seed (ignored with --toy)."),
    toy: bool = typer.Option(False, "--toy", help="Use the hand-made two-room scene instead."),
    feature_resolution: float = typer.Option(1.0, "--feature-resolution", help="Feature-map cell size (m)."),
    width: int = typer.Option(320, "--width", help="Render width (height = 3/4); 640 is the PersONAL camera."),
    max_steps: int = typer.Option(2500, "--max-steps"),
) -> None:
    """Pre-explore a synthetic scene without ROS (frontier policy, ORACLE caption features) and save its maps."""
    import json

    from personal.mapping.exploration import ExplorerConfig, FrontierExplorer
    from personal.mapping.pipeline import MapBuilder, MapConfig
    from personal.mapping.session import explore as run
    from personal.models.oracle import OracleCaptionEncoder, captions_from_scene
    from personal.sim.backends.base import AgentState, CameraSpec
    from personal.sim.backends.synthetic import SyntheticBackend

    if toy:
        from personal.sim.toy_scene import two_room_scene

        scene = two_room_scene()
    else:
        from personal.world.generator import generate_scene

        scene = generate_scene(seed)
    backend = SyntheticBackend(camera=CameraSpec(width=width, height=width * 3 // 4))
    backend.load_scene(scene)
    room = scene.rooms[0]
    start = backend.snap_to_navigable((room.bounds[0] + room.bounds[2]) / 2, (room.bounds[1] + room.bounds[3]) / 2)
    if start is None:
        raise typer.BadParameter(f"scene {scene.scene_id}: no navigable start in {room.room_id}")
    obs = backend.reset(state=AgentState(start[0], start[1], 0.0, 0.0))
    enc = OracleCaptionEncoder(captions_from_scene(scene))
    builder = MapBuilder(MapConfig(feature_resolution=feature_resolution, stride=max(1, width // 320)),
                         feature_dim=enc.dim, encoder_name=enc.name, features=enc.frame_features)
    result = run(backend, obs, builder, FrontierExplorer(ExplorerConfig(max_steps=max_steps)))
    builder.save(out, extra={"scene_id": scene.scene_id, "steps": result.steps, "stop_reason": result.reason,
                             "perception": "ORACLE instance ids + ground-truth captions"})
    (out / "scene.json").write_text(json.dumps(scene.to_dict()))
    typer.echo(f"{scene.scene_id}: {result.steps} steps ({result.reason}), {result.collisions} collisions, "
               f"{result.seconds:.1f} s; maps in {out}  [encoder {enc.name} — ORACLE]")

"""``personal perception``: write training views, train the image tower, evaluate it."""
from __future__ import annotations

import json
from pathlib import Path

import typer

app = typer.Typer(no_args_is_help=True, add_completion=False)


@app.command()
def dataset(out: Path = typer.Option(..., help="folder to write <scene_id>.npz shards and dataset.json"),
            seeds: str = typer.Option("10000-10039", help="household seeds, e.g. 10000-10039 (0-9999 are evaluation households)"),
            views: int = typer.Option(150, help="views per household"),
            width: int = typer.Option(320), height: int = typer.Option(240),
            allow_eval_seeds: bool = typer.Option(False, help="only for held-out evaluation sets, never for training"),
            randomise: bool = typer.Option(False, help="domain randomisation: camera height, field of view, pitch and "
                                                       "sensor preset per view (personal.perception.dataset.CameraRandomisation)"),
            heights: str = typer.Option("", help="--randomise: camera heights 'lo:hi' in metres (default 0.6:1.4)"),
            hfovs: str = typer.Option("", help="--randomise: horizontal fields of view 'lo:hi' in degrees (default 60:90)"),
            pitches: str = typer.Option("", help="--randomise: mounting pitches 'lo:hi' in degrees (default -10:5)"),
            presets: str = typer.Option("", help="--randomise: sensor presets and weights, e.g. 'ideal:0.5,d435:0.5' "
                                                 "(default ideal:0.34,d435:0.43,d435-harsh:0.23)"),
            workers: int = typer.Option(1, min=1, help="households rendered in parallel processes")) -> None:
    """Render views of generated households (RGB, depth, instance ids, captions, structure labels)
    and the segmenter's proposals on them (crops + targets)."""
    from personal.perception.dataset import CameraRandomisation, write_dataset
    from personal.perception.splits import parse_seeds

    if not randomise and (heights or hfovs or pitches or presets):
        raise typer.BadParameter("--heights / --hfovs / --pitches / --presets need --randomise")
    try:
        rand = CameraRandomisation.from_options(heights, hfovs, pitches, presets) if randomise else None
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    write_dataset(out, parse_seeds(seeds), views, width, height, allow_eval_seeds=allow_eval_seeds,
                  randomise=rand, workers=workers)
    typer.echo(f"dataset: {out / 'dataset.json'}")


@app.command()
def train(data: Path = typer.Option(..., help="training dataset (personal perception dataset)"),
          val: Path = typer.Option(..., help="validation dataset (other households)"),
          out: Path = typer.Option(..., help="checkpoint folder (save_pretrained layout)"),
          minutes: float = typer.Option(18.0, help="time budget (see --budget-clock)"),
          max_steps: int = typer.Option(0, help="stop after this many steps (0 = the time budget decides)"),
          batch: int = typer.Option(128), threads: int = typer.Option(1),
          lr: float = typer.Option(2e-3, help="peak learning rate (the shipped ResNet: 2e-3; the earlier ViT: 1e-3)"),
          layers: int = typer.Option(4, help="--arch vit: transformer layers"), seed: int = typer.Option(0),
          arch: str = typer.Option("cnn", help="cnn (small ResNet, personal.models.lit.LitConvConfig: the shipped tower) | vit (CLIP-style ViT)"),
          category_weight: float = typer.Option(0.5, help="weight of the auxiliary category-name target"),
          eval_every_s: float = typer.Option(120.0),
          budget_clock: str = typer.Option("wall", help="wall | cpu (CPU seconds of this process: the cost on an idle core)"),
          max_wall_minutes: float = typer.Option(0.0, help="with --budget-clock cpu: stop after this long anyway"),
          warmup: int = typer.Option(60, help="linear warm-up steps before the cosine decay"),
          init_from: str = typer.Option("", help="continue training this saved checkpoint (weights and temperature)"),
          paraphrases: int = typer.Option(0, help="wording randomisation: paraphrases per training caption (0 = off)"),
          paraphrase_p: float = typer.Option(0.5, help="probability that a caption target is swapped for a paraphrase"),
          anchor_weight: float = typer.Option(0.0, min=0.0, help="weight of the anchor loss 1 - cos(crop, its caption's "
                                                                 "text embedding) (0 = off)"),
          sensor_colour: str = typer.Option("", help="a camera preset whose colour (exposure / white-balance gains, "
                                                       "read noise) is put on a share of the training crops, e.g. d435"),
          sensor_colour_p: float = typer.Option(0.5, min=0.0, max=1.0, help="the share of crops given --sensor-colour"),
          distill_weight: float = typer.Option(0.0, min=0.0, help="weight of the loss 1 - cos(tower(crop), "
                                               "--init-from tower(clean crop)): keep the initial tower's embeddings"),
          distill_presets: str = typer.Option("", help="distil only crops of views through these camera presets "
                                                       "(comma-separated, e.g. ideal; default: every crop)"),
          precision: str = typer.Option("auto", help="auto (bf16 autocast where the CPU has native bf16, float32 "
                                                     "elsewhere: emulated bf16 is ~20x slower), bfloat16 or float32")) -> None:
    """Train the locked-text crop tower (frozen MiniLM texts) on a dataset's proposals; writes the
    checkpoint, training_log.json and loss.png."""
    from personal.perception.dataset import load_dataset
    from personal.perception.splits import check_training_seeds
    from personal.perception.train import TrainConfig, Trainer, resolve_precision, save_checkpoint

    from personal.perception.dataset import CROP_KEYS

    if sensor_colour:  # a wrong preset name before minutes of loading
        from personal.sim.sensor_model import SensorSpecError, sensor_spec

        try:
            sensor_spec(sensor_colour)
        except SensorSpecError as exc:
            raise typer.BadParameter(str(exc), param_hint="--sensor-colour") from None
    try:  # as the preset: a wrong value before minutes of loading
        resolve_precision(precision)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--precision") from None
    idx, shards = load_dataset(data, keys=CROP_KEYS)
    vidx, vshards = load_dataset(val, keys=CROP_KEYS)
    check_training_seeds([s["seed"] for s in shards] + [s["seed"] for s in vshards])
    overlap = {s["seed"] for s in shards} & {s["seed"] for s in vshards}
    if overlap:
        raise typer.BadParameter(f"training and validation share households {sorted(overlap)}")
    cfg = TrainConfig(minutes=minutes, max_steps=max_steps, batch=batch, lr=lr, threads=threads, layers=layers, seed=seed,
                      eval_every_s=eval_every_s, budget_clock=budget_clock, max_wall_minutes=max_wall_minutes,
                      warmup=warmup, init_from=init_from, arch=arch, category_weight=category_weight,
                      paraphrases=paraphrases, paraphrase_p=paraphrase_p, anchor_weight=anchor_weight,
                      sensor_colour=sensor_colour, sensor_colour_p=sensor_colour_p, distill_weight=distill_weight,
                      distill_presets=distill_presets, precision=precision)
    trainer = Trainer(shards, vshards, cfg, log=typer.echo)
    info = trainer.fit()
    save_checkpoint(trainer, out, info, idx, vidx)
    typer.echo(json.dumps(info))
    typer.echo(f"checkpoint: {out}")


@app.command()
def ensemble(first: Path = typer.Option(..., help="the first crop tower (segmenter, text side and card come from it)"),
             second: Path = typer.Option(..., help="the second crop tower"),
             out: Path = typer.Option(..., help="new checkpoint folder for the ensemble")) -> None:
    """Join two crop towers: every crop is embedded by both and the unit embeddings averaged."""
    from personal.models.hf_vlm import CheckpointError
    from personal.perception.tower import write_ensemble

    try:
        typer.echo(f"ensemble: {write_ensemble(first, second, out)}")
    except (CheckpointError, FileExistsError, FileNotFoundError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2)


@app.command("eval")
def evaluate(checkpoint: Path = typer.Option(..., help="a lit checkpoint folder"),
             data: Path = typer.Option(..., help="dataset of held-out households"),
             out: Path = typer.Option(None, help="write the figures as JSON here"),
             recall: bool = typer.Option(True, help="also the proposal recall (segments every view again)")) -> None:
    """Proposal recall (IoU 0.5) and proposal -> caption retrieval (top-1 / top-5 among the
    household's objects) on held-out households, with the captions as generated and with their
    colour words replaced by unseen ones (crimson, cobalt, ivory ...)."""
    from personal.perception.evaluate import evaluate_checkpoint

    evaluate_checkpoint(checkpoint, data, out, log=typer.echo, recall=recall)

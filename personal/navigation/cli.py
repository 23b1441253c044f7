"""`personal pan ...`: PersONAL Personalized Active Navigation evaluation (no ROS)."""
from __future__ import annotations

import json
import time
from pathlib import Path

import typer

from personal.ros_env import passive_openmp  # before torch / numba are imported

app = typer.Typer(help="Personalized Active Navigation (PAN): offline evaluation and reports.", no_args_is_help=True)


def map_config_option(proposal_depth_tol: float):
    """The online map's NavMapConfig for ``--proposal-depth-tol`` (negative: the map's default)."""
    import math

    from personal.navigation.mapper import NavMapConfig

    if not math.isfinite(proposal_depth_tol):
        raise typer.BadParameter(f"--proposal-depth-tol must be a number of metres, got {proposal_depth_tol}")
    return NavMapConfig() if proposal_depth_tol < 0 else NavMapConfig(proposal_depth_tol_m=proposal_depth_tol)


@app.command("eval")
def eval_cmd(
    out: Path = typer.Option(Path("runs/pan"), "--out", help="Run folder (report.md, summary.json, results.json, trajectories/)."),
    scenes: int = typer.Option(3, "--scenes", min=1, help="Generated households (seeds --seed ...)."),
    per_split: int = typer.Option(2, "--per-split", min=1, help="Episodes per scene and split."),
    seed: int = typer.Option(100, "--seed", help="First scene seed (0-99 were used to tune thresholds)."),
    episodes_dir: str = typer.Option("", "--episodes-dir", help="PersONAL-format episode folder instead of generating."),
    split: str = typer.Option("all", "--split", help="easy | medium | hard | all"),
    methods: str = typer.Option("random-frontier,value-map-qs,value-map-rpg,value-map-rpg-owner,oracle", "--methods"),
    max_steps: int = typer.Option(500, "--max-steps", min=1, help="Step budget (PersONAL: 500)."),
    sample_plots: int = typer.Option(6, "--plots", min=0, help="Trajectory plots for this many sampled episodes."),
    encoder: str = typer.Option("lit", "--encoder", help="Feature encoder: lit (learned, the default) | oracle (ground-truth captions, an ORACLE) | clip | siglip."),
    upper_bound: str = typer.Option("oracle-encoder", "--upper-bound", help="oracle-encoder: the explorers re-run with the ORACLE encoder beside a learned run, labelled as an upper bound | none."),
    extractor: str = typer.Option("builtin", "--extractor", help="Ownership-phrase extractor: builtin | llm."),
    preset: str = typer.Option("default", "--preset", help="Household size: default | hm3d (HM3D-sized)."),
    sensor: str = typer.Option("ideal", "--sensor", help="Camera model: ideal | d435 | d435-harsh."),
    sensor_overrides: str = typer.Option("", "--sensor-overrides", help="Preset fields to override, e.g. hfov_deg=69,height_m=1.25."),
    sensor_seed: int = typer.Option(0, "--sensor-seed", help="Seed of the camera model's noise."),
    proposal_depth_tol: float = typer.Option(-1.0, "--proposal-depth-tol", help="m: a proposal's points farther than this from its median depth carry no feature in the online map (0: off; default: the map's own)."),
    verify_candidates: str = typer.Option("detected", "--verify-candidates", help="What '+verify' judges: detected (the proposal that made the detection) | near (every proposal near it; no only if all contradict)."),
) -> None:
    """Run every policy on every episode and write the Table IV-style report."""
    passive_openmp()
    map_config = map_config_option(proposal_depth_tol)  # checked before minutes of loading
    from personal.navigation.verify_stop import check_candidates

    try:
        check_candidates(verify_candidates)
    except ValueError as exc:
        raise typer.BadParameter(f"--verify-candidates: {exc}") from None
    from personal.navigation.eval.pan_run import generate_pan_set, make_components, run_pan_offline
    from personal.navigation.policies import parse_policy_list
    from personal.world.model import SPLITS

    splits = SPLITS if split == "all" else (split,)
    if any(s not in SPLITS for s in splits):
        raise typer.BadParameter(f"--split must be one of {', '.join(SPLITS)} or all, got {split!r}")
    try:
        names = parse_policy_list(methods)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    from personal.runs.output import OutputDirError, run_folder

    try:
        run_folder(out, "--out")  # checked before any episode runs
        if episodes_dir:
            from personal.sim.bridge_logic import load_episodes

            scene_map, eps = load_episodes(episodes_dir, split)
        else:
            scene_map, eps = generate_pan_set(scenes, splits, per_split, seed, preset=preset)
    except (OutputDirError, ValueError) as exc:  # ValueError: EpisodeFormatError / EpisodeSourceError, named
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2)
    from personal.navigation.eval.pan_run import UPPER_BOUNDS
    from personal.sim.sensor_model import SensorSpecError, sensor_spec

    try:
        spec = sensor_spec(sensor, sensor_overrides, sensor_seed)
    except SensorSpecError as exc:
        raise typer.BadParameter(str(exc)) from None
    if upper_bound not in UPPER_BOUNDS:
        raise typer.BadParameter(f"--upper-bound must be one of {', '.join(UPPER_BOUNDS)}, got {upper_bound!r}")
    comps = make_components(encoder, extractor)
    comps.map_config, comps.verify_candidates = map_config, verify_candidates
    meta = {"proposal_depth_tol_m": map_config.proposal_depth_tol_m, "verify_candidates": verify_candidates}
    summary = run_pan_offline(scene_map, eps, names, out, comps, max_steps=max_steps,
                              sample_plots=sample_plots, progress=typer.echo, upper_bound=upper_bound, extractor=extractor,
                              sensor=spec, meta_extra=meta)
    typer.echo((out / "report.md").read_text())
    typer.echo(f"ordering holds: {summary['ordering_holds']}")


@app.command()
def show(run: Path = typer.Argument(..., help="A run folder written by `personal pan eval` or the pan_eval graph.")) -> None:
    """Print a run's report."""
    p = run / "report.md"
    if not p.exists():
        raise typer.BadParameter(f"{p} not found")
    typer.echo(p.read_text())


@app.command()
def calibrate(
    encoder: str = typer.Option("lit", "--encoder", help="Encoder whose detection thresholds to choose."),
    seeds: str = typer.Option("20000-20005", "--seeds", help="Validation households (20000+; evaluation seeds are refused)."),
    per_split: int = typer.Option(1, "--per-split", min=1, help="Episodes per household (one split per household, rotating)."),
    max_steps: int = typer.Option(500, "--max-steps", min=1, help="Blind-run budget."),
    out: Path = typer.Option(Path("runs/pan_calibrate"), "--out", help="records.jsonl + sweep.json"),
    sweep_only: bool = typer.Option(False, "--sweep-only", help="Only sweep the blind runs already in --out/records.jsonl."),
    relative: bool = typer.Option(False, "--relative", help="Keep every confident cell per step (--out/cells/*.npz) and "
                                  "sweep threshold x phrase floor x scene-relative margin per scorer."),
    guide: str = typer.Option("rpg", "--guide", help="--relative: whose frontier values the blind runs follow."),
    sensor: str = typer.Option("ideal", "--sensor", help="--relative: the camera model of the blind runs (ideal | d435 | d435-harsh)."),
    model_path: str = typer.Option("", "--model-path", help="--relative: another checkpoint of the encoder (default: the shipped one)."),
    proposal_depth_tol: float = typer.Option(-1.0, "--proposal-depth-tol", help="m: a proposal's points farther than this from its median depth carry no feature in the online map (0: off; default: the map's own)."),
) -> None:
    """Sweep (threshold, phrase floor) on validation households from blind value-map runs."""
    passive_openmp()
    given = {"--guide": guide != "rpg", "--sensor": sensor != "ideal", "--model-path": bool(model_path),
             "--proposal-depth-tol": proposal_depth_tol >= 0}
    if not relative and any(given.values()):  # the plain sweep's blind runs would silently ignore them
        raise typer.BadParameter(f"{', '.join(k for k, v in given.items() if v)} only apply with --relative")
    from personal.navigation.eval.pan_calibrate import calibrate as run
    from personal.navigation.eval.pan_calibrate import sweep_records
    from personal.perception.splits import parse_seeds

    try:
        if relative:
            from personal.navigation.eval.pan_calibrate import calibrate_cells, sweep_cell_records

            from personal.sim.sensor_model import sensor_spec

            spec = sensor_spec(sensor, "", 0)
            res = (sweep_cell_records(out) if sweep_only else
                   calibrate_cells(encoder, parse_seeds(seeds), per_split, max_steps, out, guide, progress=typer.echo,
                                   sensor=spec, map_config=map_config_option(proposal_depth_tol), model_path=model_path))
        elif sweep_only:
            res = sweep_records(out / "records.jsonl", out / "sweep.json")
        else:
            res = run(encoder, parse_seeds(seeds), per_split, max_steps, out, progress=typer.echo)
    except (ValueError, FileNotFoundError) as exc:  # FileNotFoundError: --model-path, named
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2)
    typer.echo(json.dumps(res["chosen"], indent=1))


@app.command()
def sequence(
    out: Path = typer.Option(Path("runs/pan_sequence"), "--out", help="Run folder (records.jsonl, summary.json, report.md)."),
    scenes: int = typer.Option(8, "--scenes", min=1, help="Generated households."),
    seed: int = typer.Option(300, "--seed", help="First household seed (300-307: PAN's held-out learned-encoder homes)."),
    k: int = typer.Option(3, "--k", min=2, help="Requests per home, in order (one per split: easy, medium, hard)."),
    method: str = typer.Option("value-map-rpg-owner", "--method", help="Navigation policy."),
    encoder: str = typer.Option("lit", "--encoder", help="Feature encoder (lit = learned from RGB; oracle = ORACLE captions)."),
    max_steps: int = typer.Option(500, "--max-steps", min=1, help="Step budget per request."),
    fade: float = typer.Option(None, "--fade", min=0.0, max=1.0,
                               help="Kept map: remembered feature confidence x this per new request (1 = no fade; "
                                    "default: the rule chosen on validation homes)."),
    relook_margin: float = typer.Option(None, "--relook-margin",
                                        help="Kept map: re-look at remembered cells within this of the detection "
                                             "threshold (default: the chosen rule's; off: --relook-max 0)."),
    relook_guide: float = typer.Option(None, "--relook-guide",
                                       help="Kept map: also re-look at remembered cells whose guide value reaches this."),
    relook_max: int = typer.Option(None, "--relook-max", min=0, help="Kept map: most cells re-looked at (0: off)."),
    reopen_conf: float = typer.Option(None, "--reopen-conf", min=0.0,
                                      help="Kept map: obstacle cells with a feature confidence below this count as "
                                           "unexplored for frontiers (default: the chosen rule's; 0: off)."),
    reopen_after: int = typer.Option(None, "--reopen-after", min=0,
                                     help="Kept map: re-open poorly seen cells from this step of a request on."),
    reopen_new: bool = typer.Option(None, "--reopen-new/--reopen-total",
                                    help="Kept map: re-open by the confidence gained in this request (as if blind) "
                                         "or by the total."),
    blind_after: int = typer.Option(None, "--blind-after", min=-1,
                                    help="Kept map: from this step of a request, choose frontiers from what the request "
                                         "itself has seen, as if blind (default: the chosen rule's; -1: off)."),
    conditions: str = typer.Option("scratch,memory", "--conditions",
                                   help="Conditions to run (validation sweeps may run memory alone)."),
) -> None:
    """k requests per home with the map kept between them, against the same requests each from scratch."""
    passive_openmp()
    from personal.runs.output import OutputDirError, ResultLog, writable_dir, write_file
    from personal.navigation.eval.pan_run import generate_pan_set, make_components
    from personal.navigation.eval.pan_sequence import (MEMORY_RULE, MemoryRule, run_sequences, summarize_sequences,
                                                        write_sequence_report)
    from personal.world.model import SPLITS

    try:
        writable_dir(out, "--out")
    except OutputDirError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2)
    scene_map, eps = generate_pan_set(scenes, SPLITS, max(1, (k + len(SPLITS) - 1) // len(SPLITS)), seed)
    eps = sorted(eps, key=lambda e: (e.scene_id, SPLITS.index(e.split)))
    comps = make_components(encoder)
    log = ResultLog(out / "records.jsonl")
    t0 = time.perf_counter()
    chosen = MEMORY_RULE
    relook_max = chosen.relook_max if relook_max is None else relook_max
    rule = MemoryRule(chosen.fade if fade is None else fade,
                      (chosen.relook_margin if relook_margin is None else relook_margin) if relook_max else None, relook_max,
                      (chosen.relook_guide_floor if relook_guide is None else relook_guide) if relook_max else None,
                      (chosen.reopen_conf if reopen_conf is None else reopen_conf or None),
                      chosen.reopen_after if reopen_after is None else reopen_after,
                      chosen.reopen_new if reopen_new is None else reopen_new,
                      chosen.blind_after if blind_after is None else (None if blind_after < 0 else blind_after))
    conds = [c.strip() for c in conditions.split(",") if c.strip()]
    records = run_sequences(scene_map, eps, method, comps, k=k, max_steps=max_steps, progress=typer.echo,
                            on_record=log.append, memory=rule, conditions=conds)
    log.close()
    meta = {"method": method, "encoder": getattr(comps.encoder, "name", encoder)
            + (" (ORACLE: ground-truth captions)" if encoder == "oracle" else " (learned, from RGB)"),
            "homes": f"generated households {seed}-{seed + scenes - 1}", "requests per home": k,
            "step budget": max_steps, "memory rule": f"fade {rule.fade:g}, re-look margin {rule.relook_margin}, "
                                                       f"re-look guide floor {rule.relook_guide_floor}, re-look max {rule.relook_max}, "
                                                       f"re-open conf {rule.reopen_conf} ({'gained in the request' if rule.reopen_new else 'total'}) "
                                                       f"from step {rule.reopen_after}, frontiers as if blind from step "
                                                       f"{'(off)' if rule.blind_after is None else rule.blind_after}",
            "conditions": ",".join(conds), "wall time (s)": round(time.perf_counter() - t0, 1)}
    write_file(out / "summary.json", json.dumps({"meta": meta, **summarize_sequences(records)}, indent=1))
    typer.echo(write_sequence_report(out, records, meta).read_text())


@app.command()
def dynamic(
    out: Path = typer.Option(Path("runs/pan_dynamic"), "--out", help="Run folder (records.jsonl, events.jsonl, summary.json, report.md)."),
    scenes: int = typer.Option(8, "--scenes", min=1, help="Generated households."),
    seed: int = typer.Option(300, "--seed", help="First household seed (300-307: PAN's held-out learned-encoder homes)."),
    per_home: int = typer.Option(1, "--episodes-per-home", min=1, max=3,
                                 help="PAN episodes per home whose event scripts are driven (easy, medium, hard)."),
    unchanged: int = typer.Option(1, "--unchanged", min=0, help="Queries the events left alone, per episode."),
    method: str = typer.Option("value-map-rpg-owner", "--method", help="Navigation policy (FindObject's by default)."),
    encoder: str = typer.Option("lit", "--encoder", help="Feature encoder (lit = learned from RGB; oracle = ORACLE captions)."),
    max_steps: int = typer.Option(500, "--max-steps", min=1, help="Step budget per query."),
) -> None:
    """Navigation after ownership changes: event scripts read into the household memory, then each
    changed query driven with the memory's summary, the pre-event summary and the ORACLE ownership."""
    passive_openmp()
    from personal.navigation.eval.pan_dynamic import run_dynamic_find, summarize_dynamic_find, write_dynamic_find_report
    from personal.navigation.eval.pan_run import generate_pan_set, make_components
    from personal.runs.output import OutputDirError, ResultLog, writable_dir, write_file
    from personal.world.model import SPLITS

    try:
        writable_dir(out, "--out")
    except OutputDirError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2)
    scene_map, eps = generate_pan_set(scenes, SPLITS, 1, seed)
    eps = sorted(eps, key=lambda e: (e.scene_id, SPLITS.index(e.split)))
    eps = [e for e in eps if SPLITS.index(e.split) < per_home]
    comps = make_components(encoder)
    log, t0 = ResultLog(out / "records.jsonl"), time.perf_counter()
    records, events = run_dynamic_find(scene_map, eps, method, comps, max_steps=max_steps, unchanged=unchanged,
                                       work_dir=out / "memories", progress=typer.echo, on_record=log.append)
    log.close()
    write_file(out / "events.jsonl", "".join(json.dumps(e) + "\n" for e in events))
    meta = {"method": method, "encoder": getattr(comps.encoder, "name", encoder)
            + (" (ORACLE: ground-truth captions)" if encoder == "oracle" else " (learned, from RGB)"),
            "homes": f"generated households {seed}-{seed + scenes - 1}", "episodes per home": per_home,
            "unchanged queries per episode": unchanged, "step budget": max_steps,
            "events read right": f"{sum(e['right'] for e in events)}/{len(events)}",
            "wall time (s)": round(time.perf_counter() - t0, 1)}
    write_file(out / "summary.json", json.dumps({"meta": meta, **summarize_dynamic_find(records)}, indent=1))
    typer.echo(write_dynamic_find_report(out, records, meta).read_text())


@app.command("dynamic-report")
def dynamic_report(
    out: Path = typer.Argument(..., help="Folder for the joint summary.json and report.md."),
    runs: list[Path] = typer.Argument(..., help="Run folders of `personal pan dynamic` (e.g. halves run side by side)."),
) -> None:
    """One report over several `personal pan dynamic` runs (their records.jsonl and events.jsonl)."""
    from personal.navigation.eval.pan_dynamic import summarize_dynamic_find, write_dynamic_find_report
    from personal.runs.output import OutputDirError, writable_dir, write_file

    records, events, metas = [], [], []
    try:
        writable_dir(out, "OUT")
        for run in runs:
            for name, into in (("records.jsonl", records), ("events.jsonl", events)):
                path = run / name
                if not path.is_file():
                    raise OutputDirError(f"{path}: missing (not a finished `personal pan dynamic` run)")
                into += [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
            metas.append(json.loads((run / "summary.json").read_text(encoding="utf-8"))["meta"] if (run / "summary.json").is_file() else {})
    except (OutputDirError, json.JSONDecodeError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2)
    meta = {k: v for k, v in (metas[0] if metas else {}).items() if k not in ("homes", "events read right", "wall time (s)")}
    meta.update({"runs": ", ".join(f"{r} ({m.get('homes', '?')})" for r, m in zip(runs, metas)),
                 "events read right": f"{sum(e['right'] for e in events)}/{len(events)}",
                 "wall time (s)": round(sum(m.get("wall time (s)", 0) for m in metas), 1)})
    write_file(out / "summary.json", json.dumps({"meta": meta, **summarize_dynamic_find(records)}, indent=1))
    typer.echo(write_dynamic_find_report(out, records, meta).read_text())

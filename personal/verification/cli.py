"""`personal verify ...`: PInVerify datasets (generate, check) and offline evaluation."""
from __future__ import annotations

import json
from pathlib import Path

import typer

app = typer.Typer(help="Active instance verification (PInVerify): datasets and offline eval.", no_args_is_help=True)


@app.command()
def generate(
    out: Path = typer.Option(..., "--out", help="Output folder (PInVerify layout)."),
    targets: int = typer.Option(100, "--targets", min=1, help="Target objects; 3 pairs each (1:1:1)."),
    seed: int = typer.Option(0, "--seed", help="Base seed (per-episode seeds derive from it)."),
    hfov: float = typer.Option(90.0, "--hfov", help="Camera horizontal field of view, degrees."),
) -> None:
    """Render captures from synthetic households and write index, meta.json, rgb/, mask/, descriptions."""
    from rich.progress import Progress

    from personal.verification.writer import write_dataset

    with Progress() as progress:
        task = progress.add_task("capture episodes", total=targets)
        summary = write_dataset(out, targets, seed, hfov_deg=hfov,
                                progress=lambda i, n: progress.update(task, completed=i))
    typer.echo(json.dumps(summary, indent=1))


@app.command()
def check(index: Path = typer.Argument(..., help="Index .jsonl"),
          lenient: bool = typer.Option(False, "--lenient", help="Accept unknown fields.")) -> None:
    """Validate a PInVerify folder (fields, images) and print its statistics."""
    from personal.verification.reader import DatasetError, load_index

    try:
        pairs = load_index(index, strict=not lenient)
    except DatasetError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    caps = {id(p.capture): p.capture for p in pairs}.values()
    by_type: dict[str, int] = {}
    for p in pairs:
        by_type[p.pair_type] = by_type.get(p.pair_type, 0) + 1
    n = len(caps)
    typer.echo(json.dumps({
        "episodes": len(pairs), "pair_types": by_type, "capture_episodes": n,
        "mean_navigable_sectors": round(sum(len(c.navigable_sectors()) for c in caps) / n, 2),
        "mean_visible_sectors": round(sum(len(c.visible_sectors()) for c in caps) / n, 2),
        "mean_trap_sectors": round(sum(len(c.trap_sectors()) for c in caps) / n, 2),
    }, indent=1))


@app.command("eval")
def eval_(
    index: Path = typer.Argument(..., help="Index .jsonl (public or generated)."),
    out: Path = typer.Option(..., "--out", help="Report folder (metrics.json, report.md, plots, results_*.jsonl)."),
    runs: str = typer.Option("standard", "--runs", help="standard (SV + MV per NBV, with coverage variants) | sv | random | fps | llm"),
    coverage: str = typer.Option("1.0", "--coverage", help="Coverage variant(s) for standard runs, comma separated (0 = none)."),
    decomposer: str = typer.Option("builtin", "--decomposer", help="builtin | llm"),
    verifier: str = typer.Option("builtin", "--verifier", help="builtin | vlm"),
    detection: str = typer.Option("mask", "--detection", help="mask (GT mask) | box (GT box)"),
    limit: int = typer.Option(0, "--limit", help="Evaluate only the first N episodes (0 = all)."),
    seed: int = typer.Option(0, "--seed", help="Start-sector and random-NBV seed."),
    lenient: bool = typer.Option(False, "--lenient", help="Accept unknown index/meta fields."),
) -> None:
    """Run single-view / multi-view agents offline and write the report."""
    from personal.verification.agent import AgentConfig
    from personal.verification.evaluate import evaluate, standard_configs

    base = AgentConfig(detection=detection, seed=seed)
    if runs == "standard":
        try:
            covs = [float(c) for c in coverage.split(",") if c.strip() and float(c) > 0]
        except ValueError:
            raise typer.BadParameter(f"--coverage must be numbers separated by commas, got {coverage!r}") from None
        configs = standard_configs(base, coverage=covs)
    elif runs == "sv":
        configs = {"SV": AgentConfig(mode="single", nbv="none", detection=detection, seed=seed)}
    elif runs in ("random", "fps", "llm"):
        configs = {f"MV-{runs}": AgentConfig(mode="multi", nbv=runs, detection=detection, seed=seed)}
    else:
        raise typer.BadParameter(f"--runs must be standard|sv|random|fps|llm, got {runs!r}")
    from personal.verification.reader import DatasetError

    try:
        evaluate(index, out, configs, decomposer, verifier, limit=limit or None, strict=not lenient, log=typer.echo)
    except (DatasetError, ValueError) as exc:  # bad data, or a model backend without an endpoint
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    typer.echo(f"report: {out / 'report.md'}")


@app.command()
def score(
    results: Path = typer.Argument(..., help="Result records: .jsonl (one per line, ours) or .json (a list, the public results.json)."),
    as_json: bool = typer.Option(False, "--json", help="Print the metrics as JSON."),
) -> None:
    """Every PInVerify metric of a results file, ours or the public evaluator's."""
    from personal.verification.metrics import RecordError, compute_metrics, load_records

    try:
        m = compute_metrics(load_records(results))
    except (RecordError, OSError) as exc:
        typer.echo(f"error: {results}: {exc}", err=True)
        raise typer.Exit(1) from None
    typer.echo(json.dumps(m, indent=1) if as_json else format_scores(m))


def format_scores(m: dict) -> str:
    """Plain-text table of :func:`compute_metrics` output."""
    f = lambda v: "–" if v is None else f"{v:.4f}" if isinstance(v, float) else str(v)  # noqa: E731
    nav = m["navigation"]
    lines = [
        f"episodes            {m['n']}",
        f"accuracy            {f(m['accuracy'])}",
        f"ASD                 {f(m['asd'])}",
        f"first-view accuracy {f(m['first_view_accuracy'])}",
        f"moves               {nav['moves']}",
        f"nav_fail_unreachable {nav['nav_fail_unreachable']}",
        f"nav_fail_trap       {nav['nav_fail_trap']}",
        f"failure rate / move {f(nav['failure_rate_per_move'])}  (unreachable {f(nav['unreachable_rate_per_move'])}, trap {f(nav['trap_rate_per_move'])})",
        f"failure rate / step {f(nav['failure_rate_per_step'])}",
        "",
        "pair type   n     accuracy  ASD     first-view  unreachable  trap  fail/move",
    ]
    for pt, v in m["per_pair_type"].items():
        lines.append(f"{pt:<11} {v['n']:<5} {f(v['accuracy']):<9} {f(v['asd']):<7} {f(v['first_view_accuracy']):<11} "
                     f"{v['nav_fail_unreachable']:<12} {v['nav_fail_trap']:<5} {f(v['failure_rate_per_move'])}")
    lines += ["", "category              n     accuracy  positive  neg_same  neg_diff"]
    for c, v in m["per_category"].items():
        lines.append(f"{c:<21} {v['n']:<5} {f(v['accuracy']):<9} {f(v['positive']):<9} {f(v['neg_same']):<9} {f(v['neg_diff'])}")
    return "\n".join(lines)

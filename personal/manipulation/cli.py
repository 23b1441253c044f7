"""`personal perm ...`: evaluate the preference suite, serve a policy over the openpi protocol, list preferences."""
from __future__ import annotations

import json
import time
from pathlib import Path

import typer

app = typer.Typer(help="LIBERO-PeRM-style personalized manipulation.", no_args_is_help=True)


def _csv(text: str) -> list[str]:
    return [t for t in (s.strip() for s in text.split(",")) if t]


@app.command("prefs")
def list_prefs() -> None:
    """List the preference registry (tier, language, contextual rewrite, metric unit, missions)."""
    from personal.manipulation import preferences as P

    for p in P.PREFERENCES.values():
        typer.echo(f"{p.id:20s} {p.tier.value:12s} {p.text():40s} | {p.context_text():60s} | {p.unit} | {','.join(p.missions)}")


@app.command("eval")
def eval_cmd(
    out: Path = typer.Option(Path("runs/perm_eval"), help="output folder (results.jsonl, report.md, plots)"),
    backend: str = typer.Option("robosuite", help="robosuite | kinematic (stand-in, not for reported numbers)"),
    policy: str = typer.Option("learned", help="learned (the shipped checkpoint) | scripted (ORACLE) | openpi | http"),
    checkpoint: Path = typer.Option(None, help="learned policy checkpoint (default: the shipped one)"),
    replan: int = typer.Option(5, help="actions executed from each chunk before asking the policy again"),
    host: str = typer.Option("127.0.0.1"),
    port: int = typer.Option(8000),
    url: str = typer.Option("http://127.0.0.1:8000/act"),
    missions: str = typer.Option("bin,mat"),
    prefs: str = typer.Option(",".join(["speed_up", "slow_down", "smooth", "keep_away", "move_higher",
                                        "rotate_when_placing", "prefer_red", "prefer_bigger"])),
    seeds: str = typer.Option("0,1,2"),
    suites: str = typer.Option("none,single,comprepref,compose,conflict"),
    max_steps: int = typer.Option(400),
    strips: int = typer.Option(4, help="frame strips for this many sample episodes"),
) -> None:
    """Run the suite in-process (same scoring as the perm_eval graph) and write report.md."""
    from personal.runs.output import RESULTS_LOG, OutputDirError, ResultLog, run_folder
    from personal.manipulation.backends import make_backend
    from personal.manipulation.evaluate import eval_tasks, evaluate, write_results
    from personal.manipulation.policies import make_policy
    from personal.manipulation.report import write_report

    try:  # before the simulator starts: an unwritable --out must not be found at the end
        log = ResultLog(run_folder(out, "--out") / RESULTS_LOG)
    except OutputDirError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2)
    tasks = eval_tasks(_csv(missions), _csv(prefs), [int(s) for s in _csv(seeds)], _csv(suites))
    sample = {t.task_id for t in tasks if t.seed == int(_csv(seeds)[0]) and t.suite in ("none", "single")}
    sample = set(sorted(sample, key=lambda s: (s.split("/")[2].strip("[]"), s))[: strips])
    be = make_backend(backend)
    pol = make_policy(policy, **_policy_kwargs(policy, checkpoint, host, port, url))
    t0 = time.time()

    def progress(k, n, r):
        log.append(r.to_dict())  # on disk as each episode is scored
        typer.echo(f"[{k}/{n}] {r.task_id:45s} success={int(r.success)} d={r.d} SA={r.sa:.2f} ({time.time() - t0:.0f}s)")

    results, frames = evaluate(be, pol, tasks, max_steps=max_steps, images=policy not in ("scripted", "learned"),
                               strips_for=lambda t: t.task_id in sample, progress=progress, replan=replan)
    log.close()
    write_results(results, out)
    from personal.manipulation.distribution import distribution_note, headline
    from personal.manipulation.report import write_run_record

    dist = distribution_note(policy, be.name, checkpoint or "")
    meta = {"simulator": be.name, "policy": pol.name, "policy distribution": headline(dist), "missions": missions,
            "seeds": seeds, "episodes scored": len(results), "wall time": f"{time.time() - t0:.0f} s"}
    write_run_record(out, meta, dist)
    report = write_report(results, out, frames, meta=meta)
    typer.echo(f"wrote {report}")
    be.close()


def _shown(path: Path) -> str:
    path = Path(path).resolve()
    return str(path.relative_to(Path.cwd())) if path.is_relative_to(Path.cwd()) else str(path)


def _policy_kwargs(policy: str, checkpoint: Path | None, host: str = "127.0.0.1", port: int = 8000,
                   url: str = "", chunk: int = 1) -> dict:
    if policy == "learned":
        return {"checkpoint": checkpoint} if checkpoint else {}
    if policy == "scripted":
        return {"chunk": chunk}
    return {"host": host, "port": port, "url": url}


@app.command("serve")
def serve_cmd(
    policy: str = typer.Option("learned", help="backend to serve: learned | scripted (ORACLE) | openpi | http"),
    checkpoint: Path = typer.Option(None, help="learned policy checkpoint (default: the shipped one)"),
    host: str = typer.Option("127.0.0.1", help="address to bind; 0.0.0.0 serves every interface (the server "
                             "decodes only numeric arrays, but has no authentication)"),
    port: int = typer.Option(8000),
    chunk: int = typer.Option(1, help="actions per reply (scripted; it is closed-loop, 1 is best)"),
    max_frame_mb: float = typer.Option(32.0, min=0.001, help="largest request frame accepted, MiB (bigger: connection closed, 1009)"),
    max_connections: int = typer.Option(8, min=1, help="open connections at most (more get HTTP 503)"),
    allowed_origins: str = typer.Option("", help="comma-separated browser Origins allowed (default: none; "
                                        "clients without an Origin header, robots and scripts, are always served)"),
) -> None:
    """Serve a policy over the openpi websocket protocol (metadata, msgpack, /healthz)."""
    from personal.manipulation.policies import make_policy
    from personal.manipulation.policies.server import PolicyServer

    srv = PolicyServer(make_policy(policy, **_policy_kwargs(policy, checkpoint, chunk=chunk)), host=host, port=port,
                       max_frame_bytes=int(max_frame_mb * 1024 * 1024), max_connections=max_connections,
                       allowed_origins=_csv(allowed_origins)).start()
    typer.echo(f"serving {policy} on {srv.url} (metadata {json.dumps(srv.metadata)}); Ctrl-C to stop")
    try:
        while True:
            time.sleep(1.0)
    except KeyboardInterrupt:
        pass
    finally:
        srv.stop()


ALL_PREFS = "speed_up,slow_down,smooth,keep_away,move_higher,close_to_ground,rotate_when_placing,push,grasp_by_handle," \
            "prefer_red,prefer_blue,prefer_bigger,prefer_smaller"


@app.command("demos")
def demos_cmd(
    out: Path = typer.Option(Path("runs/perm_demos"), help="dataset folder (LeRobot v2.1 layout); must be new"),
    missions: str = typer.Option("bin,mat,handle"),
    prefs: str = typer.Option(ALL_PREFS, help="preferences (each mission also gets no-preference demos)"),
    per_task: int = typer.Option(16, help="episodes per mission x preference (one fresh layout seed each)"),
    workers: int = typer.Option(2, help="processes, each with its own robosuite environment"),
) -> None:
    """Record oracle demonstrations on the robosuite tabletop into a LeRobot v2.1 dataset."""
    from personal.manipulation.learned.demos import generate, plan_demos

    n = len(plan_demos(_csv(missions), _csv(prefs), per_task))
    t0 = time.time()

    def progress(k, total, meta):
        if k % 10 == 0 or k == total:
            typer.echo(f"[{k}/{total}] {meta['mission']}/{meta['preference']}/s{meta['seed']} "
                       f"success={int(meta['success'])} steps={meta['steps']} ({time.time() - t0:.0f} s)")

    typer.echo(f"recording {n} demonstrations with {workers} worker(s) -> {out}")
    summary = generate(out, _csv(missions), _csv(prefs), per_task, workers=workers, progress=progress)
    typer.echo(f"kept {summary['episodes_kept']}/{summary['episodes_planned']} episodes, {summary['frames']} frames, "
               f"{summary['wall_s']:.0f} s; dropped: {summary['dropped']}")


@app.command("train")
def train_cmd(
    data: Path = typer.Option(Path("runs/perm_demos"), help="demonstration dataset (from `personal perm demos`)"),
    out: Path = typer.Option(Path("runs/perm_bc/perm_bc.safetensors"), help="checkpoint; card and loss curve beside it"),
    steps: int = typer.Option(None, help="optimiser steps (default: TrainConfig)"),
    horizon: int = typer.Option(None, help="action chunk length H"),
    width: int = typer.Option(None, help="MLP width"),
    aux_weight: float = typer.Option(None, help="weight of the auxiliary preference-id loss (0 = off)"),
    token_heads: int = typer.Option(None, help="attention heads pooling the preference's MiniLM tokens "
                                                  "(0 = the pooled sentence embedding)"),
    rewrites: bool = typer.Option(None, help="also train on rule-based rewrites of the training wordings"),
    max_minutes: float = typer.Option(20.0, help="stop early (and save) past this wall time"),
) -> None:
    """Behaviour cloning with action chunking, conditioned on the frozen MiniLM prompt (sentence or token) embeddings."""
    from dataclasses import replace

    from personal.manipulation.learned.train import TrainConfig, train

    cfg = TrainConfig(max_minutes=max_minutes)
    cfg = replace(cfg, **{k: v for k, v in {"steps": steps, "horizon": horizon, "width": width}.items() if v})
    cfg = replace(cfg, **{k: v for k, v in {"aux_weight": aux_weight, "token_heads": token_heads,
                                             "rewrites": rewrites}.items() if v is not None})
    typer.echo(f"training on {data} -> {out} ({cfg.steps} steps, batch {cfg.batch}, H={cfg.horizon})")
    meta = train(data, out, cfg, progress=lambda row: typer.echo(
        f"step {row['step']:6d}  train L1 {row['train_l1']:.4f}"
        + (f"  val L1 {row['val_l1']:.4f}" if "val_l1" in row else "") + f"  ({row['elapsed_s']:.0f} s)"))
    typer.echo(f"wrote {out} ({meta['checkpoint_bytes'] / 1e6:.1f} MB) and {out.parent / 'MODEL_CARD.md'}; "
               f"{meta['steps']} steps in {meta['train_s']:.0f} s")


@app.command("benchmark")
def benchmark_cmd(
    out: Path = typer.Option(Path("runs/perm_learned"), help="report folder"),
    checkpoint: Path = typer.Option(None, help="learned policy checkpoint (default: the shipped one)"),
    missions: str = typer.Option("bin,mat,handle"),
    prefs: str = typer.Option(ALL_PREFS),
    seeds: str = typer.Option("0,1,2,3,4", help="held-out layout seeds (training uses 1000 and up)"),
    workers: int = typer.Option(2, help="processes, each with its own simulator and policy"),
    replan: int = typer.Option(5, help="actions executed from each chunk before asking again"),
    oracle: bool = typer.Option(True, help="also run the ORACLE upper bound on the same layouts"),
    oracle_from: Path = typer.Option(None, help="reuse ORACLE results.jsonl of an earlier run (same seeds)"),
    paraphrase_sets: str = typer.Option("ABC", help="held-out paraphrase sets to ask in (A, B, C); V alone = the validation "
                                                           "wordings, for model selection on validation seeds (500-502)"),
) -> None:
    """Learned policy (training wording, held-out paraphrases, none) vs the ORACLE on held-out layouts."""
    from personal.manipulation.evaluate import evaluate_parallel
    from personal.manipulation.learned import benchmark as B
    from personal.manipulation.learned.policy import DEFAULT_CHECKPOINT

    learned_tasks, oracle_tasks = B.plan(_csv(missions), _csv(prefs), [int(s) for s in _csv(seeds)], paraphrase_sets)
    t0 = time.time()

    def progress(tag):
        def cb(k, n, r):
            if k % 10 == 0 or k == n:
                typer.echo(f"[{tag} {k}/{n}] {r.task_id:45s} success={int(r.success)} SA={r.sa:.2f} ({time.time() - t0:.0f} s)")
        return cb

    kw = {"checkpoint": str(checkpoint)} if checkpoint else {}
    learned, _ = evaluate_parallel("robosuite", "learned", kw, learned_tasks, workers=workers, replan=replan,
                                   progress=progress("learned"))
    t_learned = time.time() - t0
    orc = []
    if oracle_from:
        from personal.manipulation.evaluate import load_results

        wanted = {t.task_id for t in oracle_tasks}
        orc = [r for r in load_results(oracle_from) if r.task_id in wanted]
        if len(orc) != len(wanted):
            raise typer.BadParameter(f"{oracle_from} has {len(orc)} of the {len(wanted)} ORACLE tasks of this plan")
    elif oracle:
        orc, _ = evaluate_parallel("robosuite", "scripted", {}, oracle_tasks, workers=workers, replan=1,
                                   progress=progress("ORACLE"))
    report = B.write_report(learned, orc, out, meta={
        "how": f"`personal perm benchmark --seeds {seeds} --replan {replan} --paraphrase-sets {paraphrase_sets}`"
               + (f" (ORACLE results reused from `{oracle_from}`)" if oracle_from else ""),
        "simulator": "robosuite 1.5.2 / MuJoCo 3.3.7 Panda, 20 Hz, no cameras (both policies are state-based)",
        "learned policy": f"`{_shown(checkpoint or DEFAULT_CHECKPOINT)}`, chunk executed {replan} actions at a time",
        "held-out layouts": f"seeds {seeds} of missions {missions} (training layouts: seeds 1000 and up)",
        "wall time": f"learned {t_learned:.0f} s, total {time.time() - t0:.0f} s with {workers} workers on 2 shared CPU cores"})
    typer.echo(f"wrote {report}")


@app.command("benchmark-merge")
def benchmark_merge_cmd(
    runs: list[Path] = typer.Argument(..., help="`perm benchmark` output folders (e.g. one per seed)"),
    out: Path = typer.Option(..., help="folder for the merged report"),
    note: str = typer.Option("", help="a line for the report's header (e.g. the machine's load during the runs)"),
) -> None:
    """Merge `perm benchmark` runs of one checkpoint on disjoint tasks (e.g. per seed) into one report."""
    from personal.manipulation.learned import benchmark as B

    try:
        typer.echo(f"wrote {B.merge(runs, out, note)}")
    except (FileNotFoundError, ValueError) as e:
        raise typer.BadParameter(str(e)) from None


@app.command("report")
def report_cmd(results: Path = typer.Argument(..., help="results.jsonl"), out: Path = typer.Option(None)) -> None:
    """Rebuild report.md from a results.jsonl."""
    from personal.manipulation.evaluate import load_results
    from personal.manipulation.report import write_report

    typer.echo(f"wrote {write_report(load_results(results), out or results.parent)}")

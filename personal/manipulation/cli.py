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
    policy: str = typer.Option("scripted", help="scripted | openpi | http"),
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
    from personal.manipulation.backends import make_backend
    from personal.manipulation.evaluate import eval_tasks, evaluate, write_results
    from personal.manipulation.policies import make_policy
    from personal.manipulation.report import write_report

    tasks = eval_tasks(_csv(missions), _csv(prefs), [int(s) for s in _csv(seeds)], _csv(suites))
    sample = {t.task_id for t in tasks if t.seed == int(_csv(seeds)[0]) and t.suite in ("none", "single")}
    sample = set(sorted(sample, key=lambda s: (s.split("/")[2].strip("[]"), s))[: strips])
    be = make_backend(backend)
    pol = make_policy(policy, host=host, port=port, url=url)
    t0 = time.time()

    def progress(k, n, r):
        typer.echo(f"[{k}/{n}] {r.task_id:45s} success={int(r.success)} d={r.d} SA={r.sa:.2f} ({time.time() - t0:.0f}s)")

    results, frames = evaluate(be, pol, tasks, max_steps=max_steps, images=policy != "scripted",
                               strips_for=lambda t: t.task_id in sample, progress=progress)
    write_results(results, out)
    report = write_report(results, out, frames, meta={
        "simulator": be.name, "policy": pol.name, "missions": missions, "seeds": seeds,
        "episodes scored": len(results), "wall time": f"{time.time() - t0:.0f} s"})
    typer.echo(f"wrote {report}")
    be.close()


@app.command("serve")
def serve_cmd(
    policy: str = typer.Option("scripted", help="backend to serve: scripted | openpi | http"),
    host: str = typer.Option("0.0.0.0"),
    port: int = typer.Option(8000),
    chunk: int = typer.Option(1, help="actions per reply (scripted; it is closed-loop, 1 is best)"),
) -> None:
    """Serve a policy over the openpi websocket protocol (metadata, msgpack, /healthz)."""
    from personal.manipulation.policies import make_policy
    from personal.manipulation.policies.server import PolicyServer

    srv = PolicyServer(make_policy(policy, chunk=chunk), host=host, port=port).start()
    typer.echo(f"serving {policy} on {srv.url} (metadata {json.dumps(srv.metadata)}); Ctrl-C to stop")
    try:
        while True:
            time.sleep(1.0)
    except KeyboardInterrupt:
        pass
    finally:
        srv.stop()


@app.command("report")
def report_cmd(results: Path = typer.Argument(..., help="results.jsonl"), out: Path = typer.Option(None)) -> None:
    """Rebuild report.md from a results.jsonl."""
    from personal.manipulation.evaluate import load_results
    from personal.manipulation.report import write_report

    typer.echo(f"wrote {write_report(load_results(results), out or results.parent)}")

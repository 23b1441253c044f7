"""`personal home ...`: PersonalHomeBench households, tools, plans, evaluation and the MQTT mirror."""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Optional

import typer

app = typer.Typer(no_args_is_help=True)


@app.command()
def generate(seed: int = typer.Option(0, help="Household seed."), occupancy: Optional[str] = typer.Option(None, help="single|family|roommate"),
             out: Optional[Path] = typer.Option(None, help="Write the household JSON here (default: stdout).")) -> None:
    """Generate a seeded synthetic household (seed schema)."""
    from personal.smarthome.generator import generate_household

    text = json.dumps(generate_household(seed, occupancy).to_json(), indent=2)
    if out:
        out.write_text(text)
        typer.echo(f"wrote {out}")
    else:
        typer.echo(text)


@app.command()
def validate(path: Path) -> None:
    """Validate a household JSON file; errors name the field path."""
    from personal.smarthome.household import HouseholdError, load_household

    try:
        h = load_household(path)
    except HouseholdError as exc:
        typer.echo(str(exc), err=True)
        raise typer.Exit(1)
    typer.echo(f"{path}: ok ({len(h.members)} members, {len(h.appliances)} appliances, {len(h.memories)} memories)")


@app.command()
def catalogue(type_: Optional[str] = typer.Argument(None, metavar="TYPE", help="Show one appliance type's features.")) -> None:
    """List appliance types, or one type's features with their parameters."""
    from personal.smarthome.appliances import CATALOGUE

    if type_:
        if type_ not in CATALOGUE:
            typer.echo(f"unknown type {type_!r}; known: {', '.join(CATALOGUE)}", err=True)
            raise typer.Exit(2)
        typer.echo(json.dumps(CATALOGUE[type_].describe(), indent=1))
        return
    for name, t in CATALOGUE.items():
        typer.echo(f"{name:22s} {len(t.features):2d} features  {t.title}")


@app.command()
def call(tool: str, arguments: str = typer.Argument("{}", help="JSON object of arguments."),
         seed: int = typer.Option(0, help="Generated household seed."), household: Optional[Path] = typer.Option(None)) -> None:
    """Run one PersonalHomeTools call (appliances are pre-discovered) and print the result or typed error."""
    from personal.smarthome.generator import generate_household
    from personal.smarthome.household import load_household
    from personal.smarthome.tools import PersonalHomeTools, ToolExecutor

    h = load_household(household) if household else generate_household(seed)
    tools = PersonalHomeTools(h, require_discovery=False)
    r = ToolExecutor(tools).call(tool, arguments)
    typer.echo(r.for_agent())
    raise typer.Exit(0 if r.ok else 1)


@app.command()
def plan(plan_file: Path, seed: int = typer.Option(0), household: Optional[Path] = typer.Option(None)) -> None:
    """Check a Plan Generation program file: validity, failures and safety refusals."""
    from personal.smarthome.generator import generate_household
    from personal.smarthome.household import load_household
    from personal.smarthome.plans import PlanExecutor

    h = load_household(household) if household else generate_household(seed)
    report = PlanExecutor(h).execute(plan_file.read_text())
    typer.echo(json.dumps(report.to_dict(), indent=1, default=str))


@app.command("eval")
def eval_(households: int = typer.Option(20), seed: int = typer.Option(0), agent: str = typer.Option("reference", help="reference|tools|sole"),
          endpoint: str = typer.Option("", help="OpenAI-compatible base URL"), model: str = typer.Option(""),
          judge: bool = typer.Option(False), max_items: int = typer.Option(-1, help="IG items per household (-1 = all)"),
          families: str = typer.Option("IG,MC,CF,FR,PG"), out_dir: str = typer.Option("runs/home_eval")) -> None:
    """Run home_eval without ROS (the `home_eval` graph runs the same thing in a node)."""
    from personal.smarthome.evaluate import EvalConfig, run_home_eval

    cfg = EvalConfig(out_dir=out_dir, households=households, seed=seed, agent=agent, endpoint=endpoint, model=model, judge=judge,
                     max_items=None if max_items < 0 else max_items, families=tuple(f for f in families.split(",") if f))
    s = run_home_eval(cfg, progress=typer.echo)
    typer.echo((Path(out_dir) / "report.md").read_text())
    typer.echo(json.dumps({k: v for k, v in s.items() if not k.startswith("tool_error")}, indent=1, default=str))


@app.command()
def mirror(seed: int = typer.Option(0), host: str = typer.Option("", help="MQTT broker; empty = start a local one"),
           port: int = typer.Option(1883), username: str = typer.Option(""), password: str = typer.Option(""),
           seconds: float = typer.Option(0.0, help="Stop after this long (0 = until Ctrl-C).")) -> None:
    """Mirror a generated household to MQTT with Home Assistant discovery."""
    from personal.smarthome.broker import LocalBroker
    from personal.smarthome.generator import generate_household
    from personal.smarthome.mqtt import HomeAssistantBridge
    from personal.smarthome.tools import PersonalHomeTools, ToolExecutor

    broker = None
    if not host:
        broker = LocalBroker().start()
        host, port, username, password = broker.host, broker.port, broker.username, broker.password
        typer.echo(f"local Mosquitto on {host}:{port}, user {username!r}, password {password!r} (anonymous refused)")
    bridge = HomeAssistantBridge(ToolExecutor(PersonalHomeTools(generate_household(seed)), log_limit=100), host, port,
                                 username or None, password or None, on_event=typer.echo).start()
    typer.echo(f"mirroring under {bridge.base}; commands on {bridge.base}/<appliance>/<power|feature|...>/set")
    try:
        t0 = time.monotonic()
        while not seconds or time.monotonic() - t0 < seconds:
            time.sleep(0.2)
    except KeyboardInterrupt:
        pass
    finally:
        bridge.stop()
        if broker:
            broker.stop()

"""`personal bag record|play|info`: rosbag2 MCAP bags without the ros2 CLI."""
from __future__ import annotations

import signal
from typing import List, Optional

import typer

app = typer.Typer(no_args_is_help=True)


@app.command()
def info(bag: str = typer.Argument(..., help="Bag directory (with metadata.yaml)."),
         full: bool = typer.Option(False, "--full", help="Read every message (default: the MCAP summary).")) -> None:
    """Summarise a bag: files, duration, topics with types, counts and QoS; the MCAP file(s) are checked
    against metadata.yaml (a truncated, empty or non-MCAP file is an error, exit code 2)."""
    from personal.bags import BagError, BagReader

    try:
        reader = BagReader(bag)
        reader.verify(full=full)
        typer.echo(reader.info_text())
    except BagError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2)


@app.command()
def record(
    targets: List[str] = typer.Argument(..., help="Topics to record, or one graph name to start and record."),
    output: str = typer.Option(..., "-o", "--output", help="New bag directory."),
    topics: Optional[List[str]] = typer.Option(None, "--topic", "-t", help="With a graph: topics to record (default all)."),
    max_messages: int = typer.Option(0, help="Stop after this many messages (0 = until Ctrl-C or the graph ends)."),
    assignments: Optional[List[str]] = typer.Option(None, "--arg", "-a", help="With a graph: name:=value arguments."),
) -> None:
    """Record live topics (or everything a graph publishes) into a rosbag2 MCAP bag."""
    from personal.graphs import all_graphs, get_graph, parse_assignments
    from personal.graphs import Graph, GraphError, NodeSpec
    from personal.runner import node_command, run_graph
    from personal.ros_env import ros_environment

    params = {"output": output, "max_messages": max_messages}
    if len(targets) == 1 and targets[0] in all_graphs():
        g = get_graph(targets[0])
        params["topics"] = list(topics or [""])
        # with --max-messages the recording is the job: the graph stops when the recorder is done
        recorder = NodeSpec(name="bag_recorder", executable="bag_recorder", module="nodes.bag_recorder_node",
                            parameters=params, required=max_messages > 0)
        # the recorder starts first so that it is subscribed before the graph's first messages
        graph = Graph(name=f"{g.name}+record", description=g.description, nodes=[recorder, *g.nodes],
                      arguments=g.arguments)
        try:
            overrides = parse_assignments(assignments or [])
            graph.argument_values(overrides)  # checked before anything starts
        except GraphError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2)
        raise typer.Exit(run_graph(graph, overrides))
    params["topics"] = list(targets)
    raise typer.Exit(_run_node(node_command("nodes.bag_recorder_node", "bag_recorder", parameters=params),
                               ros_environment()))


@app.command()
def play(
    bag: str = typer.Argument(..., help="Bag directory."),
    rate: float = typer.Option(1.0, help="Playback rate (1 = recorded timing, 0 = as fast as possible)."),
    clock: bool = typer.Option(False, "--clock", help="Publish /clock from the bag's times."),
    topics: Optional[List[str]] = typer.Option(None, "--topics", help="Only these topics."),
    remap: Optional[List[str]] = typer.Option(None, "--remap", help="from:=to topic remaps."),
    wait_subscribers: float = typer.Option(0.0, help="Seconds to wait for a subscriber on every topic first."),
    max_gap: float = typer.Option(10.0, "--max-gap", min=0.0,
                                  help="Shorten log-time gaps longer than this many seconds to it (0 = keep)."),
) -> None:
    """Publish a bag's messages with their original timing."""
    from personal.bags import BagError, BagReader
    from personal.runner import node_command
    from personal.ros_env import ros_environment

    try:
        BagReader(bag).verify()  # fail fast, with the file named (a corrupt chunk too), before starting ROS
    except BagError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2)
    params = {"bag": bag, "rate": rate, "clock": clock, "topics": list(topics or [""]),
              "remap": list(remap or [""]), "wait_subscribers": wait_subscribers, "max_gap_s": max_gap}
    raise typer.Exit(_run_node(node_command("nodes.bag_player_node", "bag_player", parameters=params),
                               ros_environment()))


def _run_node(cmd: list[str], env) -> int:
    """Run one node as the runner runs its nodes (``personal.runner.spawn``: its own session and a
    parent-death signal, so it never outlives this CLI, even after SIGKILL) and pass SIGINT / SIGTERM
    on: the first as SIGINT (the recorder then closes its bag), the next as SIGTERM, then SIGKILL.
    Returns the node's exit status."""
    from personal.runner import exit_status, spawn, stop_signals_held

    escalation = [signal.SIGINT, signal.SIGTERM, signal.SIGKILL]

    def forward(_sig, _frame) -> None:
        if proc.poll() is None:
            proc.send_signal(escalation.pop(0) if len(escalation) > 1 else signal.SIGKILL)

    with stop_signals_held():  # a Ctrl-C right after the spawn is forwarded, not raised past the node
        proc = spawn(cmd, env=env)
        previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        return exit_status(proc.wait())
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)

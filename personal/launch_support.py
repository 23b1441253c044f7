"""Turn a graph (``personal.graphs``) into ``launch_ros`` actions.

Used by ``launch/<graph>.launch.py`` for ``ros2 launch personal <graph>.launch.py``.
``launch`` / ``launch_ros`` are imported only when called, so the library works where
they are absent (the pip-only ROS); ``personal launch`` starts the same graph there.

Each graph argument becomes a ``DeclareLaunchArgument``; a parameter that refers to
one (``Arg("split")``) becomes a ``LaunchConfiguration``, wrapped in a
``ParameterValue`` typed like the argument's default so that, for example, an empty
or numeric-looking string stays a string.

First, ``SetEnvironmentVariable`` gives the nodes the runner's environment for every variable the
user has not set (``personal.ros_env.graph_defaults``: the Fast DDS shared-memory profile, without
which large images are dropped, and ``OMP_WAIT_POLICY=PASSIVE``). Before any node: an
``OpaqueFunction`` checks every argument's value against its declared type and range
(``Graph.argument_values``, as the runner does); a bad value prints the error naming the argument
and ends the launch with exit code 2, the runner's, before a node starts. A node that runs only for
one argument value (``NodeSpec.when``) gets a plain ``Condition`` (``LaunchConfigurationEquals`` is
deprecated since launch 1.1; ``EqualsSubstitution`` is not in Humble). Every node ends the launch
when it exits (``Shutdown``): a required node because its work is done, any other because the
graph cannot work without it.
"""
from __future__ import annotations

from typing import Any, List

from personal.graphs import Arg, Graph, Select, Template, get_graph


def _default_text(value: Any) -> str:
    from personal.runner import format_parameter_value

    return format_parameter_value(value) if not isinstance(value, str) else value


def graph_launch_description(graph: Graph | str):
    import os
    import sys

    from launch import LaunchDescription
    from launch.actions import DeclareLaunchArgument, OpaqueFunction, SetEnvironmentVariable, Shutdown
    from launch.condition import Condition
    from launch.substitutions import LaunchConfiguration
    from launch_ros.actions import Node
    from launch_ros.parameter_descriptions import ParameterValue

    if isinstance(graph, str):
        graph = get_graph(graph)
    from personal.ros_env import graph_defaults

    actions: list = [SetEnvironmentVariable(name, value) for name, value in graph_defaults().items()
                     if name not in os.environ]
    actions += [
        DeclareLaunchArgument(name, default_value=_default_text(spec[0]), description=spec[1])
        for name, spec in graph.arguments.items()
    ]

    def check_arguments(context) -> list:
        """Every argument's value, as given on the command line, checked before any node starts;
        a bad one ends ``ros2 launch`` with the runner's exit code 2 (SystemExit leaves the launch
        service's event loop; a plain exception would be logged and exit 1)."""
        from personal.graphs import GraphError, check_unsharded

        try:
            check_unsharded(graph.argument_values({name: LaunchConfiguration(name).perform(context)
                                                   for name in graph.arguments}))
        except GraphError as exc:
            print(f"error: {exc}", file=sys.stderr, flush=True)
            raise SystemExit(2) from exc
        return []

    actions.append(OpaqueFunction(function=check_arguments))

    def text(value: Any) -> Any:
        """A plain string, or launch substitutions for a Template / Select (namespaces, remaps)."""
        if isinstance(value, Select):  # a profile's value, chosen at launch time
            from launch.substitutions import PythonExpression

            key = ["'", *text(value.key_template()), "'"]
            fmt = [p for n in value.option_names() for p in (f"{n}='", LaunchConfiguration(n), "', ")]
            return [PythonExpression([repr(dict(value.options)) + ".get(", *key, ", ", *(key if value.passthrough else ["None"]),
                                      ").format(", *fmt, ")"])]
        if not isinstance(value, Template):
            return value
        return [LaunchConfiguration(p.name) if isinstance(p, Arg) else p for p in value.parts()]

    def param(value: Any) -> Any:
        if isinstance(value, (Template, Select)):
            return text(value)
        if not isinstance(value, Arg):
            return value
        default = graph.arguments[value.name][0]
        value_type = type(default) if isinstance(default, (str, bool, int, float)) else None
        if isinstance(default, list) and default and all(isinstance(v, float) for v in default):
            value_type = List[float]  # launch_ros types lists with typing generics
        return ParameterValue(LaunchConfiguration(value.name), value_type=value_type)

    for spec in graph.nodes:
        kwargs: dict[str, Any] = dict(
            package="personal",
            executable=spec.executable,
            name=spec.name,
            namespace=text(spec.namespace),
            parameters=[{k: param(v) for k, v in spec.parameters.items()}],
            remappings=[(text(a), text(b)) for a, b in spec.remappings],
            output="screen",
        )
        if spec.when is not None:  # e.g. the viz node: only with viz:=foxglove
            name, value = spec.when
            kwargs["condition"] = Condition(
                predicate=lambda context, name=name, value=value: LaunchConfiguration(name).perform(context) == value)
        kwargs["on_exit"] = Shutdown(reason=f"required node {spec.name} exited" if spec.required else
                                     f"node {spec.name} died: the graph cannot work without it")
        actions.append(Node(**kwargs))
    return LaunchDescription(actions)

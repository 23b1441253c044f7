"""Answer programs: the machine-checkable derivation attached to every IG / MC / CF task.

A program is a list of steps (plain data, never code). A step either calls a tool
``{"tool": name, "args": {...}}`` or applies one operation ``{"op": name, ...}``; ``{"$": i}``
(optionally with ``"path"``) anywhere in arguments refers to the output of step ``i``.
The number of steps is the task's count of reasoning steps (difficulty).
"""
from __future__ import annotations

from typing import Any, Callable

from personal.smarthome.tools import ToolExecutor


class ProgramError(RuntimeError):
    pass


def _path(value: Any, path: list) -> Any:
    for key in path:
        value = value[key]
    return value


def _resolve(obj: Any, outputs: list[Any]) -> Any:
    if isinstance(obj, dict):
        if "$" in obj:
            return _path(outputs[obj["$"]], obj.get("path", []))
        return {k: _resolve(v, outputs) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_resolve(v, outputs) for v in obj]
    return obj


def _contains(value: Any, needle: Any) -> bool:
    if isinstance(value, list):
        return needle in value
    return isinstance(value, str) and str(needle).lower() in value.lower()


OPS: dict[str, Callable[..., Any]] = {
    "get": lambda src, path=(): _path(src, list(path)),
    "count": lambda src: len(src),
    "argmax": lambda src, key, field: max(src, key=lambda d: d[key])[field],
    "argmin": lambda src, key, field: min(src, key=lambda d: d[key])[field],
    "max": lambda src, key: max(d[key] for d in src),
    "min": lambda src, key: min(d[key] for d in src),
    "diff": lambda a, b: a - b,
    "filter_eq": lambda src, key, value: [d for d in src if d[key] == value],
    "filter_contains": lambda src, key, value: [d for d in src if _contains(d[key], value)],
    "find": lambda src, key, value, field: next(d[field] for d in src if d[key] == value),
    "pluck": lambda src, key: [d[key] for d in src],
    "sort_join": lambda src: ", ".join(sorted(str(v) for v in src)) or "none",
    "strip_prefix": lambda src, prefix: src[len(prefix):] if str(src).startswith(prefix) else src,
    "first": lambda src: src[0],
    "values": lambda src: list(src.values()),
    "to_str": lambda src: str(src),
}


def run_program(program: list[dict[str, Any]], executor: ToolExecutor) -> tuple[Any, list[Any]]:
    """Execute a program through the tool executor; returns (answer, per-step outputs)."""
    outputs: list[Any] = []
    for i, step in enumerate(program):
        if "tool" in step:
            result = executor.call(step["tool"], _resolve(step.get("args", {}), outputs))
            if not result.ok:
                raise ProgramError(f"step {i} ({step['tool']}): {result.error_type}: {result.message}")
            outputs.append(result.output)
        else:
            op = OPS.get(step.get("op", ""))
            if op is None:
                raise ProgramError(f"step {i}: unknown op {step.get('op')!r}")
            kwargs = {k: _resolve(v, outputs) for k, v in step.items() if k != "op"}
            try:
                outputs.append(op(**kwargs))
            except (KeyError, IndexError, TypeError, ValueError, StopIteration) as exc:
                raise ProgramError(f"step {i} ({step['op']}): {type(exc).__name__}: {exc}") from None
    if not outputs:
        raise ProgramError("empty program")
    return outputs[-1], outputs


def difficulty(program: list[dict[str, Any]]) -> str:
    """Seed's bands: simple up to 3 reasoning steps, medium 4-5, hard 6+."""
    n = len(program)
    return "simple" if n <= 3 else "medium" if n <= 5 else "hard"

"""A scripted household day for the assistant graph, without rclpy: the script (YAML), what each
step expects, the memory's change over a step, and the report (``day.json`` + ``day.md``).

A day is a list of steps, each one of:

- ``tell: "Tom gave his lamp to Anna."`` (``speaker``): a statement to the memory (``memory/tell``);
- ``ask: "washing machine"`` (``person``): a memory query (``memory/query``);
- ``find: "Find Rosa's washing machine."`` (``requester``, ``max_steps``, ``verify``, ``cancel_after``:
  cancel once that many feedback messages came): a FindObject goal;
- ``verify: "Rosa's grey washing machine"`` (``at: found`` — the last FindObject's pose — or
  ``at: [x, y]``; ``max_views``): a VerifyObject goal;
- ``routine: evening`` (``person``, ``steps``: the PG steps, else the memory's routine): a RunRoutine goal;

plus ``note`` (words for the report) and ``expect`` (outcome fields and the values they must have,
e.g. ``expect: {success: true}``). The runner is ``nodes/assistant_day.py`` (``personal assistant day``).
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from personal import exit_codes
from personal.runs.output import write_file

DAYS_DIR = Path(__file__).resolve().parent / "days"  # the shipped scripts: `personal assistant day <name>`
OPTIONS = {"tell": ("speaker",), "ask": ("person",), "find": ("requester", "max_steps", "verify", "cancel_after"),
           "verify": ("at", "max_views"), "routine": ("person", "steps")}
OUTCOME_FIELDS = {  # what each kind reports, so what `expect` may name
    "tell": ("understood", "message", "effects", "unresolved"),
    "ask": ("count", "objects", "owners"),
    "find": ("status", "success", "verified", "steps", "why"),
    "verify": ("status", "verdict", "views", "why"),
    "routine": ("status", "success", "done", "refused", "failed", "message"),
}
COMMON = ("note", "expect")
CANDIDATE = "candidate"  # personal.assistant.find.CANDIDATE: a place the verifier turned down


class DayScriptError(ValueError):
    """The script cannot be run: the message names the file, the step and the field."""


@dataclass
class Step:
    index: int  # 1-based, as in the report
    kind: str
    text: str
    options: dict = field(default_factory=dict)
    expect: dict = field(default_factory=dict)
    note: str = ""

    def describe(self) -> str:
        extra = ", ".join(f"{k}={v}" for k, v in self.options.items() if k != "steps")
        return f"{self.kind} {self.text!r}" + (f" ({extra})" if extra else "")


@dataclass
class Day:
    name: str
    path: str
    graph: dict  # the `personal launch assistant` arguments the script was written for
    steps: list[Step]


def script_path(name_or_path: str) -> Path:
    """A file, or the name of a shipped script (``leo-saturday`` → personal/assistant/days/leo-saturday.yaml)."""
    path = Path(name_or_path)
    if path.exists() or path.suffix:
        return path
    return DAYS_DIR / f"{name_or_path}.yaml"


def load_day(name_or_path: str) -> Day:
    import yaml

    path = script_path(name_or_path)
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise DayScriptError(f"{path}: cannot read the day script ({exc.strerror or exc}); shipped: "
                             f"{', '.join(p.stem for p in sorted(DAYS_DIR.glob('*.yaml')))}") from None
    except yaml.YAMLError as exc:
        raise DayScriptError(f"{path}: not YAML ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("steps"), list) or not data["steps"]:
        raise DayScriptError(f"{path}: a day script is a mapping with a non-empty list 'steps'")
    steps = [_step(path, i + 1, raw) for i, raw in enumerate(data["steps"])]
    for s in steps:
        if s.kind == "verify" and s.options.get("at") == "found" and not any(p.kind == "find" for p in steps[:s.index - 1]):
            raise DayScriptError(f"{path}: step {s.index}: 'at: found' needs a find step before it")
    graph = data.get("graph") or {}
    if not isinstance(graph, dict):
        raise DayScriptError(f"{path}: 'graph' must be a mapping of graph arguments")
    return Day(name=str(data.get("name") or path.stem), path=_shown(path), graph=graph, steps=steps)


def _shown(path: Path) -> str:
    """The script's path as the report shows it: relative to the working directory when inside it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _step(path: Path, index: int, raw) -> Step:
    where = f"{path}: step {index}"
    kinds = [k for k in OPTIONS if isinstance(raw, dict) and k in raw]
    if len(kinds) != 1:
        raise DayScriptError(f"{where}: needs exactly one of {', '.join(OPTIONS)} (got {raw!r})")
    kind = kinds[0]
    unknown = set(raw) - {kind, *OPTIONS[kind], *COMMON}
    if unknown:
        raise DayScriptError(f"{where}: unknown field(s) {', '.join(sorted(unknown))} for a {kind} step "
                             f"(allowed: {', '.join((*OPTIONS[kind], *COMMON))})")
    text = raw[kind]
    if not isinstance(text, str) or not text.strip():
        raise DayScriptError(f"{where}: '{kind}' must be a non-empty string")
    expect = raw.get("expect") or {}
    if not isinstance(expect, dict) or set(expect) - set(OUTCOME_FIELDS[kind]):
        raise DayScriptError(f"{where}: 'expect' names outcome fields of a {kind} step: {', '.join(OUTCOME_FIELDS[kind])}")
    options = {k: raw[k] for k in OPTIONS[kind] if k in raw}
    _check_options(where, kind, options)
    return Step(index, kind, text.strip(), options, expect, str(raw.get("note") or ""))


def _check_options(where: str, kind: str, options: dict) -> None:
    for key in ("max_steps", "max_views", "cancel_after"):
        if key in options and (not isinstance(options[key], int) or isinstance(options[key], bool) or options[key] < 1):
            raise DayScriptError(f"{where}: '{key}' must be a whole number >= 1")
    at = options.get("at", "found" if kind == "verify" else None)
    if kind == "verify":
        ok = at == "found" or (isinstance(at, list) and len(at) == 2 and all(isinstance(v, (int, float)) for v in at))
        if not ok:
            raise DayScriptError(f"{where}: 'at' is 'found' (the last find's pose) or [x, y] in the map frame")
        options["at"] = at
    if "steps" in options and not (isinstance(options["steps"], list) and all(isinstance(s, dict) for s in options["steps"])):
        raise DayScriptError(f"{where}: 'steps' is a list of PG steps (mappings with appliance, feature, args)")
    if "verify" in options and not isinstance(options["verify"], bool):
        raise DayScriptError(f"{where}: 'verify' is true or false")


def unmet(expect: dict, outcome: dict) -> list[str]:
    """The expectations the outcome does not meet, in words."""
    return [f"{key}: expected {want!r}, got {outcome.get(key)!r}" for key, want in expect.items() if outcome.get(key) != want]


def memory_state(objects: list[dict]) -> dict:
    """The memory as the day report shows it, from memory/query objects (dicts with id, description,
    category, owners, seen, last_seen [x, y] or None): the household's objects and the count of
    rejected candidate places."""
    kept = {str(o["id"]): {"description": o["description"], "owners": list(o["owners"]), "last_seen": o.get("last_seen")}
            for o in objects if o.get("category") != CANDIDATE}
    return {"objects": kept, "candidates": sum(o.get("category") == CANDIDATE for o in objects)}


def memory_changes(before: dict, after: dict) -> list[str]:
    """What a step changed in the memory, one line per change."""
    lines = []
    old, new = before["objects"], after["objects"]
    for oid, o in new.items():
        was = old.get(oid)
        if was is None:
            lines.append(f"+ {o['description']} ({_owners(o['owners'])})")
            continue
        if was["owners"] != o["owners"]:
            lines.append(f"{o['description']}: {_owners(was['owners'])} → {_owners(o['owners'])}")
        if o["last_seen"] and was["last_seen"] != o["last_seen"]:
            lines.append(f"{o['description']}: seen at ({o['last_seen'][0]:.2f}, {o['last_seen'][1]:.2f})")
    lines += [f"- {o['description']} (gone)" for oid, o in old.items() if oid not in new]
    if after["candidates"] > before["candidates"]:
        lines.append(f"+ {after['candidates'] - before['candidates']} rejected candidate place(s)")
    return lines


def _owners(names: list[str]) -> str:
    return ", ".join(names) or "nobody's"


@dataclass
class StepRecord:
    step: int
    kind: str
    request: str
    note: str
    outcome: dict
    expect: dict
    unmet: list
    seconds: float
    feedback: list  # the feedback lines, as `personal assistant` prints them
    memory_before: dict
    memory_after: dict
    changes: list

    @property
    def ok(self) -> bool:
        """Met what it expected, and the goal succeeded unless the script expected another end
        (``expect: {status: canceled}`` for a request called off)."""
        return not self.unmet and ("status" in self.expect or self.outcome.get("status", "succeeded") == "succeeded")


def record(step: Step, outcome: dict, seconds: float, feedback: list[str], before: dict, after: dict) -> StepRecord:
    return StepRecord(step.index, step.kind, step.describe(), step.note, outcome, step.expect, unmet(step.expect, outcome),
                      round(seconds, 2), feedback, before, after, memory_changes(before, after))


def day_exit_code(records: list[StepRecord], total: int) -> int:
    """OK when every step ran, succeeded and met what it expected; else INCOMPLETE (the report says which)."""
    return exit_codes.OK if len(records) == total and all(r.ok for r in records) else exit_codes.INCOMPLETE


def write_report(run_dir: Path, day: Day, records: list[StepRecord], started: str, stopped: str = "") -> Path:
    """``day.json`` (every field of every step) and ``day.md`` (a table and the memory's changes)."""
    run_dir = Path(run_dir)
    met = sum(r.ok for r in records)
    data = {"day": day.name, "script": day.path, "graph": day.graph, "started": started, "stopped": stopped,
            "steps": len(day.steps), "run": len(records), "ok": met, "records": [asdict(r) for r in records]}
    write_file(run_dir / "day.json", json.dumps(data, indent=1, default=str) + "\n")
    graph = " ".join(f"{k}:={v}" for k, v in day.graph.items())
    lines = [f"# Assistant day: {day.name}", "",
             f"Script `{day.path}`, graph `personal launch assistant {graph}`, started {started}.",
             f"**{met}/{len(day.steps)} steps ok** (ran, succeeded and met what they expected)"
             + (f"; stopped early: {stopped}" if stopped else "") + f"; {sum(r.seconds for r in records):.1f} s in all.", "",
             "| # | step | outcome | expected | s | feedback | memory changes |", "|---:|---|---|---|---:|---:|---|"]
    for r in records:
        expected = "; ".join(r.unmet) if r.unmet else (", ".join(f"{k}={v}" for k, v in r.expect.items()) + " ✓" if r.expect else "")
        lines.append(f"| {r.step} | {_cell(r.request)} | {_cell(_outcome_text(r))} | {_cell(expected)} | {r.seconds:.1f} | "
                     f"{len(r.feedback)} | {_cell('; '.join(r.changes))} |")
    final = records[-1].memory_after["objects"] if records else {}
    lines += ["", "## The memory at the end", "", "| object | owners | last seen |", "|---|---|---|"]
    lines += [f"| {_cell(o['description'])} | {_owners(o['owners'])} | "
              f"{'(%.2f, %.2f)' % tuple(o['last_seen'][:2]) if o['last_seen'] else ''} |" for o in final.values()]
    write_file(run_dir / "day.md", "\n".join(lines) + "\n")
    return run_dir / "day.md"


def _outcome_text(r: StepRecord) -> str:
    o = r.outcome
    if r.kind == "tell":
        return f"{o['message']}: " + "; ".join(o["effects"] + [f"unresolved: {u}" for u in o["unresolved"]])
    if r.kind == "ask":
        return f"{o['count']} object(s)" + (f": {o['objects'][0]} ({_owners(o['owners'])})" if o["objects"] else "")
    head = o.get("status", "")
    if r.kind == "find":
        return f"{head}: {'found' if o.get('success') else 'not found'}, verified {o.get('verified')}, {o.get('steps')} steps; {o.get('why')}"
    if r.kind == "verify":
        return f"{head}: {o.get('verdict')} over {o.get('views')} view(s); {o.get('why')}"
    return f"{head}: {o.get('message')}"


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")

"""Dynamic ownership, measured: event scripts change who owns what in a generated household;
afterwards grounding reads the memory's summary and must target the instance the events made right.

For one POG episode (its people and ownership, :mod:`personal.world.episodes`) :func:`make_script`
writes four events — a new object, a gift, a discard, a correction — each in one of several
hand-written styles (``STYLES``), and keeps the ground truth before and after them (scene object
ids). The flow (:func:`run_script`): seed a fresh :class:`HouseholdMemory` from the episode
summary, apply each statement with the builtin reader, then ground every query the events changed
(and a sample of unchanged ones) twice on the same map: with ``memory.summary()`` and with the
original summary (the baseline). A new object is a scene instance nobody owned in the episode, so
it is already on the saved map; a discarded one is still physically there (the map predates the
event), which is what makes the old summary wrong.
"""
from __future__ import annotations

import random
import re
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Sequence

from personal.memory.events import BuiltinStatementReader, apply_events, seed_from_summary
from personal.memory.store import HouseholdMemory
from personal.world.episodes import make_query, object_phrase, room_name
from personal.world.model import Episode, Scene
from personal.runs.output import write_file

KINDS = ("acquire", "transfer", "discard", "correct")

# Hand-written phrasing templates, several per kind. Fields: {giver} {taker} {owner} {desc} (caption
# without article), {short} (colour + category), {room}. ``speaker`` says who talks ("I", "my").
STYLES: dict[str, dict[str, tuple[str, str | None]]] = {
    "acquire": {
        "first-person": ("I just bought a brand-new {desc} in the {room}.", "owner"),
        "we-got": ("We got {owner} a new {desc} in the {room} this morning.", None),
        "there-is": ("There is a new {desc} in the {room} for {owner}.", None),
        "third-person": ("{owner} picked up a new {desc} in the {room}.", None),
    },
    "transfer": {
        "gave-to": ("{giver} handed the {desc} over to {taker}.", None),
        "first-person": ("I gave my {desc} to {taker} yesterday.", "giver"),
        "now-belongs": ("{giver}'s {short} now belongs to {taker}.", None),
        "taker-has": ("{taker} inherited {giver}'s {short}.", None),
    },
    "discard": {
        "is-gone": ("{owner}'s {short} is gone.", None),
        "broke": ("{owner}'s {short} broke last week.", None),
        "threw-away": ("I threw away my {short}.", "owner"),
        "got-rid": ("We got rid of the {desc}.", None),
    },
    "correct": {
        "actually-not": ("Actually, the {desc} is {taker}'s, not {giver}'s.", None),
        "isnt-its": ("The {desc} isn't {giver}'s, it's {taker}'s.", None),
        "correction-belongs": ("Correction: the {desc} belongs to {taker}.", None),
        "wrong-owns": ("Sorry, I was wrong: {taker} owns the {desc}, not {giver}.", None),
    },
}


@dataclass(frozen=True)
class ScriptEvent:
    kind: str
    style: str
    text: str
    speaker: str | None
    object_id: str  # the scene instance the event is about
    person: str | None  # its owner afterwards (acquire, transfer, correct)
    previous: str | None  # its owner before (transfer, correct, discard)


@dataclass
class Script:
    episode_id: str
    scene_id: str
    events: list[ScriptEvent]
    before: dict[str, list[str]]  # person -> scene object ids, the episode's ownership
    after: dict[str, list[str]]  # ... once the events happened

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class ScriptQuery:
    """A "Find X's <category>." query with its targets before and after the script."""

    owner: str
    category: str
    before: tuple[str, ...]
    after: tuple[str, ...]
    events: tuple[int, ...]  # indices of the script events that touched the owner's category

    @property
    def changed(self) -> bool:
        return set(self.before) != set(self.after)


# ---------------------------------------------------------------- the generator
def make_script(scene: Scene, episode: Episode, seed: int = 0, styles: dict[str, str] | None = None) -> Script:
    """Four events (one per kind) on ``episode``'s household; ``styles`` fixes a kind's style,
    otherwise each is drawn. Events that find no object to act on are left out."""
    rng = random.Random(f"{seed}:{episode.episode_id}")
    own = {p: list(v) for p, v in episode.ownership.items()}
    for p in episode.people:
        own.setdefault(p, [])
    events: list[ScriptEvent] = []
    touched: set[str] = set()  # one event per instance: each changes its own queries
    for kind in KINDS:
        style = (styles or {}).get(kind) or rng.choice(sorted(STYLES[kind]))
        ev = _EVENT_MAKERS[kind](scene, own, episode.people, rng, style, touched)
        if ev is not None:
            events.append(ev)
            touched.add(ev.object_id)
            _apply_truth(own, ev)
    before = {p: list(v) for p, v in episode.ownership.items()}
    return Script(episode.episode_id, episode.scene_id, events, before, {p: v for p, v in own.items() if v})


def _sole_owner(own: dict[str, list[str]], oid: str) -> str | None:
    owners = [p for p, v in own.items() if oid in v]
    return owners[0] if len(owners) == 1 else None


def _owned(own: dict[str, list[str]]) -> set[str]:
    return {o for v in own.values() for o in v}


def _fields(scene: Scene, oid: str, own: dict[str, list[str]] | None = None, **names) -> dict:
    """Template fields. With ``own`` (who owns what now) the object is named as a person would, so
    that it is told apart from the other owned objects of its category: {short} becomes the whole
    caption where another has the same colour, and both name the room where another has the same
    caption (a statement no reader could resolve would measure the script, not the memory)."""
    o = scene.object(oid)
    desc, short, room = object_phrase(o), f"{o.color} {o.category.replace('_', ' ')}", room_name(scene, o)
    alike = [scene.object(x) for x in _owned(own or {}) if x != oid and scene.object(x).category == o.category]
    if any(x.color == o.color for x in alike):
        short = desc
    if any(object_phrase(x) == desc for x in alike):
        short = desc = f"{desc} in the {room}"
    return {"desc": desc, "short": short, "room": room, **names}


def _render(kind: str, style: str, scene: Scene, oid: str, person, previous, own=None, **names) -> ScriptEvent:
    template, speaker_role = STYLES[kind][style]
    speaker = names.get(speaker_role) if speaker_role else None
    return ScriptEvent(kind, style, template.format(**_fields(scene, oid, own, **names)), speaker, oid, person, previous)


def _make_acquire(scene, own, people, rng, style, avoid):
    # a scene instance nobody owns yet: it is on the map already, the summary never named it
    free = [o.object_id for o in scene.objects if o.object_id not in _owned(own) | avoid and o.floor == 0]
    if not free:
        return None
    oid, owner = rng.choice(free), rng.choice(people)
    return _render("acquire", style, scene, oid, owner, None, owner=owner)


def _make_transfer(scene, own, people, rng, style, avoid, kind="transfer"):
    sole = sorted(o for o in _owned(own) - avoid if _sole_owner(own, o))
    if not sole or len(people) < 2:
        return None
    oid = rng.choice(sole)
    giver = _sole_owner(own, oid)
    taker = rng.choice([p for p in people if p != giver])
    return _render(kind, style, scene, oid, taker, giver, own, giver=giver, taker=taker)


def _make_discard(scene, own, people, rng, style, avoid):
    # prefer an object whose owner keeps another of its category: that query's target changes
    sole = sorted(o for o in _owned(own) - avoid if _sole_owner(own, o))
    keeps = [o for o in sole if any(scene.object(x).category == scene.object(o).category
                                     for x in own[_sole_owner(own, o)] if x != o)]
    pool = keeps or sole
    if not pool:
        return None
    oid = rng.choice(pool)
    owner = _sole_owner(own, oid)
    return _render("discard", style, scene, oid, None, owner, own, owner=owner)


def _make_correct(scene, own, people, rng, style, avoid):
    return _make_transfer(scene, own, people, rng, style, avoid, kind="correct")


_EVENT_MAKERS = {"acquire": _make_acquire, "transfer": _make_transfer, "discard": _make_discard, "correct": _make_correct}


def _apply_truth(own: dict[str, list[str]], ev: ScriptEvent) -> None:
    if ev.previous:
        own[ev.previous] = [o for o in own[ev.previous] if o != ev.object_id]
    if ev.person:
        own.setdefault(ev.person, []).append(ev.object_id)


def script_queries(scene: Scene, script: Script, unchanged: int = 2, seed: int = 0) -> list[ScriptQuery]:
    """Every (person, category) whose targets the events changed and that still has one, plus up to
    ``unchanged`` (person, category) pairs the events left alone (drawn with ``seed``)."""
    cat = lambda oid: scene.object(oid).category  # noqa: E731
    pairs = {(p, cat(o)) for side in (script.before, script.after) for p, v in side.items() for o in v}
    out, same = [], []
    for p, c in sorted(pairs):
        b = tuple(sorted(o for o in script.before.get(p, []) if cat(o) == c))
        a = tuple(sorted(o for o in script.after.get(p, []) if cat(o) == c))
        touched = tuple(i for i, e in enumerate(script.events)
                        if cat(e.object_id) == c and p in (e.person, e.previous))
        if not a:
            continue  # nothing of that category left to find
        q = ScriptQuery(p, c, b, a, touched)
        (out if q.changed else same).append(q)
    rng = random.Random(f"{seed}:{script.episode_id}:unchanged")
    return out + rng.sample(same, min(unchanged, len(same)))


# ---------------------------------------------------------------- memory side
def memory_after(script: Script, episode: Episode, scene: Scene, path: str | Path) -> tuple[HouseholdMemory, list[dict]]:
    """A fresh memory at ``path`` seeded from the episode summary, then the script's statements
    (builtin reader, one statement at t = 1, 2, ...). Returns the memory and, per event, whether
    the reader resolved it to the right object (``right``) with what it did."""
    memory = HouseholdMemory(path)
    seed_from_summary(memory, episode.summary, t=0.0)
    instance = _instances_by_description(memory, scene)
    reader = BuiltinStatementReader()
    rows = []
    for t, ev in enumerate(script.events, start=1):
        read = reader.read(ev.text, speaker=ev.speaker)
        applied = apply_events(memory, read, float(t), ev.text, ev.speaker)
        for o in applied.outcomes:
            if o.ok and o.object_id is not None and o.event.kind == "acquire":
                instance[o.object_id] = _instance_of(memory.object(o.object_id).description, scene)
        right = _event_right(ev, [(o.event, instance.get(o.object_id)) for o in applied.outcomes if o.ok])
        rows.append({"kind": ev.kind, "style": ev.style, "text": ev.text, "right": right,
                     "read": [asdict(o.event) for o in applied.outcomes], "effects": [o.effect for o in applied.outcomes]})
    return memory, rows


def _event_right(ev: ScriptEvent, resolved: list) -> bool:
    """One event read, of the right kind, on the right instance, with the right new owner."""
    if len(resolved) != 1:
        return False
    got, oid = resolved[0]
    return got.kind == ev.kind and oid == ev.object_id and (ev.kind == "discard" or got.person == ev.person)


def _instances_by_description(memory: HouseholdMemory, scene: Scene) -> dict[int, str | None]:
    return {o.id: _instance_of(o.description, scene) for o in memory.objects()}


def _instance_of(description: str, scene: Scene) -> str | None:
    """The scene instance a memory description names (caption, optionally "in the <room>")."""
    for o in scene.objects:
        phrase = object_phrase(o)
        if description in (phrase, f"{phrase} in the {room_name(scene, o)}"):
            return o.object_id
    text = _norm(description)
    hits = [o.object_id for o in scene.objects if _norm(object_phrase(o)) in text]
    return hits[0] if len(hits) == 1 else None


def _norm(text: str) -> str:
    return " ".join(re.findall(r"[a-z]+", text.lower().replace("brand-new ", "").replace("new ", "")))


def memory_targets(memory: HouseholdMemory, scene: Scene, owner: str, category: str) -> list[str]:
    """Scene instances of ``category`` the memory says ``owner`` owns now (unknown ones as "?")."""
    out = []
    for o in memory.objects_of(owner):
        sid = _instance_of(o.description, scene)
        if sid is None:
            out.append("?")
        elif scene.object(sid).category == category:
            out.append(sid)
    return sorted(out)


# ---------------------------------------------------------------- grounding side
CONDITIONS = ("memory", "original", "truth")  # what grounding reads: the memory's summary, the pre-event one, ORACLE truth


def truth_summary(scene: Scene, ownership: dict[str, list[str]]) -> str:
    """ORACLE: the ground-truth ownership after the events as sentences — what a perfect memory
    would say; separates the memory's errors from the grounding method's."""
    owners: dict[str, list[str]] = {}
    for p, objs in ownership.items():
        for o in objs:
            owners.setdefault(o, []).append(p)
    lines = []
    for oid, names in owners.items():
        o = scene.object(oid)
        names = sorted(names)
        who = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
        lines.append(f"The {object_phrase(o)} in the {room_name(scene, o)} belongs to {who}.")
    return " ".join(lines)

def query_episode(episode: Episode, q: ScriptQuery, summary: str, tag: str) -> Episode:
    """The episode re-aimed at ``q`` (its after-event targets) with ``summary`` as what grounding reads."""
    return replace(episode, episode_id=f"{episode.episode_id}:{q.owner}:{q.category}:{tag}", owner=q.owner,
                   query=make_query(q.owner, q.category, len(q.after)), target_object_ids=list(q.after),
                   object_category=q.category, summary=summary, extracted_summary=[])


@dataclass
class DynamicInputs:
    scene: Scene
    episodes: Sequence[Episode]
    maps: dict  # encoder label -> MapView of this scene
    encoders: dict  # encoder label -> encoder
    methods: Sequence[str]
    work_dir: Path
    unchanged: int = 2
    seed: int = 0


def run_household(inputs: DynamicInputs, on_row=None, progress=None) -> tuple[list[dict], list[dict]]:
    """Every episode of one household: script, memory, grounding (each of ``CONDITIONS``, each
    encoder). Returns (query rows, event rows); ``on_row`` gets each query row as it exists."""
    from personal.grounding.extract import BuiltinExtractor
    from personal.grounding.pipeline import evaluate_offline

    scene, ext = inputs.scene, BuiltinExtractor()
    query_rows, event_rows = [], []
    for n_done, ep in enumerate(inputs.episodes, start=1):
        script = make_script(scene, ep, inputs.seed)
        path = inputs.work_dir / f"{ep.episode_id}.sqlite"
        path.unlink(missing_ok=True)
        memory, events = memory_after(script, ep, scene, path)
        for e in events:
            event_rows.append({"episode_id": ep.episode_id, "scene_id": ep.scene_id, **e})
        summaries = {"memory": memory.summary(), "original": ep.summary, "truth": truth_summary(scene, script.after)}
        rows, asked, grounded = [], {}, []  # asked: query-episode id -> (row, condition)
        for q in script_queries(scene, script, inputs.unchanged, inputs.seed):
            rows.append({"episode_id": ep.episode_id, "scene_id": ep.scene_id, "split": ep.split, "owner": q.owner,
                         "category": q.category, "query": make_query(q.owner, q.category, len(q.after)), "changed": q.changed,
                         "before": list(q.before), "after": list(q.after),
                         "kinds": sorted({script.events[i].kind for i in q.events}),
                         "styles": sorted({f"{script.events[i].kind}/{script.events[i].style}" for i in q.events}),
                         "memory_targets": memory_targets(memory, scene, q.owner, q.category), "success": {}})
            rows[-1]["memory_right"] = rows[-1]["memory_targets"] == list(q.after)
            # another event gave or took something of this owner's: the phrases grounding reads for them differ
            rows[-1]["owner_touched"] = any(q.owner in (e.person, e.previous) for e in script.events)
            for cond, summary in summaries.items():
                grounded.append(query_episode(ep, q, summary, cond))
                asked[grounded[-1].episode_id] = (rows[-1], cond)
        # one grounding call per encoder for the episode's queries x conditions (texts embedded once)
        for label, enc in inputs.encoders.items():
            for res in evaluate_offline(grounded, {scene.scene_id: scene}, {scene.scene_id: inputs.maps[label]}, ext, enc,
                                        list(inputs.methods)):
                row, cond = asked[res.episode_id]
                row["success"][f"{label}/{cond}/{res.method}"] = bool(res.success_top1)
        for row in rows:
            query_rows.append(row)
            if on_row:
                on_row(row)
        if progress:
            progress(n_done, len(inputs.episodes))
        memory.close()
    return query_rows, event_rows


# ---------------------------------------------------------------- maps, run folder
ORACLE_LABEL = "ORACLE"


def household_maps(scene: Scene, first: Episode, encoder: str, maps_dir: str | Path, resolution: float = 0.5,
                   max_steps: int = 2500, say=print) -> tuple[dict, dict]:
    """{label: MapView}, {label: encoder}: the learned ``encoder``'s pre-exploration map (saved under
    ``<maps_dir>/<scene_id>/dynamic-<encoder>/`` and reused while it matches the scene, cell size
    and weights) and the ORACLE ground-truth caption map (labelled upper bound)."""
    from personal.grounding.eval.pog_run import (explore_scene_maps, load_saved_map, make_components, oracle_topdown_map,
                                                 remember_map_source, reusable_map)
    from personal.grounding.pipeline import TextEmbedder

    where = Path(maps_dir) / scene.scene_id / f"dynamic-{encoder}"
    ok, why = reusable_map(where, scene, resolution, encoder, (320, 240))
    if ok:
        say(f"{scene.scene_id}: reusing the {encoder} map in {where}")
        view = load_saved_map(where / "features.yaml")
    else:
        say(f"{scene.scene_id}: pre-exploring with {encoder} ({why}) ...")
        built, info = explore_scene_maps(scene, [encoder], resolution, first, 320, 240, max_steps=max_steps)
        view, builder = built[encoder]
        builder.save(where, extra={"scene_id": scene.scene_id})
        remember_map_source(where, scene, resolution, encoder, (320, 240))
        say(f"{scene.scene_id}: mapped {info}")
    learned, _ = make_components(encoder)
    oracle, _ = make_components("oracle")
    return ({encoder: view, ORACLE_LABEL: oracle_topdown_map(scene, TextEmbedder(oracle), resolution)},
            {encoder: learned, ORACLE_LABEL: oracle})


def run_dynamic(out_dir: str | Path, *, seeds: Sequence[int] = (0, 1, 2), episodes_per_split: int = 10,
                splits: Sequence[str] = ("easy", "medium", "hard"), encoder: str = "lit",
                methods: Sequence[str] = ("rpg-owner", "rpg-owner-scene"), maps_dir: str | Path = "maps",
                unchanged: int = 2, seed: int = 0, max_steps: int = 2500, say=print) -> dict:
    """The whole measurement on households ``seeds``: ``results.jsonl`` (one query row as it is
    grounded, then one row per event), ``report.md``; returns the report's figures."""
    from personal.grounding.eval.pog_run import generate_episode_set
    from personal.runs.output import RESULTS_LOG, ResultLog

    out = Path(out_dir)
    queries, events = [], []
    with ResultLog(out / RESULTS_LOG) as log:
        for s in seeds:
            scenes, eps = generate_episode_set(1, list(splits), episodes_per_split, s)
            scene = next(iter(scenes.values()))
            maps, encoders = household_maps(scene, eps[0], encoder, maps_dir, max_steps=max_steps, say=say)
            inputs = DynamicInputs(scene, eps, maps, encoders, list(methods), out / "memories", unchanged, seed)
            inputs.work_dir.mkdir(parents=True, exist_ok=True)
            q, e = run_household(inputs, on_row=lambda r: log.append({"record": "query", **r}),
                                 progress=lambda i, n: say(f"{scene.scene_id}: episodes {i}/{n}") if i % 10 == 0 or i == n else None)
            for r in e:
                log.append({"record": "event", **r})
            queries += q
            events += e
            say(f"{scene.scene_id}: {len(eps)} episodes, {sum(r['changed'] for r in q)} changed and "
                f"{sum(not r['changed'] for r in q)} unchanged queries, {sum(r['right'] for r in e)}/{len(e)} events read right")
    meta = {"households": list(seeds), "episodes per split": episodes_per_split, "splits": list(splits),
            "encoder": encoder, "labels": [encoder, ORACLE_LABEL], "methods": list(methods), "unchanged per episode": unchanged, "script seed": seed}
    figures = summarize(queries, events, (encoder, ORACLE_LABEL), methods)
    write_file(out / "report.md", report_text(figures, meta))
    return figures


def _sr(rows: list[dict], key: str) -> float | None:
    return round(100.0 * sum(r["success"][key] for r in rows) / len(rows), 1) if rows else None


def summarize(queries: list[dict], events: list[dict], labels: Sequence[str], methods: Sequence[str]) -> dict:
    """Every figure of the report, computed from the records (SR@1m in %, counts)."""
    changed = [r for r in queries if r["changed"]]
    same = [r for r in queries if not r["changed"]]
    out: dict = {"n_changed": len(changed), "n_unchanged": len(same), "n_events": len(events),
                 "events_right": sum(e["right"] for e in events), "sr": {}, "by_kind": {}, "by_style": {}, "worse": {},
                 "memory_right_changed": sum(r["memory_right"] for r in changed),
                 "memory_right_unchanged": sum(r["memory_right"] for r in same),
                 "n_unchanged_owner_touched": sum(r["owner_touched"] for r in same)}
    for lab in labels:
        for m in methods:
            k = lambda cond: f"{lab}/{cond}/{m}"  # noqa: E731
            out["sr"][f"{lab}/{m}"] = {f"{part}/{cond}": _sr(rows, k(cond)) for part, rows in (("changed", changed), ("unchanged", same))
                                       for cond in CONDITIONS}
            flips = lambda rows, a, b: sum(r["success"][k(a)] and not r["success"][k(b)] for r in rows)  # noqa: E731
            touched = [r for r in same if r["owner_touched"]]
            out["worse"][f"{lab}/{m}"] = {"worse": flips(same, "original", "memory"), "better": flips(same, "memory", "original"),
                                          "worse_owner_touched": flips(touched, "original", "memory"),
                                          "better_owner_touched": flips(touched, "memory", "original")}
    for group, field_ in (("by_kind", "kinds"), ("by_style", "styles")):
        names = sorted({n for r in changed for n in r[field_]})
        for n in names:
            rows = [r for r in changed if n in r[field_]]
            ev = [e for e in events if (e["kind"] if field_ == "kinds" else f"{e['kind']}/{e['style']}") == n]
            out[group][n] = {"n": len(rows), "events": len(ev), "events_right": sum(e["right"] for e in ev),
                             "memory_right": sum(r["memory_right"] for r in rows),
                             **{f"{lab}/{m}/{cond}": _sr(rows, f"{lab}/{cond}/{m}") for lab in labels for m in methods
                                for cond in CONDITIONS}}
    return out


def _f(v) -> str:
    return "–" if v is None else f"{v:.1f}"


def report_text(fig: dict, meta: dict) -> str:
    enc, methods, labels = meta["encoder"], meta["methods"], meta["labels"]
    lines = ["# Dynamic ownership: grounding after event scripts (memory summary vs the original summary)", "",
             f"Households: generated seeds {', '.join(map(str, meta['households']))}; {meta['episodes per split']} episodes per "
             f"split ({', '.join(meta['splits'])}); per episode one script of 4 events (new object, gift, discard, correction), "
             f"styles drawn per event (script seed {meta['script seed']}). Success: top-1 within 1.0 m of a target's footprint "
             f"(PersONAL POG). `{enc}` is the learned encoder on its pre-exploration map; {ORACLE_LABEL} is the ground-truth "
             "caption map (scene captions over every room cell): an upper bound, not a result.", "",
             f"Queries: {fig['n_changed']} changed by the events, {fig['n_unchanged']} unchanged (a sample). "
             f"Memory side: {fig['events_right']}/{fig['n_events']} events read and resolved to the right instance and owner; "
             f"the memory names exactly the true targets for {fig['memory_right_changed']}/{fig['n_changed']} changed and "
             f"{fig['memory_right_unchanged']}/{fig['n_unchanged']} unchanged queries.", "",
             "## SR@1m (%)", "",
             "Columns: grounding reads the memory's summary after the events (memory), the episode's pre-event summary "
             "(original: the baseline), or the true post-event ownership as sentences (truth: ORACLE, what a perfect memory "
             "would give this grounding method).", "",
             "| encoder | method | changed: memory | changed: original | changed: truth (ORACLE) | unchanged: memory | "
             "unchanged: original | unchanged worse / better (memory vs original) | of which the owner was touched |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for key, v in fig["sr"].items():
        lab, m = key.split("/", 1)
        w = fig["worse"][key]
        lines.append(f"| {lab} | {m} | {_f(v['changed/memory'])} | {_f(v['changed/original'])} | {_f(v['changed/truth'])} | "
                     f"{_f(v['unchanged/memory'])} | "
                     f"{_f(v['unchanged/original'])} | {w['worse']} / {w['better']} | "
                     f"{w['worse_owner_touched']} / {w['better_owner_touched']} |")
    for group, title in (("by_kind", "event kind"), ("by_style", "kind / style")):
        lines += ["", f"## Changed queries by {title} (SR@1m %, memory / original / truth)", "",
                  "| " + title + " | queries | events read right | memory right | " +
                  " | ".join(f"{lab} {m}" for lab in labels for m in methods) + " |",
                  "|---|---:|---:|---:|" + "---:|" * (len(labels) * len(methods))]
        for n, v in fig[group].items():
            cells = [" / ".join(_f(v[f"{lab}/{m}/{c}"]) for c in CONDITIONS) for lab in labels for m in methods]
            lines.append(f"| {n} | {v['n']} | {v['events_right']}/{v['events']} | {v['memory_right']}/{v['n']} | " + " | ".join(cells) + " |")
    lines += ["", f"Unchanged queries whose owner another event touched (gained or lost something else): "
              f"{fig['n_unchanged_owner_touched']}/{fig['n_unchanged']}; grounding reads a different set of that owner's phrases "
              "for them.", "", "A changed query counts under every event that touched its owner and category. Records: `results.jsonl` "
              "(`record: query` rows with per-condition success, `record: event` rows with what the reader made of each statement)."]
    return "\n".join(lines) + "\n"

"""Personalized Object Grounding (POG) evaluation: metrics, run folder, report.

Success (PersONAL §V-C): a prediction succeeds when it lies within
``SUCCESS_RADIUS_M`` = 1 m of the target. Here the distance is measured in the
map plane from the predicted (x, y) to the target object's footprint
(``Box.distance_2d``; 0 inside the footprint), like the public PersONAL
evaluator measures to the object rather than to a viewpoint. For "one of X's …"
queries any target instance counts. SR@top-1 uses the first prediction; SR@top-3
succeeds when any of the first three predictions is within the radius.

A run folder holds ``results.json`` (one record per episode × method),
``summary.json`` (SR per method × split), ``report.md`` (Table V layout),
``sr_by_split.png`` and ``maps/*.png`` for a sample of episodes.

Failures (bad episode, empty map, no ownership phrases, unknown person …) are
records with ``failure = {code, reason}`` and count as misses: SR's denominator
is every episode of the split, so nothing is skipped silently.
"""
from __future__ import annotations

import json
import math
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from personal.world.model import SPLITS, Box
from personal.runs.output import save_figure, write_file

SUCCESS_RADIUS_M = 1.0
TOP_N = 3
RADIUS_REFERENCE = (
    "success radius 1.0 m, PersONAL POG (seed §V-C, 'SR within a 1-meter threshold'); measured in the "
    "map plane from the predicted (x, y) to the target object's footprint (Box.distance_2d, 0 inside), or to "
    "the goal's centre where the episode file is all there is (HM3D: no reliable boxes, as in the paper); "
    "any target instance counts for 'one of' queries. Not habitat-lab ObjectNav's 0.1 m to a viewpoint."
)
EXTRACTOR_NOTES = {
    "episode": ("> **Ownership phrases:** read from each episode file's own `extracted_summary` (the authors' "
                "phrases, as the paper's RPG used them), not extracted from the summary text; episodes without one "
                "fall back to the builtin rules. Compare with `extractor:=builtin` for a run that reads the text."),
    "builtin": ("> **Ownership phrases:** extracted from the summary text by the builtin rules "
                "(`personal.grounding.ownership_rules`), not taken from the episodes' `extracted_summary`."),
}
PAPER_SR = {  # seed Table V, SR % (easy, medium, hard, total)
    "random": (0.5, 0.3, 0.4, 0.4),
    "centre": (1.2, 0.8, 1.0, 1.0),
    "qs": (15.4, 12.7, 8.6, 11.9),
    "rpg": (25.3, 23.6, 15.2, 16.8),
}
METHOD_LABELS = {
    "random": "Random (x,y)",
    "centre": "Center (x,y)",
    "qs": "Query-Score (QS)",
    "rpg": "Region-Gated (RPG)",
    "rpg-owner": "RPG-owner (ours, beyond paper)",
    "rpg-scene": "RPG scene-relative (ours, beyond paper)",
    "rpg-owner-scene": "RPG-owner scene-relative (ours, beyond paper)",
}
COLUMNS = (*SPLITS, "total")


# -- per-episode scoring ----------------------------------------------------------


def target_distances(points: Sequence[Sequence[float]], targets: Sequence[Box]) -> list[float]:
    """For each predicted (x, y): distance to the nearest target footprint."""
    if not targets:
        return [math.inf for _ in points]
    return [min(b.distance_2d(float(p[0]), float(p[1])) for b in targets) for p in points]


def success_flags(distances: Sequence[float], radius: float = SUCCESS_RADIUS_M, top_n: int = TOP_N) -> tuple[bool, bool]:
    """(success@top-1, success@top-n) from ranked distances."""
    top1 = bool(distances) and distances[0] <= radius
    topn = any(d <= radius for d in list(distances)[:top_n])
    return bool(top1), bool(topn)


@dataclass
class EpisodeResult:
    """One method on one episode — a row of results.json."""

    episode_id: str
    scene_id: str
    split: str
    method: str
    query: str = ""
    owner: str = ""
    target_object_ids: list[str] = field(default_factory=list)
    predictions: list[list[float]] = field(default_factory=list)  # ranked map (x, y)
    scores: list[float] = field(default_factory=list)
    distances_m: list[float] = field(default_factory=list)
    success_top1: bool = False
    success_top3: bool = False
    latency_ms: float = float("nan")  # the method itself (map scoring)
    failure: dict | None = None  # {"code": ..., "reason": ...}
    info: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["distances_m"] = [None if not math.isfinite(x) else round(x, 4) for x in self.distances_m]
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "EpisodeResult":
        d = dict(d)
        d["distances_m"] = [math.inf if x is None else x for x in d.get("distances_m", [])]
        return cls(**d)


def score_episode(
    *,
    episode_id: str,
    scene_id: str,
    split: str,
    method: str,
    points: Sequence[Sequence[float]],
    scores: Sequence[float],
    targets: Sequence[Box],
    latency_ms: float,
    query: str = "",
    owner: str = "",
    target_object_ids: Sequence[str] = (),
    failure: dict | None = None,
    info: dict | None = None,
    radius: float = SUCCESS_RADIUS_M,
) -> EpisodeResult:
    """Build the result record; a failure or missing ground truth is never a success."""
    dist = target_distances(points, targets) if failure is None else []
    s1, s3 = success_flags(dist, radius) if (failure is None and targets) else (False, False)
    return EpisodeResult(
        episode_id=episode_id,
        scene_id=scene_id,
        split=split,
        method=method,
        query=query,
        owner=owner,
        target_object_ids=list(target_object_ids),
        predictions=[[round(float(p[0]), 4), round(float(p[1]), 4)] for p in points],
        scores=[float(s) for s in scores],
        distances_m=dist,
        success_top1=s1,
        success_top3=s3,
        latency_ms=float(latency_ms),
        failure=failure,
        info=dict(info or {}),
    )


# -- aggregation ----------------------------------------------------------------------


class SuccessRate:
    """habitat-style measure: reset / update / value, shared by live and offline evaluation."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.n = self.top1 = self.top3 = self.failures = 0
        self.latencies: list[float] = []
        self.reasons: dict[str, int] = defaultdict(int)

    def update(self, r: EpisodeResult) -> None:
        self.n += 1
        self.top1 += int(r.success_top1)
        self.top3 += int(r.success_top3)
        if r.failure:
            self.failures += 1
            self.reasons[r.failure.get("code", "unknown")] += 1
        elif math.isfinite(r.latency_ms):
            self.latencies.append(r.latency_ms)

    def value(self) -> dict:
        pct = (lambda k: round(100.0 * k / self.n, 2)) if self.n else (lambda k: None)
        return {
            "n": self.n,
            "sr_top1": pct(self.top1),
            "sr_top3": pct(self.top3),
            "successes_top1": self.top1,
            "successes_top3": self.top3,
            "failures": self.failures,
            "failure_codes": dict(self.reasons),
            "latency_ms_mean": round(float(np.mean(self.latencies)), 4) if self.latencies else None,
            "latency_ms_p95": round(float(np.percentile(self.latencies, 95)), 4) if self.latencies else None,
        }


def summarize(results: Iterable[EpisodeResult], methods: Sequence[str] | None = None) -> dict:
    """SR per method × split (and total)."""
    acc: dict[str, dict[str, SuccessRate]] = {}
    order: list[str] = list(methods or [])
    for r in results:
        if r.method not in order:
            order.append(r.method)
        per = acc.setdefault(r.method, {c: SuccessRate() for c in COLUMNS})
        if r.split in per:
            per[r.split].update(r)
        per["total"].update(r)
    return {
        "success_radius_m": SUCCESS_RADIUS_M,
        "radius_reference": RADIUS_REFERENCE,
        "top_n": TOP_N,
        "methods": {m: {c: s.value() for c, s in acc.get(m, {c: SuccessRate() for c in COLUMNS}).items()} for m in order},
    }


# -- ordering check ----------------------------------------------------------------------


def ordering_analysis(summary: dict, margin_pp: float = 5.0) -> tuple[bool, list[str]]:
    """Check the expected ordering from the numbers; return (holds, lines of analysis).

    Expected (seed Table V): Random and Centre far below QS (total SR@1 at least
    ``margin_pp`` points lower and at most half of QS's), and RPG / RPG-owner at or above
    QS on the hard split.
    """
    m = summary["methods"]

    def sr(method: str, col: str, key: str = "sr_top1"):
        v = m.get(method, {}).get(col, {}).get(key)
        return v

    lines: list[str] = []
    holds = True
    qs_total, qs_hard = sr("qs", "total"), sr("qs", "hard")
    if qs_total is None:
        return False, ["QS was not run or has no episodes: the ordering cannot be checked."]
    for base in ("random", "centre"):
        v = sr(base, "total")
        if v is None:
            lines.append(f"- {METHOD_LABELS[base]} was not run.")
            continue
        ok = v + margin_pp <= qs_total and v <= 0.5 * qs_total
        holds &= ok
        lines.append(
            f"- {METHOD_LABELS[base]} total SR@1 {v:.1f}% vs QS {qs_total:.1f}%: "
            + (f"far below (≥ {margin_pp:.0f} points and ≤ half of QS), as expected." if ok
               else f"NOT far below QS (needs ≥ {margin_pp:.0f} points and ≤ half of QS).")
        )
    for meth in ("rpg", "rpg-owner"):
        v = sr(meth, "hard")
        if v is None:
            lines.append(f"- {METHOD_LABELS[meth]} was not run on the hard split.")
            continue
        ok = qs_hard is not None and v >= qs_hard
        holds &= ok
        lines.append(
            f"- {METHOD_LABELS[meth]} hard SR@1 {v:.1f}% vs QS {qs_hard:.1f}%: "
            + ("at or above QS, as expected." if ok else f"BELOW QS by {qs_hard - v:.1f} points.")
        )
    return holds, lines


def failure_breakdown(results: Sequence[EpisodeResult], method: str, split: str | None = None) -> dict[str, int]:
    out: dict[str, int] = defaultdict(int)
    for r in results:
        if r.method == method and (split is None or r.split == split) and r.failure:
            out[r.failure["code"]] += 1
    return dict(out)


def miss_analysis(results: Sequence[EpisodeResult], method: str, baseline: str, split: str) -> list[str]:
    """Why ``method`` is not at or above ``baseline`` on ``split``, from the per-episode records."""
    by = defaultdict(dict)
    for r in results:
        if r.split == split and r.method in (method, baseline):
            by[r.episode_id][r.method] = r
    pairs = [(v[method], v[baseline]) for v in by.values() if method in v and baseline in v]
    if not pairs:
        return []
    lost = [a for a, b in pairs if b.success_top1 and not a.success_top1]
    won = [a for a, b in pairs if a.success_top1 and not b.success_top1]
    lines = [
        f"  - On {split} ({len(pairs)} episodes) {METHOD_LABELS.get(method, method)} wins {len(won)} episodes "
        f"that {METHOD_LABELS.get(baseline, baseline)} misses and loses {len(lost)} that it solves."
    ]
    codes = defaultdict(int)
    for a in lost:
        codes[a.failure["code"] if a.failure else "predicted elsewhere"] += 1
    if codes:
        lines.append("  - Lost episodes by cause: " + ", ".join(f"{k} {v}" for k, v in sorted(codes.items())) + ".")
    gated = [a.info.get("gate_cells") for a in lost if a.info.get("gate_cells") is not None]
    if gated:
        lines.append(f"  - Gate size on lost episodes: median {float(np.median(gated)):.0f} cells (the target fell outside the gate or another gated cell scored higher).")
    return lines


# -- run folder ------------------------------------------------------------------------------


def _fmt(v) -> str:
    return "–" if v is None else f"{v:.1f}"


def table_v(summary: dict, key: str, map_kind: str = "2D") -> list[str]:
    head = ["| Map | Method | Easy SR↑ | Medium SR↑ | Hard SR↑ | Total SR↑ |", "|---|---|---|---|---|---|"]
    rows = []
    for i, (m, per) in enumerate(summary["methods"].items()):
        label = METHOD_LABELS.get(m, m)
        cells = [_fmt(per[c][key]) for c in COLUMNS]
        rows.append(f"| {map_kind if i == 0 else ''} | {label} | " + " | ".join(cells) + " |")
    return head + rows


def owner_phrases(phrases, owner: str) -> list[str]:
    """The extracted ownership phrases that name the queried person (shown beside each episode)."""
    return [str(p) for p in phrases if owner and owner.lower() in str(p).lower()]


def paper_table() -> list[str]:
    head = ["| Method | Easy | Medium | Hard | Total |", "|---|---|---|---|---|"]
    return head + [f"| {METHOD_LABELS[m]} | " + " | ".join(f"{v:.1f}" for v in vals) + " |" for m, vals in PAPER_SR.items()]


# -- ORACLE upper bound beside a run ----------------------------------------------------------


@dataclass
class UpperBound:
    """The run's episodes grounded on ORACLE maps (``label`` says which), for the report."""

    label: str
    results: list[EpisodeResult] = field(default_factory=list)
    error: str = ""  # why it could not be computed (the report says so)

    def summary(self, methods: Sequence[str] | None = None) -> dict:
        return {"label": self.label, "error": self.error,
                **({"methods": summarize(self.results, methods)["methods"]} if self.results else {})}


@dataclass
class OtherStyle:
    """The run's episodes with the other summary style (verbatim <-> varied) on the run's own maps."""

    style: str
    results: list[EpisodeResult] = field(default_factory=list)
    error: str = ""

    def summary(self, methods: Sequence[str] | None = None) -> dict:
        return {"summary_style": self.style, "error": self.error,
                **({"methods": summarize(self.results, methods)["methods"]} if self.results else {})}


def other_style_section(summary: dict) -> list[str]:
    """The other summary style's table and its ratio to the run's own figures (empty without one)."""
    other = summary.get("other_summary_style")
    if not other:
        return []
    style, own = other["summary_style"], summary.get("meta", {}).get("summary style", "verbatim")
    out = [f"## Summary style {style} (the run's style: {own}) — SR@top-1 (%)", ""]
    if other.get("error") or "methods" not in other:
        return out + [f"Not computed: {other.get('error') or 'no episodes'}.", ""]
    out += [f"Same episodes, queries, targets, maps and methods; only the summaries' wording differs ({style}: "
            + ("the owned objects in other words: synonyms, partial descriptions, another attribute order, "
               "relative descriptions true of the scene" if style == "varied" else "the generator's captions quoted")
            + "). Grounded in the evaluator's process on the run's maps.", ""]
    out += table_v({"methods": other["methods"]}, "sr_top1") + [""]
    out += [f"| Method | {own} total | {style} total | varied / verbatim |", "|---|---|---|---|"]
    for m, per in summary["methods"].items():
        o = other["methods"].get(m)
        if o is None or m in ("random", "centre"):
            continue
        a, b = per["total"]["sr_top1"], o["total"]["sr_top1"]
        v, w = (a, b) if own == "verbatim" else (b, a)
        ratio = f"{100 * w / v:.0f} %" if v and w is not None else "–"
        f = lambda x: "–" if x is None else f"{x:.1f}"  # noqa: E731
        out.append(f"| {METHOD_LABELS.get(m, m)} | {f(a)} | {f(b)} | {ratio} |")
    return out + [""]


def ratio_lines(s_l: dict, s_u: dict, key: str = "sr_top1") -> list[str]:
    """Learned / ORACLE SR per method (total and hard), computed from the two summaries."""
    out = ["| Method | Learned total | ORACLE total | Learned / ORACLE | Learned hard | ORACLE hard |", "|---|---|---|---|---|---|"]
    for m, per in s_l["methods"].items():
        u = s_u["methods"].get(m)
        if u is None or m in ("random", "centre"):
            continue
        lt, ut, lh, uh = per["total"][key], u["total"][key], per["hard"][key], u["hard"][key]
        ratio = f"{100 * lt / ut:.0f} %" if lt is not None and ut else "–"
        f = lambda v: "–" if v is None else f"{v:.1f}"  # noqa: E731
        out.append(f"| {METHOD_LABELS.get(m, m)} | {f(lt)} | {f(ut)} | {ratio} | {f(lh)} | {f(uh)} |")
    return out


def upper_bound_section(summary: dict) -> list[str]:
    """The ORACLE upper bound's table and the learned / ORACLE ratios (empty without one)."""
    ub = summary.get("upper_bound")
    if not ub:
        return []
    out = [f"## ORACLE upper bound: {ub['label']} — SR@top-1 (%)", ""]
    if ub.get("error") or "methods" not in ub:
        return out + [f"Not computed: {ub.get('error') or 'no episodes'}.", ""]
    out += ["Same episodes and methods; only the map differs. Perception (and exploration) are perfect there, "
            "so this bounds what the run above could reach; it is not a result.", ""]
    out += table_v({"methods": ub["methods"]}, "sr_top1") + [""]
    out += ["### This run / ORACLE upper bound, SR@top-1 (%)", ""] + ratio_lines(summary, ub) + [""]
    return out


def write_report(
    run_dir: str | Path,
    results: Sequence[EpisodeResult],
    meta: dict,
    methods: Sequence[str] | None = None,
    upper_bound: UpperBound | None = None,
    other_style: "OtherStyle | None" = None,
) -> dict:
    """Write results.json, summary.json, report.md and sr_by_split.png; return the summary.

    ``meta`` describes the run: encoder, encoder_is_oracle, extractor, map source,
    resolution, episode source, scenes, wall time … It is copied into summary.json.
    ``upper_bound``: the same episodes on ORACLE maps, reported beside the run (labelled so) and
    kept in ``upper_bound/results.json``. ``other_style``: the same episodes with the other summary
    style on the run's maps, reported beside the run and kept in ``other_summary_style/results.json``.
    """
    run = Path(run_dir)
    run.mkdir(parents=True, exist_ok=True)
    summary = summarize(results, methods)
    summary["meta"] = meta
    if upper_bound is not None:
        summary["upper_bound"] = upper_bound.summary(methods)
        (run / "upper_bound").mkdir(exist_ok=True)
        write_file(run / "upper_bound" / "results.json",
            json.dumps([r.to_dict() for r in upper_bound.results], indent=1, allow_nan=True))
    if other_style is not None:
        summary["other_summary_style"] = other_style.summary(methods)
        (run / "other_summary_style").mkdir(exist_ok=True)
        write_file(run / "other_summary_style" / "results.json",
            json.dumps([r.to_dict() for r in other_style.results], indent=1, allow_nan=True))
    holds, lines = ordering_analysis(summary)
    summary["ordering_holds"] = holds
    write_file(run / "results.json", json.dumps([r.to_dict() for r in results], indent=1, allow_nan=True))
    write_file(run / "summary.json", json.dumps(summary, indent=2, allow_nan=True))
    plot_sr_by_split(summary, run / "sr_by_split.png", title=report_title(meta))
    write_file(run / "report.md", render_report(summary, results, holds, lines))
    return summary


def report_title(meta: dict) -> str:
    enc = meta.get("encoder", "unknown encoder")
    oracle = " — ORACLE encoder (reads simulator ground truth)" if meta.get("encoder_is_oracle") else ""
    return f"POG results, encoder {enc}{oracle}"


def render_report(summary: dict, results: Sequence[EpisodeResult], holds: bool, lines: list[str]) -> str:
    meta = summary.get("meta", {})
    out = [f"# {report_title(meta)}", ""]
    if meta.get("encoder_is_oracle"):
        out += [
            "> **Oracle component:** the map's cell embeddings come from an oracle encoder that reads "
            "the simulator's ground-truth object identities (captions of the objects seen in each cell). "
            "These numbers measure grounding given perfect perception; they are not comparable to the "
            "paper's BLIP-2 maps.",
            "",
        ]
    out += [f"**Success criterion:** {RADIUS_REFERENCE}", ""]
    out += [EXTRACTOR_NOTES.get(str(meta.get("extractor", "")), ""), ""] if meta.get("extractor") in EXTRACTOR_NOTES else []
    rows = [f"- {k}: {v}" for k, v in meta.items() if k not in ("encoder_is_oracle",)]
    out += ["## Run", *rows, ""]
    first = next(iter(summary["methods"].values()), None)
    if first:
        out += ["Episodes per split: " + ", ".join(f"{c} {first[c]['n']}" for c in COLUMNS) + " (per method).", ""]
    out += ["## SR@top-1 (%) — Table V layout", *table_v(summary, "sr_top1"), ""]
    out += upper_bound_section(summary)
    out += other_style_section(summary)
    out += ["## SR@top-3 (%) — any of the first three predictions within 1 m", *table_v(summary, "sr_top3"), ""]
    out += ["## Episodes, failures and latency per method (total)", "",
            "| Method | Episodes | Failures | Failure codes | Mean latency (ms) | p95 latency (ms) |",
            "|---|---|---|---|---|---|"]
    for m, per in summary["methods"].items():
        t = per["total"]
        codes = ", ".join(f"{k}: {v}" for k, v in t["failure_codes"].items()) or "–"
        lat = "–" if t["latency_ms_mean"] is None else f"{t['latency_ms_mean']:.3f}"
        p95 = "–" if t["latency_ms_p95"] is None else f"{t['latency_ms_p95']:.3f}"
        out.append(f"| {METHOD_LABELS.get(m, m)} | {t['n']} | {t['failures']} | {codes} | {lat} | {p95} |")
    out += ["", "## Ordering check", "",
            "Expected (seed Table V): Random and Centre far below QS; RPG and RPG-owner at or above QS on the hard split.",
            "", f"**{'Holds' if holds else 'Does not hold'}** on this run:", *lines, ""]
    if not holds:
        out += ["### Why not (from the per-episode records)"]
        for meth in ("rpg", "rpg-owner"):
            if meth in summary["methods"] and "qs" in summary["methods"]:
                out += [f"- {METHOD_LABELS[meth]} vs QS:"] + miss_analysis(results, meth, "qs", "hard")
        for base in ("random", "centre"):
            per = summary["methods"].get(base)
            if per and per["total"]["sr_top1"] is not None and summary["methods"].get("qs"):
                n_cells = [r.info.get("observed_cells") for r in results if r.method == base and r.info.get("observed_cells")]
                if n_cells:
                    out.append(f"- {METHOD_LABELS[base]}: maps have a median of {float(np.median(n_cells)):.0f} observed cells; "
                               "on small maps a point lands within 1 m of some object often, so the chance baselines rise.")
        out.append("")
    fails = [r for r in results if r.failure]
    if fails:
        out += ["## Recorded failures (first 20)", "", "| Episode | Split | Method | Code | Reason |", "|---|---|---|---|---|"]
        for r in fails[:20]:
            out.append(f"| {r.episode_id} | {r.split} | {r.method} | {r.failure['code']} | {r.failure['reason']} |")
        out.append("")
    out += ["## Paper reference (seed Table V, BLIP-2 maps, SR@1 %)", *paper_table(), "",
            "Files: `results.json` (per episode × method), `summary.json`, `sr_by_split.png`, `maps/*.png`.", ""]
    return "\n".join(out)


# -- plots --------------------------------------------------------------------------------------


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_sr_by_split(summary: dict, path: str | Path, title: str = "POG SR") -> None:
    plt = _plt()
    methods = list(summary["methods"])
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    width = 0.8 / max(1, len(methods))
    x = np.arange(len(COLUMNS))
    for ax, key, name in zip(axes, ("sr_top1", "sr_top3"), ("SR@top-1", "SR@top-3")):
        for i, m in enumerate(methods):
            vals = [summary["methods"][m][c][key] or 0.0 for c in COLUMNS]
            ax.bar(x + (i - (len(methods) - 1) / 2) * width, vals, width, label=METHOD_LABELS.get(m, m))
        ax.set_xticks(x, [c.capitalize() for c in COLUMNS])
        ax.set_title(f"{name} (within {SUCCESS_RADIUS_M:g} m)")
        ax.set_ylim(0, 100)
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel("SR (%)")
    axes[1].legend(fontsize=8, loc="upper right")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    save_figure(fig, path, dpi=90)
    plt.close(fig)


def plot_episode_map(
    path: str | Path,
    *,
    background: np.ndarray,
    origin: Sequence[float],
    resolution: float,
    targets: Sequence[Box],
    predictions: dict[str, Sequence[Sequence[float]]],
    title: str = "",
    background_label: str = "observed (confidence)",
    distractors: Sequence[Box] = (),
) -> None:
    """Top-down map (``background``: occupancy/confidence or a similarity map, H×W)
    with target footprints (red), same-category distractors (cyan) and each
    method's ranked predictions (1 = top-1)."""
    plt = _plt()
    from matplotlib.patches import Circle, Rectangle

    h, w = background.shape
    extent = (origin[0], origin[0] + w * resolution, origin[1], origin[1] + h * resolution)
    bg = np.where(np.isfinite(background), background, np.nan)
    fig, ax = plt.subplots(figsize=(6, 6))
    im = ax.imshow(bg, origin="lower", extent=extent, cmap="viridis", interpolation="nearest")
    fig.colorbar(im, ax=ax, fraction=0.046, label=background_label)
    boxes = [(b, "cyan", "same category, not a target") for b in distractors] + [(b, "red", "target (1 m circle)") for b in targets]
    seen_labels = set()
    for b, color, label in boxes:
        (x0, y0, _), (x1, y1, _) = b.min, b.max
        ax.add_patch(Rectangle((x0, y0), x1 - x0, y1 - y0, fill=False, ec=color, lw=2,
                               label=None if label in seen_labels else label))
        seen_labels.add(label)
        ax.add_patch(Circle(b.center[:2], SUCCESS_RADIUS_M, fill=False, ec=color, ls=":", lw=1))
    markers = "oXs^Dv*"
    for i, (m, pts) in enumerate(predictions.items()):
        for rank, p in enumerate(pts[:TOP_N]):
            ax.plot(p[0], p[1], markers[i % len(markers)], ms=9 if rank == 0 else 6, mec="k",
                    color=f"C{i}", alpha=1.0 if rank == 0 else 0.6, label=METHOD_LABELS.get(m, m) if rank == 0 else None)
    ax.set_xlabel("x (m, map frame)")
    ax.set_ylabel("y (m)")
    ax.set_title(title, fontsize=8)
    ax.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    save_figure(fig, path, dpi=80)
    plt.close(fig)


def load_results(run_dir: str | Path) -> list[EpisodeResult]:
    data = json.loads((Path(run_dir) / "results.json").read_text())
    return [EpisodeResult.from_dict(d) for d in data]

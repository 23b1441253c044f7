"""PInVerify metrics over result records, and the metrics.json / report.md / plots writer.

Records may be ours or the public evaluator's (github.com/Avalon-S/PInVerify,
``scripts/evaluate.py``): field names are the public ones (``nav_fail_unreachable``,
``nav_fail_trap``, ``target_object_category``, ``prediction_flips``), our older names are
accepted, labels and predictions may be ``"Yes"``/``"No"``/``1``/``0``, and navigation
failures missing at record level are counted from the transcript. A missing field is
an error naming it, never a silent zero.

Definitions (stated in every report):
- accuracy: share of episodes whose final prediction (Yes/No) equals the label;
  also per pair type and per target category.
- ASD: mean steps to decision; the start view is step 1, each move costs one step.
- navigation failures: moves that ended unreachable (agent stayed) or in a trap
  view (mask below threshold); rate = failures / moves attempted, and also per step.
- first-view accuracy: the forced decision after the first view alone (over episodes
  whose first view committed to Yes or No, as the public metrics count it).
- prediction flips: changes between consecutive committed (Yes/No) interim predictions.
"""
from __future__ import annotations

import json
from pathlib import Path

from personal.verification.schema import PAIR_TYPES
from personal.runs.output import save_figure, write_file

REQUIRED = ("prediction", "label", "pair_type", "steps", "is_correct")
# public PInVerify names first, then the names our older result files used
ALIASES = {
    "target_object_category": ("target_object_category", "object_category"),
    "nav_fail_unreachable": ("nav_fail_unreachable", "nav_unreachable"),
    "nav_fail_trap": ("nav_fail_trap", "nav_trap"),
    "prediction_flips": ("prediction_flips", "flips"),
}
YES, NO = ("yes", "1", "true"), ("no", "0", "false")


class RecordError(ValueError):
    pass


def as_binary(value, field: str) -> int | None:
    """1 for Yes / 1 / true, 0 for No / 0 / false, None for Unsure; anything else is an error."""
    if isinstance(value, bool) or isinstance(value, int) and value in (0, 1):
        return int(value)
    if isinstance(value, str):
        v = value.strip().lower()
        if v in YES:
            return 1
        if v in NO:
            return 0
        if v == "unsure":
            return None
    raise RecordError(f"field {field!r} must be Yes/No/Unsure or 1/0, got {value!r}")


def _alias(r: dict, name: str):
    for key in ALIASES[name]:
        if key in r:
            return r[key]
    return None


def transcript_nav_failures(transcript: list, where: str) -> tuple[int, int]:
    """(unreachable, trap) moves counted from a transcript, in any of the shapes written:
    the public evaluator's ``info.navigation_failed`` / ``info.trap_view`` (the result of the move
    taken after that step), or ours (``status`` / ``nav_result`` of the step a move arrived at:
    unreachable | trap). A transcript with both is read through ``info`` only, so nothing counts
    twice. A step that says nothing about navigation is an error, never a silent zero."""
    for k, step in enumerate(transcript):
        if not isinstance(step, dict):
            raise RecordError(f"{where}: transcript[{k}] is not an object")
    if transcript and all(isinstance(step.get("info"), dict) for step in transcript):
        return (sum(bool(step["info"].get("navigation_failed")) for step in transcript),
                sum(bool(step["info"].get("trap_view")) for step in transcript))
    unreach = trap = 0
    for k, step in enumerate(transcript):
        outcome = step.get("nav_result", step.get("status"))
        if outcome is None:
            raise RecordError(f"{where}: transcript[{k}] says nothing about navigation "
                              "(no 'info', 'status' or 'nav_result'); cannot derive nav_fail_unreachable / nav_fail_trap")
        unreach += outcome == "unreachable"
        trap += outcome == "trap"
    return unreach, trap


def normalize_record(r: dict, i: int) -> dict:
    """One result record (ours or the public evaluator's) in the public field names.
    A missing field is an error naming it; navigation failures missing at record level
    are counted from the transcript."""
    where = f"record {i}"
    if not isinstance(r, dict):
        raise RecordError(f"{where}: expected a JSON object")
    missing = [k for k in REQUIRED if k not in r]
    if missing:
        raise RecordError(f"{where}: missing field(s) {missing}")
    if r["pair_type"] not in PAIR_TYPES:
        raise RecordError(f"{where}: pair_type {r['pair_type']!r} not in {PAIR_TYPES}")
    try:
        label = as_binary(r["label"], "label")
        pred = as_binary(r["prediction"], "prediction")
        first = as_binary(r["first_view_prediction"], "first_view_prediction") if r.get("first_view_prediction") is not None else None
    except RecordError as exc:
        raise RecordError(f"{where}: {exc}") from None
    if label is None:
        raise RecordError(f"{where}: field 'label' must be 1/0 or Yes/No, got {r['label']!r}")
    if label != int(r["pair_type"] == "positive"):
        raise RecordError(f"{where}: label {r['label']!r} contradicts pair_type {r['pair_type']!r}")
    correct = bool(r["is_correct"])
    if pred is not None and correct != (pred == label):
        raise RecordError(f"{where}: is_correct {r['is_correct']!r} contradicts prediction {r['prediction']!r} and label {r['label']!r}")
    category = _alias(r, "target_object_category")
    if category is None:
        raise RecordError(f"{where}: missing field 'target_object_category' (or 'object_category')")
    steps = r["steps"]
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
        raise RecordError(f"{where}: field 'steps' must be a non-negative integer, got {steps!r}")
    unreach, trap = _alias(r, "nav_fail_unreachable"), _alias(r, "nav_fail_trap")
    if unreach is None or trap is None:
        if not isinstance(r.get("transcript"), list):
            name = "nav_fail_unreachable" if unreach is None else "nav_fail_trap"
            raise RecordError(f"{where}: missing field {name!r} and no transcript to count it from")
        t_unreach, t_trap = transcript_nav_failures(r["transcript"], where)
        unreach = t_unreach if unreach is None else unreach
        trap = t_trap if trap is None else trap
    moves = r.get("moves", max(steps - 1, 0))
    return {
        "pair_type": r["pair_type"], "label": label, "prediction": pred, "is_correct": correct,
        "category": category, "steps": steps, "moves": moves,
        "unreachable": int(unreach), "trap": int(trap), "first_view": first,
        "flips": _alias(r, "prediction_flips"), "error": bool(r.get("error")),
        "transcript": r.get("transcript") or [],
    }


def check_records(records: list[dict]) -> list[dict]:
    return [normalize_record(r, i) for i, r in enumerate(records)]


def _acc(rs: list[dict]) -> float | None:
    return round(sum(bool(r["is_correct"]) for r in rs) / len(rs), 4) if rs else None


def failure_cause(r: dict) -> str:
    """Root cause of a wrong episode from its final tracker state (paper App. L.2 style).

    Wrong No: ``contradiction`` (an attribute judged Contradictory) or ``observation_gap``
    (nothing contradicted, too little matched). Wrong Yes: ``missing_evidence`` (a colour
    attribute never decided) or ``false_confirmation`` (every colour attribute Matched).
    """
    final = (r.get("transcript") or [{}])[-1].get("attributes", [])
    statuses = [a.get("accumulated_status") for a in final]
    if r["label"] == 1:
        return "contradiction" if "Contradictory" in statuses else "observation_gap"
    colour = [a.get("accumulated_status") for a in final if a.get("type") == "color"]
    return "missing_evidence" if "Missing" in colour else "false_confirmation"


def _navigation(rs: list[dict]) -> dict:
    steps = sum(r["steps"] for r in rs)
    moves = sum(r["moves"] for r in rs)
    unreach = sum(r["unreachable"] for r in rs)
    trap = sum(r["trap"] for r in rs)
    fails = unreach + trap
    return {
        "moves": moves, "nav_failures": fails, "nav_fail_unreachable": unreach, "nav_fail_trap": trap,
        "failure_rate_per_move": round(fails / moves, 4) if moves else 0.0,
        "unreachable_rate_per_move": round(unreach / moves, 4) if moves else 0.0,
        "trap_rate_per_move": round(trap / moves, 4) if moves else 0.0,
        "failure_rate_per_step": round(fails / steps, 4) if steps else 0.0,
        "episodes_with_nav_failure": sum(r["unreachable"] + r["trap"] > 0 for r in rs),
    }


def _first_view_accuracy(rs: list[dict]) -> float | None:
    """Over episodes whose first view committed to Yes or No (as the public metrics count)."""
    judged = [r for r in rs if r["first_view"] is not None]
    return round(sum(r["first_view"] == r["label"] for r in judged) / len(judged), 4) if judged else None


def compute_metrics(records: list[dict]) -> dict:
    rs = check_records(records)
    n = len(rs)
    per_type = {}
    for pt in PAIR_TYPES:
        sub = [r for r in rs if r["pair_type"] == pt]
        if sub:
            per_type[pt] = {"n": len(sub), "accuracy": _acc(sub), "asd": round(sum(r["steps"] for r in sub) / len(sub), 4),
                            "first_view_accuracy": _first_view_accuracy(sub), **_navigation(sub)}
    per_cat = {}
    for c in sorted({r["category"] for r in rs}):
        sub = [r for r in rs if r["category"] == c]
        per_cat[c] = {"n": len(sub), "accuracy": _acc(sub),
                      **{pt: _acc([r for r in sub if r["pair_type"] == pt]) for pt in PAIR_TYPES}}
    flips = [r["flips"] for r in rs if r["flips"] is not None]
    return {
        "n": n,
        "accuracy": _acc(rs),
        "per_pair_type": per_type,
        "per_category": per_cat,
        "errors": sum(r["error"] for r in rs),  # broken episodes (counted with prediction No)
        "asd": round(sum(r["steps"] for r in rs) / n, 4) if n else None,
        "multi_step_fraction": round(sum(r["steps"] > 1 for r in rs) / n, 4) if n else None,
        "predicted_yes_rate": round(sum(r["prediction"] == 1 for r in rs) / n, 4) if n else None,
        "unsure_predictions": sum(r["prediction"] is None for r in rs),
        "navigation": _navigation(rs),
        "first_view_accuracy": _first_view_accuracy(rs),
        "failure_causes": {pt: _count(failure_cause(r) for r in rs if r["pair_type"] == pt and not r["is_correct"])
                           for pt in PAIR_TYPES},
        "flips": {"total": sum(flips), "mean_per_episode": round(sum(flips) / len(flips), 4),
                  "episodes_with_flip": round(sum(f > 0 for f in flips) / len(flips), 4)} if flips else None,
    }


def compare_runs(base: list[dict], other: list[dict]) -> dict:
    """Paired comparison on the same episodes: per pair type, episodes fixed / broken by ``other``."""
    by_key = {r.get("episode_key", i): r for i, r in enumerate(base)}
    out = {pt: {"fixed": 0, "broken": 0, "fixed_multi_step": 0} for pt in PAIR_TYPES}
    for i, r in enumerate(other):
        b = by_key.get(r.get("episode_key", i))
        if b is None:
            continue
        if r["is_correct"] and not b["is_correct"]:
            out[r["pair_type"]]["fixed"] += 1
            out[r["pair_type"]]["fixed_multi_step"] += int(r["steps"] > 1)
        elif b["is_correct"] and not r["is_correct"]:
            out[r["pair_type"]]["broken"] += 1
    return out


def _count(items) -> dict[str, int]:
    out: dict[str, int] = {}
    for i in items:
        out[i] = out.get(i, 0) + 1
    return dict(sorted(out.items()))


def _fmt(v) -> str:
    return "–" if v is None else f"{v:.3f}" if isinstance(v, float) else str(v)


DEFINITIONS = __doc__.split("Definitions (stated in every report):", 1)[1].strip()


def write_report(runs: dict[str, dict], out_dir: str | Path, title: str = "PInVerify evaluation",
                 notes: list[str] | None = None) -> dict[str, Path]:
    """``runs``: name -> {"metrics": ..., "config": ..., "nbv": ...}. Writes metrics.json, report.md, plots."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    write_file(out / "metrics.json", json.dumps(runs, indent=1))
    lines = [f"# {title}", ""]
    lines += [f"- {n}" for n in (notes or [])]
    lines += ["", "## Definitions", "", *[f"{ln.strip()}" for ln in DEFINITIONS.splitlines()], "",
              "## Results", "",
              "| run | n | overall | positive | neg_same | neg_diff | ASD | nav fail (unreach / trap) | first-view acc | flips/ep | errors |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, run in runs.items():
        m = run["metrics"]
        pt = {k: v["accuracy"] for k, v in m["per_pair_type"].items()}
        nav = m["navigation"]
        flips = m["flips"]["mean_per_episode"] if m["flips"] else None
        lines.append(
            f"| {name} | {m['n']} | {_fmt(m['accuracy'])} | {_fmt(pt.get('positive'))} | {_fmt(pt.get('neg_same'))} | "
            f"{_fmt(pt.get('neg_diff'))} | {_fmt(m['asd'])} | {nav['nav_failures']}/{nav['moves']} = {_fmt(nav['failure_rate_per_move'])} "
            f"({nav['nav_fail_unreachable']} / {nav['nav_fail_trap']}) | {_fmt(m['first_view_accuracy'])} | {_fmt(flips)} | "
            f"{m.get('errors', 0)} |")
    lines += ["", "### Failure causes (final tracker state of wrong episodes)", "",
              "| run | positive | neg_same | neg_diff |", "|---|---|---|---|"]
    for name, run in runs.items():
        fc = run["metrics"].get("failure_causes", {})
        cell = lambda pt: ", ".join(f"{k} {v}" for k, v in fc.get(pt, {}).items()) or "–"  # noqa: E731
        lines.append(f"| {name} | {cell('positive')} | {cell('neg_same')} | {cell('neg_diff')} |")
    paired = {n: r["paired_vs_sv"] for n, r in runs.items() if r.get("paired_vs_sv")}
    if paired:
        lines += ["", "### Multi-view vs single-view (paired on the same episodes: fixed / broken)", "",
                  "| run | positive | neg_same | neg_diff |", "|---|---|---|---|"]
        for name, cmp_ in paired.items():
            lines.append(f"| {name} | " + " | ".join(f"+{cmp_[pt]['fixed']} / -{cmp_[pt]['broken']}" for pt in PAIR_TYPES) + " |")
    for name, run in runs.items():
        m = run["metrics"]
        lines += ["", f"### Per category — {name}", "", "| category | n | overall | positive | neg_same | neg_diff |", "|---|---|---|---|---|---|"]
        for c, v in sorted(m["per_category"].items()):
            lines.append(f"| {c} | {v['n']} | {_fmt(v['accuracy'])} | {_fmt(v['positive'])} | {_fmt(v['neg_same'])} | {_fmt(v['neg_diff'])} |")
    paths = {"metrics": out / "metrics.json", "report": out / "report.md"}
    paths.update(_plots(runs, out))
    lines += ["", "## Plots", "", "![accuracy per pair type](accuracy_per_pair_type.png)", "",
              "![accuracy vs ASD](accuracy_vs_asd.png)", ""]
    write_file(out / "report.md", "\n".join(lines) + "\n")
    from personal.runs.report_html import write_report_html
    from personal.verification.page import html_page

    paths["html"] = write_report_html(out, html_page)
    return paths


def _plots(runs: dict[str, dict], out: Path) -> dict[str, Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(runs)
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(names) + 2), 4))
    width = 0.8 / len(PAIR_TYPES)
    for k, pt in enumerate(PAIR_TYPES):
        vals = [runs[n]["metrics"]["per_pair_type"].get(pt, {}).get("accuracy") or 0.0 for n in names]
        ax.bar([i + (k - 1) * width for i in range(len(names))], vals, width, label=pt)
    ax.set_xticks(range(len(names)), names, rotation=20, ha="right")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("accuracy")
    ax.legend()
    ax.set_title("Accuracy per pair type")
    fig.tight_layout()
    p1 = out / "accuracy_per_pair_type.png"
    save_figure(fig, p1, dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    groups: dict[str, list[str]] = {}
    for n in names:  # one line per NBV strategy through its stopping variants
        cfg = runs[n].get("config") or {}
        key = "single view" if cfg.get("mode") == "single" else f"NBV {cfg.get('nbv', n)}"
        groups.setdefault(key, []).append(n)
    for i, (key, members) in enumerate(groups.items()):
        pts = sorted((runs[n]["metrics"]["asd"], runs[n]["metrics"]["accuracy"], n) for n in members)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", ms=7, label=key, alpha=0.85)
        for k, (x, y, n) in enumerate(pts):
            ax.annotate(n, (x, y), textcoords="offset points", xytext=(6, -12 + 11 * ((i + k) % 3)), fontsize=7)
    ax.legend(fontsize=8)
    ax.set_xlabel("ASD (average steps to decision)")
    ax.set_ylabel("overall accuracy")
    ax.set_title("Accuracy–ASD trade-off per NBV strategy")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    p2 = out / "accuracy_vs_asd.png"
    save_figure(fig, p2, dpi=110)
    plt.close(fig)
    return {"plot_pair_type": p1, "plot_tradeoff": p2}


def load_records(path: str | Path) -> list[dict]:
    """Records from a ``.jsonl`` file (one per line) or a ``.json`` list (the public ``results.json``)."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json" or text.lstrip().startswith("["):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise RecordError(f"malformed JSON: {exc.msg} at line {exc.lineno}") from None
        if not isinstance(data, list) or not data:
            raise RecordError("expected a non-empty JSON list of result records")
        return data
    records = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise RecordError(f"line {lineno}: malformed JSON: {exc.msg}") from None
    if not records:
        raise RecordError("no result records")
    return records

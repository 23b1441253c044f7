"""PInVerify metrics over result records, and the metrics.json / report.md / plots writer.

Definitions (stated in every report):
- accuracy: share of episodes whose final prediction (Yes/No) equals the label;
  also per pair type and per target category.
- ASD: mean steps to decision; the start view is step 1, each move costs one step.
- navigation failures: moves that ended unreachable (agent stayed) or in a trap
  view (mask below threshold); rate = failures / moves attempted, and also per step.
- first-view accuracy: the forced decision after the first view alone.
- prediction flips: changes between consecutive committed (Yes/No) interim predictions.
"""
from __future__ import annotations

import json
from pathlib import Path

from personal.verification.schema import PAIR_TYPES

REQUIRED = ("prediction", "label", "pair_type", "steps", "is_correct")


class RecordError(ValueError):
    pass


def _as_yes(pred) -> bool:
    if isinstance(pred, str):
        if pred not in ("Yes", "No"):
            raise RecordError(f"prediction must be Yes/No, got {pred!r}")
        return pred == "Yes"
    return bool(pred)


def check_records(records: list[dict]) -> None:
    for i, r in enumerate(records):
        missing = [k for k in REQUIRED if k not in r]
        if missing:
            raise RecordError(f"record {i}: missing field(s) {missing}")
        if r["pair_type"] not in PAIR_TYPES:
            raise RecordError(f"record {i}: pair_type {r['pair_type']!r} not in {PAIR_TYPES}")
        try:
            _as_yes(r["prediction"])
        except RecordError as exc:
            raise RecordError(f"record {i}: {exc}") from None


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


def compute_metrics(records: list[dict]) -> dict:
    check_records(records)
    n = len(records)
    per_type = {pt: {"n": len(rs), "accuracy": _acc(rs)}
                for pt in PAIR_TYPES if (rs := [r for r in records if r["pair_type"] == pt])}
    cats = sorted({r.get("object_category", "?") for r in records})
    per_cat = {}
    for c in cats:
        rs = [r for r in records if r.get("object_category", "?") == c]
        per_cat[c] = {"n": len(rs), "accuracy": _acc(rs),
                      **{pt: _acc([r for r in rs if r["pair_type"] == pt]) for pt in PAIR_TYPES}}
    steps = sum(r["steps"] for r in records)
    moves = sum(r.get("moves", r["steps"] - 1) for r in records)
    unreach = sum(r.get("nav_unreachable", 0) for r in records)
    trap = sum(r.get("nav_trap", 0) for r in records)
    with_first = [r for r in records if "first_view_prediction" in r]
    first_ok = [_as_yes(r["first_view_prediction"] if r["first_view_prediction"] in ("Yes", "No") else "No") == (r["label"] == 1)
                for r in with_first]
    flips = [r.get("flips", 0) for r in records]
    return {
        "n": n,
        "accuracy": _acc(records),
        "per_pair_type": per_type,
        "per_category": per_cat,
        "errors": sum(1 for r in records if r.get("error")),  # broken episodes (counted with prediction No)
        "asd": round(steps / n, 4) if n else None,
        "multi_step_fraction": round(sum(r["steps"] > 1 for r in records) / n, 4) if n else None,
        "predicted_yes_rate": round(sum(_as_yes(r["prediction"]) for r in records) / n, 4) if n else None,
        "navigation": {
            "moves": moves, "failures": unreach + trap, "unreachable": unreach, "trap": trap,
            "failure_rate": round((unreach + trap) / moves, 4) if moves else 0.0,
            "unreachable_rate": round(unreach / moves, 4) if moves else 0.0,
            "trap_rate": round(trap / moves, 4) if moves else 0.0,
            "failure_rate_per_step": round((unreach + trap) / steps, 4) if steps else 0.0,
        },
        "first_view_accuracy": round(sum(first_ok) / len(first_ok), 4) if first_ok else None,
        "failure_causes": {pt: _count(failure_cause(r) for r in records if r["pair_type"] == pt and not r["is_correct"])
                           for pt in PAIR_TYPES},
        "flips": {"total": sum(flips), "mean_per_episode": round(sum(flips) / n, 4) if n else 0.0,
                  "episodes_with_flip": round(sum(f > 0 for f in flips) / n, 4) if n else 0.0},
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
    (out / "metrics.json").write_text(json.dumps(runs, indent=1))
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
        lines.append(
            f"| {name} | {m['n']} | {_fmt(m['accuracy'])} | {_fmt(pt.get('positive'))} | {_fmt(pt.get('neg_same'))} | "
            f"{_fmt(pt.get('neg_diff'))} | {_fmt(m['asd'])} | {nav['failures']}/{nav['moves']} = {_fmt(nav['failure_rate'])} "
            f"({nav['unreachable']} / {nav['trap']}) | {_fmt(m['first_view_accuracy'])} | {_fmt(m['flips']['mean_per_episode'])} | "
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
    (out / "report.md").write_text("\n".join(lines) + "\n")
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
    fig.savefig(p1, dpi=110)
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
    fig.savefig(p2, dpi=110)
    plt.close(fig)
    return {"plot_pair_type": p1, "plot_tradeoff": p2}

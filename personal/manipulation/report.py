"""report.md for a PeRM evaluation: SR/SA tables per preference, tier and suite, plots, frame strips."""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from personal.manipulation import preferences as P  # noqa: E402
from personal.manipulation.scoring import EpisodeResult, aggregate, summarize, tier_of  # noqa: E402
from personal.runs.output import save_figure, write_file


def _label(r: EpisodeResult) -> str:
    return "+".join(r.measured)


def with_without_table(results: list[EpisodeResult]) -> list[dict]:
    """Per preference: SR/SA without the preference in the prompt vs with it (explicit), and contextual."""
    rows = []
    by_pref = defaultdict(lambda: defaultdict(list))
    for r in results:
        if r.suite in ("none", "single", "comprepref"):
            by_pref[r.measured[0]][r.suite].append(r)
    for pref, groups in by_pref.items():
        row = {"preference": pref, "tier": P.get(pref).tier.value, "unit": P.get(pref).unit}
        for suite in ("none", "single", "comprepref"):
            s = summarize(groups.get(suite, []))
            row[suite] = s
            row[f"{suite}_score"] = float(np.mean([r.scores[pref] for r in groups.get(suite, [])])) if groups.get(suite) else float("nan")
        rows.append(row)
    order = list(P.PREFERENCES)
    return sorted(rows, key=lambda r: order.index(r["preference"]))


def _fmt(x: float) -> str:
    return "–" if x != x else f"{x:.2f}"


def plot_sr_sa(rows: list[dict], path: Path) -> None:
    prefs = [r["preference"] for r in rows]
    x = np.arange(len(prefs))
    fig, axes = plt.subplots(1, 2, figsize=(max(8, 1.1 * len(prefs)), 3.6), sharey=True)
    for ax, metric in zip(axes, ("SR", "SA")):
        for i, (suite, label) in enumerate((("none", "no preference"), ("single", "explicit"), ("comprepref", "contextual"))):
            vals = [r[suite][metric] if r[suite]["n"] else np.nan for r in rows]
            ax.bar(x + (i - 1) * 0.27, vals, 0.27, label=label)
        ax.set_xticks(x, prefs, rotation=40, ha="right", fontsize=8)
        ax.set_title(metric)
        ax.set_ylim(0, 1.05)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=8, loc="upper center", ncol=3)
    fig.tight_layout(rect=(0, 0, 1, 0.92))
    save_figure(fig, path, dpi=110)
    plt.close(fig)


def save_strip(frames: list[tuple[int, np.ndarray]], path: Path, title: str, max_frames: int = 10) -> None:
    if not frames:
        return
    idx = np.linspace(0, len(frames) - 1, min(max_frames, len(frames))).astype(int)
    fig, axes = plt.subplots(1, len(idx), figsize=(1.3 * len(idx), 1.6))
    for ax, i in zip(np.atleast_1d(axes), idx):
        step, img = frames[i]
        ax.imshow(img)
        ax.set_title(f"t={step}", fontsize=6)
        ax.axis("off")
    fig.suptitle(title, fontsize=7)
    fig.tight_layout()
    save_figure(fig, path, dpi=100)
    plt.close(fig)


def write_run_record(out_dir: Path, meta: dict, distribution: dict) -> Path:
    """``run.json``: the run's setup, with the policy's training distribution
    (:func:`personal.manipulation.distribution.distribution_note`) beside it."""
    import json

    path = Path(out_dir) / "run.json"
    write_file(path, json.dumps({**meta, "distribution": distribution}, indent=1))
    return path


def write_report(results: list[EpisodeResult], out_dir: Path, strips: dict | None = None, meta: dict | None = None) -> Path:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = with_without_table(results)
    flagged = "OUT OF DISTRIBUTION" in str((meta or {}).get("policy distribution", ""))
    lines = ["# LIBERO-PeRM-style evaluation" + (" — policy OUT OF DISTRIBUTION (see below)" if flagged else ""), ""]
    for k, v in (meta or {}).items():
        lines.append(f"- **{k}**: {v}")
    lines += ["", "SA = mean(success × d), d ∈ {0, ¼, ¾, 1}. `none` = the task prompt alone, scored with the same "
              "preference metric; `explicit` = `Task: … Preference: ….`; `contextual` = ComprePref rewrite.", ""]
    if rows:
        plot_sr_sa(rows, out_dir / "sr_sa_per_preference.png")
        lines += ["## Per preference (with vs without the preference in the prompt)", "",
                  "| preference | tier | n | SR none | SR explicit | SR contextual | SA none | SA explicit | SA contextual | "
                  "mean score none → explicit |", "|---|---|---|---|---|---|---|---|---|---|"]
        for r in rows:
            lines.append(
                f"| {r['preference']} | {r['tier']} | {r['single']['n']} | {_fmt(r['none']['SR'])} | {_fmt(r['single']['SR'])} | "
                f"{_fmt(r['comprepref']['SR'])} | {_fmt(r['none']['SA'])} | {_fmt(r['single']['SA'])} | "
                f"{_fmt(r['comprepref']['SA'])} | {_fmt(r['none_score'])} → {_fmt(r['single_score'])} {r['unit']} |")
        lines += ["", "![SR and SA per preference](sr_sa_per_preference.png)", ""]
    lines += ["## Per suite and tier", "", "| suite | tier | n | SR | SA |", "|---|---|---|---|---|"]
    for (suite, tier), s in aggregate(results, key=lambda r: (r.suite, tier_of(r))).items():
        lines.append(f"| {suite} | {tier} | {s['n']} | {_fmt(s['SR'])} | {_fmt(s['SA'])} |")
    lines += ["", "| suite | n | SR | SA |", "|---|---|---|---|"]
    for suite, s in aggregate(results, key=lambda r: r.suite).items():
        lines.append(f"| {suite} | {s['n']} | {_fmt(s['SR'])} | {_fmt(s['SA'])} |")
    multi = [r for r in results if r.suite in ("compose", "conflict")]
    if multi:
        lines += ["", "## Compose and conflict episodes", "", "| task | success | d per preference | SA |", "|---|---|---|---|"]
        for r in multi:
            lines.append(f"| {r.task_id} | {int(r.success)} | {', '.join(f'{k}={v:g}' for k, v in r.d.items())} | {r.sa:.2f} |")
    if strips:
        lines += ["", "## Frame strips (agentview, sample episodes)", ""]
        for task_id, frames in strips.items():
            name = "strip_" + task_id.replace("/", "_").replace("[", "").replace("]", "") + ".png"
            save_strip(frames, out_dir / name, task_id)
            lines.append(f"![{task_id}]({name})")
    path = out_dir / "report.md"
    write_file(path, "\n".join(lines) + "\n")
    from personal.runs.report_html import write_report_html
    from personal.manipulation.page import html_page

    write_report_html(out_dir, html_page)
    return path

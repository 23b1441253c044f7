"""PAN's report.html: the headline table beside the seed paper's Table IV and the trajectories on the
map."""
from __future__ import annotations

from pathlib import Path

from personal.navigation.eval.pan import COLUMNS, PAPER_TABLE_IV
from personal.runs.report_html import esc, img, num, read_json, table


def _row(source: str, method: str, per: dict) -> list:
    return [source, method] + [num(per[c][k], 2 if k == "dtg" else 1) for c in COLUMNS for k in ("sr", "spl", "dtg")]


def html_page(run: Path) -> tuple[str, str, str]:
    summary = read_json(run / "summary.json")
    results = read_json(run / "results.json")
    head = ["source", "method"] + [f"{c} {k}" for c in COLUMNS for k in ("SR", "SPL", "DTG")]
    # the headline leads with what runs without ground truth; rows that read it say ORACLE
    oracles = {r["method"] for r in results if r.get("is_oracle")}
    methods = summary["methods"].items()
    rows = [_row("ours", m, per) for m, per in methods if m not in oracles]
    rows += [_row("ORACLE (upper bound)", m, per) for m, per in methods if m in oracles]
    bound = (summary.get("upper_bound") or {}).get("methods") or {}
    rows += [_row("ORACLE encoder (upper bound)", m, per) for m, per in bound.items()]
    n_ours = len(rows)
    rows += [["paper (HM3D)", m] + [f"{v:.2f}" for trip in vals for v in trip] for m, vals in PAPER_TABLE_IV.items()]
    headline = ("<p>SR and SPL in %, DTG in m. ORACLE rows read simulator ground truth (the true map and target, "
                "or ground-truth captions as the encoder): upper bounds, not methods. Paper: seed Table IV (HM3D, "
                "real perception) for reference — different scenes and perception.</p>"
                + table(head, rows, lambda i: "paper" if i >= n_ours else ""))
    by_ep: dict[str, list[dict]] = {}
    for r in results:
        by_ep.setdefault(r["episode_id"], []).append(r)
    cards = []
    for png in sorted((run / "trajectories").glob("*.png")):
        rs = by_ep.get(png.stem, [])
        items = "".join(f'<li>{"<span class=ok>✓</span>" if r["success"] else "<span class=bad>✗</span>"} <b>{esc(r["method"])}</b> '
                        f'{r["steps"]} steps, path {r["path_length"]:.1f} m, DTG {r["dtg"]:.2f} m</li>' for r in rs)
        cards.append(f'<div class="card">{img(png, png.stem)}<div class="muted">{esc(png.stem)}</div><ul>{items}</ul></div>')
    gallery = f'<div class="gallery wide">{"".join(cards)}</div>' if cards else "<p>No trajectory plots in this run.</p>"
    return "PAN: trajectories on the map", headline, gallery

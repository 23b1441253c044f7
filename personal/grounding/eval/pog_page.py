"""POG's report.html: the headline table beside the seed paper's Table V and the per-episode map
gallery."""
from __future__ import annotations

from pathlib import Path

from personal.grounding.eval.pog import COLUMNS, METHOD_LABELS, PAPER_SR
from personal.runs.report_html import esc, img, num, read_json, table


def html_page(run: Path) -> tuple[str, str, str]:
    summary = read_json(run / "summary.json")
    rows = []
    for m, per in summary["methods"].items():
        paper = PAPER_SR.get(m)
        rows.append([METHOD_LABELS.get(m, m)] + [num(per[c]["sr_top1"]) for c in COLUMNS]
                    + ([num(v) for v in paper] if paper else ["–"] * 4))
    head = ["Method"] + [f"ours {c}" for c in COLUMNS] + [f"paper {c}" for c in COLUMNS]
    meta = summary.get("meta", {})
    note = (f"<p>SR@top-1 (%), success within {summary.get('success_radius_m', 1.0)} m. Ours: encoder "
            f"<b>{esc(meta.get('encoder', '?'))}</b>{' (ORACLE: reads simulator ground truth, an upper bound)' if meta.get('encoder_is_oracle') else ''}, "
            "synthetic households; paper: seed Table V (HM3D, BLIP-2 maps) — different scenes and perception.</p>")
    headline = note + table(head, rows)
    results = read_json(run / "results.json")
    by_ep: dict[str, list[dict]] = {}
    for r in results:
        by_ep.setdefault(r["episode_id"], []).append(r)
    cards = []
    for png in sorted((run / "maps").glob("*.png")):
        rs = by_ep.get(png.stem, [])
        if not rs:
            continue
        first = rs[0]
        phrases = next((r["info"].get("owner_phrases") for r in rs if r.get("info", {}).get("owner_phrases")), None)
        lines = []
        for r in rs:
            if r.get("failure"):
                lines.append(f"<li>{esc(r['method'])}: failed ({esc(r['failure'].get('code'))})</li>")
                continue
            d = r.get("distances_m") or []
            mark = '<span class="ok">✓</span>' if r.get("success_top1") else '<span class="bad">✗</span>'
            preds = ", ".join(f"({p[0]:.1f}, {p[1]:.1f})" for p in r.get("predictions", [])[:3])
            lines.append(f"<li>{mark} <b>{esc(r['method'])}</b> {preds}"
                         + (f" — top-1 {d[0]:.1f} m" if d else "") + "</li>")
        cards.append(
            f'<div class="card">{img(png, png.stem)}<div><b>{esc(first["query"])}</b> '
            f'<span class="muted">[{esc(first["split"])}] {esc(png.stem)}, owner {esc(first.get("owner") or "?")}, '
            f'targets {esc(", ".join(first.get("target_object_ids", [])))}</span></div>'
            + (f'<div class="muted">owner\'s phrases: {esc("; ".join(phrases))}</div>' if phrases else "")
            + f'<ul>{"".join(lines)}</ul></div>')
    gallery = ("<p>Background: the query-similarity heat map cos(map cell, query) (or the cell confidence where the run had no text encoder: the colour bar says which); red boxes: targets; cyan: other "
               "objects of the category; markers: each method's three ranked predictions.</p>"
               f'<div class="gallery">{"".join(cards)}</div>') if cards else "<p>No sample maps in this run.</p>"
    return "POG: per-episode gallery", headline, gallery

"""PInVerify's report.html: accuracy per pair type beside the seed's best training-free agent, and
the chosen views with the verdict after each."""
from __future__ import annotations

from pathlib import Path

from personal.runs.report_html import esc, img, num, read_json, read_jsonl, table


THUMB_PX = 360  # views are shown as thumbnails of this width
PAPER_AIV_ACCURACY = 0.850  # seed: best training-free agent, overall accuracy


def html_page(run: Path) -> tuple[str, str, str]:
    runs = read_json(run / "metrics.json")
    rows = []
    for name, r in runs.items():
        m = r["metrics"]
        per = m.get("per_pair_type", {})
        rows.append([name, num(m.get("accuracy"), 3)] + [num(per.get(k, {}).get("accuracy"), 3) for k in ("positive", "neg_same", "neg_diff")]
                    + [num(m.get("asd"), 2), num(PAPER_AIV_ACCURACY, 3)])
    headline = table(["run", "accuracy", "positive", "neg_same", "neg_diff", "ASD", "paper accuracy (best training-free)"], rows)
    cards = []
    for path in sorted(run.glob("results_*.jsonl")):
        for rec in read_jsonl(path)[:8]:
            views = []
            for step in rec.get("transcript", []):
                rgb = (step.get("observation") or {}).get("rgb_path")
                decision = step.get("decision") or (step.get("action") or {}).get("decision") or "?"
                picture, why = "", "no image"
                if rgb and Path(rgb).is_file():
                    try:
                        picture = img(Path(rgb), f"{rec['episode_id']} {step.get('tag')}", THUMB_PX)
                    except Exception as exc:  # an unreadable capture is shown as such, not a broken page
                        why = f"unreadable image {Path(rgb).name}: {type(exc).__name__}"
                views.append(f'<figure>{picture}<figcaption>step {step.get("step", "?")} '
                             f'{esc(step.get("tag") or step.get("status") or "")}: <b>{esc(decision)}</b>'
                             + ("" if picture else f" ({esc(why)})")
                             + (f' <span class="bad">{esc(step["error"])}</span>' if step.get("error") else "") + "</figcaption></figure>")
            mark = '<span class="ok">correct</span>' if rec.get("is_correct") else '<span class="bad">wrong</span>'
            cards.append(f'<div class="card"><div><b>{esc(rec["episode_id"])}</b> {esc(rec.get("pair_type"))} '
                         f'label {rec.get("label")} → {esc(rec.get("prediction"))} {mark}</div>'
                         f'<div class="muted">{esc(" / ".join(rec.get("query_descriptions", [])[:1]))}</div>'
                         f'<div class="views">{"".join(views)}</div></div>')
    gallery = f'<div class="gallery">{"".join(cards)}</div>' if cards else "<p>No episode records in this run.</p>"
    return "AIV: chosen views and verdicts", headline, gallery

"""PeRM's report.html: the report's first table and the rollout frame strips."""
from __future__ import annotations

from pathlib import Path

from personal.runs.report_html import esc, first_table, img, markdown


def html_page(run: Path) -> tuple[str, str, str]:
    md = (run / "report.md").read_text()
    headline = ("<p>Ours: the first table of the report below. The seed paper's LIBERO-PeRM numbers are for its own "
                "VLA policies on LIBERO scenes; no like-for-like figure exists for this suite, so none is shown.</p>"
                + markdown(first_table(md), run))
    cards = [f'<div class="card">{img(p, p.stem)}<div class="muted">{esc(p.stem.removeprefix("strip_"))}</div></div>'
             for p in sorted(run.glob("strip_*.png"))]
    return "PeRM: rollout frames", headline, (f'<div class="gallery">{"".join(cards)}</div>' if cards else "<p>No frame strips in this run.</p>")

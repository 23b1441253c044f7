"""PersonalHomeBench's report.html: the report's first table (no paper figure exists to show beside
it)."""
from __future__ import annotations

from pathlib import Path

from personal.runs.report_html import first_table, markdown


def html_page(run: Path) -> tuple[str, str, str]:
    md = (run / "report.md").read_text()
    headline = ("<p>Ours: the first table of the report below. PersonalHomeBench has no public code or agreed "
                "baseline scores for this household generator; no paper figure is shown beside ours.</p>"
                + markdown(first_table(md), run))
    return "", headline, ""

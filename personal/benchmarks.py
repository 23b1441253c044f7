"""Every benchmark by name, for the applications (``personal launch``, ``personal report``, the
evaluator nodes): how each sharded evaluation graph plans and merges (``KINDS``, personal.runs.shard)
and which page builds each report.html (``PAGES``, personal.runs.report_html). It sits on the top
floor of the library so that the run machinery below never names a benchmark (docs/architecture.md)."""
from __future__ import annotations

from pathlib import Path

from personal.grounding.eval.pog_page import html_page as pog_page
from personal.grounding.eval.pog_shard import PogKind
from personal.manipulation.page import html_page as perm_page
from personal.navigation.eval.pan_page import html_page as pan_page
from personal.navigation.eval.pan_shard import PanKind
from personal.runs import report_html
from personal.smarthome.page import html_page as home_page
from personal.smarthome.shard import HomeKind
from personal.verification.page import html_page as aiv_page
from personal.verification.shard import AivKind

KINDS = {k.graph: k for k in (PogKind(), PanKind(), AivKind(), HomeKind())}
PAGES = {"pog": pog_page, "pan": pan_page, "aiv": aiv_page, "perm": perm_page, "home": home_page}


def page_for(kind: str) -> report_html.Page:
    if kind not in PAGES:
        raise ValueError(f"unknown report kind {kind!r} (known: {', '.join(PAGES)})")
    return PAGES[kind]


def write_report_html(run_dir: str | Path, kind: str) -> Path:
    """``<run_dir>/report.html`` for a run folder of benchmark ``kind`` (pog, pan, aiv, perm, home)."""
    return report_html.write_report_html(run_dir, page_for(kind))


def write_html(run_dir: str | Path, kind: str, logger=None) -> Path | None:
    """``write_report_html`` at the end of an evaluator's run: a failure is logged, not raised."""
    return report_html.write_html(run_dir, page_for(kind), logger)

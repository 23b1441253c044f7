"""A report page never shows the machine's absolute paths (it is shared and shown in the docs)."""
import os

from personal.benchmarks import write_report_html
from personal.runs.report_html import shown_path


def test_report_page_shows_the_run_folder_without_absolute_paths(tmp_path, monkeypatch):
    run = tmp_path / "runs" / "pog_eval" / "20261201-101500"
    run.mkdir(parents=True)
    (run / "report.md").write_text("# POG evaluation\n\nNo episodes.\n")
    monkeypatch.chdir(tmp_path)
    assert shown_path(run) == os.path.join("runs", "pog_eval", "20261201-101500")
    page = write_report_html(run, "home").read_text()
    assert "runs/pog_eval/20261201-101500" in page and str(tmp_path) not in page
    monkeypatch.chdir("/")
    assert shown_path(run) == os.path.join("pog_eval", "20261201-101500")
    assert str(tmp_path) not in write_report_html(run, "home").read_text()

"""Open a report.html in headless Chromium (Debian's ``chromium``) as a reader would.

``check_report(run_dir, expect)`` asserts the page is self-contained (no http(s) resource), that
it loads in the browser with every image decoded (the page marks ``data-images="ok:N"`` on load)
and that each expected text (table headers, section titles) is in the rendered DOM; the
screenshot is kept under ``$PERSONAL_TEST_ARTIFACTS`` (default ``test-artifacts/``). Without
Chromium the check is skipped with the reason (scripts/bootstrap.sh installs it).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
         "--disable-extensions", "--hide-scrollbars", "--virtual-time-budget=8000"]


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def artifacts_dir() -> Path:
    out = Path(os.environ.get("PERSONAL_TEST_ARTIFACTS", ROOT / "test-artifacts"))
    out.mkdir(parents=True, exist_ok=True)
    return out


def check_report(run_dir: Path, expect: list[str], name: str, min_images: int = 1) -> Path:
    page = Path(run_dir) / "report.html"
    assert page.is_file(), f"{page} not written"
    text = page.read_text()
    remote = re.findall(r'(?:src|href)="(https?://[^"]+)"', text)
    assert not remote, f"{page} loads from the network: {remote[:3]}"
    browser = chromium()
    if browser is None:
        pytest.skip("chromium not installed (scripts/bootstrap.sh installs Debian's chromium)")
    url = page.resolve().as_uri()
    dom = subprocess.run([browser, *FLAGS, "--dump-dom", url], capture_output=True, text=True, timeout=120).stdout
    marks = re.findall(r'data-images="([^"]*)"', dom)
    assert marks, f"{page}: the page did not finish loading in Chromium"
    assert marks[0].startswith("ok:"), f"{page}: images that did not load: {marks[0]}"
    assert int(marks[0][3:]) >= min_images, f"{page}: {marks[0][3:]} images, expected at least {min_images}"
    for item in expect:
        assert item in dom, f"{page}: {item!r} not in the rendered page"
    shot = artifacts_dir() / f"{name}.png"
    subprocess.run([browser, *FLAGS, "--window-size=1280,2400", f"--screenshot={shot}", url],
                   capture_output=True, text=True, timeout=120)
    assert shot.is_file() and shot.stat().st_size > 10_000, f"no screenshot of {page}"
    return shot

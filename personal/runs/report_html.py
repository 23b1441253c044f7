"""``report.html``: an evaluation's run folder as one self-contained page (no network needed).

Every ``*_eval`` writes it next to ``report.md``: a headline table with the seed paper's numbers
beside ours (where the paper has comparable ones), the report's own tables and plots (images
inlined as data URIs), and a gallery per benchmark — POG: per-episode top-down maps with the
query similarity, targets and the ranked predictions, beside the owner's phrases; PAN: the
trajectories on the map; AIV: the chosen views with the verdict after each; PeRM: rollout frame
strips. ``write_report_html(run_dir, page)`` with the benchmark's page (``html_page`` in its
``*page.py`` module); ``personal report RUN_DIR --kind KIND`` rebuilds one (personal.benchmarks).
"""
from __future__ import annotations

import base64
import html
import io
import json
import math
import re
from pathlib import Path
from typing import Callable, Iterable, Sequence

from personal.runs.output import write_file

CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0 auto;max-width:1180px;padding:16px 24px;color:#1d1f21}
h1{font-size:24px;margin:8px 0 4px}h2{font-size:19px;border-bottom:1px solid #ddd;padding-bottom:3px;margin-top:28px}h3{font-size:15px}
table{border-collapse:collapse;margin:8px 0 14px;font-variant-numeric:tabular-nums}th,td{border:1px solid #d0d0d0;padding:3px 8px;text-align:left}
th{background:#f3f4f6}td.num{text-align:right}tr.paper td{color:#555;background:#fafafa}
img{max-width:100%}blockquote{border-left:4px solid #e0a800;background:#fff8e1;margin:8px 0;padding:6px 12px}
code{background:#f3f4f6;padding:0 3px;border-radius:3px}.gallery{display:grid;grid-template-columns:repeat(auto-fill,minmax(340px,1fr));gap:14px}.gallery.wide{grid-template-columns:repeat(auto-fill,minmax(540px,1fr))}
.card{border:1px solid #ddd;border-radius:6px;padding:8px;background:#fff}.card img{display:block;margin:0 auto 6px}
.ok{color:#1a7f37;font-weight:600}.bad{color:#c62828;font-weight:600}.views{display:flex;gap:6px;flex-wrap:wrap}
.views figure{margin:0;width:170px}.views figcaption{font-size:12px}.muted{color:#666;font-size:12px}
"""
# Marks the page once every image decoded (read by the headless-browser test and by people).
CHECK_JS = """
window.addEventListener('load', function () {
  var bad = Array.prototype.filter.call(document.images, function (i) { return !(i.complete && i.naturalWidth > 0); });
  document.body.setAttribute('data-images', bad.length ? 'missing:' + bad.map(function (i) { return i.alt; }).join('|')
                                                       : 'ok:' + document.images.length);
});
"""


class ReportError(RuntimeError):
    """A run folder the page cannot be built from (the message names the file)."""


# -- building blocks ----------------------------------------------------------------------------


def data_uri(path: Path, max_width: int | None = None) -> str:
    """The image as a data: URI (PNG/JPEG as they are; ``max_width`` re-encodes a smaller PNG)."""
    if not path.is_file():
        raise ReportError(f"{path}: image missing")
    data, mime = path.read_bytes(), "image/jpeg" if path.suffix.lower() in (".jpg", ".jpeg") else "image/png"
    if max_width:
        from PIL import Image

        img = Image.open(io.BytesIO(data))
        if img.width > max_width:
            img = img.convert("RGB").resize((max_width, round(img.height * max_width / img.width)))
        buf = io.BytesIO()
        img.save(buf, format="PNG", optimize=True)
        data, mime = buf.getvalue(), "image/png"
    return f"data:{mime};base64,{base64.b64encode(data).decode()}"


def img(path: Path, alt: str, max_width: int | None = None) -> str:
    return f'<img src="{data_uri(path, max_width)}" alt="{html.escape(alt)}">'


def esc(v) -> str:
    return html.escape(str(v))


def num(v, digits: int = 1) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    return f"{v:.{digits}f}" if isinstance(v, (int, float)) and not isinstance(v, bool) else str(v)


def table(head: Sequence[str], rows: Iterable[Sequence], row_class: Callable[[int], str] | None = None) -> str:
    out = ["<table><thead><tr>" + "".join(f"<th>{esc(h)}</th>" for h in head) + "</tr></thead><tbody>"]
    for i, row in enumerate(rows):
        cls = f' class="{row_class(i)}"' if row_class and row_class(i) else ""
        cells = "".join(f'<td class="num">{esc(c)}</td>' if re.fullmatch(r"[-+–]?[\d.]+%?", str(c)) else f"<td>{esc(c)}</td>" for c in row)
        out.append(f"<tr{cls}>{cells}</tr>")
    return "\n".join(out) + "</tbody></table>"


def markdown(text: str, base: Path) -> str:
    """report.md -> HTML (GFM tables); local images inlined, so the page stands alone."""
    from markdown_it import MarkdownIt

    body = MarkdownIt("commonmark", {"html": False}).enable("table").render(text)

    def inline(m: re.Match) -> str:
        src = html.unescape(m.group(2))
        if src.startswith(("data:", "http:", "https:")):
            return m.group(0)
        return f'{m.group(1)}{data_uri(base / src)}{m.group(3)}'

    return re.sub(r'(<img src=")([^"]+)(")', inline, body)


def page(title: str, sections: Sequence[str]) -> str:
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{esc(title)}</title><style>{CSS}</style><script>{CHECK_JS}</script></head>\n<body>\n"
            + "\n".join(sections) + "\n</body></html>\n")


def read_json(path: Path):
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise ReportError(f"{path}: missing") from None
    except json.JSONDecodeError as exc:
        raise ReportError(f"{path}: not JSON ({exc})") from None


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def first_table(md: str) -> str:
    m = re.search(r"((?:^\|.*\|\s*$\n?)+)", md, re.M)
    return m.group(1) if m else ""


def shown_path(run: Path) -> str:
    """The run folder as the page shows it: relative to the working directory when inside it
    (``runs/pog_eval/20261201-101500``), else its last two parts — a page that is shared or shown
    in the docs must not carry the machine's absolute paths."""
    resolved, cwd = run.resolve(), Path.cwd().resolve()
    if cwd != Path(cwd.anchor) and cwd in resolved.parents:
        return str(resolved.relative_to(cwd))
    return str(Path(*resolved.parts[-2:]))


# A benchmark's page: run folder -> (gallery title, headline HTML, gallery HTML); each benchmark
# writes its own beside its report (e.g. personal.grounding.eval.pog.html_page).
Page = Callable[[Path], "tuple[str, str, str]"]


def write_report_html(run_dir: str | Path, page_of: Page) -> Path:
    """Build ``<run_dir>/report.html`` from the run folder (report.md, summary/metrics, images)."""
    run = Path(run_dir)
    md_path = run / "report.md"
    if not md_path.is_file():
        raise ReportError(f"{md_path}: missing")
    md = md_path.read_text()
    title = next((line[2:].strip() for line in md.splitlines() if line.startswith("# ")), "report")
    gallery_title, headline, gallery = page_of(run)
    body = re.sub(r"^\s*<h1>.*?</h1>", "", markdown(md, run), count=1, flags=re.S)
    sections = [f"<h1>{esc(title)}</h1>", f'<p class="muted">{esc(shown_path(run))}</p>', "<h2>Headline</h2>", headline]
    if gallery:
        sections += [f"<h2>{esc(gallery_title)}</h2>", gallery]
    sections += ["<h2>Full report</h2>", body]
    out = run / "report.html"
    write_file(out, page(title, sections))
    return out


def write_html(run_dir: str | Path, page_of: Page, logger=None) -> Path | None:
    """``write_report_html`` for an evaluator at the end of its run: a failure is logged, not raised
    (report.md and the results are already written)."""
    try:
        path = write_report_html(run_dir, page_of)
    except Exception as exc:
        if logger is None:
            raise
        logger.error(f"report.html not written: {type(exc).__name__}: {exc}")
        return None
    if logger is not None:
        logger.info(f"report.html: {path.resolve()}")
    return path

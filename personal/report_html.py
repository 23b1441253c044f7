"""``report.html``: an evaluation's run folder as one self-contained page (no network needed).

Every ``*_eval`` writes it next to ``report.md``: a headline table with the seed paper's numbers
beside ours (where the paper has comparable ones), the report's own tables and plots (images
inlined as data URIs), and a gallery per benchmark — POG: per-episode top-down maps with the
query similarity, targets and the ranked predictions, beside the owner's phrases; PAN: the
trajectories on the map; AIV: the chosen views with the verdict after each; PeRM: rollout frame
strips. ``write_report_html(run_dir, kind)``; ``personal report html RUN_DIR`` rebuilds one.
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

KINDS = ("pog", "pan", "aiv", "perm", "home")
THUMB_PX = 360  # AIV views are shown as thumbnails of this width
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


def _json(path: Path):
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise ReportError(f"{path}: missing") from None
    except json.JSONDecodeError as exc:
        raise ReportError(f"{path}: not JSON ({exc})") from None


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# -- per benchmark ------------------------------------------------------------------------------


def _pog(run: Path) -> tuple[str, str, str]:
    from personal.eval.pog import COLUMNS, METHOD_LABELS, PAPER_SR

    summary = _json(run / "summary.json")
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
    results = _json(run / "results.json")
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


def _pan(run: Path) -> tuple[str, str, str]:
    from personal.eval.pan import COLUMNS, PAPER_TABLE_IV

    summary = _json(run / "summary.json")
    head = ["source", "method"] + [f"{c} {k}" for c in COLUMNS for k in ("SR", "SPL", "DTG")]
    rows = [["ours", m] + [num(per[c][k], 2 if k == "dtg" else 1) for c in COLUMNS for k in ("sr", "spl", "dtg")]
            for m, per in summary["methods"].items()]
    n_ours = len(rows)
    rows += [["paper (HM3D)", m] + [f"{v:.2f}" for trip in vals for v in trip] for m, vals in PAPER_TABLE_IV.items()]
    headline = ("<p>SR and SPL in %, DTG in m. Paper: seed Table IV (HM3D, real perception) for reference — "
                "different scenes and perception.</p>" + table(head, rows, lambda i: "paper" if i >= n_ours else ""))
    results = _json(run / "results.json")
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


PAPER_AIV_ACCURACY = 0.850  # seed: best training-free agent, overall accuracy


def _aiv(run: Path) -> tuple[str, str, str]:
    runs = _json(run / "metrics.json")
    rows = []
    for name, r in runs.items():
        m = r["metrics"]
        per = m.get("per_pair_type", {})
        rows.append([name, num(m.get("accuracy"), 3)] + [num(per.get(k, {}).get("accuracy"), 3) for k in ("positive", "neg_same", "neg_diff")]
                    + [num(m.get("asd"), 2), num(PAPER_AIV_ACCURACY, 3)])
    headline = table(["run", "accuracy", "positive", "neg_same", "neg_diff", "ASD", "paper accuracy (best training-free)"], rows)
    cards = []
    for path in sorted(run.glob("results_*.jsonl")):
        for rec in _jsonl(path)[:8]:
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


def _first_table(md: str) -> str:
    m = re.search(r"((?:^\|.*\|\s*$\n?)+)", md, re.M)
    return m.group(1) if m else ""


def _perm(run: Path) -> tuple[str, str, str]:
    md = (run / "report.md").read_text()
    headline = ("<p>Ours: the first table of the report below. The seed paper's LIBERO-PeRM numbers are for its own "
                "VLA policies on LIBERO scenes; no like-for-like figure exists for this suite, so none is shown.</p>"
                + markdown(_first_table(md), run))
    cards = [f'<div class="card">{img(p, p.stem)}<div class="muted">{esc(p.stem.removeprefix("strip_"))}</div></div>'
             for p in sorted(run.glob("strip_*.png"))]
    return "PeRM: rollout frames", headline, (f'<div class="gallery">{"".join(cards)}</div>' if cards else "<p>No frame strips in this run.</p>")


def _home(run: Path) -> tuple[str, str, str]:
    md = (run / "report.md").read_text()
    headline = ("<p>Ours: the first table of the report below. PersonalHomeBench has no public code or agreed "
                "baseline scores for this household generator; no paper figure is shown beside ours.</p>"
                + markdown(_first_table(md), run))
    return "", headline, ""


BUILDERS = {"pog": _pog, "pan": _pan, "aiv": _aiv, "perm": _perm, "home": _home}


def shown_path(run: Path) -> str:
    """The run folder as the page shows it: relative to the working directory when inside it
    (``runs/pog_eval/20261201-101500``), else its last two parts — a page that is shared or shown
    in the docs must not carry the machine's absolute paths."""
    resolved, cwd = run.resolve(), Path.cwd().resolve()
    if cwd != Path(cwd.anchor) and cwd in resolved.parents:
        return str(resolved.relative_to(cwd))
    return str(Path(*resolved.parts[-2:]))


def write_report_html(run_dir: str | Path, kind: str) -> Path:
    """Build ``<run_dir>/report.html`` from the run folder (report.md, summary/metrics, images)."""
    if kind not in BUILDERS:
        raise ValueError(f"unknown report kind {kind!r} (known: {', '.join(KINDS)})")
    run = Path(run_dir)
    md_path = run / "report.md"
    if not md_path.is_file():
        raise ReportError(f"{md_path}: missing")
    md = md_path.read_text()
    title = next((line[2:].strip() for line in md.splitlines() if line.startswith("# ")), f"{kind} report")
    gallery_title, headline, gallery = BUILDERS[kind](run)
    body = re.sub(r"^\s*<h1>.*?</h1>", "", markdown(md, run), count=1, flags=re.S)
    sections = [f"<h1>{esc(title)}</h1>", f'<p class="muted">{esc(shown_path(run))}</p>', "<h2>Headline</h2>", headline]
    if gallery:
        sections += [f"<h2>{esc(gallery_title)}</h2>", gallery]
    sections += ["<h2>Full report</h2>", body]
    out = run / "report.html"
    out.write_text(page(title, sections))
    return out


def write_html(run_dir: str | Path, kind: str, logger=None) -> Path | None:
    """``write_report_html`` for an evaluator at the end of its run: a failure is logged, not raised
    (report.md and the results are already written)."""
    try:
        path = write_report_html(run_dir, kind)
    except Exception as exc:
        if logger is None:
            raise
        logger.error(f"report.html not written: {type(exc).__name__}: {exc}")
        return None
    if logger is not None:
        logger.info(f"report.html: {path.resolve()}")
    return path

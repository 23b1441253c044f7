"""PAN's report.html headline leads with what runs without ground truth: rows that read it say ORACLE
(the ground-truth explorer, and the ORACLE-encoder upper bound when the run has one)."""
from __future__ import annotations

import json
import re

from personal.navigation.eval.pan import COLUMNS
from personal.navigation.eval.pan_page import html_page


def _per(sr: float) -> dict:
    return {c: {"sr": sr, "spl": sr / 2, "dtg": 1.0, "n": 3} for c in COLUMNS}


def test_the_headline_labels_every_oracle_row_and_the_learned_rows_ours(tmp_path):
    summary = {"methods": {"value-map-rpg-owner": _per(55.6), "oracle": _per(100.0)},
               "upper_bound": {"label": "ORACLE encoder", "methods": {"value-map-rpg-owner": _per(77.7)}}}
    results = [{"episode_id": "e0", "method": "value-map-rpg-owner", "is_oracle": False, "success": True, "steps": 9,
                "path_length": 3.0, "dtg": 0.0},
               {"episode_id": "e0", "method": "oracle", "is_oracle": True, "success": True, "steps": 5,
                "path_length": 2.0, "dtg": 0.0}]
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    (tmp_path / "results.json").write_text(json.dumps(results))
    _, headline, _ = html_page(tmp_path)
    rows = [re.sub(r"<[^>]+>", "|", r) for r in re.findall(r"<tr.*?</tr>", headline, re.S)]
    cells = [[c for c in r.split("|") if c.strip()] for r in rows]
    sources = {(c[0], c[1], c[2]) for c in cells if len(c) > 2 and c[0] != "source"}
    assert ("ours", "value-map-rpg-owner", "55.6") in sources
    assert ("ORACLE (upper bound)", "oracle", "100.0") in sources
    assert ("ORACLE encoder (upper bound)", "value-map-rpg-owner", "77.7") in sources
    assert not any(s == "ours" and m == "oracle" for s, m, _ in sources)
    first = [c[0] for c in cells if c and c[0] != "source"][0]
    assert first == "ours"  # the learned rows come first

"""Ownership extraction: precision / recall of (person, object) relations on the development set,
per writing style, and the time per summary.

    .venv/bin/python bench/bench_extract.py [--dev test/data/ownership_dev.json] [--personal DIR]

``--personal DIR``: also the query-owner recall on PersONAL episode files
(``DIR/{easy,medium,hard}/content/*.json.gz``, e.g. the public release's ``data/split``), for the
builtin rules and for the episodes' own ``extracted_summary`` (the ceiling of that proxy measure).
"""
from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from personal.grounding.extract import BuiltinExtractor, EpisodeExtractor  # noqa: E402
from personal.grounding.extract_eval import DEV_SET, load_items, personal_query_recall, score  # noqa: E402


def _f(x) -> str:
    return "-" if x is None else str(x)  # no phrase at all: precision undefined


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dev", default=str(DEV_SET))
    ap.add_argument("--personal", default="", help="folder of PersONAL {split}/content/*.json.gz files")
    args = ap.parse_args()
    items = load_items(args.dev)
    BuiltinExtractor().extract("Tom owns the mug.")  # load the tagger before timing
    m = score(items, BuiltinExtractor().extract)
    rules = score(items, BuiltinExtractor(recall_layer=False).extract)
    print(f"builtin extractor on {args.dev} ({m['n']} summaries, {m['ms_per_summary']} ms each; "
          f"clause rules alone {rules['ms_per_summary']} ms)")
    print(f"{'style':<16} {'n':>3}  precision  recall  query-owner recall")
    for style, r in list(m["per_style"].items()) + [("ALL", m)]:
        print(f"{style:<16} {r['n']:>3}  {_f(r['precision']):>9}  {_f(r['recall']):>6}  {_f(r['query_recall']):>8}")
    print(f"\n{'round':<10} {'n':>3}  builtin P / R / query R   clause rules alone P / R / query R")
    for rnd, r in list(m["per_round"].items()) + [("ALL", m)]:
        o = rules["per_round"].get(rnd, rules)
        print(f"{rnd:<10} {r['n']:>3}  {_f(r['precision']):>5} / {_f(r['recall']):>5} / {_f(r['query_recall']):>5}"
              f"       {_f(o['precision']):>5} / {_f(o['recall']):>5} / {_f(o['query_recall']):>5}")
    if m["query_misses"]:
        print("query relation missed in:", ", ".join(m["query_misses"]))
    if args.personal:
        eps = []
        for path in sorted(Path(args.personal).glob("*/content/*.json.gz")):
            with gzip.open(path, "rt", encoding="utf-8") as f:
                eps += json.load(f)["episodes"]
        full = personal_query_recall(eps, BuiltinExtractor().extract)
        rules = personal_query_recall(eps, BuiltinExtractor(recall_layer=False).extract)
        own = personal_query_recall(eps, EpisodeExtractor().extract, with_extracted=True)
        print(f"PersONAL files in {args.personal}: {full['queries']} unique queries")
        print(f"  builtin (rules + recall layer):        query-owner recall {full['query_recall']}")
        print(f"  clause rules alone:                    query-owner recall {rules['query_recall']}")
        print(f"  the episodes' own extracted_summary:   query-owner recall {own['query_recall']} (ceiling of this proxy)")


if __name__ == "__main__":
    main()

"""Precision and recall of (person, object) ownership relations for an extractor.

A labelled item is a summary, every relation it states as ``[person, key]`` (the key is the
object's identifying noun, "coffee table"), and the query owner's relation. An extracted
phrase is reduced to ``(person, key)`` with the item's key that occurs earliest in the phrase's
object text (plural -s/-es allowed); a phrase with none of the keys is a false positive.

- precision / recall: over the distinct (person, key) pairs, micro-averaged over items;
- query recall: share of items whose query owner's relation was found (what RPG needs).
"""
from __future__ import annotations

import json
import re
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable, Iterable

DEV_SET = Path(__file__).resolve().parents[2] / "test" / "data" / "ownership_dev.json"


def load_items(path: str | Path = DEV_SET) -> list[dict]:
    doc = json.loads(Path(path).read_text(encoding="utf-8"))
    items = doc["items"] if isinstance(doc, dict) else doc
    for i, it in enumerate(items):
        for field in ("summary", "relations", "query"):
            if field not in it:
                raise ValueError(f"{path}: items[{i}] lacks {field!r}")
    return items


def key_of(phrase_object: str, keys: Iterable[str]) -> str | None:
    """The key that occurs earliest in the phrase (the longer one on a tie)."""
    best = None
    text = phrase_object.lower()
    for k in keys:
        m = re.search(r"\b" + re.escape(k.lower()) + r"(?:s|es)?\b", text)
        if m and (best is None or (m.start(), -len(k)) < (best[0], -len(best[1]))):
            best = (m.start(), k)
    return best[1].lower() if best else None


def item_pairs(item: dict, phrases: list) -> set[tuple[str, str]]:
    keys = {k for _, k in item["relations"]}
    out = set()
    for p in phrases:
        k = key_of(p.object, keys)
        out.add((p.person.lower(), k if k else "?" + p.object))
    return out


def score(items: list[dict], extract: Callable[[str], list]) -> dict[str, Any]:
    """Overall and per-style precision, recall, query recall and extraction time."""
    tot = defaultdict(lambda: {"tp": 0, "fp": 0, "fn": 0, "q": 0, "n": 0})
    misses = []
    t0 = time.perf_counter()
    for it in items:
        gold = {(p.lower(), k.lower()) for p, k in it["relations"]}
        pred = item_pairs(it, list(extract(it["summary"])))
        q = (it["query"][0].lower(), it["query"][1].lower()) in pred
        for bucket in ("all", it.get("style", "?"), f"round {it.get('round', '?')}"):
            b = tot[bucket]
            b["tp"] += len(pred & gold)
            b["fp"] += len(pred - gold)
            b["fn"] += len(gold - pred)
            b["q"] += q
            b["n"] += 1
        if not q:
            misses.append(it.get("id", ""))
    ms = (time.perf_counter() - t0) * 1e3 / max(len(items), 1)

    def rates(b):
        return {"n": b["n"], "precision": round(b["tp"] / (b["tp"] + b["fp"]), 3) if b["tp"] + b["fp"] else None,
                "recall": round(b["tp"] / (b["tp"] + b["fn"]), 3) if b["tp"] + b["fn"] else None,
                "query_recall": round(b["q"] / b["n"], 3) if b["n"] else None}

    return {**rates(tot["all"]), "ms_per_summary": round(ms, 2), "query_misses": misses,
            "per_style": {s: rates(b) for s, b in sorted(tot.items()) if s != "all" and not s.startswith("round ")},
            "per_round": {s: rates(b) for s, b in sorted(tot.items(), key=lambda sb: _round_key(sb[0])) if s.startswith("round ")}}


def _round_key(bucket: str):
    r = bucket.split(" ", 1)[-1]
    return (0, int(r)) if r.isdigit() else (1, r)


def personal_query_recall(episodes: Iterable[dict], extract: Callable[..., list], with_extracted: bool = False) -> dict:
    """On PersONAL episode dicts (public files): share of unique (summary, owner, category) queries
    for which a phrase names the owner and an object containing the category's word. A proxy:
    descriptions that use another word for the category ("armchair" for "sofa chair") count as misses
    even for a perfect extractor, so compare against the episodes' own extracted_summary."""
    seen = {}
    for e in episodes:
        seen[(e["summary"], e["owner"], e["object_category"])] = e
    cache: dict = {}
    hits = 0
    for (summary, owner, category), e in seen.items():
        key = (summary, tuple(e.get("extracted_summary") or ())) if with_extracted else summary
        if key not in cache:
            cache[key] = extract(summary, e.get("extracted_summary")) if with_extracted else extract(summary)
        words = {category.lower(), category.lower().split()[-1]}
        hits += any(p.person.lower() == owner.lower() and any(re.search(r"\b" + re.escape(w) + r"(?:s|es)?\b", p.object.lower())
                                                              for w in words) for p in cache[key])
    n = len(seen)
    return {"queries": n, "found": hits, "query_recall": round(hits / n, 3) if n else None}

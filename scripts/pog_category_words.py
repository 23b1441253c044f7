"""POG SR@top-1 on the same `lit` maps with the text side's category words off and on (issue 30).

Usage: .venv/bin/python scripts/pog_category_words.py FIRST_SEED N_HOUSEHOLDS OUT_JSON [CAMERA [MODES [ENCODERS]]]

Each household is pre-explored once (frontier explorer, 320x240, CAMERA default ``ideal``) and mapped
with the shipped `lit` tower; its episodes (3 splits x 10, episode seed FIRST_SEED) are grounded with
verbatim and varied summaries once per MODES entry (comma-separated keys of
``personal.models.hf_vlm.CATEGORY_WORDS``, default ``off,wordnet-synonyms,wordnet-first-sense,wordnet``; the colour
lexicon as shipped in every row). The maps are the same, so any difference is the text side's.
Verbatim summaries use only the generator's words, so they cannot change (a check).
ENCODERS (default ``lit``; ``lit,oracle`` adds the ORACLE maps of the same frames): the ORACLE's text side
has no category words in the product; here its ``encode_text`` is wrapped with the same rewriting, a
diagnostic of how far the upper bound moves.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from personal.grounding.eval.pog import summarize
from personal.grounding.eval.pog_run import explore_scene_maps, generate_episode_set, make_components
from personal.grounding.pipeline import evaluate_offline
from personal.models.category_words import catalog_category_words
from personal.models.hf_vlm import CATEGORY_WORDS
from personal.runs.output import write_file
from personal.sim.sensor_model import sensor_spec

METHODS = ["qs", "rpg", "rpg-owner", "rpg-scene"]


def _rewriting(encode_text, words):
    def encode(texts):
        return encode_text([words.rewrite(t) for t in ([texts] if isinstance(texts, str) else texts)])
    return encode


def main(first: int, n: int, out: str, camera: str = "ideal", modes: str = "off,wordnet-synonyms,wordnet-first-sense,wordnet",
         encoders: str = "lit") -> dict:
    spec = sensor_spec(*camera.partition(":")[::2])  # a bad camera fails before any exploration
    names = [m for m in modes.split(",") if m]
    unknown = [m for m in names if m not in CATEGORY_WORDS]
    if unknown:
        sys.exit(f"MODES {unknown}: expected keys of CATEGORY_WORDS ({', '.join(CATEGORY_WORDS)})")
    styles = {s: generate_episode_set(n, ("easy", "medium", "hard"), 10, first, summary_style=s)
              for s in ("verbatim", "varied")}
    scenes, verbatim = styles["verbatim"]
    rows, extractor = [], None
    for key in encoders.split(","):
        for name in names:
            enc, extractor = make_components(key, "builtin")
            words = catalog_category_words(*CATEGORY_WORDS[name]) if CATEGORY_WORDS[name] else None
            if key == "lit":
                enc.category_words = words
            elif words is not None:
                enc.encode_text = _rewriting(enc.encode_text, words)
            rows.append((key, name, enc))
    maps = {}
    for sid, scene in scenes.items():
        t0 = time.time()
        start = next(e for e in verbatim if e.scene_id == sid)
        built, info = explore_scene_maps(scene, encoders.split(","), 0.5, start, 320, 240, max_steps=2500, sensor=spec)
        maps[sid] = {key: built[key][0] for key in encoders.split(",")}
        print(f"{sid}: {info['steps']} steps, {time.time() - t0:.0f} s", flush=True)
    table: dict = {"households": [first, first + n - 1], "episode_seed": first, "camera": camera}
    for style, (_, episodes) in styles.items():
        table[style] = {"episodes": len(episodes)}
        for key, name, encoder in rows:
            res = evaluate_offline(episodes, scenes, {sid: m[key] for sid, m in maps.items()}, extractor, encoder, METHODS)
            label = name if key == "lit" else f"{key}:{name}"  # the lit rows keep the names of earlier files
            table[style][label] = {m: v["total"]["sr_top1"] for m, v in summarize(res, METHODS)["methods"].items()}
            print(style, label, table[style][label], flush=True)
    write_file(Path(out), json.dumps(table, indent=1))
    return table


if __name__ == "__main__":
    if len(sys.argv) not in (4, 5, 6, 7):
        sys.exit(__doc__)
    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], *sys.argv[4:])

"""Which POG summary and query texts a colour lexicon reads differently (issue 30, false matches).

Usage: .venv/bin/python scripts/colour_lexicon_texts.py FIRST_SEED N_HOUSEHOLDS LEXICONS

For the verbatim and varied summaries of the households' POG episodes (3 splits x 10, the episode
seed being the first household's), every summary sentence and query is planned by
``ColourGrounding.variants`` under each lexicon (comma-separated specs of
``personal.models.colour_words.catalog_grounding_named``, the first one the reference); printed: how
many texts each lexicon reads as holding an unknown colour word, how many it plans differently from
the reference, and the first of those.
"""
from __future__ import annotations

import re
import sys

from personal.grounding.eval.pog_run import generate_episode_set
from personal.models.colour_words import catalog_grounding_named


def texts_of(episodes) -> set[str]:
    out = set()
    for e in episodes:
        out.add(e.query)
        out.update(t.strip() for t in re.split(r"(?<=[.!?])\s+", e.summary) if t.strip())
    return out


def main(first: int, n: int, lexicons: str, show: int = 12) -> None:
    sources = lexicons.split(",")
    groundings = {s: catalog_grounding_named(s) for s in sources}
    for style in ("varied", "verbatim"):
        _, episodes = generate_episode_set(n, ("easy", "medium", "hard"), 10, first, summary_style=style)
        texts = sorted(texts_of(episodes))
        print(f"{style}: {len(episodes)} episodes, {len(texts)} texts")
        plans = {s: {t: g.variants(t) for t in texts} for s, g in groundings.items()}
        for s in sources:
            changed = [t for t in texts if plans[s][t] != plans[sources[0]][t]]
            read = sum(plans[s][t] != [(1.0, t)] for t in texts)
            print(f"  {s}: texts read through the lexicon {read}, planned differently from {sources[0]} {len(changed)}")
            for t in changed[:show]:
                print(f"      {t} -> {plans[s][t][0][1]}")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3])

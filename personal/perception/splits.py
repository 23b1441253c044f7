"""Which generated households (scene seeds) train, validate and test perception.

Evaluation households keep the seeds the evaluations have always used (POG 0.., PAN 100-499,
retrieval 0-9); training and validation draw from ranges of their own, so the two never share a
household. The dataset writer refuses evaluation seeds for training data."""
from __future__ import annotations

TRAIN_SEEDS = range(10_000, 10_040)
VAL_SEEDS = range(20_000, 20_008)  # thresholds and model selection, never test households
TEST_SEEDS = range(0, 10)  # held-out retrieval; POG / PAN use their own evaluation seeds (< 10,000)
RESERVED_FOR_EVALUATION = range(0, 10_000)


def check_training_seeds(seeds) -> None:
    bad = [s for s in seeds if s in RESERVED_FOR_EVALUATION]
    if bad:
        raise ValueError(f"seeds {bad[:5]}{'...' if len(bad) > 5 else ''} are evaluation households (0-9999); "
                         f"training uses {TRAIN_SEEDS.start}-{TRAIN_SEEDS.stop - 1}, validation "
                         f"{VAL_SEEDS.start}-{VAL_SEEDS.stop - 1}")


def parse_seeds(text: str) -> list[int]:
    """'10000-10039' or '1,2,5-7' -> seeds."""
    out: list[int] = []
    for part in str(text).split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            a, b = part.split("-", 1)
            out.extend(range(int(a), int(b) + 1))
        else:
            out.append(int(part))
    return out

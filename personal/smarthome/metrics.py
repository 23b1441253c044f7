"""PersonalHomeBench metrics (seed Sec. 5.2 and Appendix F.2).

- IG / CF accuracy: normalised exact match against any answer variant (Eq. 1); when it
  fails and a judge is given, the judge decides (Eq. 2-3; judge returns 1, 0 or -1 for
  "uncertain", which counts as wrong).
- CF: macro-average of accuracy on answer-changed and answer-unchanged items (Eq. 4).
- MC: exact match of the chosen letter or the option's text; no judge (Eq. 6).
- FR: MAP@k (Eq. 9) with the HIGHLY_RELEVANT features as the relevant set, and the
  Relevant Rank Sum: for each of the K=3 relevant items, |predicted rank - ideal rank|,
  summed per instance and averaged over instances (Eq. 12-13); a relevant item missing from
  the prediction gets rank n+1.
- PG: plan validity, the share of executable steps (Eq. 11), averaged over instances.
- Tool-error breakdown: error counts per type and task family.
"""
from __future__ import annotations

import re
import string
from collections import defaultdict
from typing import Any, Callable, Iterable, Sequence

Judge = Callable[[str, str], int]  # (prediction, ground truth) -> 1 | 0 | -1

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans("", "", string.punctuation)


def normalize(text: Any) -> str:
    """Lower case, no punctuation, no articles, single spaces (SQuAD-style normalisation)."""
    s = str(text).lower().translate(_PUNCT)
    s = _ARTICLES.sub(" ", s)
    return " ".join(s.split())


def exact_match(pred: Any, variants: Iterable[Any]) -> bool:
    p = normalize(pred)
    return any(p == normalize(v) for v in variants)


def qa_correct(pred: Any, variants: Sequence[Any], judge: Judge | None = None) -> bool:
    """Eq. 3: exact match, else the judge (if any) on the canonical answer."""
    if exact_match(pred, variants):
        return True
    if judge is None or pred is None or str(pred).strip() == "":
        return False
    return any(judge(str(pred), str(v)) == 1 for v in variants)


def mc_correct(pred: Any, letter: str, option_text: str) -> bool:
    """Eq. 6: the chosen letter (``B``, ``(B)``, ``B.``) or the option's text."""
    p = str(pred).strip()
    m = re.fullmatch(r"\(?([A-Ea-e])\)?[.:]?", p)
    if m:
        return m.group(1).upper() == letter.upper()
    return exact_match(p, [option_text, f"{letter} {option_text}", f"{letter}. {option_text}"])


def cf_macro(changed: Sequence[bool], unchanged: Sequence[bool]) -> float:
    """Eq. 4: mean of the two accuracies (a missing group is left out)."""
    accs = [sum(g) / len(g) for g in (changed, unchanged) if len(g)]
    return sum(accs) / len(accs) if accs else 0.0


def average_precision_at_k(ranked: Sequence[str], relevant: set[str], k: int) -> float:
    """AP@k = sum_{i<=k} P(i) rel(i) / min(k, |relevant|)."""
    if not relevant:
        return 0.0
    hits, total = 0, 0.0
    for i, item in enumerate(ranked[:k], start=1):
        if item in relevant:
            hits += 1
            total += hits / i
    return total / min(k, len(relevant))


def map_at_k(rankings: Sequence[Sequence[str]], relevants: Sequence[set[str]], k: int) -> float:
    if not rankings:
        return 0.0
    return sum(average_precision_at_k(r, rel, k) for r, rel in zip(rankings, relevants)) / len(rankings)


def relevant_rank_sum(ranked: Sequence[str], ideal_relevant: Sequence[str]) -> int:
    """Per instance: sum_j |rank(j-th relevant item) - j| (ranks from 1; missing -> n+1)."""
    pos = {item: i for i, item in enumerate(ranked, start=1)}
    missing = len(ranked) + 1
    return sum(abs(pos.get(item, missing) - j) for j, item in enumerate(ideal_relevant, start=1))


def average_rrs(rankings: Sequence[Sequence[str]], ideals: Sequence[Sequence[str]]) -> float:
    if not rankings:
        return 0.0
    return sum(relevant_rank_sum(r, i) for r, i in zip(rankings, ideals)) / len(rankings)


def plan_validity(validities: Sequence[float]) -> float:
    return sum(validities) / len(validities) if validities else 0.0


class ErrorBreakdown:
    """Tool-error counts per task family (habitat-style reset / update / value)."""

    def __init__(self, error_types: Sequence[str]) -> None:
        self.error_types = list(error_types)
        self.reset()

    def reset(self) -> None:
        self.counts: dict[str, dict[str, int]] = defaultdict(lambda: {e: 0 for e in self.error_types})
        self.tasks: dict[str, int] = defaultdict(int)

    def update(self, family: str, errors: Iterable[str]) -> None:
        self.tasks[family] += 1
        row = self.counts[family]  # creates the family's row even when it had no errors
        for e in errors:
            row[e] += 1

    def value(self) -> dict[str, dict[str, float]]:
        """Average errors of each type per task, by family."""
        return {fam: {e: c / max(1, self.tasks[fam]) for e, c in row.items()} for fam, row in self.counts.items()}

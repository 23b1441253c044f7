"""SR and SA (LIBERO-PeRM), with composition and conflict rules, aggregated per tier and suite.

- single:   SA_ep = success x d   (paraphrase: the same, asked in a held-out wording)
- compose:  SA_ep = success x mean(d_i)   (every preference asked for counts)
- conflict: SA_ep = success x max(d_i)    (task first; the better of two conflicting preferences)
- none:     no preference asked; SA is still computed for the preference under study
            (``measured``) so the with/without contrast uses the same metric.
SR = mean(success); SA = mean(SA_ep).
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass, field

import numpy as np

from personal.manipulation import preferences as P
from personal.manipulation.layout import Layout
from personal.manipulation.trajectory import Trajectory

SUITES = ("single", "compose", "conflict", "comprepref", "none", "paraphrase")


@dataclass
class EpisodeResult:
    task_id: str
    suite: str
    mission: str
    seed: int
    measured: tuple[str, ...]  # preferences scored on this episode
    prompted: bool  # was the preference given in the prompt
    prompt: str
    success: bool
    steps: int
    scores: dict[str, float] = field(default_factory=dict)
    d: dict[str, float] = field(default_factory=dict)
    subgoals: list[str] = field(default_factory=list)

    @property
    def combined_d(self) -> float:
        return combine(self.suite, [self.d[p] for p in self.measured])

    @property
    def sa(self) -> float:
        return float(self.success) * self.combined_d

    def to_dict(self) -> dict:
        out = asdict(self)
        out.update(sa=self.sa, combined_d=self.combined_d)
        return out


def combine(suite: str, ds: list[float]) -> float:
    if not ds:
        return 0.0
    if suite == "conflict":
        return float(max(ds))
    if suite == "compose":
        return float(np.mean(ds))
    if len(ds) != 1:
        raise ValueError(f"suite {suite!r} scores one preference per episode, got {len(ds)}")
    return float(ds[0])


def score_episode(traj: Trajectory, layout: Layout, *, task_id: str, suite: str, measured: tuple[str, ...],
                  prompted: bool, prompt: str) -> EpisodeResult:
    if suite not in SUITES:
        raise ValueError(f"unknown suite {suite!r} (known: {SUITES})")
    scores = {p: P.get(p).score(traj, layout) for p in measured}
    d = {p: P.get(p).binning(s) for p, s in scores.items()}
    subgoals = [f"{g.skill}({g.obj}{'->' + g.target if g.target else ''})@{g.step}"
                for g in traj.subgoals(layout.receptacles)]
    return EpisodeResult(task_id=task_id, suite=suite, mission=layout.mission, seed=layout.seed, measured=measured,
                         prompted=prompted, prompt=prompt, success=bool(traj.success), steps=traj.steps,
                         scores=scores, d=d, subgoals=subgoals)


def summarize(results: list[EpisodeResult]) -> dict:
    n = len(results)
    if n == 0:
        return {"n": 0, "SR": float("nan"), "SA": float("nan")}
    return {"n": n, "SR": float(np.mean([r.success for r in results])), "SA": float(np.mean([r.sa for r in results]))}


def aggregate(results: list[EpisodeResult], key) -> dict:
    """Group by ``key(result)`` (e.g. lambda r: (r.measured, r.prompted)) and summarize each group."""
    groups: dict = defaultdict(list)
    for r in results:
        groups[key(r)].append(r)
    return {k: summarize(v) for k, v in sorted(groups.items(), key=lambda kv: str(kv[0]))}


def tier_of(result: EpisodeResult) -> str:
    tiers = {P.get(p).tier.value for p in result.measured}
    return tiers.pop() if len(tiers) == 1 else "+".join(sorted(tiers))

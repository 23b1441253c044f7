"""Missions, seeded layouts and the preference task suites (single, compose, conflict, comprepref).

A task instance = mission (instruction + layout + goal) x preference(s) (or none) x seed.
Layouts are built so preferences are meaningful: two candidate blocks that differ in colour and
size, a vase to keep away from beside the carry path, and a receptacle (bin or mat).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from personal.manipulation import phrasings
from personal.manipulation import preferences as P
from personal.manipulation.layout import TABLE_Z, Layout, ObjectSpec

RED = (0.85, 0.1, 0.1, 1.0)
BLUE = (0.1, 0.25, 0.85, 1.0)
GREEN = (0.1, 0.6, 0.2, 1.0)


@dataclass(frozen=True)
class Mission:
    id: str
    task: str  # instruction (without preference)
    receptacle: str  # bin | mat


MISSIONS = {
    "bin": Mission("bin", "put a block in the bin", "bin"),
    "mat": Mission("mat", "put a block on the mat", "mat"),
    "handle": Mission("handle", "put the hammer in the bin", "bin"),
}

HAMMER_HALF = (0.1, 0.035, 0.0175)  # robosuite HammerObject on its side, handle along x (see robosuite_backend)
HAMMER_HANDLE = (-0.05, 0.0, 0.0)  # grip end of the handle, from the body origin (the handle centre)
HAMMER_MASS_CENTRE = (0.036, 0.0, 0.0)  # towards the head


def make_layout(mission: str, seed: int) -> Layout:
    """Seeded positions; object identities and sizes are fixed per mission."""
    if mission not in MISSIONS:
        raise KeyError(f"unknown mission {mission!r} (known: {', '.join(MISSIONS)})")
    rng = np.random.default_rng(seed)
    small, big = 0.02, 0.026  # cube half sizes (4 cm and 5.2 cm)
    xs = rng.permutation([-0.075, 0.075]) + rng.uniform(-0.015, 0.015, 2)
    ys = -0.15 + rng.uniform(-0.02, 0.02, 2)
    rx, ry = rng.uniform(-0.04, 0.04), rng.uniform(0.15, 0.18)
    # the vase stands beside the carry paths (either block -> receptacle): close enough that a plain
    # path passes within ~4-8 cm, far enough that the block can be carried or pushed past it
    # (bin: the plain carry passes over it; mat: low pushes must pass beside it, so it stands further out)
    offset = rng.uniform(0.07, 0.09) if MISSIONS[mission].receptacle == "bin" else rng.uniform(0.115, 0.13)
    vx = 0.5 * (np.mean(xs) + rx) + rng.choice([-1, 1]) * offset
    vy = rng.uniform(-0.01, 0.02)
    if mission == "handle":
        return _handle_layout(seed, rng, rx, ry)
    objects = [
        ObjectSpec("red_block", "box", (small,) * 3, RED, "red", "candidate", (xs[0], ys[0], TABLE_Z + small),
                   category="block"),
        ObjectSpec("blue_block", "box", (big,) * 3, BLUE, "blue", "candidate", (xs[1], ys[1], TABLE_Z + big),
                   category="block"),
        ObjectSpec("vase", "cylinder", (0.03, 0.03, 0.05), GREEN, "green", "obstacle", (vx, vy, TABLE_Z + 0.05),
                   category="vase"),
    ]
    if MISSIONS[mission].receptacle == "bin":
        objects.append(ObjectSpec("bin", "bin", (0.09, 0.09, 0.03), (0.45, 0.3, 0.15, 1.0), "brown", "receptacle",
                                  (rx, ry, TABLE_Z + 0.03), category="bin"))
        target = "bin"
    else:
        objects.append(ObjectSpec("mat", "mat", (0.07, 0.07, 0.001), (0.9, 0.85, 0.2, 1.0), "yellow", "receptacle",
                                  (rx, ry, TABLE_Z + 0.001), category="mat"))
        target = "mat"
    return Layout(mission=mission, seed=seed, objects=objects, target=target)


def _handle_layout(seed: int, rng, rx: float, ry: float) -> Layout:
    hx, hy = rng.uniform(-0.04, 0.04), rng.uniform(-0.16, -0.12)
    vx = 0.5 * (hx + rx) + rng.choice([-1, 1]) * rng.uniform(0.08, 0.1)
    objects = [
        ObjectSpec("hammer", "hammer", HAMMER_HALF, (0.6, 0.4, 0.2, 1.0), "brown", "candidate",
                   (hx, hy, TABLE_Z + HAMMER_HALF[2]), category="hammer", handle_offset=HAMMER_HANDLE,
                   grasp_offset=HAMMER_MASS_CENTRE),
        ObjectSpec("vase", "cylinder", (0.03, 0.03, 0.05), GREEN, "green", "obstacle",
                   (vx, rng.uniform(0.0, 0.03), TABLE_Z + 0.05), category="vase"),
        ObjectSpec("bin", "bin", (0.12, 0.13, 0.03), (0.45, 0.3, 0.15, 1.0), "brown", "receptacle",
                   (rx, ry + 0.04, TABLE_Z + 0.03), category="bin"),
    ]
    return Layout(mission="handle", seed=seed, objects=objects, target="bin")


@dataclass(frozen=True)
class TaskInstance:
    task_id: str
    suite: str  # single | compose | conflict | comprepref | none
    mission: str
    seed: int
    prefs: tuple[str, ...]  # preferences put in the prompt
    measured: tuple[str, ...]  # preferences scored (for "none": the one under study)
    wording: str = ""  # paraphrase suite: the held-out wording of the one preference

    @property
    def layout(self) -> Layout:
        return make_layout(self.mission, self.seed)

    @property
    def prompt(self) -> str:
        if self.wording:
            return phrasings.prompt(MISSIONS[self.mission].task, self.wording, self.layout)
        return P.prompt(MISSIONS[self.mission].task, self.prefs, self.layout, contextual=self.suite == "comprepref")


def _tid(suite, mission, prefs, seed) -> str:
    return f"{suite}/{mission}/{'+'.join(prefs) or 'none'}/s{seed}"


COMPOSE_PAIRS = [("speed_up", "prefer_red"), ("move_higher", "rotate_when_placing"), ("keep_away", "prefer_bigger"),
                 ("smooth", "prefer_blue")]
CONFLICT_PAIRS = [("speed_up", "slow_down"), ("prefer_red", "prefer_bigger"), ("move_higher", "close_to_ground")]


def applicable(pref: str, mission: str) -> bool:
    return mission in P.get(pref).missions


PARAPHRASE_SETS = {"A": "HELD_OUT", "B": "HELD_OUT_B", "C": "HELD_OUT_C", "V": "VALIDATION"}


def paraphrases(pref: str, seed_index: int, sets: str = "ABC") -> list[tuple[str, str]]:
    """The reserved wordings a paraphrase task uses at the k-th seed: one of each named set (held-out
    A, B, C; V = validation, for model selection), rotating with k so every wording is used.
    Returns (label, wording) pairs, label like ``A1``."""
    out = []
    for name in sets:
        if name not in PARAPHRASE_SETS:
            raise ValueError(f"unknown paraphrase set {name!r}; known: {''.join(PARAPHRASE_SETS)}")
        table = getattr(phrasings, PARAPHRASE_SETS[name])
        i = seed_index % len(table[pref])
        out.append((f"{name}{i}", table[pref][i]))
    return out


def build_suite(suite: str, missions: list[str], prefs: list[str], seeds: list[int],
                paraphrase_sets: str = "ABC") -> list[TaskInstance]:
    """Task instances of one suite. ``none`` pairs each single task with its no-preference prompt;
    ``paraphrase`` asks for each single preference in one wording of each of ``paraphrase_sets``
    (``paraphrases``)."""
    out: list[TaskInstance] = []
    for m in missions:
        for k, s in enumerate(seeds):
            if suite == "paraphrase":
                for p in prefs:
                    if applicable(p, m):
                        for label, wording in paraphrases(p, k, paraphrase_sets):
                            out.append(TaskInstance(f"paraphrase/{m}/{p}/s{s}/{label}", suite, m, s, (p,), (p,), wording))
            elif suite in ("single", "none", "comprepref"):
                for p in prefs:
                    if applicable(p, m):
                        asked = () if suite == "none" else (p,)
                        out.append(TaskInstance(_tid(suite, m, (p,) if suite != "none" else (f"[{p}]",), s),
                                                suite, m, s, asked, (p,)))
            elif suite in ("compose", "conflict"):
                pairs = COMPOSE_PAIRS if suite == "compose" else CONFLICT_PAIRS
                for pair in pairs:
                    if all(applicable(p, m) for p in pair) and (not prefs or set(pair) & set(prefs)):
                        out.append(TaskInstance(_tid(suite, m, pair, s), suite, m, s, pair, pair))
            else:
                raise ValueError(f"unknown suite {suite!r}")
    return out

"""HandOver: a tabletop task run the way a person likes it. The person's manipulation preferences
come from the household memory (or the goal), go into the policy's prompt ("Task: … Preference:
…", the LIBERO-PeRM format of personal.manipulation.preferences), and the rollout is scored with
the same preference metrics as the PeRM benchmark (personal.manipulation.scoring), from the
simulator's state.

Memory layout: ``preferences(person, "manipulation")``, key = a mission (``bin``, ``mat``,
``handle``) or ``any``, value = preference ids, comma separated (``slow_down``,
``keep_away,prefer_red``). A mission's own entry wins over ``any``. A stored preference that does
not apply to the mission (``grasp_by_handle`` for a block) is left out and said so; an unknown id
is an error naming the entry.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from personal.manipulation import preferences as P
from personal.manipulation.scoring import EpisodeResult, score_episode
from personal.manipulation.suite import MISSIONS, TaskInstance, applicable
from personal.manipulation.trajectory import Trajectory

MANIPULATION_DOMAIN = "manipulation"
ANY_MISSION = "any"


class HandOverError(ValueError):
    """The hand-over cannot be run as asked; the message names the field or memory entry."""


@dataclass(frozen=True)
class HandOverTask:
    task: TaskInstance
    source: str  # where the preferences came from, in words ("preferences from Tom's manipulation.any in the memory")
    left_out: tuple[str, ...] = field(default=())  # stored preferences that do not apply to the mission

    @property
    def prompt(self) -> str:
        return self.task.prompt


def stored_preferences(memory, person: str, mission: str) -> tuple[list[str], str]:
    """``person``'s preference ids for ``mission`` from the memory and where they came from."""
    if memory is None or not person:
        return [], "no person named" if not person else "no memory to read preferences from"
    stored = memory.preferences(person, MANIPULATION_DOMAIN)
    for key in (mission, ANY_MISSION):
        if key in stored:
            return _ids(stored[key], f"memory: {person}'s {MANIPULATION_DOMAIN}.{key}"), \
                f"preferences from {person}'s {MANIPULATION_DOMAIN}.{key} in the memory"
    return [], f"{person} has no {MANIPULATION_DOMAIN} preference in the memory"


def handover_task(memory, person: str, mission: str, seed: int, preference: str = "") -> HandOverTask:
    """The task to run: ``preference`` (ids, comma separated) when given, else the memory's."""
    if mission not in MISSIONS:
        raise HandOverError(f"mission {mission!r} unknown (known: {', '.join(MISSIONS)})")
    if seed < 0:
        raise HandOverError(f"seed must be >= 0, got {seed}")
    if preference.strip():
        ids, source = _ids(preference, "goal field 'preference'"), "preferences from the goal"
    else:
        ids, source = stored_preferences(memory, person, mission)
    kept = [p for p in ids if applicable(p, mission)]
    left_out = tuple(p for p in ids if p not in kept)
    if len(kept) > 2:
        raise HandOverError(f"{source}: at most two preferences per task (the PeRM compose suite), got {kept}")
    suite = {0: "none", 1: "single", 2: "compose"}[len(kept)]
    task = TaskInstance(f"handover/{mission}/{'+'.join(kept) or 'none'}/s{seed}", suite, mission, int(seed),
                        tuple(kept), tuple(kept))
    return HandOverTask(task, source, left_out)


def score(handover: HandOverTask, trajectory: Trajectory) -> EpisodeResult:
    """SR and the preference degree d of the rollout (none asked: success only, d empty)."""
    t = handover.task
    return score_episode(trajectory, t.layout, task_id=t.task_id, suite=t.suite, measured=t.measured,
                         prompted=bool(t.prefs), prompt=t.prompt)


def summary(handover: HandOverTask, result: EpisodeResult) -> str:
    """The result in words: outcome, each preference's degree, where the preferences came from."""
    words = f"{'done' if result.success else 'not done'} in {result.steps} steps"
    if result.measured:
        words += "; " + ", ".join(f"{p} d={result.d[p]:g}" for p in result.measured)
    else:
        words += "; no preference asked"
    words += f" ({handover.source})"
    if handover.left_out:
        words += f"; left out, not applicable to {handover.task.mission}: {', '.join(handover.left_out)}"
    return words


def _ids(text: str, where: str) -> list[str]:
    ids = [p.strip() for p in text.split(",") if p.strip()]
    unknown = [p for p in ids if p not in P.PREFERENCES]
    if unknown:
        raise HandOverError(f"{where}: unknown preference {', '.join(map(repr, unknown))} "
                            f"(known: {', '.join(P.PREFERENCES)})")
    return ids

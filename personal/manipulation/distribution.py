"""Is a policy evaluated on the simulator it was trained on?

A learned checkpoint knows the simulator its demonstrations were recorded on (``demos.simulator``
in its training metadata; checkpoints from before that field were recorded by
``personal.manipulation.learned.demos.generate``'s robosuite workers, the only simulator it had).
Evaluating it on another backend (e.g. the kinematic stand-in) measures it out of distribution;
the evaluators put :func:`distribution_note` in the report and the run record so that such a
figure is never read as the policy's.
"""
from __future__ import annotations

import json
from pathlib import Path

# what demos.generate recorded on before it wrote the field (checkpoints up to the shipped perm_bc)
LEGACY_DEMO_SIMULATOR = "robosuite"
# policies that are not trained on a simulator (scripted ORACLE reads the simulator's ground truth;
# served policies are someone else's, trained where their card says)
UNTRAINED = {"scripted": "scripted ORACLE (reads the simulator's ground truth; no training distribution)"}


def checkpoint_simulator(checkpoint: str | Path = "") -> str:
    """The simulator the learned checkpoint's demonstrations were recorded on (header metadata only)."""
    from safetensors import safe_open

    from personal.manipulation.learned.policy import DEFAULT_CHECKPOINT

    path = Path(checkpoint or DEFAULT_CHECKPOINT)
    with safe_open(str(path), framework="pt") as fh:
        meta = json.loads((fh.metadata() or {}).get("meta", "{}"))
    return str((meta.get("demos") or {}).get("simulator") or LEGACY_DEMO_SIMULATOR)


def distribution_note(policy: str, backend: str, checkpoint: str | Path = "") -> dict:
    """{"policy", "simulator", "trained on", "in distribution" (True | False | None = unknown), "note"}."""
    note = {"policy": policy, "simulator": backend}
    if policy in UNTRAINED:
        return {**note, "trained on": "–", "in distribution": None, "note": UNTRAINED[policy]}
    if policy != "learned":
        return {**note, "trained on": "unknown (served policy)", "in distribution": None,
                "note": "served policy: its training simulator is on its own model card"}
    try:
        trained = checkpoint_simulator(checkpoint)
    except Exception as exc:  # unreadable checkpoint: the policy node reports it; the note says unknown
        return {**note, "trained on": "unknown", "in distribution": None, "note": f"checkpoint unreadable: {exc}"}
    inside = trained == backend
    text = (f"learned policy trained on {trained} demonstrations, evaluated on {backend}" if inside else
            f"OUT OF DISTRIBUTION: the learned policy was trained on {trained} demonstrations and is evaluated on "
            f"{backend}, a simulator it never saw; these figures do not measure the policy (evaluate it with "
            f"backend:={trained})")
    return {**note, "trained on": trained, "in distribution": inside, "note": text}


def headline(note: dict) -> str:
    """One report line: the flag first when out of distribution."""
    return ("**" + note["note"] + "**") if note.get("in distribution") is False else note["note"]

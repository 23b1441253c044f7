"""A recorded manipulation episode and the subgoals derived from it.

Everything here is measured from simulator state (eef pose, object poses, which object
the gripper holds), never from what the policy claims it did.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

CONTROL_HZ = 20.0
DT = 1.0 / CONTROL_HZ


@dataclass(frozen=True)
class Subgoal:
    skill: str  # pick | place | push
    obj: str
    step: int
    target: str = ""  # for place/push: the receptacle the object ended on/in ("" if none)


@dataclass
class Trajectory:
    eef_pos: np.ndarray  # (T, 3) metres, world frame
    eef_yaw: np.ndarray  # (T,) radians, unwrapped
    gripper: np.ndarray  # (T,) commanded gripper, -1 open .. +1 closed
    held: list[str]  # (T,) name of the object in the gripper ("" = none)
    objects: dict[str, np.ndarray]  # name -> (T, 3) positions
    success: bool = False
    success_step: int = -1
    dt: float = DT
    frames: list[tuple[int, np.ndarray]] = field(default_factory=list)  # sampled (step, agentview image)

    def __post_init__(self) -> None:
        self.eef_pos = np.asarray(self.eef_pos, dtype=float).reshape(-1, 3)
        self.eef_yaw = np.asarray(self.eef_yaw, dtype=float).reshape(-1)
        self.gripper = np.asarray(self.gripper, dtype=float).reshape(-1)
        self.objects = {k: np.asarray(v, dtype=float).reshape(-1, 3) for k, v in self.objects.items()}
        n = len(self.eef_pos)
        lengths = {"eef_yaw": len(self.eef_yaw), "gripper": len(self.gripper), "held": len(self.held)}
        lengths.update({f"objects[{k}]": len(v) for k, v in self.objects.items()})
        bad = {k: v for k, v in lengths.items() if v != n}
        if bad:
            raise ValueError(f"trajectory fields must all have {n} samples (eef_pos); got {bad}")

    @classmethod
    def from_states(cls, states: list[dict], frames: list | None = None) -> "Trajectory":
        """A rollout from the simulator's per-step states (``personal.interfaces.tabletop.state_dict``
        of ``perm/oracle/state``: eef, yaw, gripper, held, objects, success), as the graph records it."""
        if not states:
            raise ValueError("no simulator state recorded: nothing to score")
        success = bool(states[-1]["success"])
        return cls(eef_pos=[s["eef"] for s in states], eef_yaw=np.unwrap([s["yaw"] for s in states]),
                   gripper=[s["gripper"] for s in states], held=[s["held"] for s in states],
                   objects={n: [s["objects"][n] for s in states] for n in states[0]["objects"]},
                   success=success, success_step=len(states) - 1 if success else -1, frames=list(frames or []))

    def __len__(self) -> int:
        return len(self.eef_pos)

    @property
    def steps(self) -> int:
        """Execution steps: to success if the task succeeded, else the whole episode."""
        return self.success_step + 1 if self.success and self.success_step >= 0 else len(self)

    # -- grasp segments ----------------------------------------------------------------

    def hold_segments(self) -> list[tuple[str, int, int]]:
        """(object, first step held, last step held) for each continuous grasp."""
        out: list[tuple[str, int, int]] = []
        start, cur = 0, ""
        for t, name in enumerate(list(self.held) + [""]):
            if name != cur:
                if cur:
                    out.append((cur, start, t - 1))
                cur, start = name, t
        return out

    def carry_segment(self) -> tuple[str, int, int] | None:
        """The longest grasp: the transport phase of a pick-and-place."""
        segs = self.hold_segments()
        return max(segs, key=lambda s: s[2] - s[1]) if segs else None

    def manipulated_object(self, candidates: list[str]) -> str:
        """The candidate that moved the most (picked or pushed); "" if none moved > 2 cm."""
        best, moved = "", 0.02
        for name in candidates:
            if name in self.objects:
                p = self.objects[name]
                d = float(np.max(np.linalg.norm(p[:, :2] - p[0, :2], axis=1)))
                if d > moved:
                    best, moved = name, d
        return best

    def subgoals(self, receptacles: dict[str, "object"] | None = None) -> list[Subgoal]:
        """Executed subgoals: a pick at each grasp start, a place at each release, a push for
        an object that moved > 3 cm on the table without ever being held."""
        out: list[Subgoal] = []
        held_ever = set()
        for name, a, b in self.hold_segments():
            held_ever.add(name)
            out.append(Subgoal("pick", name, a))
            target = _receptacle_at(self.objects[name][min(b + 1, len(self) - 1)], receptacles)
            out.append(Subgoal("place", name, b + 1, target))
        for name, p in self.objects.items():
            if name in held_ever:
                continue
            if float(np.linalg.norm(p[-1, :2] - p[0, :2])) > 0.03:
                step = int(np.argmax(np.linalg.norm(p[:, :2] - p[0, :2], axis=1) > 0.01))
                out.append(Subgoal("push", name, step, _receptacle_at(p[-1], receptacles)))
        return sorted(out, key=lambda s: s.step)


def _receptacle_at(pos: np.ndarray, receptacles) -> str:
    if not receptacles:
        return ""
    for name, rec in receptacles.items():
        if rec.contains(pos):
            return name
    return ""

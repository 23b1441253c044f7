"""What is on the table in one episode: shared by every backend, the metrics and the oracle policy.

World frame follows robosuite: z up, the table top at ``TABLE_Z``, the Panda base at x = -0.56.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

TABLE_Z = 0.8  # robosuite TableArena default: table top height (m)
TABLE_HALF = (0.4, 0.4)


@dataclass(frozen=True)
class ObjectSpec:
    name: str
    shape: str  # box | cylinder | bin | mat | hammer (lying on its side, handle along +y, head at -y)
    half_size: tuple[float, float, float]  # box half extents; cylinder (r, r, half height); bin/mat footprint
    rgba: tuple[float, float, float, float]
    colour: str
    role: str  # candidate | obstacle | receptacle
    pos: tuple[float, float, float]  # centre, world frame
    yaw: float = 0.0
    category: str = ""
    handle_offset: tuple[float, float, float] | None = None  # handle grip point relative to pos (world axes)
    grasp_offset: tuple[float, float, float] = (0.0, 0.0, 0.0)  # plain skill's grasp point (near the mass centre)

    @property
    def volume(self) -> float:
        hx, hy, hz = self.half_size
        return float(np.pi * hx * hx * 2 * hz) if self.shape == "cylinder" else float(8 * hx * hy * hz)

    def contains(self, p: np.ndarray) -> bool:
        """Receptacles only: is point ``p`` resting in the bin / on the mat?"""
        hx, hy, hz = self.half_size
        inside = abs(p[0] - self.pos[0]) <= hx and abs(p[1] - self.pos[1]) <= hy
        if self.shape == "bin":
            return bool(inside and p[2] < TABLE_Z + 2 * hz)
        if self.shape == "mat":
            return bool(inside and p[2] < TABLE_Z + 0.06)
        return False

    def clearance(self, p: np.ndarray) -> float:
        """Distance from point ``p`` to this object's bounding box (0 inside)."""
        lo = np.array(self.pos) - np.array(self.half_size)
        hi = np.array(self.pos) + np.array(self.half_size)
        return float(np.linalg.norm(np.maximum(0.0, np.maximum(lo - p, p - hi))))


@dataclass
class Layout:
    mission: str
    seed: int
    objects: list[ObjectSpec]
    target: str  # the receptacle named in the task
    table_z: float = TABLE_Z
    eef_start: tuple[float, float, float] = (-0.10, 0.0, 1.00)
    extras: dict = field(default_factory=dict)

    def get(self, name: str) -> ObjectSpec:
        for o in self.objects:
            if o.name == name:
                return o
        raise KeyError(f"layout {self.mission}/{self.seed} has no object {name!r} (has {[o.name for o in self.objects]})")

    def by_role(self, role: str) -> list[ObjectSpec]:
        return [o for o in self.objects if o.role == role]

    @property
    def candidates(self) -> list[ObjectSpec]:
        return self.by_role("candidate")

    @property
    def obstacle(self) -> ObjectSpec | None:
        obs = self.by_role("obstacle")
        return obs[0] if obs else None

    @property
    def receptacles(self) -> dict[str, ObjectSpec]:
        return {o.name: o for o in self.by_role("receptacle")}

    def to_dict(self) -> dict:
        return {
            "mission": self.mission,
            "seed": self.seed,
            "target": self.target,
            "table_z": self.table_z,
            "eef_start": list(self.eef_start),
            "objects": [
                {**o.__dict__, "half_size": list(o.half_size), "rgba": list(o.rgba), "pos": list(o.pos),
                 "handle_offset": list(o.handle_offset) if o.handle_offset else None,
                 "grasp_offset": list(o.grasp_offset)}
                for o in self.objects
            ],
        }

    @classmethod
    def from_dict(cls, d: dict) -> "Layout":
        try:
            objs = [
                ObjectSpec(**{**o, "half_size": tuple(o["half_size"]), "rgba": tuple(o["rgba"]), "pos": tuple(o["pos"]),
                              "handle_offset": tuple(o["handle_offset"]) if o.get("handle_offset") else None,
                              "grasp_offset": tuple(o.get("grasp_offset", (0.0, 0.0, 0.0)))})
                for o in d["objects"]
            ]
            return cls(mission=d["mission"], seed=int(d["seed"]), objects=objs, target=d["target"],
                       table_z=float(d.get("table_z", TABLE_Z)), eef_start=tuple(d.get("eef_start", (-0.1, 0.0, 1.0))))
        except (KeyError, TypeError) as exc:
            raise ValueError(f"bad layout dict: {exc!r}") from None

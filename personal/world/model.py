"""Data model of a synthetic household and its personalized episodes.

This is the contract shared by the generator, the renderer/simulator, mapping,
grounding and the evaluators. Everything is plain data (dataclasses) that
serialises to JSON.

Frames: the ``map`` frame follows REP 103 — x forward, y left, z up, metres.
Habitat files use y-up; conversion lives in ``personal.world.habitat_format``.
Instance id 0 in a semantic image means "structure or nothing" (walls, floor,
ceiling, misses); objects are numbered from 1.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

Vec3 = tuple[float, float, float]
RGB = tuple[int, int, int]

SPLITS = ("easy", "medium", "hard")


@dataclass
class Box:
    """Axis-aligned box in the map frame."""

    center: Vec3
    size: Vec3  # full extents (sx, sy, sz), metres

    @property
    def min(self) -> Vec3:
        return tuple(c - s / 2 for c, s in zip(self.center, self.size))  # type: ignore[return-value]

    @property
    def max(self) -> Vec3:
        return tuple(c + s / 2 for c, s in zip(self.center, self.size))  # type: ignore[return-value]

    def distance_2d(self, x: float, y: float) -> float:
        """Horizontal distance from (x, y) to the box footprint (0 inside)."""
        # min / max inlined (the same arithmetic): episode generation calls this ~70,000 times per household
        c, s = self.center, self.size
        dx = max(c[0] - s[0] / 2 - x, 0.0, x - (c[0] + s[0] / 2))
        dy = max(c[1] - s[1] / 2 - y, 0.0, y - (c[1] + s[1] / 2))
        return (dx * dx + dy * dy) ** 0.5


@dataclass
class Floor:
    index: int
    z: float  # height of the floor surface
    height: float = 2.6  # floor-to-ceiling


@dataclass
class Room:
    room_id: str  # e.g. "room_3"
    name: str  # e.g. "kitchen", "child's bedroom"
    floor: int
    bounds: tuple[float, float, float, float]  # xmin, ymin, xmax, ymax

    def contains(self, x: float, y: float) -> bool:
        x0, y0, x1, y1 = self.bounds
        return x0 <= x <= x1 and y0 <= y <= y1


@dataclass
class Wall:
    box: Box
    rgb: RGB = (225, 220, 210)


@dataclass
class ObjectPart:
    """A coloured part of an object (handle, lid, strap...). Rendered with the
    owning object's instance id, so masks cover the whole object."""

    name: str  # "handle"
    color: str  # "black"
    rgb: RGB
    box: Box


@dataclass
class SceneObject:
    instance_id: int  # >= 1, value in the semantic image
    object_id: str  # "backpack_12" — PersONAL style
    category: str  # "backpack"
    color: str  # colour name used in captions, "red"
    rgb: RGB
    caption: str  # "the red backpack under the desk"
    room_id: str
    floor: int
    box: Box
    is_furniture: bool = False
    # fine-grained attributes (secondary colour, pattern, material...), free form
    attributes: dict[str, Any] = field(default_factory=dict)
    parts: list[ObjectPart] = field(default_factory=list)


@dataclass
class Scene:
    scene_id: str
    seed: int
    floors: list[Floor]
    rooms: list[Room]
    walls: list[Wall]
    objects: list[SceneObject]
    # rgb of floor and ceiling surfaces
    floor_rgb: RGB = (170, 150, 120)
    ceiling_rgb: RGB = (245, 245, 245)

    # -- lookups -----------------------------------------------------------
    def object(self, object_id: str) -> SceneObject:
        for o in self.objects:
            if o.object_id == object_id:
                return o
        raise KeyError(f"scene {self.scene_id!r} has no object {object_id!r}")

    def object_by_instance(self, instance_id: int) -> SceneObject:
        for o in self.objects:
            if o.instance_id == instance_id:
                return o
        raise KeyError(f"scene {self.scene_id!r} has no instance id {instance_id}")

    def room(self, room_id: str) -> Room:
        for r in self.rooms:
            if r.room_id == room_id:
                return r
        raise KeyError(f"scene {self.scene_id!r} has no room {room_id!r}")

    def room_at(self, x: float, y: float, floor: int = 0) -> Room | None:
        for r in self.rooms:
            if r.floor == floor and r.contains(x, y):
                return r
        return None

    def bounds(self) -> tuple[float, float, float, float]:
        xs = [v for r in self.rooms for v in (r.bounds[0], r.bounds[2])]
        ys = [v for r in self.rooms for v in (r.bounds[1], r.bounds[3])]
        return min(xs), min(ys), max(xs), max(ys)

    # -- (de)serialisation -------------------------------------------------
    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "Scene":
        def box(b):
            return Box(center=tuple(b["center"]), size=tuple(b["size"]))

        return cls(
            scene_id=d["scene_id"],
            seed=d["seed"],
            floors=[Floor(**f) for f in d["floors"]],
            rooms=[Room(**{**r, "bounds": tuple(r["bounds"])}) for r in d["rooms"]],
            walls=[Wall(box=box(w["box"]), rgb=tuple(w["rgb"])) for w in d["walls"]],
            objects=[
                SceneObject(
                    **{
                        **o,
                        "rgb": tuple(o["rgb"]),
                        "box": box(o["box"]),
                        "parts": [
                            ObjectPart(**{**p, "rgb": tuple(p["rgb"]), "box": box(p["box"])})
                            for p in o.get("parts", [])
                        ],
                    }
                )
                for o in d["objects"]
            ],
            floor_rgb=tuple(d.get("floor_rgb", (170, 150, 120))),
            ceiling_rgb=tuple(d.get("ceiling_rgb", (245, 245, 245))),
        )


@dataclass
class GoalViewPoint:
    """A pose from which a goal object is visible (map frame; PersONAL ``view_points``)."""

    position: Vec3  # on the floor
    yaw: float  # radians, about z
    iou: float | None = None  # the file's visibility score (may be absent in public files)


@dataclass
class ObjectGoal:
    """One goal instance as a PersONAL file gives it (``goals_by_category``), map frame."""

    object_name: str  # "washbasin_90": what an episode's ``target_object_ids`` name
    instance_id: int  # the value in the semantic image (the file's goal ``object_id``)
    category: str
    position: Vec3  # the object's centre (HM3D gives no extent)
    floor: int = 0
    view_points: list[GoalViewPoint] = field(default_factory=list)
    room_id: str | None = None
    room_name: str | None = None


@dataclass
class SceneAsset:
    """A scene as a simulator loads it from disk: the mesh (or stage config) and the scene
    dataset config. ``scene`` is our scene model when there is one (synthetic households);
    HM3D scenes have none."""

    scene_id: str
    path: str
    dataset_config: str = ""  # "" = habitat-sim's "default" dataset
    scene: Scene | None = None


@dataclass
class Episode:
    """One personalized query in a scene (PersONAL semantics, map frame)."""

    episode_id: str
    scene_id: str
    split: str  # easy | medium | hard
    people: list[str]
    # ownership matrix as person -> owned object_ids (hard split: shared objects)
    ownership: dict[str, list[str]]
    owner: str  # the person the query is about
    target_object_ids: list[str]  # several when the query says "one of X's ..."
    object_category: str
    query: str  # "Find Lisa's backpack."
    summary: str  # natural-language scene description of who owns what
    extracted_summary: list[str]  # one phrase per ownership relation
    description: list[str]  # captions of the target object(s)
    start_position: Vec3
    start_yaw: float  # radians, about z
    floor_id: int = 0
    geodesic_distance: float = float("nan")
    # from episode files: the targets' goal entries (positions, view points), the scene file
    # as the file names it (relative to the scenes folder) and its scene dataset config
    goals: list[ObjectGoal] = field(default_factory=list)
    scene_file: str = ""
    scene_dataset_config: str = ""

    def view_point_positions(self) -> list[Vec3]:
        """Map positions of every view point of the target goals (habitat's DTG references)."""
        return [tuple(v.position) for g in self.goals for v in g.view_points]

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "Episode":
        d = dict(d)
        d["start_position"] = tuple(d["start_position"])
        d["goals"] = [_goal_from_dict(g) for g in d.get("goals", [])]
        return cls(**d)


def _goal_from_dict(g: dict) -> ObjectGoal:
    g = dict(g)
    g["position"] = tuple(g["position"])
    g["view_points"] = [GoalViewPoint(tuple(v["position"]), v["yaw"], v.get("iou")) for v in g.get("view_points", [])]
    return ObjectGoal(**g)

"""A tiny hand-made household with known geometry, for tests and benches.

Floor 0 at z = 0, 2.6 m high. Walls 0.1 m thick, centred on room boundaries:

    y=4 +---------------+---------------+------+
        |  room_a       door (y 2.8-3.8) | closet (no door)
        |  table        |   room_b       +------+ y=2
        |  S (2,1)      |   box G (6,1)  |      |
    y=0 +---------------+---------------+------+
        x=0            x=4             x=8    x=10
"""
from __future__ import annotations

from personal.world.model import Box, Floor, Room, Scene, SceneObject, Wall

WALL_T = 0.1
WALL_H = 2.6
DOOR_Y = (2.8, 3.8)  # opening in the wall x = 4


def _wall_x(x: float, y0: float, y1: float) -> Wall:
    return Wall(Box((x, (y0 + y1) / 2, WALL_H / 2), (WALL_T, y1 - y0, WALL_H)))


def _wall_y(y: float, x0: float, x1: float) -> Wall:
    return Wall(Box(((x0 + x1) / 2, y, WALL_H / 2), (x1 - x0 + WALL_T, WALL_T, WALL_H)))


def _obj(iid: int, name: str, cat: str, room: str, center, size, rgb, furniture=False) -> SceneObject:
    return SceneObject(instance_id=iid, object_id=f"{cat}_{iid}", category=cat, color=name, rgb=rgb,
                       caption=f"the {name} {cat}", room_id=room, floor=0, box=Box(center, size),
                       is_furniture=furniture)


def two_room_scene() -> Scene:
    walls = [
        _wall_y(0.0, 0.0, 8.0), _wall_y(4.0, 0.0, 8.0),
        _wall_x(0.0, 0.0, 4.0), _wall_x(8.0, 0.0, 4.0),
        _wall_x(4.0, 0.0, DOOR_Y[0]), _wall_x(4.0, DOOR_Y[1], 4.0),
        # closed closet east of room_b
        _wall_y(0.0, 8.0, 10.0), _wall_y(2.0, 8.0, 10.0), _wall_x(10.0, 0.0, 2.0),
    ]
    objects = [
        _obj(1, "brown", "table", "room_a", (2.0, 3.2, 0.375), (1.0, 0.6, 0.75), (120, 80, 40), furniture=True),
        _obj(2, "red", "box", "room_b", (6.0, 1.0, 0.2), (0.4, 0.4, 0.4), (200, 30, 30)),
        _obj(3, "blue", "rug", "room_a", (1.0, 1.0, 0.005), (0.8, 0.8, 0.01), (30, 30, 200)),
        _obj(4, "green", "lamp", "room_b", (7.5, 3.5, 1.8), (0.2, 0.2, 0.2), (30, 200, 30)),  # above the body band
    ]
    rooms = [
        Room("room_a", "living room", 0, (0.0, 0.0, 4.0, 4.0)),
        Room("room_b", "kitchen", 0, (4.0, 0.0, 8.0, 4.0)),
        Room("room_c", "closet", 0, (8.0, 0.0, 10.0, 2.0)),
    ]
    return Scene(scene_id="toy_two_rooms", seed=0, floors=[Floor(0, 0.0, WALL_H)], rooms=rooms, walls=walls,
                 objects=objects)

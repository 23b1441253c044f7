"""ROS messages -> Foxglove schemas (``foxglove.messages``) for the live view.

Every function reads a ROS message by attribute only (no rclpy import), so the conversions
are testable with plain objects. Images keep their pixels (depth becomes 16UC1 millimetres,
which Foxglove's Image panel colours); occupancy grids become ``Grid`` with one uint8 field
(``occupancy``: 0 free .. 100 occupied, 255 unknown) and the query similarity heat map one
float32 field (``similarity``: cosine, NaN unknown); markers become ``SceneUpdate`` entities.
"""
from __future__ import annotations

import math
import time
from typing import Any, Iterable, Sequence

import numpy as np
from foxglove import messages as fm

# sensor_msgs/PointField datatype -> Foxglove PackedElementFieldNumericType
_POINT_TYPES = {1: fm.PackedElementFieldNumericType.Int8, 2: fm.PackedElementFieldNumericType.Uint8,
                3: fm.PackedElementFieldNumericType.Int16, 4: fm.PackedElementFieldNumericType.Uint16,
                5: fm.PackedElementFieldNumericType.Int32, 6: fm.PackedElementFieldNumericType.Uint32,
                7: fm.PackedElementFieldNumericType.Float32, 8: fm.PackedElementFieldNumericType.Float64}
# visualization_msgs/Marker types used by the project's nodes
_SPHERE, _CUBE, _LINE_STRIP, _LINE_LIST, _SPHERE_LIST, _POINTS, _TEXT, _ARROW, _CUBE_LIST = 2, 1, 4, 5, 7, 8, 9, 0, 6
_DELETE, _DELETEALL = 2, 3
# one colour per grounding method (same order as the grounding node's markers)
METHOD_COLOURS = [(0.9, 0.2, 0.2), (0.2, 0.6, 0.9), (0.95, 0.75, 0.1), (0.3, 0.8, 0.3), (0.7, 0.3, 0.9), (0.9, 0.5, 0.1)]


def timestamp(stamp: Any = None) -> fm.Timestamp:
    """A builtin_interfaces/Time as a Foxglove Timestamp; None = now."""
    if stamp is None:
        now = time.time_ns()
        return fm.Timestamp(sec=now // 1_000_000_000, nsec=now % 1_000_000_000)
    return fm.Timestamp(sec=int(stamp.sec), nsec=int(stamp.nanosec))


def pose(position: Any = None, orientation: Any = None) -> fm.Pose:
    p = position
    q = orientation
    return fm.Pose(position=fm.Vector3(x=float(p.x), y=float(p.y), z=float(p.z)) if p is not None else fm.Vector3(x=0, y=0, z=0),
                   orientation=fm.Quaternion(x=float(q.x), y=float(q.y), z=float(q.z), w=float(q.w)) if q is not None
                   else fm.Quaternion(x=0, y=0, z=0, w=1))


def yaw_pose(x: float, y: float, yaw: float, z: float = 0.0) -> fm.Pose:
    return fm.Pose(position=fm.Vector3(x=float(x), y=float(y), z=float(z)),
                   orientation=fm.Quaternion(x=0.0, y=0.0, z=math.sin(yaw / 2), w=math.cos(yaw / 2)))


def image(msg: Any) -> fm.RawImage:
    """sensor_msgs/Image -> RawImage; depth (32FC1 metres) becomes 16UC1 millimetres."""
    encoding, data, step = msg.encoding, bytes(msg.data), int(msg.step)
    if encoding == "32FC1":
        depth = np.frombuffer(data, dtype=np.float32).reshape(msg.height, -1)[:, : msg.width]
        mm = np.clip(np.nan_to_num(depth, nan=0.0, posinf=0.0, neginf=0.0) * 1000.0, 0, 65535).astype("<u2")
        encoding, data, step = "16UC1", mm.tobytes(), int(msg.width) * 2
    return fm.RawImage(timestamp=timestamp(msg.header.stamp), frame_id=msg.header.frame_id, width=int(msg.width),
                       height=int(msg.height), encoding=encoding, step=step, data=data)


def camera_calibration(msg: Any) -> fm.CameraCalibration:
    return fm.CameraCalibration(timestamp=timestamp(msg.header.stamp), frame_id=msg.header.frame_id, width=int(msg.width),
                                height=int(msg.height), distortion_model=msg.distortion_model or "plumb_bob",
                                D=[float(v) for v in msg.d], K=[float(v) for v in msg.k], R=[float(v) for v in msg.r],
                                P=[float(v) for v in msg.p])


def point_cloud(msg: Any) -> fm.PointCloud:
    """sensor_msgs/PointCloud2 -> PointCloud: the same packed bytes, fields translated."""
    fields = [fm.PackedElementField(name=f.name, offset=int(f.offset), type=_POINT_TYPES.get(int(f.datatype), fm.PackedElementFieldNumericType.Unknown))
              for f in msg.fields]
    return fm.PointCloud(timestamp=timestamp(msg.header.stamp), frame_id=msg.header.frame_id, pose=pose(),
                         point_stride=int(msg.point_step), fields=fields, data=bytes(msg.data))


def _grid(header: Any, info: Any, name: str, values: np.ndarray) -> fm.Grid:
    kind = {np.dtype("uint8"): fm.PackedElementFieldNumericType.Uint8,
            np.dtype("<f4"): fm.PackedElementFieldNumericType.Float32}[values.dtype]
    o = info.origin
    return fm.Grid(timestamp=timestamp(header.stamp), frame_id=header.frame_id, pose=pose(o.position, o.orientation),
                   column_count=int(info.width), cell_size=fm.Vector2(x=float(info.resolution), y=float(info.resolution)),
                   row_stride=int(info.width) * values.itemsize, cell_stride=values.itemsize,
                   fields=[fm.PackedElementField(name=name, offset=0, type=kind)], data=values.tobytes())


def occupancy_grid(msg: Any) -> fm.Grid:
    """nav_msgs/OccupancyGrid -> Grid (``occupancy`` uint8: 0..100, unknown 255)."""
    cells = np.asarray(msg.data, dtype=np.int16).astype(np.uint8)  # -1 -> 255
    return _grid(msg.header, msg.info, "occupancy", cells)


def similarity_grid(msg: Any) -> fm.Grid:
    """The grounding node's ``grounding/similarity`` (OccupancyGrid, 0..100 = cosine -1..1, -1 unknown)
    -> Grid (``similarity`` float32 cosine, NaN where the map is unobserved)."""
    raw = np.asarray(msg.data, dtype=np.float32)
    cos = np.where(raw < 0, np.nan, raw / 50.0 - 1.0).astype("<f4")
    return _grid(msg.header, msg.info, "similarity", cos)


def transforms(msg: Any) -> fm.FrameTransforms:
    """tf2_msgs/TFMessage -> FrameTransforms."""
    out = []
    for t in msg.transforms:
        tr, q = t.transform.translation, t.transform.rotation
        out.append(fm.FrameTransform(timestamp=timestamp(t.header.stamp), parent_frame_id=t.header.frame_id,
                                     child_frame_id=t.child_frame_id,
                                     translation=fm.Vector3(x=float(tr.x), y=float(tr.y), z=float(tr.z)),
                                     rotation=fm.Quaternion(x=float(q.x), y=float(q.y), z=float(q.z), w=float(q.w))))
    return fm.FrameTransforms(transforms=out)


def _colour(c: Any) -> fm.Color:
    return fm.Color(r=float(c.r), g=float(c.g), b=float(c.b), a=float(c.a))


def _v3(p: Any) -> fm.Vector3:
    return fm.Vector3(x=float(p.x), y=float(p.y), z=float(p.z))


def _p3(p: Any) -> fm.Point3:
    return fm.Point3(x=float(p.x), y=float(p.y), z=float(p.z))


def marker_entity(m: Any) -> fm.SceneEntity:
    """One visualization_msgs/Marker (ADD) -> a SceneEntity with id ``<ns>/<id>``."""
    kw: dict[str, list] = {"spheres": [], "cubes": [], "lines": [], "texts": [], "arrows": []}
    p, colour, t = pose(m.pose.position, m.pose.orientation), _colour(m.color), int(m.type)
    if t == _SPHERE:
        kw["spheres"].append(fm.SpherePrimitive(pose=p, size=_v3(m.scale), color=colour))
    elif t == _CUBE:
        kw["cubes"].append(fm.CubePrimitive(pose=p, size=_v3(m.scale), color=colour))
    elif t in (_SPHERE_LIST, _POINTS, _CUBE_LIST):
        cls = fm.CubePrimitive if t == _CUBE_LIST else fm.SpherePrimitive
        key = "cubes" if t == _CUBE_LIST else "spheres"
        size = fm.Vector3(x=float(m.scale.x), y=float(m.scale.y or m.scale.x), z=float(m.scale.z or m.scale.x))
        for i, q in enumerate(m.points):
            c = _colour(m.colors[i]) if i < len(m.colors) else colour
            kw[key].append(cls(pose=fm.Pose(position=_v3(q), orientation=fm.Quaternion(x=0, y=0, z=0, w=1)), size=size, color=c))
    elif t in (_LINE_STRIP, _LINE_LIST):
        kind = fm.LinePrimitiveLineType.LineStrip if t == _LINE_STRIP else fm.LinePrimitiveLineType.LineList
        kw["lines"].append(fm.LinePrimitive(type=kind, pose=p, thickness=float(m.scale.x), scale_invariant=False,
                                            points=[_p3(q) for q in m.points], color=colour))
    elif t == _TEXT:
        kw["texts"].append(fm.TextPrimitive(pose=p, billboard=True, font_size=float(m.scale.z), scale_invariant=False,
                                            color=colour, text=m.text))
    elif t == _ARROW:
        kw["arrows"].append(fm.ArrowPrimitive(pose=p, shaft_length=float(m.scale.x) * 0.8, shaft_diameter=float(m.scale.y),
                                              head_length=float(m.scale.x) * 0.2, head_diameter=float(m.scale.z), color=colour))
    return fm.SceneEntity(timestamp=timestamp(m.header.stamp), frame_id=m.header.frame_id, id=f"{m.ns}/{m.id}", **kw)


def marker_array(msg: Any) -> fm.SceneUpdate:
    """visualization_msgs/MarkerArray -> SceneUpdate (DELETEALL clears the scene first)."""
    deletions, entities = [], []
    for m in msg.markers:
        if int(m.action) == _DELETEALL:
            deletions.append(fm.SceneEntityDeletion(timestamp=timestamp(m.header.stamp), type=fm.SceneEntityDeletionType.All, id=""))
        elif int(m.action) == _DELETE:
            deletions.append(fm.SceneEntityDeletion(timestamp=timestamp(m.header.stamp),
                                                    type=fm.SceneEntityDeletionType.MatchingId, id=f"{m.ns}/{m.id}"))
        else:
            entities.append(marker_entity(m))
    return fm.SceneUpdate(deletions=deletions, entities=entities)


def predictions(results: Sequence[Any], frame_id: str = "map", stamp: Any = None) -> fm.SceneUpdate:
    """The GroundingResults of one request -> ranked spheres with ``method #rank score`` labels
    (rank 1 largest), one entity per method; the previous request's entities are cleared."""
    ts = timestamp(stamp)
    entities = []
    for i, r in enumerate(sorted(results, key=lambda r: int(r.index))):
        if not r.ok:
            continue
        red, green, blue = METHOD_COLOURS[int(r.index) % len(METHOD_COLOURS)]
        spheres, texts = [], []
        for rank, (pt, score) in enumerate(zip(r.points, list(r.scores) + [math.nan] * len(r.points))):
            size = 0.45 if rank == 0 else 0.3
            spheres.append(fm.SpherePrimitive(pose=yaw_pose(pt.x, pt.y, 0.0, 0.3), size=fm.Vector3(x=size, y=size, z=size),
                                              color=fm.Color(r=red, g=green, b=blue, a=1.0 if rank == 0 else 0.55)))
            texts.append(fm.TextPrimitive(pose=yaw_pose(pt.x, pt.y, 0.0, 0.75 + 0.25 * i), billboard=True, font_size=14.0,
                                          scale_invariant=True, color=fm.Color(r=red, g=green, b=blue, a=1.0),
                                          text=f"{r.method} #{rank + 1} {score:.2f}"))
        entities.append(fm.SceneEntity(timestamp=ts, frame_id=frame_id, id=f"prediction/{r.method}", spheres=spheres, texts=texts,
                                       metadata=[fm.KeyValuePair(key="episode", value=r.episode_id),
                                                 fm.KeyValuePair(key="owner", value=r.owner),
                                                 fm.KeyValuePair(key="phrases", value="; ".join(r.phrases))]))
    clear = fm.SceneEntityDeletion(timestamp=ts, type=fm.SceneEntityDeletionType.All, id="")
    return fm.SceneUpdate(deletions=[clear], entities=entities)


def memory_objects(summary: Any, stamp: Any = None) -> fm.SceneUpdate:
    """A MemorySummary -> one labelled cube per object the memory has seen, at its last-seen point
    (``"Lily's black backpack"``, owners with provenance); objects never seen are listed in the
    entity metadata of ``memory/unseen``. The previous summary's entities are cleared."""
    ts = timestamp(stamp)
    entities, unseen = [], []
    for obj in summary.objects:
        owners = ", ".join(f"{o} ({p})" for o, p in zip(obj.owners, list(obj.provenance) + [""] * len(obj.owners)))
        label = f"{obj.description}" + (f" — {owners}" if owners else " — nobody's")
        if not obj.seen:
            unseen.append(label)
            continue
        pt = obj.last_seen.point
        owned = bool(obj.owners)
        colour = fm.Color(r=0.2 if owned else 0.6, g=0.75 if owned else 0.6, b=0.35 if owned else 0.6, a=0.9)
        entities.append(fm.SceneEntity(
            timestamp=ts, frame_id=obj.last_seen.header.frame_id or "map", id=f"memory/object/{int(obj.id)}",
            cubes=[fm.CubePrimitive(pose=yaw_pose(pt.x, pt.y, 0.0, max(float(pt.z), 0.15)),
                                    size=fm.Vector3(x=0.25, y=0.25, z=0.25), color=colour)],
            texts=[fm.TextPrimitive(pose=yaw_pose(pt.x, pt.y, 0.0, max(float(pt.z), 0.15) + 0.45), billboard=True,
                                    font_size=13.0, scale_invariant=True, color=colour, text=label)],
            metadata=[fm.KeyValuePair(key="category", value=obj.category), fm.KeyValuePair(key="owners", value=owners)]))
    entities.append(fm.SceneEntity(timestamp=ts, frame_id="map", id="memory/unseen", metadata=[
        fm.KeyValuePair(key="household", value=summary.household), fm.KeyValuePair(key="people", value=", ".join(summary.people)),
        *[fm.KeyValuePair(key=f"unseen {i + 1}", value=label) for i, label in enumerate(unseen)]]))
    clear = fm.SceneEntityDeletion(timestamp=ts, type=fm.SceneEntityDeletionType.All, id="")
    return fm.SceneUpdate(deletions=[clear], entities=entities)


def agent_pose(x: float, y: float, yaw: float, frame_id: str = "map", stamp: Any = None) -> fm.PoseInFrame:
    return fm.PoseInFrame(timestamp=timestamp(stamp), frame_id=frame_id, pose=yaw_pose(x, y, yaw))


def agent_path(points: Iterable[tuple[float, float, float]], frame_id: str = "map", stamp: Any = None) -> fm.PosesInFrame:
    return fm.PosesInFrame(timestamp=timestamp(stamp), frame_id=frame_id, poses=[yaw_pose(x, y, yaw) for x, y, yaw in points])


def base_transform(x: float, y: float, yaw: float, parent: str = "map", child: str = "base_link", stamp: Any = None) -> fm.FrameTransforms:
    return fm.FrameTransforms(transforms=[fm.FrameTransform(
        timestamp=timestamp(stamp), parent_frame_id=parent, child_frame_id=child,
        translation=fm.Vector3(x=float(x), y=float(y), z=0.0),
        rotation=fm.Quaternion(x=0.0, y=0.0, z=math.sin(yaw / 2), w=math.cos(yaw / 2)))])


def log(text: str, name: str, level: str = "info", stamp: Any = None) -> fm.Log:
    levels = {"info": fm.LogLevel.Info, "warning": fm.LogLevel.Warning, "error": fm.LogLevel.Error}
    return fm.Log(timestamp=timestamp(stamp), level=levels.get(level, fm.LogLevel.Info), message=text, name=name, file="", line=0)


def verdict_text(msg: Any) -> str:
    """An AivVerdict as one line: decision, step, vote, attributes and their status."""
    attrs = ", ".join(f"{n}={e}:{s}" for n, e, s in zip(msg.attribute_names, msg.attribute_expected, msg.attribute_status))
    head = f"episode {msg.episode_index} step {msg.step}: {msg.decision}" + (" (stop)" if msg.stop else "")
    return f"{head} vote {msg.vote:+.2f}" + (f" [{attrs}]" if attrs else "") + (f" - {msg.reason}" if msg.reason else "") \
        + (f" ERROR {msg.error}" if msg.error else "")

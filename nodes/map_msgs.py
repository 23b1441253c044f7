"""ROS messages of the maps, shared by the nodes that publish them (mapping, navigation, POG
evaluator): the library hands over plain fields and arrays, these fill the message types."""
from __future__ import annotations

import numpy as np
from nav_msgs.msg import OccupancyGrid
from sensor_msgs.msg import PointCloud2, PointField
from std_msgs.msg import Float32MultiArray, MultiArrayDimension
from visualization_msgs.msg import Marker, MarkerArray

from personal.interfaces.convert import packed


def stamp_header(msg, frame_id: str, stamp):
    """``msg`` with header frame ``frame_id`` and ``stamp`` (a builtin_interfaces Time, or ns since the epoch)."""
    msg.header.frame_id = frame_id
    if isinstance(stamp, (int, np.integer)):
        msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(int(stamp), 1_000_000_000)
    else:
        msg.header.stamp = stamp
    return msg


def occupancy_grid(fields: dict, data, frame_id: str, stamp, load_time: bool = False) -> OccupancyGrid:
    """From ``OccupancyGrid.to_occupancy_grid_msg_fields()``; ``data`` the cells, already packed
    (array.array: assigning a list/ndarray is much slower)."""
    msg = stamp_header(OccupancyGrid(), frame_id, stamp)
    msg.info.resolution = fields["resolution"]
    msg.info.width, msg.info.height = fields["width"], fields["height"]
    msg.info.origin.position.x, msg.info.origin.position.y, msg.info.origin.position.z = fields["origin"]["position"]
    msg.info.origin.orientation.w = 1.0
    if load_time:
        msg.info.map_load_time = msg.header.stamp
    msg.data = data
    return msg


def frontier_markers(frontiers, frame_id: str, stamp) -> MarkerArray:
    """One orange sphere per frontier (size grows with the frontier's), after a DELETEALL."""
    arr = MarkerArray()
    clear = Marker()
    clear.action = Marker.DELETEALL
    arr.markers.append(clear)
    for i, fr in enumerate(frontiers):
        m = stamp_header(Marker(), frame_id, stamp)
        m.ns, m.id, m.type, m.action = "frontiers", i, Marker.SPHERE, Marker.ADD
        m.pose.position.x, m.pose.position.y, m.pose.position.z = fr.centroid[0], fr.centroid[1], 0.1
        m.pose.orientation.w = 1.0
        s = float(min(1.0, 0.1 + 0.01 * fr.size))
        m.scale.x = m.scale.y = m.scale.z = s
        m.color.r, m.color.g, m.color.b, m.color.a = 1.0, 0.5, 0.0, 0.8
        arr.markers.append(m)
    return arr


GROUNDING_COLOURS = [(0.9, 0.2, 0.2), (0.2, 0.6, 0.9), (0.95, 0.75, 0.1), (0.3, 0.8, 0.3), (0.7, 0.3, 0.9), (0.9, 0.5, 0.1)]


def grounding_markers(outcomes, frame_id: str, stamp) -> MarkerArray:
    """Per method (one colour each): its ranked predictions as spheres (the first larger) and a label
    with the top score above the first, after a DELETEALL."""
    arr = MarkerArray()
    clear = Marker()
    clear.action = Marker.DELETEALL
    arr.markers.append(clear)
    for i, o in enumerate(outcomes):
        if o.grounding is None:
            continue
        r, g, b = GROUNDING_COLOURS[i % len(GROUNDING_COLOURS)]
        for rank, (x, y) in enumerate(o.grounding.points):
            m = stamp_header(Marker(), frame_id, stamp)
            m.ns, m.id, m.type, m.action = o.method, rank, Marker.SPHERE, Marker.ADD
            m.pose.position.x, m.pose.position.y, m.pose.position.z = float(x), float(y), 0.3
            m.pose.orientation.w = 1.0
            m.scale.x = m.scale.y = m.scale.z = 0.4 if rank == 0 else 0.25
            m.color.r, m.color.g, m.color.b, m.color.a = r, g, b, 1.0 if rank == 0 else 0.5
            arr.markers.append(m)
        t = stamp_header(Marker(), frame_id, stamp)
        t.ns, t.id, t.type, t.action = o.method + "/label", 0, Marker.TEXT_VIEW_FACING, Marker.ADD
        x, y = o.grounding.points[0]
        t.pose.position.x, t.pose.position.y, t.pose.position.z = float(x), float(y), 0.8
        t.pose.orientation.w = 1.0
        t.scale.z = 0.25
        t.color.r = t.color.g = t.color.b = t.color.a = 1.0
        t.text = f"{o.method} {o.grounding.scores[0]:.2f}" if o.grounding.scores else o.method
        arr.markers.append(t)
    return arr


def xyz_cloud(pts: np.ndarray, frame_id: str, stamp) -> PointCloud2:
    """An unorganised float32 x/y/z cloud of the (N, 3) float32 ``pts``."""
    msg = stamp_header(PointCloud2(), frame_id, stamp)
    msg.height, msg.width = 1, len(pts)
    msg.fields = [PointField(name=n, offset=4 * i, datatype=PointField.FLOAT32, count=1) for i, n in enumerate("xyz")]
    msg.is_bigendian, msg.point_step, msg.row_step, msg.is_dense = False, 12, 12 * len(pts), True
    msg.data = packed("B", pts)
    return msg


def float_array(layout, data) -> Float32MultiArray:
    """A feature map on the wire: ``layout`` (label, size, stride) triples, ``data`` packed floats."""
    msg = Float32MultiArray()
    msg.layout.dim = [MultiArrayDimension(label=lab, size=int(size), stride=int(stride)) for lab, size, stride in layout]
    msg.data = data
    return msg

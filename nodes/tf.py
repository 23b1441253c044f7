"""TF for the nodes: one lookup API whether or not ``tf2_ros`` is installed.

- ``TfLookup(node)`` listens to ``/tf`` and ``/tf_static`` (``tf2_msgs/msg/TFMessage``). On a full
  ROS install it is ``tf2_ros.Buffer`` + ``TransformListener``; on the pip-only ROS it is
  ``personal.tf.TransformBuffer`` fed through ``subscribe`` (tf2_msgs built by the bootstrap with
  the upstream definition, so it matches a robot's TF publishers). ``lookup_matrix(target, source,
  stamp_ns)`` returns the 4x4 ``T_target_source`` or raises ``personal.tf.TfError`` (tf2_ros's
  lookup, connectivity and extrapolation exceptions are translated to it).
- ``TfBroadcaster(node, static=False)`` publishes ``TransformStamped`` lists on ``/tf`` (or
  ``/tf_static``, transient local), as tf2_ros's broadcasters do on the wire.

QoS as tf2: ``/tf`` reliable, volatile, depth 100; ``/tf_static`` reliable, transient local, depth 100.
"""
from __future__ import annotations

import numpy as np
from geometry_msgs.msg import TransformStamped
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from personal.robot.extrinsics import quaternion_from_matrix
from personal.tf import TfError, TransformBuffer, matrix
from nodes.lifecycle import subscribe

TF_QOS = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)
TF_STATIC_QOS = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)


def _tf2_ros():
    try:
        import tf2_ros  # a full ROS install; not on PyPI
    except ImportError:
        return None
    return tf2_ros


class TfLookup:
    def __init__(self, node: Node, cache_time_s: float = 10.0, prefer_tf2_ros: bool = True) -> None:
        self.node = node
        tf2_ros = _tf2_ros() if prefer_tf2_ros else None
        if tf2_ros is not None:
            from rclpy.duration import Duration

            self.backend = "tf2_ros"
            self._tf2 = tf2_ros
            self.buffer = tf2_ros.Buffer(cache_time=Duration(seconds=cache_time_s))
            self._listener = tf2_ros.TransformListener(self.buffer, node)
        else:
            from tf2_msgs.msg import TFMessage

            self.backend = "personal.tf"
            self.buffer = TransformBuffer(cache_time_s)
            subscribe(node, TFMessage, "/tf", lambda m: self._add(m, False), TF_QOS)
            subscribe(node, TFMessage, "/tf_static", lambda m: self._add(m, True), TF_STATIC_QOS)

    def _add(self, msg, static: bool) -> None:
        for err in self.buffer.add_message(msg, static):
            self.node.get_logger().error(f"{'/tf_static' if static else '/tf'}: transform rejected: {err}",
                                         throttle_duration_sec=5.0)

    def lookup_matrix(self, target: str, source: str, stamp_ns: int = 0) -> np.ndarray:
        """T_target_source at ``stamp_ns`` (0 = the latest available); raises TfError."""
        if self.backend == "personal.tf":
            return self.buffer.lookup(target, source, stamp_ns)
        from rclpy.time import Time

        tf2 = self._tf2
        try:
            ts = self.buffer.lookup_transform(target, source, Time(nanoseconds=stamp_ns))
        except (tf2.LookupException, tf2.ConnectivityException, tf2.ExtrapolationException) as exc:
            raise TfError(f"{type(exc).__name__}: {exc}") from None
        t, q = ts.transform.translation, ts.transform.rotation
        return matrix((t.x, t.y, t.z), (q.x, q.y, q.z, q.w))


def transform_stamped(parent: str, child: str, T: np.ndarray, stamp=None) -> TransformStamped:
    """parent -> child as ``T_parent_child`` (stamp: builtin_interfaces/Time, or set later)."""
    msg = TransformStamped()
    msg.header.frame_id, msg.child_frame_id = parent, child
    if stamp is not None:
        msg.header.stamp = stamp
    msg.transform.translation.x, msg.transform.translation.y, msg.transform.translation.z = (float(v) for v in T[:3, 3])
    r = msg.transform.rotation
    r.x, r.y, r.z, r.w = (float(v) for v in quaternion_from_matrix(T))
    return msg


class TfBroadcaster:
    def __init__(self, node: Node, static: bool = False) -> None:
        from tf2_msgs.msg import TFMessage

        self._cls = TFMessage
        self.pub = node.create_publisher(TFMessage, "/tf_static" if static else "/tf", TF_STATIC_QOS if static else TF_QOS)

    def send(self, transforms: list[TransformStamped]) -> None:
        self.pub.publish(self._cls(transforms=transforms))


__all__ = ["TfBroadcaster", "TfError", "TfLookup", "transform_stamped"]

"""Household memory node: one home's people, objects, ownership history and preferences
(personal.memory), kept in ``<memory_dir>/<household>.sqlite`` so it survives restarts.

Services: ``memory/tell`` (personal/srv/MemoryTell: a plain statement such as "Tom gave his lamp
to Anna", read by the builtin rules or an LLM) and ``memory/query`` (personal/srv/MemoryQuery: a
person's objects, objects matching a description). Publishes ``memory/summary``
(personal/msg/MemorySummary, transient local), again after every change: its own, and every write
another process commits to the file (the assistant records what FindObject found and the
candidates it rejected), noticed within ``watch_s``. With ``seed_from_episode`` an empty memory
learns the simulator episode's summary (``episode``) once, as from the ``summary`` parameter.

A memory file that cannot be read (damaged, not a memory, a newer schema) stops the node with
an error naming the file; it is never replaced by an empty memory.
"""
from __future__ import annotations

from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from personal.interfaces.convert import from_dict
from personal.memory.desk import MemoryDesk, open_household
from personal.msg import EpisodeDescriptor, MemoryObject, MemorySummary
from personal.srv import MemoryQuery, MemoryTell
from nodes.lifecycle import run_node, serve, subscribe

LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)


def memory_object(d: dict) -> MemoryObject:
    msg = from_dict(MemoryObject, {k: v for k, v in d.items() if k != "last_seen"})
    seen = d.get("last_seen")
    if seen:
        msg.last_seen.header.frame_id = seen["frame"]
        msg.last_seen.header.stamp.sec = int(seen["t"])
        msg.last_seen.header.stamp.nanosec = int((seen["t"] % 1) * 1e9)
        msg.last_seen.point.x, msg.last_seen.point.y, msg.last_seen.point.z = seen["x"], seen["y"], seen["z"]
    return msg


class MemoryNode(Node):
    def __init__(self, **kwargs) -> None:
        super().__init__("memory", **kwargs)
        d = lambda name, default: self.declare_parameter(name, default).value  # noqa: E731
        household = d("household", "home")
        memory = open_household(d("memory_dir", "memory"), household)
        self.desk = MemoryDesk(memory, household, d("reader", "builtin"))
        seeded = self.desk.seed(d("summary", ""))
        self.pub = self.create_publisher(MemorySummary, "memory/summary", LATCHED)
        serve(self, MemoryTell, "memory/tell", self._on_tell)
        serve(self, MemoryQuery, "memory/query", self._on_query)
        if d("seed_from_episode", False):
            subscribe(self, EpisodeDescriptor, "episode", self._on_episode, LATCHED)
        self._version = memory.data_version()
        self.create_timer(float(d("watch_s", 0.5)), self._notice_writes)
        self._publish()
        self.get_logger().info(f"memory of household {household!r} at {memory.path}: {len(memory.people())} people, "
                               f"{len(memory.objects())} objects" + (f" ({seeded} learned from the summary)" if seeded else ""))

    def _on_tell(self, request: MemoryTell.Request, response: MemoryTell.Response) -> MemoryTell.Response:
        answer = self.desk.tell(request.statement, request.speaker)
        response.success, response.message = answer["success"], answer["message"]
        response.effects, response.unresolved = answer["effects"], answer["unresolved"]
        if answer["effects"]:
            self._publish()
        self.get_logger().info(f"told {request.statement!r}: {answer['message']}")
        return response

    def _on_query(self, request: MemoryQuery.Request, response: MemoryQuery.Response) -> MemoryQuery.Response:
        found = self.desk.query(request.person, request.description, request.at)
        response.objects = [memory_object(o) for o in found]
        response.success, response.message = True, f"{len(found)} objects"
        return response

    def _on_episode(self, msg: EpisodeDescriptor) -> None:
        seeded = self.desk.seed(msg.summary)
        if seeded:
            self.get_logger().info(f"{seeded} objects learned from episode {msg.episode_id}'s summary")
            self._publish()

    def _notice_writes(self) -> None:
        """Republish after another process wrote to the file (the summary must never lag it)."""
        version = self.desk.memory.data_version()
        if version != self._version:
            self._version = version
            self._publish()

    def _publish(self) -> None:
        snap = self.desk.snapshot()
        self.pub.publish(MemorySummary(household=snap["household"], people=snap["people"], summary=snap["summary"],
                                       objects=[memory_object(o) for o in snap["objects"]], statements=snap["statements"]))


def main(args=None) -> None:
    run_node(MemoryNode, args)


if __name__ == "__main__":
    main()

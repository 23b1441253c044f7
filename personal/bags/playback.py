"""The bag player's parameters and timing without ROS (nodes/bag_player_node.py is its rclpy shell):
which topics are played, with which QoS, and when each message is due (long log-time gaps shortened)."""
from __future__ import annotations

# the bag player node's parameters: {name: (default, description)}
PARAMETERS = {
    "bag": ("", "rosbag2 MCAP bag directory"),
    "rate": (1.0, "playback rate: 1.0 = real time, 0 = as fast as possible"),
    "clock": (False, "publish /clock from the bag's log times"),
    "topics": ([""], "topics to play; empty = all"),
    "remap": ([""], "remaps, [\"from:=to\", ...]"),
    "wait_subscribers": (0.0, "s to wait for a subscriber on every played topic before starting"),
    "validate": (True, "deserialise each message first and skip (and count) those that do not decode"),
    "reliable": (False, "publish every topic reliably, whatever QoS was recorded (exact replays)"),
    "latched_first": (False, "publish the first message of every transient-local topic before the timed stream"),
    "subscribed_only": (False, "play only the topics some node subscribes to (after wait_subscribers)"),
    "done_service": ("", "std_srvs/Trigger service called once the bag is played and drained (e.g. map/save)"),
    "flush_service": ("", "std_srvs/Trigger service called once the bag is played and acknowledged, before waiting "
                          "for progress_topic: tells the consumer no more input is coming (e.g. map/flush)"),
    "drain_s": (2.0, "s to wait after playing (with idle_topic: s without a message there) before done_service"),
    "idle_topic": ("", "a consumer's topic whose messages mean it is still working (never played from the bag)"),
    "idle_type": ("personal/msg/MapStatus", "message type of idle_topic"),
    "progress_topic": ("", "std_msgs/Header of the newest input the consumer handled; waited for before draining"),
    "progress_timeout_s": (600.0, "s to wait at most for progress_topic to reach the newest played stamp"),
    "max_gap_s": (10.0, "a log-time gap longer than this is shortened to it (0 = keep every gap)"),
}


def absolute(topic: str) -> str:
    """``topic`` as an absolute name (bag topics are); "" stays ""."""
    return ("/" + topic.lstrip("/")) if topic else ""


def played_topics(wanted: list[str], recorded: list[str], remaps: dict[str, str], idle_topic: str) -> list[str]:
    """The bag topics to play: ``wanted`` (empty strings ignored; none = all ``recorded``), except the one
    that would land on ``idle_topic`` (the consumer's own topic)."""
    idle = absolute(idle_topic)
    return [t for t in ([w for w in wanted if w] or list(recorded)) if remaps.get(t, t) != idle]


def replay_qos(recorded: dict, reliable: bool) -> tuple[int, bool, bool]:
    """(depth, reliable, transient local) of a topic recorded with QoS ``recorded`` (its first profile);
    ``reliable`` forces reliability with room for unacknowledged samples."""
    depth = max(int(recorded.get("depth", 10) or 10), 500 if reliable else 10)
    return depth, reliable or recorded.get("reliability") != "best_effort", recorded.get("durability") == "transient_local"


class PlaybackClock:
    """When each message is due, in wall seconds after the first one: log time / ``rate``, with a
    log-time gap longer than ``max_gap_s`` (a paused recording, a damaged stamp) shortened to it."""

    def __init__(self, rate: float, max_gap_s: float) -> None:
        self.rate, self.max_gap_s = rate, max_gap_s
        self.t0: int | None = None
        self.prev: int | None = None
        self.gaps_skipped = 0

    def advance(self, log_ns: int) -> float:
        """Take the next message's log time; the gap before it that was shortened, s (0.0: none)."""
        gap = 0.0
        if self.t0 is None:
            self.t0 = log_ns
        elif self.max_gap_s > 0 and (log_ns - self.prev) / 1e9 > self.max_gap_s:
            gap = (log_ns - self.prev) / 1e9
            self.t0 += log_ns - self.prev - int(self.max_gap_s * 1e9)
            self.gaps_skipped += 1
        self.prev = log_ns if self.prev is None else max(self.prev, log_ns)
        return gap

    def due_s(self, log_ns: int) -> float | None:
        """Wall seconds after the first message when this one is due; None at rate 0 (at once)."""
        return (log_ns - self.t0) / 1e9 / self.rate if self.rate > 0 else None


class SubscriberSettle:
    """``subscribed_only``: the set of subscribed topics is taken once it is not empty and has not
    changed for ``settle`` s (discovery shows a consumer's subscriptions one by one)."""

    def __init__(self, settle: float, now: float) -> None:
        self.settle, self.seen, self.changed = settle, frozenset(), now

    def settled(self, seen: frozenset, now: float) -> bool:
        if seen != self.seen:
            self.seen, self.changed = seen, now
            return False
        return bool(seen) and now - self.changed >= self.settle

"""The Foxglove WebSocket server of the live view (``foxglove-sdk``) and its typed channels.

``VizServer.log(topic, message)`` creates the channel of the message's Foxglove schema on
first use (``foxglove.channels.<Schema>Channel``) and counts what was logged per topic, so a
node or a benchmark can report the rate it sustains. Each server has its own
``foxglove.Context``: two servers in one process never share channels. A client that subscribes
gets the topic's latest message at once (like a latched ROS topic), so a map published before
the Foxglove app connected still shows.

Clients of either Foxglove subprotocol connect: ``foxglove.sdk.v1`` (the Foxglove app) and the
published ``foxglove.websocket.v1`` (``@foxglove/ws-protocol``, Lichtblick). The SDK's server
listens on a private localhost port behind ``personal.viz.relay``, which owns the public port.
"""
from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any

import foxglove
from foxglove import channels as fc
from foxglove.websocket import ServerListener

from personal.viz.relay import PUBLISHED, SDK, Relay

PROTOCOL = SDK  # what our own probe offers (the Foxglove app offers it too)
PROTOCOLS = (SDK, PUBLISHED)  # what the live view accepts


class _ReplayLatest(ServerListener):
    """A new subscription gets the topic's latest message."""

    def __init__(self, viz: "VizServer") -> None:
        self.viz = viz

    def on_subscribe(self, client, channel) -> None:
        # log from another thread, a moment later: this callback runs inside the server's own thread
        threading.Timer(0.05, self.viz.replay, args=(channel.topic,)).start()


class VizServer:
    def __init__(self, name: str = "personal", host: str = "127.0.0.1", port: int = 8765) -> None:
        self.context = foxglove.Context()
        self.latest: dict[str, Any] = {}
        self.server = foxglove.start_server(name=name, host="127.0.0.1", port=0, context=self.context,
                                            server_listener=_ReplayLatest(self))
        try:
            self.relay = Relay(int(self.server.port), host=host, port=port)
        except BaseException:
            self.server.stop()
            raise
        self.host = host
        self.channels: dict[str, Any] = {}
        self.counts: Counter[str] = Counter()
        self._lock = threading.Lock()
        self.started = time.monotonic()

    @property
    def port(self) -> int:
        return int(self.relay.port)

    @property
    def url(self) -> str:
        return f"ws://{self.host}:{self.port}"

    def channel(self, topic: str, message: Any):
        with self._lock:
            ch = self.channels.get(topic)
            if ch is None:
                schema = type(message).__name__
                cls = getattr(fc, f"{schema}Channel", None)
                if cls is None:
                    raise TypeError(f"viz topic {topic}: {schema} is not a Foxglove schema")
                ch = self.channels[topic] = cls(topic, context=self.context)
            return ch

    def log(self, topic: str, message: Any, log_time_ns: int | None = None) -> None:
        self.channel(topic, message).log(message, log_time=log_time_ns)
        self.latest[topic] = message
        self.counts[topic] += 1

    def replay(self, topic: str) -> None:
        message = self.latest.get(topic)
        if message is not None:
            self.channels[topic].log(message)

    def stats(self) -> dict[str, float]:
        """Messages per second logged on each topic since the server started."""
        dt = max(time.monotonic() - self.started, 1e-9)
        return {topic: n / dt for topic, n in sorted(self.counts.items())}

    def stop(self) -> None:
        self.relay.stop()
        self.server.stop()

"""A small Foxglove WebSocket protocol client: what the Foxglove app does, headless.

Connects with the ``foxglove.sdk.v1`` subprotocol, reads ``serverInfo`` and ``advertise``,
subscribes to the wanted channels and decodes each binary ``messageData`` frame (opcode 1:
subscription id u32, log time u64, payload) with the protobuf schema the server advertised
(a base64 FileDescriptorSet). Used by the tests, ``bench/bench_viz.py`` and
``personal viz probe`` (check a live view from a terminal).
"""
from __future__ import annotations

import asyncio
import base64
import json
import struct
import time
from dataclasses import dataclass, field
from typing import Any, Iterable

from personal.viz.server import PROTOCOL

MESSAGE_DATA = 0x01


@dataclass
class Frame:
    topic: str
    schema: str
    log_time_ns: int
    message: Any  # a protobuf message (decoded with the advertised schema)
    size: int


@dataclass
class Probe:
    """What a probe saw: frames per topic (decoded) and the channels advertised."""

    channels: dict[int, dict] = field(default_factory=dict)
    frames: dict[str, list[Frame]] = field(default_factory=dict)
    seconds: float = 0.0

    def rate(self, topic: str) -> float:
        return len(self.frames.get(topic, [])) / self.seconds if self.seconds else 0.0


def message_class(channel: dict):
    """The protobuf class of an advertised channel, built from its schema (FileDescriptorSet)."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    if channel.get("encoding") != "protobuf":
        raise ValueError(f"channel {channel.get('topic')}: encoding {channel.get('encoding')!r} is not protobuf")
    files = descriptor_pb2.FileDescriptorSet.FromString(base64.b64decode(channel["schema"]))
    pool = descriptor_pool.DescriptorPool()
    for f in files.file:
        pool.Add(f)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(channel["schemaName"]))


async def _probe(url: str, topics: set[str] | None, count: int, duration: float, connect_timeout: float,
                 keep: int) -> Probe:
    import websockets

    out = Probe()
    deadline = time.monotonic() + connect_timeout
    while True:  # the server may still be starting
        try:
            # close_timeout: the server streams on while the close handshake waits for its answer; with
            # websockets' default (10 s) every probe ended 10 s after it had what it asked for
            ws = await websockets.connect(url, subprotocols=[PROTOCOL], max_size=None, close_timeout=1.0)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.2)
    classes: dict[int, Any] = {}
    subscribed: dict[int, int] = {}  # subscription id -> channel id
    t0 = time.monotonic()
    end = t0 + duration

    def done() -> bool:
        return topics is not None and count > 0 and all(len(out.frames.get(t, [])) >= count for t in topics)

    async def subscribe(channel_ids) -> None:
        subs = []
        for cid in channel_ids:
            sub = len(subscribed) + 1
            subscribed[sub] = cid
            subs.append({"id": sub, "channelId": cid})
        if subs:
            await ws.send(json.dumps({"op": "subscribe", "subscriptions": subs}))

    retry_at = time.monotonic() + 1.0
    async with ws:
        while not done():
            now = time.monotonic()
            left = end - now
            if left <= 0:
                break
            if now >= retry_at:  # a subscription the server refused (channel not yet known to it): ask again
                retry_at = now + 1.0
                await subscribe([cid for cid, c in out.channels.items() if c["topic"] not in out.frames])
            try:
                data = await asyncio.wait_for(ws.recv(), timeout=min(left, 1.0))
            except asyncio.TimeoutError:
                continue
            except websockets.ConnectionClosed:  # the server went away (the graph ended): report what came
                break
            if isinstance(data, str):
                doc = json.loads(data)
                if doc.get("op") == "advertise":
                    new = [c for c in doc["channels"] if topics is None or c["topic"] in topics]
                    out.channels.update({c["id"]: c for c in new})
                    await subscribe([c["id"] for c in new])
                continue
            if data[0] != MESSAGE_DATA:
                continue
            sub, log_time = struct.unpack_from("<IQ", data, 1)
            channel = out.channels[subscribed[sub]]
            cls = classes.get(channel["id"]) or classes.setdefault(channel["id"], message_class(channel))
            frames = out.frames.setdefault(channel["topic"], [])
            frames.append(Frame(channel["topic"], channel["schemaName"], log_time, cls.FromString(data[13:]), len(data) - 13))
            if keep and len(frames) > keep:  # rates need counts, not every image
                frames[-keep - 1] = Frame(channel["topic"], channel["schemaName"], log_time, None, len(data) - 13)
    out.seconds = time.monotonic() - t0
    return out


def probe(url: str, topics: Iterable[str] | None = None, count: int = 1, duration: float = 30.0,
          connect_timeout: float = 20.0, keep: int = 0) -> Probe:
    """Subscribe to ``topics`` (None = every channel) on the Foxglove server at ``url``; return
    once each topic delivered ``count`` frames, or after ``duration`` seconds. With ``keep`` > 0
    only the last ``keep`` frames per topic keep their decoded message."""
    return asyncio.run(_probe(url, set(topics) if topics is not None else None, count, duration, connect_timeout, keep))

"""The live view's public port: accepts Foxglove's published WebSocket subprotocol
``foxglove.websocket.v1`` as well as ``foxglove.sdk.v1`` in front of the foxglove-sdk server, which
listens on a private localhost port.

Why: foxglove-sdk's server (0.30) accepts only ``foxglove.sdk.v1``; clients of the published
protocol (``@foxglove/ws-protocol``'s FoxgloveClient, Lichtblick, older Foxglove apps) offer only
``foxglove.websocket.v1`` and got HTTP 400. Both names carry the same JSON ops and binary opcodes
(foxglove/ws-protocol, docs/spec.md), so the relay works at the byte level: it rewrites the
subprotocol in the opening handshake (the client's ``Sec-WebSocket-Protocol`` offer, and the name
in the server's 101 answer back to the one the client offered; ``Sec-WebSocket-Accept`` depends on
the key only), then copies bytes both ways. Frames are never parsed, so the SDK's own framing,
compression, per-client queues and message dropping stay exactly as they are.
"""
from __future__ import annotations

import asyncio
import re
import threading

PUBLISHED = "foxglove.websocket.v1"  # foxglove/ws-protocol: FoxgloveClient.SUPPORTED_SUBPROTOCOL
SDK = "foxglove.sdk.v1"  # foxglove-sdk's server
# the streams' buffer limit: bounds an opening handshake (a few hundred bytes in practice) and lets
# one read move up to 1 MiB of frames (a smaller limit pauses the socket every 2 x limit bytes)
BUFFER = 1 << 20
MAX_HANDSHAKE = BUFFER
_OFFER = re.compile(rb"^(sec-websocket-protocol:)([^\r\n]*)\r\n", re.IGNORECASE | re.MULTILINE)


def rewrite_offer(request: bytes) -> tuple[bytes, bool]:
    """The client's handshake with ``foxglove.websocket.v1`` offered as ``foxglove.sdk.v1`` when it
    does not offer the SDK's name itself; True when rewritten."""
    match = _OFFER.search(request)
    if match is None:
        return request, False
    offered = [p.strip() for p in match.group(2).decode("latin-1").split(",")]
    if SDK in offered or PUBLISHED not in offered:
        return request, False
    line = match.group(1) + b" " + SDK.encode() + b"\r\n"
    return request[:match.start()] + line + request[match.end():], True


def rewrite_answer(response: bytes) -> bytes:
    """The server's 101 answer with the subprotocol the client offered."""
    return _OFFER.sub(lambda m: m.group(1) + b" " + PUBLISHED.encode() + b"\r\n", response, count=1)


async def _read_head(reader: asyncio.StreamReader) -> bytes:
    """Bytes up to and including the blank line ending an HTTP head (bounded)."""
    try:
        return await reader.readuntil(b"\r\n\r\n")
    except asyncio.LimitOverrunError as e:
        raise ValueError(f"handshake over {MAX_HANDSHAKE} bytes") from e


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(BUFFER):
            writer.write(data)
            await writer.drain()  # a slow reader holds this side: the SDK's queue then drops for it
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()


class Relay:
    """Listen on ``host:port`` (0 = any free port) and relay each client to 127.0.0.1:``upstream_port``."""

    def __init__(self, upstream_port: int, host: str = "127.0.0.1", port: int = 8765) -> None:
        self.upstream_port = upstream_port
        self.loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._server: asyncio.base_events.Server | None = None
        self._open: set[asyncio.StreamWriter] = set()  # both sides of every relayed connection
        self._thread = threading.Thread(target=self._run, args=(host, port), name="viz-relay", daemon=True)
        self._thread.start()
        self._ready.wait(30)
        if self._error is not None:
            raise self._error
        self.port = self._server.sockets[0].getsockname()[1]

    def _run(self, host: str, port: int) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self._server = self.loop.run_until_complete(
                asyncio.start_server(self._handle, host, port, limit=BUFFER))
        except BaseException as e:  # noqa: BLE001 - reported to the constructor (port in use, ...)
            self._error = e
            self._ready.set()
            return
        self._ready.set()
        self.loop.run_forever()

    async def _handle(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        try:
            request, rewritten = rewrite_offer(await asyncio.wait_for(_read_head(client_r), 10))
            up_r, up_w = await asyncio.open_connection("127.0.0.1", self.upstream_port, limit=BUFFER)
        except (ValueError, asyncio.TimeoutError, asyncio.IncompleteReadError, ConnectionError, OSError):
            client_w.close()
            return
        try:
            up_w.write(request)
            await up_w.drain()
            answer = await asyncio.wait_for(_read_head(up_r), 10)
            client_w.write(rewrite_answer(answer) if rewritten else answer)
            await client_w.drain()
        except (ValueError, asyncio.TimeoutError, asyncio.IncompleteReadError, ConnectionError, OSError):
            client_w.close()
            up_w.close()
            return
        self._open.update((client_w, up_w))
        try:
            await asyncio.gather(_pipe(client_r, up_w), _pipe(up_r, client_w))
        finally:
            self._open.difference_update((client_w, up_w))

    def stop(self) -> None:
        if self._server is None or not self.loop.is_running():
            return

        async def close() -> None:
            self._server.close()
            for writer in list(self._open):  # connected clients see the server go, as before
                writer.close()
            await self._server.wait_closed()

        try:
            asyncio.run_coroutine_threadsafe(close(), self.loop).result(10)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(10)

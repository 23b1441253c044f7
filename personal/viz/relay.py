"""The live view's public WebSocket endpoint: accepts Foxglove's published subprotocol
``foxglove.websocket.v1`` as well as ``foxglove.sdk.v1`` and relays every frame, unchanged, to the
foxglove-sdk server listening on a private localhost port.

Why: foxglove-sdk's server (0.30) accepts only ``foxglove.sdk.v1``; clients built on the published
protocol (``@foxglove/ws-protocol``'s FoxgloveClient, Lichtblick, older Foxglove apps) offer only
``foxglove.websocket.v1`` and got HTTP 400. The two names carry the same JSON ops and binary opcodes
(foxglove/ws-protocol docs/spec.md), so one relay serves both and keeps the SDK's own server, its
per-client queues and message dropping: a slow client stops the relay reading its upstream, and the
SDK drops for it as before. Frames from a client are small control messages (subscribe, …), bounded.
"""
from __future__ import annotations

import asyncio
import threading

PUBLISHED = "foxglove.websocket.v1"  # foxglove/ws-protocol: FoxgloveClient.SUPPORTED_SUBPROTOCOL
SDK = "foxglove.sdk.v1"  # foxglove-sdk's server
SUBPROTOCOLS = [SDK, PUBLISHED]  # the server picks the first the client also offers
CLIENT_FRAME_LIMIT = 1 << 20  # control messages; the live view takes no client publishing


class Relay:
    """Listen on ``host:port`` (0 = any free port) and relay each client to ``ws://127.0.0.1:upstream_port``."""

    def __init__(self, upstream_port: int, host: str = "127.0.0.1", port: int = 8765) -> None:
        self.upstream = f"ws://127.0.0.1:{upstream_port}"
        self.loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._server = None
        self._thread = threading.Thread(target=self._run, args=(host, port), name="viz-relay", daemon=True)
        self._thread.start()
        self._ready.wait(30)
        if self._error is not None:
            raise self._error
        self.port = self._server.sockets[0].getsockname()[1]

    def _run(self, host: str, port: int) -> None:
        from websockets.asyncio.server import serve

        asyncio.set_event_loop(self.loop)

        async def start():
            return await serve(self._handle, host, port, subprotocols=SUBPROTOCOLS, compression=None,
                               max_size=CLIENT_FRAME_LIMIT, ping_interval=None)

        try:
            self._server = self.loop.run_until_complete(start())
        except BaseException as e:  # noqa: BLE001 - reported to the constructor (port in use, ...)
            self._error = e
            self._ready.set()
            return
        self._ready.set()
        self.loop.run_forever()

    async def _handle(self, client) -> None:
        from websockets.asyncio.client import connect
        from websockets.exceptions import ConnectionClosed

        try:
            upstream = await connect(self.upstream, subprotocols=[SDK], compression=None, max_size=None,
                                     ping_interval=None, open_timeout=10)
        except (OSError, asyncio.TimeoutError) as e:
            await client.close(1011, f"live view server unavailable: {e}")
            return

        async def pipe(src, dst) -> None:
            try:
                async for frame in src:
                    await dst.send(frame)
            except ConnectionClosed:
                pass

        async with upstream:
            tasks = [asyncio.ensure_future(pipe(client, upstream)), asyncio.ensure_future(pipe(upstream, client))]
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            for task in tasks:
                task.cancel()
        await client.close()

    def stop(self) -> None:
        if self._server is None or not self.loop.is_running():
            return

        async def close():
            self._server.close()
            await self._server.wait_closed()

        asyncio.run_coroutine_threadsafe(close(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)

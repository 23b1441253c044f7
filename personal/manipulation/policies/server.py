"""Serve any Policy over the openpi websocket protocol.

Protocol (openpi ``serving/websocket_policy_server.py``): on connect the server sends msgpack
metadata; each request is a msgpack observation and each reply a msgpack dict with ``actions``
and ``server_timing``; on error the server sends the message as a text frame and closes that
connection (other connections and new ones keep being served). ``GET /healthz`` answers 200 OK.

Untrusted input (docs/reliability.md): the server binds 127.0.0.1 unless told otherwise; frames
over ``max_frame_bytes`` (default 32 MiB: two 224x224 LIBERO images are 0.3 MB) are refused by
the websocket layer, which closes that connection with 1009; requests are decoded by
:func:`decode_request` (the one safe decoder, ``msgpack_wire``), which accepts only numeric arrays
(bool, int, uint, float) whose byte length matches their shape — openpi's own
``msgpack_numpy.unpackb`` would build an object array from the client's bytes (pointers), which
crashed the whole process. Any other frame gets a one-line error text (never a traceback, a path
or a version: the server sends no ``Server`` header either) and a close, and the next client is
served. Memory is bounded: at most ``max_connections`` open connections (more get HTTP 503), and
each reads at most ``FRAME_QUEUE`` frame ahead (a client pipelining frames without reading the
replies is paused by TCP flow control, not buffered). A request with a browser's ``Origin``
header is refused (403) unless that origin is in ``allowed_origins``: a web page cannot drive it.

Timings mean what openpi's mean: ``infer_ms`` is the policy call; ``prev_total_ms`` (from the
second reply on) is the previous round as the server saw it, from when it started waiting for
that request (so the client's think time between replies is included) until its reply was sent.

Runs its own asyncio loop in a background thread, so nodes and tests can start/stop it.
"""
from __future__ import annotations

import asyncio
import http
import logging
import threading
import time
from typing import Sequence

import numpy as np
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.frames import CloseCode

import personal.manipulation.policies.msgpack_wire as wire
from personal.manipulation.policies.base import ObservationError, Policy, check_actions, validate_observation

log = logging.getLogger(__name__)

DEFAULT_MAX_FRAME_BYTES = wire.DEFAULT_MAX_BYTES
DEFAULT_MAX_CONNECTIONS = 8  # a policy serves one robot or one evaluation; memory is about connections x 2 x max_frame_bytes
FRAME_QUEUE = 1  # frames read ahead per connection: a pipelining client is paused, not buffered


def decode_request(raw: bytes | str, max_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> object:
    """A request frame -> Python/NumPy objects, numeric arrays only (ObservationError otherwise):
    the one safe decoder of :mod:`personal.manipulation.policies.msgpack_wire`."""
    try:
        return wire.unpackb(raw, max_bytes=max_bytes)
    except wire.WireError as exc:
        raise ObservationError(str(exc)) from None


class PolicyServer:
    def __init__(self, policy: Policy, host: str = "127.0.0.1", port: int = 8000, metadata: dict | None = None,
                 validate: bool = True, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES,
                 max_connections: int = DEFAULT_MAX_CONNECTIONS, allowed_origins: Sequence[str] = ()) -> None:
        if not max_frame_bytes > 0:
            raise ValueError(f"max_frame_bytes must be > 0, got {max_frame_bytes}")
        if not max_connections > 0:
            raise ValueError(f"max_connections must be > 0, got {max_connections}")
        self.policy = policy
        self.host, self.port = host, port
        self.max_frame_bytes = int(max_frame_bytes)
        self.max_connections = int(max_connections)
        # no Origin header (robots, openpi-client, scripts) or one the operator allowed: a web page in a
        # local browser sends its own Origin and is refused with 403 (websockets' origin check)
        self.origins = [None, *allowed_origins]
        self.refused_connections = 0
        self.metadata = {**policy.metadata, **(metadata or {})}
        self.validate = validate
        self.requests = 0
        self.errors = 0
        self._lock = threading.Lock()  # one inference at a time: policies are stateful
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._startup_error: BaseException | None = None

    # -- lifecycle ---------------------------------------------------------------------

    def start(self, timeout: float = 10.0) -> "PolicyServer":
        self._thread = threading.Thread(target=self._run, name="openpi_policy_server", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout):
            raise TimeoutError(f"policy server did not start within {timeout} s")
        if self._startup_error:
            raise RuntimeError(f"policy server could not listen on {self.host}:{self.port}: {self._startup_error}")
        return self

    def stop(self) -> None:
        if self._loop and self._stop:
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread:
            self._thread.join(timeout=10.0)
            self._thread = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    @property
    def url(self) -> str:
        return f"ws://{self.host}:{self.port}"

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as exc:  # surfaced through start()
            self._startup_error = exc
            self._ready.set()

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        async with serve(self._handler, self.host, self.port, compression=None, max_size=self.max_frame_bytes,
                         max_queue=FRAME_QUEUE, origins=self.origins, server_header=None,
                         process_request=self._process_request) as server:
            self.port = server.sockets[0].getsockname()[1]
            self._ready.set()
            await self._stop.wait()

    # -- protocol ----------------------------------------------------------------------

    async def _handler(self, ws: ServerConnection) -> None:
        packer = wire.Packer()
        await ws.send(packer.pack(self.metadata))
        prev_total_ms = None
        while True:
            start = time.monotonic()  # before recv, as openpi: the round includes the client's think time
            try:
                raw = await ws.recv()
            except ConnectionClosed as exc:  # also a frame over max_frame_bytes (close code 1009)
                if exc.rcvd is not None and exc.rcvd.code == CloseCode.MESSAGE_TOO_BIG or \
                        exc.sent is not None and exc.sent.code == CloseCode.MESSAGE_TOO_BIG:
                    self.errors += 1
                    log.warning("policy server: refused a frame over %d bytes; connection closed", self.max_frame_bytes)
                return
            try:
                reply = await asyncio.to_thread(self._infer, raw)
            except Exception as exc:  # noqa: BLE001 - every failure goes back to the client
                self.errors += 1
                # the client learns what was wrong with its request, never our traceback, paths or versions
                detail = str(exc) if isinstance(exc, ObservationError) else "the policy failed on this request (see the server log)"
                log.warning("policy server: request failed: %s: %s", type(exc).__name__, exc,
                            exc_info=not isinstance(exc, ObservationError))
                try:
                    await ws.send(f"{type(exc).__name__}: {detail}"[:2000])
                    await ws.close(code=CloseCode.INTERNAL_ERROR, reason="policy inference failed")
                except ConnectionClosed:
                    pass
                return
            reply["server_timing"]["infer_ms"] = reply["server_timing"].pop("_infer_ms")
            if prev_total_ms is not None:
                reply["server_timing"]["prev_total_ms"] = prev_total_ms
            try:
                await ws.send(packer.pack(reply))
            except ConnectionClosed:
                return
            prev_total_ms = (time.monotonic() - start) * 1e3

    def _infer(self, raw) -> dict:
        obs = decode_request(raw, self.max_frame_bytes)
        if self.validate:
            validate_observation(obs)
        with self._lock:
            self.requests += 1
            tic = time.monotonic()
            out = dict(self.policy.infer(obs))
            infer_ms = (time.monotonic() - tic) * 1e3
        out["actions"] = check_actions(out["actions"]).astype(np.float32)
        out["server_timing"] = {"_infer_ms": infer_ms}
        return out


    def _process_request(self, connection, request):
        """``/healthz`` answers 200; over ``max_connections`` open connections a new one gets 503."""
        if request.path == "/healthz":
            return connection.respond(http.HTTPStatus.OK, "OK\n")
        if len(connection.server.connections) >= self.max_connections:
            self.refused_connections += 1
            log.warning("policy server: refused a connection: %d open, the limit is %d", len(connection.server.connections),
                        self.max_connections)
            return connection.respond(http.HTTPStatus.SERVICE_UNAVAILABLE,
                                      f"too many connections (limit {self.max_connections}); try again later\n")
        return None

"""Serve any Policy over the openpi websocket protocol.

Protocol (openpi ``serving/websocket_policy_server.py``): on connect the server sends msgpack
metadata; each request is a msgpack observation and each reply a msgpack dict with ``actions``
and ``server_timing``; on error the server sends the message as a text frame and closes that
connection (other connections and new ones keep being served). ``GET /healthz`` answers 200 OK.

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
import traceback

import numpy as np
from openpi_client import msgpack_numpy
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.frames import CloseCode

from personal.manipulation.policies.base import ObservationError, Policy, check_actions, validate_observation

log = logging.getLogger(__name__)


class PolicyServer:
    def __init__(self, policy: Policy, host: str = "127.0.0.1", port: int = 8000, metadata: dict | None = None,
                 validate: bool = True) -> None:
        self.policy = policy
        self.host, self.port = host, port
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
        async with serve(self._handler, self.host, self.port, compression=None, max_size=None,
                         process_request=_health_check) as server:
            self.port = server.sockets[0].getsockname()[1]
            self._ready.set()
            await self._stop.wait()

    # -- protocol ----------------------------------------------------------------------

    async def _handler(self, ws: ServerConnection) -> None:
        packer = msgpack_numpy.Packer()
        await ws.send(packer.pack(self.metadata))
        prev_total_ms = None
        while True:
            start = time.monotonic()  # before recv, as openpi: the round includes the client's think time
            try:
                raw = await ws.recv()
            except ConnectionClosed:
                return
            try:
                reply = await asyncio.to_thread(self._infer, raw)
            except Exception as exc:  # noqa: BLE001 - every failure goes back to the client
                self.errors += 1
                detail = str(exc) if isinstance(exc, ObservationError) else traceback.format_exc()
                log.warning("policy server: request failed: %s", exc)
                try:
                    await ws.send(f"{type(exc).__name__}: {detail}")
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
        if isinstance(raw, str):
            raise ObservationError("expected a binary msgpack frame, got text")
        try:
            obs = msgpack_numpy.unpackb(raw)
        except Exception as exc:  # noqa: BLE001
            raise ObservationError(f"request is not valid msgpack: {exc}") from None
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


def _health_check(connection, request):
    if request.path == "/healthz":
        return connection.respond(http.HTTPStatus.OK, "OK\n")
    return None

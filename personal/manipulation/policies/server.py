"""Serve any Policy over the openpi websocket protocol.

Protocol (openpi ``serving/websocket_policy_server.py``): on connect the server sends msgpack
metadata; each request is a msgpack observation and each reply a msgpack dict with ``actions``
and ``server_timing``; on error the server sends the message as a text frame and closes that
connection (other connections and new ones keep being served). ``GET /healthz`` answers 200 OK.

Untrusted input (docs/reliability.md): the server binds 127.0.0.1 unless told otherwise; frames
over ``max_frame_bytes`` (default 32 MiB: two 224x224 LIBERO images are 0.3 MB) are refused by
the websocket layer, which closes that connection with 1009; requests are decoded by
:func:`decode_request`, which accepts only numeric arrays (bool, int, uint, float) whose byte
length matches their shape — openpi's own ``msgpack_numpy.unpackb`` would build an object
array from the client's bytes (pointers), which crashed the whole process. Any other frame
gets the error text and a close, and the next client is served.

Timings mean what openpi's mean: ``infer_ms`` is the policy call; ``prev_total_ms`` (from the
second reply on) is the previous round as the server saw it, from when it started waiting for
that request (so the client's think time between replies is included) until its reply was sent.

Runs its own asyncio loop in a background thread, so nodes and tests can start/stop it.
"""
from __future__ import annotations

import asyncio
import http
import logging
import math
import threading
import time
import traceback

import msgpack
import numpy as np
from openpi_client import msgpack_numpy
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.frames import CloseCode

from personal.manipulation.policies.base import ObservationError, Policy, check_actions, validate_observation

log = logging.getLogger(__name__)

DEFAULT_MAX_FRAME_BYTES = 32 * 1024 * 1024
NUMERIC_KINDS = "biuf"  # bool, int, uint, float; openpi's packer itself refuses object, void and complex
MAX_DIMS = 8


def decode_request(raw: bytes | str) -> object:
    """A request frame -> Python/NumPy objects, decoding only numeric arrays (ObservationError otherwise).

    The wire format is openpi's ``msgpack_numpy`` (``__ndarray__`` / ``__npgeneric__`` maps),
    decoded by our own hook because openpi's trusts the client's dtype and shape."""
    if isinstance(raw, str):
        raise ObservationError("expected a binary msgpack frame, got text")
    try:
        return msgpack.unpackb(raw, object_hook=_numeric_array)
    except ObservationError:
        raise
    except Exception as exc:  # noqa: BLE001 - msgpack raises several types (ExtraData, StackError, ValueError ...)
        raise ObservationError(f"request is not valid msgpack: {type(exc).__name__}: {exc}") from None


def _numeric_dtype(spec) -> np.dtype:
    if not isinstance(spec, (str, bytes)):
        raise ObservationError(f"array dtype must be a dtype string such as '<f4', got {type(spec).__name__}")
    try:
        dtype = np.dtype(spec.decode() if isinstance(spec, bytes) else spec)
    except (TypeError, ValueError, UnicodeDecodeError, SyntaxError) as exc:
        raise ObservationError(f"array dtype {spec!r} is not a NumPy dtype ({exc})") from None
    if dtype.kind not in NUMERIC_KINDS or dtype.fields is not None or dtype.subdtype is not None:
        raise ObservationError(f"array dtype {dtype.str!r} is not numeric (accepted kinds: bool, int, uint, float)")
    return dtype


def _numeric_array(obj: dict):
    if b"__ndarray__" in obj:
        dtype = _numeric_dtype(obj.get(b"dtype"))
        shape, data = obj.get(b"shape"), obj.get(b"data")
        if not isinstance(shape, (list, tuple)) or len(shape) > MAX_DIMS or \
                not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape):
            raise ObservationError(f"array shape must be up to {MAX_DIMS} non-negative ints, got {shape!r}")
        if not isinstance(data, bytes):
            raise ObservationError(f"array data must be bytes, got {type(data).__name__}")
        if len(data) != math.prod(shape) * dtype.itemsize:
            raise ObservationError(f"array of shape {list(shape)} and dtype {dtype.str} needs "
                                   f"{math.prod(shape) * dtype.itemsize} bytes, got {len(data)}")
        return np.frombuffer(data, dtype=dtype).reshape(shape)
    if b"__npgeneric__" in obj:
        dtype, value = _numeric_dtype(obj.get(b"dtype")), obj.get(b"data")
        if not isinstance(value, (bool, int, float)):
            raise ObservationError(f"numpy scalar data must be a number, got {type(value).__name__}")
        try:
            return dtype.type(value)
        except (OverflowError, ValueError) as exc:
            raise ObservationError(f"numpy scalar {value!r} does not fit {dtype.str}: {exc}") from None
    return obj


class PolicyServer:
    def __init__(self, policy: Policy, host: str = "127.0.0.1", port: int = 8000, metadata: dict | None = None,
                 validate: bool = True, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> None:
        if not max_frame_bytes > 0:
            raise ValueError(f"max_frame_bytes must be > 0, got {max_frame_bytes}")
        self.policy = policy
        self.host, self.port = host, port
        self.max_frame_bytes = int(max_frame_bytes)
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
        obs = decode_request(raw)
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

"""Client of an openpi websocket policy server, with reconnect + backoff and clear errors.

Speaks the same wire format as ``openpi_client.WebsocketClientPolicy`` (msgpack via
``openpi_client.msgpack_numpy``; metadata first; a text frame means a server-side error).
A server is a peer we do not trust: its frames are bounded (``max_frame_bytes``, the websocket
layer closes the connection above it) and decoded by the one safe decoder
(:mod:`personal.manipulation.policies.msgpack_wire`: numeric arrays only), so an object-dtype
array in the metadata or in ``actions`` is a :class:`PolicyServerError`, never a crash.
"""
from __future__ import annotations

import logging
import time

import websockets.sync.client
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI

import personal.manipulation.policies.msgpack_wire as wire
from personal.manipulation.policies.base import Policy, check_actions

log = logging.getLogger(__name__)


class PolicyServerUnavailable(ConnectionError):
    """No openpi server answered at the given address."""


class PolicyServerError(RuntimeError):
    """The server answered a request with an error (a text frame)."""


class OpenpiWebsocketPolicy(Policy):
    name = "openpi_ws"

    def __init__(self, host: str = "127.0.0.1", port: int | None = 8000, api_key: str | None = None,
                 attempts: int = 5, backoff_s: float = 0.2, max_backoff_s: float = 5.0, timeout_s: float = 30.0,
                 connect_now: bool = True, max_frame_bytes: int = wire.DEFAULT_MAX_BYTES, **_ignored) -> None:
        self.uri = host if host.startswith("ws") else f"ws://{host}"
        if port:
            self.uri += f":{port}"
        self.headers = {"Authorization": f"Api-Key {api_key}"} if api_key else None
        self.attempts, self.backoff_s, self.max_backoff_s, self.timeout_s = attempts, backoff_s, max_backoff_s, timeout_s
        self.max_frame_bytes = int(max_frame_bytes)
        self._packer = wire.Packer()
        self._ws = None
        self.server_metadata: dict = {}
        self.reconnects = 0
        if connect_now:
            self._connect()

    @property
    def metadata(self) -> dict:
        return {**super().metadata, "server": self.server_metadata, "uri": self.uri}

    def _connect(self) -> None:
        delay, last = self.backoff_s, None
        for attempt in range(1, self.attempts + 1):
            try:
                ws = websockets.sync.client.connect(self.uri, compression=None, max_size=self.max_frame_bytes,
                                                    max_queue=1, additional_headers=self.headers, open_timeout=self.timeout_s)
                metadata = self._decode(ws, ws.recv(timeout=self.timeout_s), "metadata")
                if not isinstance(metadata, dict):
                    ws.close()
                    raise PolicyServerError(f"openpi server {self.uri} sent metadata that is not a map "
                                            f"({type(metadata).__name__})")
                self.server_metadata, self._ws = metadata, ws
                return
            except (OSError, InvalidHandshake, TimeoutError, ConnectionClosed) as exc:
                last = exc
                log.info("openpi server %s not reachable (attempt %d/%d): %s", self.uri, attempt, self.attempts, exc)
                if attempt < self.attempts:
                    time.sleep(delay)
                    delay = min(delay * 2, self.max_backoff_s)
            except InvalidURI as exc:
                raise PolicyServerUnavailable(f"bad openpi server address {self.uri!r}: {exc}") from None
        raise PolicyServerUnavailable(
            f"openpi policy server at {self.uri} is not reachable after {self.attempts} attempts "
            f"(last error: {type(last).__name__}: {last}); is it running? (serve one with `personal perm serve`)"
        )

    def infer(self, obs: dict) -> dict:
        data = self._packer.pack(obs)
        for attempt in (1, 2):  # one transparent reconnect if the connection dropped between requests
            if self._ws is None:
                self._connect()
            try:
                self._ws.send(data)
                reply = self._ws.recv(timeout=self.timeout_s)
                break
            except (ConnectionClosed, OSError) as exc:
                self._drop()
                if attempt == 2:
                    raise PolicyServerUnavailable(f"lost the openpi server at {self.uri}: {exc}") from None
                self.reconnects += 1
        if isinstance(reply, str):
            self._drop()  # the server closes the connection after an error; reconnect on the next call
            self.reconnects += 1
            raise PolicyServerError(f"openpi server {self.uri} rejected the request: {reply.strip()}")
        out = self._decode(self._ws, reply, "reply")
        if not isinstance(out, dict) or "actions" not in out:
            self._drop()
            raise PolicyServerError(f"openpi server {self.uri} sent a reply without 'actions'")
        try:
            out["actions"] = check_actions(out["actions"])
        except (ValueError, TypeError) as exc:
            self._drop()
            raise PolicyServerError(f"openpi server {self.uri} sent unusable actions: {exc}") from None
        return out

    def _decode(self, ws, frame, what: str):
        """A frame of the server's, numeric arrays only; a bad one closes the connection."""
        try:
            return wire.unpackb(frame, max_bytes=self.max_frame_bytes, what=f"openpi server {self.uri} {what}")
        except wire.WireError as exc:
            try:
                ws.close()
            except Exception:  # noqa: BLE001 - already broken
                pass
            if ws is self._ws:
                self._ws = None
            raise PolicyServerError(str(exc)) from None

    def _drop(self) -> None:
        if self._ws is not None:
            try:
                self._ws.close()
            except Exception:  # noqa: BLE001 - already broken
                pass
            self._ws = None

    def close(self) -> None:
        self._drop()

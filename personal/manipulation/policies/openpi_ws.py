"""Client of an openpi websocket policy server, with reconnect + backoff and clear errors.

Speaks the same wire format as ``openpi_client.WebsocketClientPolicy`` (msgpack via
``openpi_client.msgpack_numpy``; metadata first; a text frame means a server-side error).
"""
from __future__ import annotations

import logging
import time

import websockets.sync.client
from openpi_client import msgpack_numpy
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI

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
                 connect_now: bool = True, **_ignored) -> None:
        self.uri = host if host.startswith("ws") else f"ws://{host}"
        if port:
            self.uri += f":{port}"
        self.headers = {"Authorization": f"Api-Key {api_key}"} if api_key else None
        self.attempts, self.backoff_s, self.max_backoff_s, self.timeout_s = attempts, backoff_s, max_backoff_s, timeout_s
        self._packer = msgpack_numpy.Packer()
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
                ws = websockets.sync.client.connect(self.uri, compression=None, max_size=None,
                                                    additional_headers=self.headers, open_timeout=self.timeout_s)
                self.server_metadata = msgpack_numpy.unpackb(ws.recv(timeout=self.timeout_s))
                self._ws = ws
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
        out = msgpack_numpy.unpackb(reply)
        out["actions"] = check_actions(out["actions"])
        return out

    def _drop(self) -> None:
        if self._ws is not None:
            try:
                self._ws.close()
            except Exception:  # noqa: BLE001 - already broken
                pass
            self._ws = None

    def close(self) -> None:
        self._drop()

"""Start and stop a local Mosquitto broker with password authentication (tests, the
``home_eval`` graph, benches).

The broker listens on 127.0.0.1 only, on a free port, with ``allow_anonymous false`` and a
password file made by ``mosquitto_passwd``; its config, password file and log live in a
temporary folder removed at ``stop()``.

``BrokerSupervisor`` watches a started broker: when the process dies it reports how (exit status,
the end of its log) and starts it again on the same port with the same credentials, so clients
(paho reconnects by itself) carry on; after ``max_restarts`` restarts it gives up and says so.
"""
from __future__ import annotations

import getpass
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Callable

MOSQUITTO_CANDIDATES = ("/usr/sbin/mosquitto", "/usr/local/sbin/mosquitto")


class BrokerError(RuntimeError):
    pass


def _find(name: str, extra: tuple[str, ...] = ()) -> str:
    path = shutil.which(name) or next((p for p in extra if Path(p).exists()), None)
    if not path:
        raise BrokerError(f"{name} not found; install the Debian packages mosquitto and mosquitto-clients")
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalBroker:
    """``with LocalBroker() as b: ...`` — b.host, b.port, b.username, b.password."""

    def __init__(self, port: int | None = None, username: str = "personal", password: str | None = None) -> None:
        self.host = "127.0.0.1"
        self.port = port or free_port()
        self.username = username
        self.password = password or secrets.token_urlsafe(12)
        self._dir: Path | None = None
        self._proc: subprocess.Popen | None = None

    def start(self, timeout: float = 10.0) -> "LocalBroker":
        mosquitto = _find("mosquitto", MOSQUITTO_CANDIDATES)
        passwd = _find("mosquitto_passwd")
        self._dir = Path(tempfile.mkdtemp(prefix="personal_mosquitto_"))
        pw_file = self._dir / "passwd"
        subprocess.run([passwd, "-b", "-c", str(pw_file), self.username, self.password], check=True,
                       capture_output=True, timeout=20)
        pw_file.chmod(0o600)
        conf = self._dir / "mosquitto.conf"
        conf.write_text("\n".join([
            f"listener {self.port} {self.host}", "allow_anonymous false", f"password_file {pw_file}",
            # stay the invoking user: as root, mosquitto would otherwise switch to "mosquitto" and lose the password file
            f"user {getpass.getuser()}",
            # small command/state messages: without this, Nagle + delayed ACK add ~90 ms per round trip
            "set_tcp_nodelay true",
            "persistence false", "log_dest stderr", "log_type error", "log_type warning", "",
        ]))
        self._log = open(self._dir / "mosquitto.log", "w")
        self._proc = subprocess.Popen([mosquitto, "-c", str(conf)], stdout=self._log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise BrokerError(f"mosquitto exited ({self._proc.returncode}): {self.log()}")
            try:
                with socket.create_connection((self.host, self.port), timeout=0.2):
                    return self
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise BrokerError(f"mosquitto did not open {self.host}:{self.port} within {timeout} s")

    def log(self) -> str:
        return (self._dir / "mosquitto.log").read_text() if self._dir else ""

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def exit_status(self) -> int | None:
        """None while the broker runs (or was never started); its exit status once it has died."""
        return self._proc.poll() if self._proc else None

    def stop(self) -> None:
        if self._proc and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(5)
        self._proc = None
        if self._dir:
            self._log.close()
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def __enter__(self) -> "LocalBroker":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


class BrokerSupervisor:
    """``check()`` (call it periodically): ``"running"``, ``"restarted"`` after the broker died and was
    started again, ``"failed"`` once a restart failed or ``max_restarts`` are used up (it stays failed)."""

    def __init__(self, broker: LocalBroker, max_restarts: int = 5,
                 on_event: Callable[[str], None] = lambda msg: None) -> None:
        self.broker = broker
        self.max_restarts = max_restarts
        self.on_event = on_event
        self.restarts = 0
        self.failed = False

    def check(self) -> str:
        if self.failed:
            return "failed"
        code = self.broker.exit_status()
        if code is None:
            return "running"
        tail = self.broker.log().strip().splitlines()[-3:]
        how = f"killed by signal {-code}" if code < 0 else f"exit status {code}"
        if self.restarts >= self.max_restarts:
            self.failed = True
            self.on_event(f"local MQTT broker on {self.broker.host}:{self.broker.port} died ({how}); "
                          f"{self.max_restarts} restarts used up, giving up. Its log: {tail}")
            return "failed"
        self.restarts += 1
        self.broker.stop()
        try:
            self.broker.start()
        except (BrokerError, OSError, subprocess.SubprocessError) as exc:
            self.failed = True
            self.on_event(f"local MQTT broker on {self.broker.host}:{self.broker.port} died ({how}) and could not be "
                          f"restarted: {exc}")
            return "failed"
        self.on_event(f"local MQTT broker on {self.broker.host}:{self.broker.port} died ({how}; log: {tail}); "
                      f"restarted it (restart {self.restarts} of at most {self.max_restarts})")
        return "restarted"

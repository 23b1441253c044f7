"""Start and stop a local Mosquitto broker with password authentication (tests, the
``home_eval`` graph, benches).

The broker listens on 127.0.0.1 only, on a free port, with ``allow_anonymous false`` and a
password file made by ``mosquitto_passwd``; its config, password file and log live in a
temporary folder removed at ``stop()``.
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

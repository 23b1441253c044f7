"""Policy server memory under hostile load (issue 28, item 3): peak resident memory of
`personal perm serve` while (a) 20 clients each send a 30 MiB frame at once and (b) 3 clients
pipeline 30 MiB frames without reading the replies.

    .venv/bin/python bench/bench_policy_server_memory.py            # this tree
    PYTHONPATH=<other tree> .venv/bin/python bench/bench_policy_server_memory.py   # compare

Prints the server's VmRSS at rest and its peak (VmHWM) after each phase, and how many
connections were refused (HTTP 503) and frames the pipelining clients got to send.
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time

from websockets.sync.client import connect

import numpy as np
from openpi_client import msgpack_numpy

FRAME = b"\x00" * (30 << 20)  # a 30 MiB binary frame (refused by the decoder: not msgpack, after it is read)
# a valid 30 MiB observation (a 3300 x 3100 image): the server answers it, so pipelined ones queue up
VALID = msgpack_numpy.packb({"observation/image": np.zeros((3300, 3100, 3), np.uint8),
                             "observation/wrist_image": np.zeros((8, 8, 3), np.uint8),
                             "observation/state": np.zeros(8, np.float32), "prompt": "put the block on the mat"})


def _kb(pid: int, field: str) -> int:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith(field):
            return int(line.split()[1])
    return 0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _client(url: str, frames: int, read: bool, stats: dict, barrier: threading.Barrier) -> None:
    frame = FRAME if read else VALID
    try:
        ws = connect(url, max_size=None, open_timeout=30, close_timeout=1)
    except Exception as exc:  # noqa: BLE001 - 503 over the cap
        stats["refused"] += 1
        stats.setdefault("why", str(exc)[:80])
        _wait(barrier)
        return
    try:
        ws.recv(timeout=30)
        _wait(barrier)  # every client connected before any sends: the connections are open together
        for _ in range(frames):
            ws.send(frame)
            stats["sent"] += 1
            if read:
                ws.recv(timeout=60)
    except Exception:  # noqa: BLE001 - the server closes after an error frame
        pass
    finally:
        ws.close()


def _wait(barrier: threading.Barrier) -> None:
    try:
        barrier.wait(timeout=30)
    except threading.BrokenBarrierError:
        pass


def phase(url: str, n: int, frames: int, read: bool, hold_s: float) -> dict:
    stats = {"refused": 0, "sent": 0}
    barrier = threading.Barrier(n)
    threads = [threading.Thread(target=_client, args=(url, frames, read, stats, barrier), daemon=True) for _ in range(n)]
    for t in threads:
        t.start()
    time.sleep(hold_s)
    for t in threads:
        t.join(timeout=30)
    return stats


def serve() -> tuple[subprocess.Popen, str]:
    port = _free_port()
    server = subprocess.Popen([sys.executable, "-m", "personal", "perm", "serve", "--policy", "scripted", "--port", str(port)],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    while "serving" not in (line := server.stdout.readline()):
        if not line:
            raise SystemExit("server did not start")
    threading.Thread(target=lambda: [None for _ in server.stdout], daemon=True).start()
    return server, f"ws://127.0.0.1:{port}"


def main() -> None:
    for name, n, frames, read, hold in (("20 clients, each one 30 MiB frame at once", 20, 1, True, 5.0),
                                        ("3 clients pipelining 10 x 30 MiB observations without reading", 3, 10, False, 8.0)):
        server, url = serve()
        try:
            rest = _kb(server.pid, "VmRSS") / 1024
            s = phase(url, n, frames, read, hold)
            print(f"{name}: server at rest {rest:.0f} MB, peak VmHWM {_kb(server.pid, 'VmHWM') / 1024:.0f} MB; "
                  f"frames sent {s['sent']}, connections refused {s['refused']}; server alive {server.poll() is None}")
        finally:
            server.terminate()
            server.wait(20)


if __name__ == "__main__":
    main()

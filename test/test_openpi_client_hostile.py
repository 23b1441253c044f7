"""Our openpi client (OpenpiWebsocketPolicy) against a hostile server (issue 28, item 1).

A tiny in-process websocket server sends one bad frame (metadata or reply); the client must raise
PolicyServerError naming the problem, never crash. The object-dtype frames segfaulted the client
before (openpi's ``msgpack_numpy.unpackb`` builds an object array from the peer's bytes), so each
case runs in a child interpreter: a segfault there is a failed test, not a dead pytest.
"""
from __future__ import annotations

import subprocess
import sys
import textwrap

import msgpack
import numpy as np
import pytest
from openpi_client import msgpack_numpy

from personal.manipulation.policies import msgpack_wire as wire


def _ndarray(data: bytes, dtype: str, shape) -> dict:
    return {b"__ndarray__": True, b"data": data, b"dtype": dtype, b"shape": shape}


CHILD = textwrap.dedent("""
    import sys, threading, asyncio
    import numpy as np
    from websockets.asyncio.server import serve
    from personal.manipulation.policies.openpi_ws import OpenpiWebsocketPolicy, PolicyServerError

    metadata, reply = bytes.fromhex(sys.argv[1]), bytes.fromhex(sys.argv[2])
    port = []
    ready = threading.Event()

    async def handler(ws):
        await ws.send(metadata)
        await ws.recv()
        await ws.send(reply)
        await ws.wait_closed()

    async def main():
        async with serve(handler, "127.0.0.1", 0, max_size=None) as srv:
            port.append(srv.sockets[0].getsockname()[1]); ready.set()
            await asyncio.Event().wait()

    threading.Thread(target=lambda: asyncio.run(main()), daemon=True).start()
    ready.wait(10)
    obs = {"observation/state": np.zeros(8, np.float32), "prompt": "x"}
    try:
        client = OpenpiWebsocketPolicy(port=port[0], attempts=1, timeout_s=5, max_frame_bytes=1 << 20)
        out = client.infer(obs)
        print("OK", out["actions"].shape)
    except PolicyServerError as exc:
        print("REFUSED", exc)
""")

GOOD_META = msgpack_numpy.packb({"policy": "hostile"})
GOOD_REPLY = msgpack_numpy.packb({"actions": np.zeros((2, 7), np.float32), "server_timing": {"infer_ms": 1.0}})
OBJECT = _ndarray(b"\x41" * 64, "|O", [8])

CASES = {
    "object array in metadata": (msgpack.packb({"norm": OBJECT}), GOOD_REPLY),
    "object array as actions": (GOOD_META, msgpack.packb({"actions": OBJECT})),
    "object npgeneric in reply": (GOOD_META, msgpack.packb({"actions": {b"__npgeneric__": True, b"data": 1, b"dtype": "|O"}})),
    "structured dtype actions": (GOOD_META, msgpack.packb({"actions": _ndarray(b"\0" * 16, "i8,O", [1])})),
    "shape bigger than data": (GOOD_META, msgpack.packb({"actions": _ndarray(b"\0" * 8, "<f4", [1 << 20, 7])})),
    "metadata not a map": (msgpack.packb([1, 2]), GOOD_REPLY),
    "reply without actions": (GOOD_META, msgpack.packb({"x": 1})),
    "string actions": (GOOD_META, msgpack.packb({"actions": ["a", "b"]})),
    "not msgpack": (GOOD_META, b"\xc1\xc1garbage"),
    "deep nesting": (GOOD_META, b"\x82\xa7actions" + msgpack.packb(np.zeros((1, 7)).tolist()) + b"\xa1x" + b"\x91" * 200 + b"\x01"),
}


def _run(metadata: bytes, reply: bytes) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", CHILD, metadata.hex(), reply.hex()], capture_output=True, text=True,
                          timeout=60)


@pytest.mark.parametrize("case", sorted(CASES))
def test_hostile_server_frame_is_refused_not_a_crash(case):
    proc = _run(*CASES[case])
    assert proc.returncode == 0, f"client crashed (rc {proc.returncode}): {proc.stderr[-800:]}"
    assert proc.stdout.startswith("REFUSED openpi server ws://127.0.0.1:"), proc.stdout + proc.stderr[-800:]


def test_honest_server_frames_still_decode():
    proc = _run(GOOD_META, GOOD_REPLY)
    assert proc.returncode == 0 and proc.stdout.strip() == "OK (2, 7)", proc.stdout + proc.stderr[-800:]


def test_frame_over_the_clients_limit_is_refused_before_decoding():
    with pytest.raises(wire.WireError, match="over the limit of 1024 bytes"):
        wire.unpackb(b"\x00" * 2048, max_bytes=1024)


def test_one_decoder_round_trips_what_openpi_packs():
    """The peer's real encoder (openpi_client.msgpack_numpy) -> our decoder: same arrays, dtypes, scalars."""
    values = {"f4": np.arange(12, dtype=np.float32).reshape(3, 4), "u1": np.arange(6, dtype=np.uint8),
              "b": np.array([True, False]), "i8": np.int64(-3), "f8": np.float64(2.5), "text": "Task: x", "n": [1, 2]}
    out = wire.unpackb(msgpack_numpy.packb(values))
    for k in ("f4", "u1", "b"):
        assert out[k].dtype == values[k].dtype and np.array_equal(out[k], values[k])
    assert out["i8"] == -3 and out["i8"].dtype == np.int64 and out["f8"] == 2.5
    assert out["text"] == "Task: x" and out["n"] == [1, 2]

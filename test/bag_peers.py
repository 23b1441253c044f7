"""The peers that judge our bags: rosbags (the pure-Python rosbag2 library) reads ours, and writes
the bags ours must read. Shared by test_bags_rosbag2.py, test_bags.py and test_pog_replay.py."""
from __future__ import annotations

from pathlib import Path


def rosbags_decode_all(bag: Path) -> dict[str, int]:
    """Every message of ``bag`` decoded by rosbags, with types built by rosbags from the bag's own
    schemas (so a schema rosbags cannot find or parse fails here); each connection's hash must be
    the one rosbags computes from that schema. Returns messages per topic."""
    from rosbags.rosbag2 import Reader
    from rosbags.typesys import Stores, get_typestore, get_types_from_msg

    store = get_typestore(Stores.EMPTY)
    counts: dict[str, int] = {}
    with Reader(bag) as reader:
        for conn in reader.connections:
            assert conn.msgdef.data, f"{bag}: rosbags finds no schema for {conn.topic} [{conn.msgtype}]"
            store.register(get_types_from_msg(conn.msgdef.data, conn.msgtype))
        for conn in reader.connections:
            assert conn.digest == store.hash_rihs01(conn.msgtype), f"{conn.topic}: type hash differs from rosbags'"
        for conn, _stamp, raw in reader.messages():
            store.deserialize_cdr(raw, conn.msgtype)
            counts[conn.topic] = counts.get(conn.topic, 0) + 1
        expected = {c.topic: c.msgcount for c in reader.connections}
    assert counts == {t: n for t, n in expected.items() if n}, (counts, expected)
    return counts

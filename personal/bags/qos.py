"""offered_qos_profiles strings as rosbag2 stores them (YAML list of profiles).

Enum values follow rmw: reliability 1 reliable / 2 best effort; durability
1 transient local / 2 volatile; history 1 keep last. Durations of
2147483647 s + 4294967295 ns mean "infinite"/default, as rosbag2 writes them.
"""
from __future__ import annotations

import yaml

_INFINITE = {"sec": 2147483647, "nsec": 4294967295}


def qos_profile_yaml(reliable: bool = True, transient_local: bool = False, depth: int = 10) -> str:
    profile = {
        "history": 1,
        "depth": depth,
        "reliability": 1 if reliable else 2,
        "durability": 1 if transient_local else 2,
        "deadline": dict(_INFINITE),
        "lifespan": dict(_INFINITE),
        "liveliness": 1,
        "liveliness_lease_duration": dict(_INFINITE),
        "avoid_ros_namespace_conventions": False,
    }
    return yaml.safe_dump([profile], sort_keys=False)


def parse_qos_profiles(text: str) -> list[dict]:
    if not text:
        return []
    data = yaml.safe_load(text)
    return data if isinstance(data, list) else []

"""rosbag2's on-disk conventions, in one place: what ``ros2 bag record`` (Jazzy / Kilted) writes and
``ros2 bag info|play`` expects. Every rule cites the upstream file it mirrors (ros2/rosbag2, rolling):

- ``rosbag2_storage/include/rosbag2_storage/yaml.hpp`` — metadata.yaml fields per version: from
  version 9 ``offered_qos_profiles`` is a YAML *list* of profiles, before (4..8) one YAML *string*;
  ``type_description_hash`` from version 7; ``ros_distro`` from 8.
- ``rosbag2_storage/src/rosbag2_storage/qos.cpp`` — a profile's fields; version 9 names the
  policies (``keep_last``, ``reliable``, ``transient_local``, ``automatic``: rmw's
  ``rmw_qos_*_policy_to_str``), version 8 stores rmw's enum integers. Readers auto-detect the
  form from ``history`` (an int means 8), as qos.cpp does.
- ``rosbag2_storage_mcap/src/mcap_storage.cpp`` — MCAP profile ``ros2``; a schema per type named
  after the type (``sensor_msgs/msg/Image``); channel metadata ``offered_qos_profiles`` (a YAML
  string in the bag's version) and ``topic_type_hash``; a Metadata record ``rosbag2`` whose
  ``serialized_metadata`` is the bag's metadata (metadata.yaml's body, without the
  ``rosbag2_bagfile_information`` key).
- ``rosbag2_cpp/src/rosbag2_cpp/message_definitions/local_message_definition_source.cpp`` — the
  ``ros2msg`` schema text: the .msg, then per dependency a line of 80 ``=`` and ``MSG: pkg/Type``.
- ``rosbag2_storage_sqlite3/src/rosbag2_storage_sqlite3/sqlite_storage.cpp`` — the sqlite3 storage
  (``.db3``): tables ``topics(id, name, type, serialization_format, offered_qos_profiles, …)`` and
  ``messages(id, topic_id, timestamp, data)``, read in timestamp order.
"""
from __future__ import annotations

import yaml

WRITE_VERSION = 9
READ_VERSIONS = range(4, 10)  # 4: first with offered_qos_profiles; 9: Jazzy / Kilted
MCAP_PROFILE = "ros2"
METADATA_RECORD = "rosbag2"
METADATA_RECORD_KEY = "serialized_metadata"
CHANNEL_QOS_KEY = "offered_qos_profiles"
CHANNEL_HASH_KEY = "topic_type_hash"
SCHEMA_ENCODING = "ros2msg"
MESSAGE_ENCODING = "cdr"
STORAGES = {"mcap": ".mcap", "sqlite3": ".db3"}

# rmw enum integer <-> name (rmw/types.h, rmw_qos_*_policy_to_str); index = the version-8 integer
_HISTORY = ["system_default", "keep_last", "keep_all", "unknown"]
_RELIABILITY = ["system_default", "reliable", "best_effort", "unknown", "best_available"]
_DURABILITY = ["system_default", "transient_local", "volatile", "unknown", "best_available"]
_LIVELINESS = ["system_default", "automatic", "manual_by_node", "manual_by_topic", "unknown", "best_available"]
_POLICIES = {"history": _HISTORY, "reliability": _RELIABILITY, "durability": _DURABILITY, "liveliness": _LIVELINESS}
# RMW_DURATION_INFINITE, as rmw reports a default publisher's deadline / lifespan / lease (Humble+)
INFINITE = {"sec": 9223372036, "nsec": 854775807}


def schema_name(type_name: str) -> str:
    """The MCAP schema name of a type: the type itself, ``pkg/msg/Type`` (mcap_storage.cpp)."""
    return type_name


def qos_profile(reliable: bool = True, transient_local: bool = False, depth: int = 10) -> dict:
    """One offered QoS profile in version-9 form (named policies)."""
    return {
        "history": "keep_last",
        "depth": depth,
        "reliability": "reliable" if reliable else "best_effort",
        "durability": "transient_local" if transient_local else "volatile",
        "deadline": dict(INFINITE),
        "lifespan": dict(INFINITE),
        "liveliness": "automatic",
        "liveliness_lease_duration": dict(INFINITE),
        "avoid_ros_namespace_conventions": False,
    }


def _named(profile: dict) -> dict:
    out = dict(profile)
    for key, names in _POLICIES.items():
        value = out.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            out[key] = names[value] if 0 <= value < len(names) else "unknown"
        elif isinstance(value, str):
            out[key] = value.lower()
    return out


def _numbered(profile: dict) -> dict:
    out = dict(profile)
    for key, names in _POLICIES.items():
        if isinstance(out.get(key), str):
            out[key] = names.index(out[key]) if out[key] in names else names.index("unknown")
    return out


def parse_qos_profiles(value, where: str = "offered_qos_profiles") -> list[dict]:
    """Profiles from either form (a version-9 list, a version 4..8 YAML string, or a YAML string of
    either, as MCAP channel metadata holds), normalised to version-9 names. ``ValueError`` names
    ``where`` when the value is neither."""
    if value is None or value == "":
        return []
    if isinstance(value, str):
        try:
            value = yaml.safe_load(value)
        except yaml.YAMLError as e:
            raise ValueError(f"{where}: not YAML ({e})") from e
        if value is None:
            return []
    if not isinstance(value, list) or not all(isinstance(p, dict) for p in value):
        raise ValueError(f"{where}: expected a list of QoS profiles, got {type(value).__name__}")
    return [_named(p) for p in value]


def qos_for_version(profiles: list[dict], version: int):
    """``offered_qos_profiles`` as metadata.yaml of ``version`` holds it (yaml.hpp)."""
    if version >= 9:
        return [_named(p) for p in profiles]
    return yaml.safe_dump([_numbered(p) for p in profiles], sort_keys=False)


def qos_channel_string(profiles: list[dict], version: int = WRITE_VERSION) -> str:
    """The MCAP channel's ``offered_qos_profiles``: always a YAML string, in the bag's version
    (serialize_rclcpp_qos_vector in qos.cpp)."""
    value = qos_for_version(profiles, version)
    return value if isinstance(value, str) else yaml.safe_dump(value, sort_keys=False)


def bag_information(*, version: int, storage: str, files: list[str], start_ns: int, duration_ns: int,
                    topics: list[dict], ros_distro: str) -> dict:
    """The body of metadata.yaml (and of the MCAP ``rosbag2`` record), in yaml.hpp's field order.
    ``topics``: dicts with name, type, qos (profiles), type_hash, count."""
    total = sum(t["count"] for t in topics)
    return {
        "version": version,
        "storage_identifier": storage,
        "duration": {"nanoseconds": duration_ns},
        "starting_time": {"nanoseconds_since_epoch": start_ns},
        "message_count": total,
        "topics_with_message_count": [
            {
                "topic_metadata": {
                    "name": t["name"], "type": t["type"], "serialization_format": MESSAGE_ENCODING,
                    "offered_qos_profiles": qos_for_version(t["qos"], version),
                    "type_description_hash": t["type_hash"],
                },
                "message_count": t["count"],
            }
            for t in topics
        ],
        "compression_format": "",
        "compression_mode": "",
        "relative_file_paths": list(files),
        "files": [{
            "path": f,
            "starting_time": {"nanoseconds_since_epoch": start_ns},
            "duration": {"nanoseconds": duration_ns},
            "message_count": total,
        } for f in files],
        "custom_data": {},
        "ros_distro": ros_distro,
    }

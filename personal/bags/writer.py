"""Write a rosbag2 bag directory: ``<name>_0.mcap`` + ``metadata.yaml``.

Channels carry ``cdr`` messages, ``ros2msg`` schemas with their dependencies and
``offered_qos_profiles`` metadata; the file is chunked (zstd) and indexed, so
``ros2 bag info/play`` and Foxglove accept it.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml
from mcap.writer import CompressionType, Writer

from personal.bags.qos import qos_profile_yaml
from personal.bags.schema import message_definition, type_hash

ROS_DISTRO = "kilted"
METADATA_VERSION = 9


@dataclass
class _Topic:
    name: str
    type: str
    qos: str
    channel_id: int
    count: int = 0


class BagWriter:
    """Append CDR messages to a new bag directory; call ``close()`` (or use ``with``)."""

    def __init__(self, directory: str | Path, chunk_size: int = 4 * 1024 * 1024, compress: bool = True):
        self.directory = Path(directory)
        if self.directory.exists() and any(self.directory.iterdir()):
            raise FileExistsError(f"bag directory {self.directory} exists and is not empty; refusing to overwrite")
        self.directory.mkdir(parents=True, exist_ok=True)
        self.file_name = f"{self.directory.name}_0.mcap"
        self._stream = open(self.directory / self.file_name, "wb")
        self._writer = Writer(
            self._stream,
            chunk_size=chunk_size,
            compression=CompressionType.ZSTD if compress else CompressionType.NONE,
        )
        self._writer.start(profile="ros2", library="personal-bags")
        self._schemas: dict[str, int] = {}
        self.topics: dict[str, _Topic] = {}
        self._first_ns: int | None = None
        self._last_ns: int | None = None
        self._closed = False

    def add_topic(self, name: str, type_name: str, qos: str | None = None) -> None:
        """Register a topic; ``type_name`` like ``sensor_msgs/msg/Image``."""
        if name in self.topics:
            if self.topics[name].type != type_name:
                raise ValueError(f"topic {name} already registered as {self.topics[name].type}, not {type_name}")
            return
        if type_name not in self._schemas:
            self._schemas[type_name] = self._writer.register_schema(
                name=type_name.replace("/msg/", "/"), encoding="ros2msg",
                data=message_definition(type_name).encode(),
            )
        qos = qos if qos is not None else qos_profile_yaml()
        channel = self._writer.register_channel(
            topic=name, message_encoding="cdr", schema_id=self._schemas[type_name],
            metadata={"offered_qos_profiles": qos},
        )
        self.topics[name] = _Topic(name, type_name, qos, channel)

    def write(self, topic: str, cdr: bytes, log_time_ns: int, publish_time_ns: int | None = None) -> None:
        if topic not in self.topics:
            raise KeyError(f"topic {topic} not registered with add_topic()")
        t = self.topics[topic]
        self._writer.add_message(
            channel_id=t.channel_id, log_time=log_time_ns, data=cdr,
            publish_time=publish_time_ns if publish_time_ns is not None else log_time_ns,
            sequence=t.count,
        )
        t.count += 1
        self._first_ns = log_time_ns if self._first_ns is None else min(self._first_ns, log_time_ns)
        self._last_ns = log_time_ns if self._last_ns is None else max(self._last_ns, log_time_ns)

    def close(self) -> Path:
        if self._closed:
            return self.directory
        self._writer.finish()
        self._stream.close()
        self._closed = True
        (self.directory / "metadata.yaml").write_text(yaml.safe_dump(self._metadata(), sort_keys=False))
        return self.directory

    def _metadata(self) -> dict:
        start = self._first_ns or 0
        duration = (self._last_ns or 0) - start
        total = sum(t.count for t in self.topics.values())
        return {
            "rosbag2_bagfile_information": {
                "version": METADATA_VERSION,
                "storage_identifier": "mcap",
                "duration": {"nanoseconds": duration},
                "starting_time": {"nanoseconds_since_epoch": start},
                "message_count": total,
                "topics_with_message_count": [
                    {
                        "topic_metadata": {
                            "name": t.name, "type": t.type, "serialization_format": "cdr",
                            "offered_qos_profiles": t.qos, "type_description_hash": type_hash(t.type),
                        },
                        "message_count": t.count,
                    }
                    for t in self.topics.values()
                ],
                "compression_format": "",
                "compression_mode": "",
                "relative_file_paths": [self.file_name],
                "files": [{
                    "path": self.file_name,
                    "starting_time": {"nanoseconds_since_epoch": start},
                    "duration": {"nanoseconds": duration},
                    "message_count": total,
                }],
                "custom_data": {},
                "ros_distro": ROS_DISTRO,
            }
        }

    def __enter__(self) -> "BagWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

"""Write a rosbag2 bag directory: ``<name>_0.mcap`` + ``metadata.yaml``.

The layout is rosbag2's own, version 9 (Jazzy / Kilted; ``personal/bags/rosbag2_layout.py`` cites
the upstream files): schemas named after the type (``sensor_msgs/msg/Image``) with the ``ros2msg``
text and its dependencies, ``cdr`` channels with ``offered_qos_profiles`` and ``topic_type_hash``,
the ``rosbag2`` metadata record, and metadata.yaml with list QoS. Chunks are zstd-compressed and
indexed (rosbag2's ``zstd_fast`` preset does the same), so ``ros2 bag info|play``, rosbags and
Foxglove open it.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml
from mcap.writer import CompressionType, Writer

import personal.bags.rosbag2_layout as layout
from personal.bags.schema import message_definition, type_hash

ROS_DISTRO = "kilted"


@dataclass
class _Topic:
    name: str
    type: str
    qos: list  # offered profiles, version-9 form
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
        self._writer.start(profile=layout.MCAP_PROFILE, library="personal-bags")
        self._schemas: dict[str, int] = {}
        self.topics: dict[str, _Topic] = {}
        self._first_ns: int | None = None
        self._last_ns: int | None = None
        self._closed = False

    def add_topic(self, name: str, type_name: str, qos: list[dict] | str | None = None) -> None:
        """Register a topic; ``type_name`` like ``sensor_msgs/msg/Image``; ``qos`` the offered profiles
        (either metadata form; default one reliable, volatile, depth-10 profile)."""
        if name in self.topics:
            if self.topics[name].type != type_name:
                raise ValueError(f"topic {name} already registered as {self.topics[name].type}, not {type_name}")
            return
        if type_name not in self._schemas:
            self._schemas[type_name] = self._writer.register_schema(
                name=layout.schema_name(type_name), encoding=layout.SCHEMA_ENCODING,
                data=message_definition(type_name).encode(),
            )
        qos = layout.parse_qos_profiles(qos, f"{name}: qos") if qos is not None else [layout.qos_profile()]
        channel = self._writer.register_channel(
            topic=name, message_encoding=layout.MESSAGE_ENCODING, schema_id=self._schemas[type_name],
            metadata={layout.CHANNEL_QOS_KEY: layout.qos_channel_string(qos),
                      layout.CHANNEL_HASH_KEY: type_hash(type_name)},
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
        info = self._information()
        # rosbag2's MCAP storage stores the bag's metadata in the file too (update_metadata)
        self._writer.add_metadata(layout.METADATA_RECORD,
                                  {layout.METADATA_RECORD_KEY: yaml.safe_dump(info, sort_keys=False)})
        self._writer.finish()
        self._stream.close()
        self._closed = True
        text = yaml.safe_dump({"rosbag2_bagfile_information": info}, sort_keys=False)
        (self.directory / "metadata.yaml").write_text(text)
        return self.directory

    def _information(self) -> dict:
        start = self._first_ns or 0
        return layout.bag_information(
            version=layout.WRITE_VERSION, storage="mcap", files=[self.file_name], start_ns=start,
            duration_ns=(self._last_ns or 0) - start, ros_distro=ROS_DISTRO,
            topics=[{"name": t.name, "type": t.type, "qos": t.qos, "type_hash": type_hash(t.type),
                     "count": t.count} for t in self.topics.values()])

    def __enter__(self) -> "BagWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

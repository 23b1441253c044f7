"""Read a rosbag2 MCAP bag directory, with clear errors for broken bags."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from struct import error as struct_error
from typing import Iterator

import yaml
from mcap.exceptions import McapError
from mcap.reader import make_reader

from personal.bags.qos import parse_qos_profiles


class BagError(RuntimeError):
    """A bag that cannot be read; the message names the file and the problem."""


@dataclass
class BagMessage:
    topic: str
    type: str
    data: bytes  # CDR
    log_time_ns: int


@dataclass
class TopicInfo:
    name: str
    type: str
    count: int
    qos_profiles: list[dict]


class BagReader:
    def __init__(self, directory: str | Path):
        self.directory = Path(directory)
        meta_path = self.directory / "metadata.yaml"
        if not self.directory.is_dir():
            raise BagError(f"{self.directory}: not a bag directory")
        if not meta_path.is_file():
            raise BagError(f"{meta_path}: missing metadata.yaml (is {self.directory} a rosbag2 bag directory?)")
        try:
            info = yaml.safe_load(meta_path.read_text())["rosbag2_bagfile_information"]
            self.storage = info["storage_identifier"]
            self.files = [self.directory / p for p in info["relative_file_paths"]]
            self.topics = {
                t["topic_metadata"]["name"]: TopicInfo(
                    t["topic_metadata"]["name"], t["topic_metadata"]["type"], int(t["message_count"]),
                    parse_qos_profiles(t["topic_metadata"].get("offered_qos_profiles", "")),
                )
                for t in info["topics_with_message_count"]
            }
            self.message_count = int(info["message_count"])
            self.duration_ns = int(info["duration"]["nanoseconds"])
            self.start_ns = int(info["starting_time"]["nanoseconds_since_epoch"])
        except (KeyError, TypeError, yaml.YAMLError) as e:
            raise BagError(f"{meta_path}: malformed rosbag2 metadata ({type(e).__name__}: {e})") from e
        if self.storage != "mcap":
            raise BagError(f"{meta_path}: storage_identifier {self.storage!r} is not supported (only 'mcap')")
        for f in self.files:
            if not f.is_file():
                raise BagError(f"{meta_path}: listed file {f.name} does not exist")

    def messages(self, topics: list[str] | None = None) -> Iterator[BagMessage]:
        """Messages in log-time order. A truncated file raises BagError naming it
        after yielding every message that could be read."""
        wanted = set(topics) if topics else None
        for path in self.files:
            with open(path, "rb") as stream:
                try:
                    reader = make_reader(stream)
                    for schema, channel, message in reader.iter_messages(topics=wanted, log_time_order=True):
                        yield BagMessage(channel.topic, self._type_of(channel.topic, schema), message.data, message.log_time)
                except (McapError, EOFError, ValueError, OSError) as e:
                    raise BagError(f"{path}: truncated or corrupt MCAP file ({type(e).__name__}: {e})") from e

    def decoded_messages(self, topics: list[str] | None = None) -> Iterator[tuple[BagMessage, object]]:
        """(message, decoded object) pairs: the CDR decoded with the bag's own ``ros2msg`` schema by
        ``mcap_ros2`` (no ROS needed), as Foxglove or any other MCAP reader would decode it."""
        from mcap_ros2.decoder import DecoderFactory

        wanted = set(topics) if topics else None
        for path in self.files:
            with open(path, "rb") as stream:
                try:
                    reader = make_reader(stream, decoder_factories=[DecoderFactory()])
                    for schema, channel, message, decoded in reader.iter_decoded_messages(topics=wanted, log_time_order=True):
                        msg = BagMessage(channel.topic, self._type_of(channel.topic, schema), message.data, message.log_time)
                        yield msg, decoded
                except (McapError, EOFError, ValueError, OSError) as e:
                    raise BagError(f"{path}: truncated, corrupt or undecodable MCAP file ({type(e).__name__}: {e})") from e

    def verify(self, full: bool = False) -> dict[str, int]:
        """Check the MCAP file(s), not only metadata.yaml: each must be an MCAP file whose message
        counts per topic match the metadata. By default the counts come from each file's summary
        section (fast; a truncated, empty or non-MCAP file has none, or no valid footer, and fails);
        ``full`` reads every message. Returns the counts; BagError names the file otherwise."""
        counts: dict[str, int] = {}
        for path in self.files:
            file_counts = None if full else self._summary_counts(path)
            if file_counts is None:  # no summary section (allowed by MCAP): count by reading
                file_counts = {}
                for msg in BagReader._messages_of(self, path):
                    file_counts[msg.topic] = file_counts.get(msg.topic, 0) + 1
            for topic, n in file_counts.items():
                counts[topic] = counts.get(topic, 0) + n
        meta = self.directory / "metadata.yaml"
        for name, info in self.topics.items():
            if counts.get(name, 0) != info.count:
                raise BagError(f"{meta}: {name} has {counts.get(name, 0)} messages in the file(s), metadata says {info.count}")
        extra = sorted(set(counts) - set(self.topics))
        if extra:
            raise BagError(f"{meta}: the file(s) hold topics the metadata does not list: {', '.join(extra)}")
        return counts

    @staticmethod
    def _summary_counts(path: Path) -> dict[str, int] | None:
        if path.stat().st_size == 0:
            raise BagError(f"{path}: empty file (not an MCAP file)")
        with open(path, "rb") as stream:
            try:
                if stream.read(8) != b"\x89MCAP0\r\n":
                    raise BagError(f"{path}: not an MCAP file (bad magic bytes)")
                stream.seek(0)
                summary = make_reader(stream).get_summary()
            except (McapError, EOFError, ValueError, OSError, struct_error) as e:
                raise BagError(f"{path}: truncated or corrupt MCAP file ({type(e).__name__}: {e})") from e
        if summary is None or summary.statistics is None:
            return None
        return {summary.channels[cid].topic: n for cid, n in summary.statistics.channel_message_counts.items()
                if cid in summary.channels}

    def _messages_of(self, path: Path) -> Iterator[BagMessage]:
        with open(path, "rb") as stream:
            try:
                for schema, channel, message in make_reader(stream).iter_messages(log_time_order=False):
                    yield BagMessage(channel.topic, self._type_of(channel.topic, schema), message.data, message.log_time)
            except (McapError, EOFError, ValueError, OSError, struct_error) as e:
                raise BagError(f"{path}: truncated or corrupt MCAP file ({type(e).__name__}: {e})") from e

    def _type_of(self, topic: str, schema) -> str:
        if topic in self.topics:
            return self.topics[topic].type
        name = schema.name if schema else ""
        return name if "/msg/" in name else name.replace("/", "/msg/", 1)

    def info_text(self) -> str:
        lines = [
            f"Bag:        {self.directory}",
            f"Files:      {', '.join(f.name for f in self.files)}",
            f"Storage:    {self.storage}",
            f"Duration:   {self.duration_ns / 1e9:.3f} s",
            f"Start:      {self.start_ns / 1e9:.3f} s since epoch",
            f"Messages:   {self.message_count}",
            f"Size:       {sum(f.stat().st_size for f in self.files) / 1e6:.2f} MB",
            "Topics:",
        ]
        for t in self.topics.values():
            rel = t.qos_profiles[0].get("reliability") if t.qos_profiles else None
            rel_name = {1: "reliable", 2: "best_effort"}.get(rel, "?")
            lines.append(f"  {t.name} | {t.type} | {t.count} msgs | {rel_name}")
        return "\n".join(lines)

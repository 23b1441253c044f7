"""Read a rosbag2 bag directory (MCAP or sqlite3 storage, metadata versions 4..9), with clear errors
for broken or hostile bags: every error is a BagError that names the file."""
from __future__ import annotations

import sqlite3
import zlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from struct import error as struct_error
from typing import Iterator

import yaml
from mcap.exceptions import McapError
from mcap.reader import make_reader

import personal.bags.rosbag2_layout as layout


class BagError(RuntimeError):
    """A bag that cannot be read; the message names the file and the problem."""


def _corrupt_errors() -> tuple[type[BaseException], ...]:
    """What the MCAP library raises on damaged bytes: its own errors, short reads, bad records and a
    chunk that does not decompress (zstandard / lz4 raise their own types)."""
    errors: list[type[BaseException]] = [McapError, EOFError, ValueError, OSError, struct_error, zlib.error]
    try:
        import zstandard

        errors.append(zstandard.ZstdError)
    except ImportError:
        pass
    return tuple(errors)


CORRUPT = _corrupt_errors()


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
    qos_profiles: list[dict]  # version-9 form (named policies), whatever version the bag is
    type_hash: str = ""


class BagReader:
    def __init__(self, directory: str | Path):
        self.directory = Path(directory)
        self.meta_path = self.directory / "metadata.yaml"
        if not self.directory.is_dir():
            raise BagError(f"{self.directory}: not a bag directory")
        if not self.meta_path.is_file():
            raise BagError(f"{self.meta_path}: missing metadata.yaml (is {self.directory} a rosbag2 bag directory?)")
        try:
            info = yaml.safe_load(self.meta_path.read_text())["rosbag2_bagfile_information"]
            self.version = int(info["version"])
            self.storage = info["storage_identifier"]
            self.files = [self._bag_file(p) for p in info["relative_file_paths"]]
            self.topics = {}
            for t in info["topics_with_message_count"]:
                meta = t["topic_metadata"]
                where = f"{self.meta_path}: {meta['name']}: offered_qos_profiles"
                self.topics[meta["name"]] = TopicInfo(
                    meta["name"], meta["type"], int(t["message_count"]),
                    layout.parse_qos_profiles(meta.get("offered_qos_profiles", ""), where),
                    str(meta.get("type_description_hash", "") or ""))
            self.message_count = int(info["message_count"])
            self.duration_ns = int(info["duration"]["nanoseconds"])
            self.start_ns = int(info["starting_time"]["nanoseconds_since_epoch"])
            compression = info.get("compression_mode", "") or ""
        except (KeyError, TypeError, ValueError, AttributeError, yaml.YAMLError) as e:
            raise BagError(f"{self.meta_path}: malformed rosbag2 metadata ({type(e).__name__}: {e})") from e
        if self.version not in layout.READ_VERSIONS:
            raise BagError(f"{self.meta_path}: metadata version {self.version} is not read (versions "
                           f"{layout.READ_VERSIONS.start}..{layout.READ_VERSIONS.stop - 1} are)")
        if self.storage not in layout.STORAGES:
            raise BagError(f"{self.meta_path}: storage_identifier {self.storage!r} is not supported "
                           f"(only {', '.join(sorted(layout.STORAGES))})")
        if compression:
            raise BagError(f"{self.meta_path}: compression_mode {compression!r} (rosbag2's compressor plugin) is not "
                           "read; decompress with `ros2 bag convert` or record with MCAP chunk compression")
        for f in self.files:
            if not f.is_file():
                raise BagError(f"{self.meta_path}: listed file {f.name} does not exist")

    def _bag_file(self, rel) -> Path:
        """A relative_file_paths entry, refused unless it is a plain relative path that stays in the bag
        directory (no absolute path, no '..', no symlink leading out)."""
        if not isinstance(rel, str) or not rel or "\x00" in rel:
            raise BagError(f"{self.meta_path}: relative_file_paths entry {rel!r} is not a file name")
        pure = PurePosixPath(rel)
        if pure.is_absolute() or ".." in pure.parts:
            raise BagError(f"{self.meta_path}: relative_file_paths entry {rel!r} points outside the bag directory")
        path = self.directory / pure
        root = self.directory.resolve()
        if path.resolve() != root and root not in path.resolve().parents:
            raise BagError(f"{self.meta_path}: relative_file_paths entry {rel!r} resolves outside the bag directory")
        return path

    # -- messages --------------------------------------------------------------------------------

    def messages(self, topics: list[str] | None = None) -> Iterator[BagMessage]:
        """Messages in log-time order (per file). A truncated or corrupt file raises BagError naming
        it after yielding every message that could be read."""
        wanted = set(topics) if topics is not None else None
        for path in self.files:
            if self.storage == "sqlite3":
                yield from self._sqlite_messages(path, wanted)
                continue
            with open(path, "rb") as stream:
                try:
                    reader = make_reader(stream, validate_crcs=True)
                    for schema, channel, message in reader.iter_messages(topics=wanted, log_time_order=True):
                        yield BagMessage(channel.topic, self._type_of(channel.topic, schema), message.data, message.log_time)
                except CORRUPT as e:
                    raise BagError(f"{path}: truncated or corrupt MCAP file ({type(e).__name__}: {e})") from e

    def decoded_messages(self, topics: list[str] | None = None) -> Iterator[tuple[BagMessage, object]]:
        """(message, decoded object) pairs: the CDR decoded by ``mcap_ros2`` (no ROS needed) with the
        bag's own ``ros2msg`` schema (MCAP) or the installed definition (sqlite3 bags hold none)."""
        from mcap.records import Schema
        from mcap_ros2.decoder import DecoderFactory

        from personal.bags.schema import message_definition

        factory = DecoderFactory()
        decoders = {}
        wanted = set(topics) if topics is not None else None
        for path in self.files:
            if self.storage == "sqlite3":
                for msg in self._sqlite_messages(path, wanted):
                    if msg.type not in decoders:
                        try:
                            schema = Schema(id=1, name=msg.type, encoding=layout.SCHEMA_ENCODING,
                                            data=message_definition(msg.type).encode())
                        except (LookupError, ValueError) as e:
                            raise BagError(f"{path}: {msg.topic}: no definition for {msg.type} ({e})") from e
                        decoders[msg.type] = factory.decoder_for(layout.MESSAGE_ENCODING, schema)
                    try:
                        yield msg, decoders[msg.type](msg.data)
                    except CORRUPT as e:
                        raise BagError(f"{path}: {msg.topic}: undecodable message ({type(e).__name__}: {e})") from e
                continue
            with open(path, "rb") as stream:
                try:
                    reader = make_reader(stream, decoder_factories=[factory], validate_crcs=True)
                    for schema, channel, message, decoded in reader.iter_decoded_messages(topics=wanted, log_time_order=True):
                        msg = BagMessage(channel.topic, self._type_of(channel.topic, schema), message.data, message.log_time)
                        yield msg, decoded
                except CORRUPT as e:
                    raise BagError(f"{path}: truncated, corrupt or undecodable MCAP file ({type(e).__name__}: {e})") from e

    def _sqlite_messages(self, path: Path, wanted: set[str] | None) -> Iterator[BagMessage]:
        try:
            db = sqlite3.connect(f"file:{path.resolve()}?mode=ro", uri=True)
        except sqlite3.Error as e:
            raise BagError(f"{path}: not a readable sqlite3 bag ({e})") from e
        try:
            rows = db.execute("SELECT topics.name, messages.timestamp, messages.data FROM messages "
                              "JOIN topics ON messages.topic_id = topics.id ORDER BY messages.timestamp, messages.id")
            for topic, stamp, data in rows:
                if wanted is None or topic in wanted:
                    yield BagMessage(topic, self._type_of(topic, None), bytes(data), int(stamp))
        except sqlite3.Error as e:
            raise BagError(f"{path}: corrupt sqlite3 bag ({type(e).__name__}: {e})") from e
        finally:
            db.close()

    # -- checks ----------------------------------------------------------------------------------

    def verify(self, full: bool = False) -> dict[str, int]:
        """Check the bag file(s), not only metadata.yaml: message counts per topic must match the
        metadata. By default MCAP counts come from each file's summary section and every chunk is
        decompressed and its CRC checked (a truncated, empty, non-MCAP or corrupted file fails);
        ``full`` reads every message. Returns the counts; BagError names the file otherwise."""
        counts: dict[str, int] = {}
        for path in self.files:
            file_counts = None
            if self.storage == "mcap" and not full:
                file_counts = self._summary_counts(path)
                self._check_chunks(path)
            if file_counts is None:  # sqlite3, --full, or no summary section (allowed by MCAP): count by reading
                file_counts = {}
                for msg in self._messages_of(path):
                    file_counts[msg.topic] = file_counts.get(msg.topic, 0) + 1
            for topic, n in file_counts.items():
                counts[topic] = counts.get(topic, 0) + n
        for name, info in self.topics.items():
            if counts.get(name, 0) != info.count:
                raise BagError(f"{self.meta_path}: {name} has {counts.get(name, 0)} messages in the file(s), "
                               f"metadata says {info.count}")
        extra = sorted(set(counts) - set(self.topics))
        if extra:
            raise BagError(f"{self.meta_path}: the file(s) hold topics the metadata does not list: {', '.join(extra)}")
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
            except CORRUPT as e:
                raise BagError(f"{path}: truncated or corrupt MCAP file ({type(e).__name__}: {e})") from e
        if summary is None or summary.statistics is None:
            return None
        return {summary.channels[cid].topic: n for cid, n in summary.statistics.channel_message_counts.items()
                if cid in summary.channels}

    @staticmethod
    def _check_chunks(path: Path) -> int:
        """Decompress every chunk the summary indexes and check its CRC (when the writer stored one),
        without parsing messages; returns the number of chunks. BagError names file and offset."""
        from mcap.data_stream import ReadDataStream
        from mcap.records import Chunk
        from mcap.stream_reader import get_chunk_data_stream

        with open(path, "rb") as stream:
            try:
                summary = make_reader(stream).get_summary()
            except CORRUPT as e:
                raise BagError(f"{path}: truncated or corrupt MCAP file ({type(e).__name__}: {e})") from e
            indexes = summary.chunk_indexes if summary is not None else []
            for index in indexes:
                try:
                    stream.seek(index.chunk_start_offset + 1 + 8)  # opcode, record length
                    chunk = Chunk.read(ReadDataStream(stream))
                    get_chunk_data_stream(chunk, validate_crc=True)
                except CORRUPT as e:
                    raise BagError(f"{path}: corrupt chunk at byte {index.chunk_start_offset} "
                                   f"({type(e).__name__}: {e})") from e
        return len(indexes)

    def _messages_of(self, path: Path) -> Iterator[BagMessage]:
        if self.storage == "sqlite3":
            yield from self._sqlite_messages(path, None)
            return
        with open(path, "rb") as stream:
            try:
                for schema, channel, message in make_reader(stream, validate_crcs=True).iter_messages(log_time_order=False):
                    yield BagMessage(channel.topic, self._type_of(channel.topic, schema), message.data, message.log_time)
            except CORRUPT as e:
                raise BagError(f"{path}: truncated or corrupt MCAP file ({type(e).__name__}: {e})") from e

    def _type_of(self, topic: str, schema) -> str:
        if topic in self.topics:
            return self.topics[topic].type
        name = schema.name if schema else ""
        return name if "/msg/" in name else name.replace("/", "/msg/", 1)  # bags written before the fix

    def info_text(self) -> str:
        lines = [
            f"Bag:        {self.directory}",
            f"Files:      {', '.join(f.name for f in self.files)}",
            f"Storage:    {self.storage} (rosbag2 metadata version {self.version})",
            f"Duration:   {self.duration_ns / 1e9:.3f} s",
            f"Start:      {self.start_ns / 1e9:.3f} s since epoch",
            f"Messages:   {self.message_count}",
            f"Size:       {sum(f.stat().st_size for f in self.files) / 1e6:.2f} MB",
            "Topics:",
        ]
        for t in self.topics.values():
            rel = t.qos_profiles[0].get("reliability", "?") if t.qos_profiles else "?"
            lines.append(f"  {t.name} | {t.type} | {t.count} msgs | {rel}")
        return "\n".join(lines)

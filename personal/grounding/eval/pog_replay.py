"""Record / replay evaluation of POG (ROS-free: bag files and child graphs as processes).

Recording: ``pog_eval map_source:=explore_graph record_dir:=DIR`` runs each scene's
``explore`` child graph with a bag recorder (``personal bag record explore``) that writes
the mapping node's inputs — :func:`record_topics` — and its frame log ``map/status`` to
``DIR/<scene_id>/`` (a rosbag2 MCAP bag directory).

Replay: ``pog_replay`` (or ``pog_eval map_source:=bag bags_dir:=DIR``) maps each scene with
the ``bag_map`` child graph (bag player + mapping node, see personal/graphs/bag_map.py) —
:func:`replay_bag_map` — then grounds and scores exactly like ``pog_eval``.

Determinism: the mapping node integrates a frame when its camera pose differs from the last
integrated one, so a map is fixed by the sequence of distinct poses it saw. The replay plays
reliably (reliable player and mapping subscriptions, deep queues), the episode descriptor
first, at the recorded rate, and saves only after every message is acknowledged and drained.
Each scene's report entry gives the frames integrated live (the last ``frames`` of the
recorded ``map/status``) and replayed (the saved map's ``frames``); they must be equal.

Child graphs run through ``personal.runner.run_child`` on their own ROS_DOMAIN_ID
(``personal.runner.child_domain``), so their topics (``feature_map``, ``map`` …) never reach the
parent graph or another run, and they die with their parent.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import yaml

from personal.paths import child_path
from personal.bags import BagError, BagReader
from personal.bags.schema import msg_text
from personal.runner import child_domain, run_child  # noqa: F401 - also imported from here by pog_run
from personal.world.model import Episode, Scene

# what the mapping node consumes from the sim bridge (colour only for image encoders)
SENSOR_TOPICS = ("/camera/aligned_depth_to_color/image_raw", "/camera/color/camera_info", "/camera/semantic/image_raw",
                 "/camera/pose", "/odom", "/episode")
COLOUR_TOPIC = "/camera/color/image_raw"
FRAME_LOG_TOPIC = "/map/status"  # the live mapping node's status after every integrated frame
RECORD_MAP_TIMEOUT_S = 120.0  # explorer's wait for the map of each pose while recording (a bound, not a pace)
LIVE_MAP_NOTE = "live_map.yaml"  # next to metadata.yaml: frames and digest of the map the live run saved


class ReplayError(RuntimeError):
    """A scene whose bag could not be replayed into a map; the message says why."""


def record_topics(encoder: str) -> list[str]:
    """Topics to record for a replay with ``encoder`` (+ the frame log)."""
    uses_colour = encoder not in ("", "none") and "oracle" not in encoder
    return [*SENSOR_TOPICS, *([COLOUR_TOPIC] if uses_colour else []), FRAME_LOG_TOPIC]


# -- bags ---------------------------------------------------------------------------------------


def check_bag(bag_dir: str | Path) -> dict:
    """Open and read a whole bag before replaying it; BagError (naming the file) when the
    metadata is missing or malformed, a message type is unknown, or the file is truncated."""
    reader = BagReader(bag_dir)
    meta = reader.directory / "metadata.yaml"
    for topic in reader.topics.values():
        try:
            msg_text(topic.type)
        except (LookupError, ValueError) as exc:
            raise BagError(f"{meta}: topic {topic.name} has an unknown message type {topic.type!r} ({exc})") from None
    counts = reader.verify(full=True)
    return {"messages": sum(counts.values()), "duration_s": round(reader.duration_ns / 1e9, 2),
            "size_mb": round(sum(f.stat().st_size for f in reader.files) / 1e6, 2),
            "live_frames": _live_frames(reader) if counts.get(FRAME_LOG_TOPIC) else None}


def _live_frames(reader) -> int | None:
    """``frames`` of the last recorded map/status (personal/msg/MapStatus), decoded with the bag's schema."""
    frames = None
    try:
        for _, status in reader.decoded_messages([FRAME_LOG_TOPIC]):
            frames = int(status.frames)
    except (BagError, AttributeError, TypeError, ValueError):
        return None
    return frames


def map_digest(map_dir: str | Path) -> str:
    """sha256 of a saved map's content (feature arrays, cloud, occupancy image), not of file times."""
    import hashlib

    import numpy as np

    d = Path(map_dir)
    h = hashlib.sha256()
    if (d / "features.npz").is_file():
        with np.load(d / "features.npz") as npz:
            for key in sorted(npz.files):
                arr = np.ascontiguousarray(npz[key])
                h.update(f"{key}{arr.shape}{arr.dtype}".encode())
                h.update(arr.tobytes())
    for name in ("cloud.npy", "occupancy.pgm"):
        if (d / name).is_file():
            h.update((d / name).read_bytes() if name.endswith(".pgm") else np.load(d / name).tobytes())
    return h.hexdigest()


def note_live_map(bag_dir: str | Path, map_dir: str | Path) -> str | None:
    """After a recording: write the live map's frames and digest next to the bag (rosbag2 readers
    ignore extra files) so a replay can say whether it rebuilt the same map. Returns the bag
    directory, or None when no bag was written."""
    bag, map_dir = Path(bag_dir), Path(map_dir)
    if not (bag / "metadata.yaml").is_file():
        return None
    if (map_dir / "map.yaml").is_file():
        note = {"map": str(map_dir), "frames": saved_map_frames(map_dir), "digest": map_digest(map_dir)}
        (bag / LIVE_MAP_NOTE).write_text(yaml.safe_dump(note, sort_keys=False))
    return str(bag)


def read_live_map_note(bag_dir: str | Path) -> dict:
    path = Path(bag_dir) / LIVE_MAP_NOTE
    if not path.is_file():
        return {}
    try:
        note = yaml.safe_load(path.read_text())
    except yaml.YAMLError:
        return {}
    return note if isinstance(note, dict) else {}


def saved_map_frames(map_dir: str | Path) -> int | None:
    path = Path(map_dir) / "map.yaml"
    if not path.is_file():
        return None
    return (yaml.safe_load(path.read_text()) or {}).get("frames")


# -- record / replay ---------------------------------------------------------------------------


def explore_record_command(episodes_dir: Path, maps_dir: Path, resolution: float, max_steps: int, encoder: str,
                           bag_dir: Path | None, image_size: tuple[int, int] = (640, 480),
                           extra_args: list[str] | None = None) -> list[str]:
    """``personal launch explore …``, or with ``bag_dir`` the same graph under ``personal bag record``
    (``extra_args``: more ``name:=value`` arguments, e.g. the camera model's)."""
    args = [f"episodes_dir:={episodes_dir}", f"maps_dir:={maps_dir}", f"feature_resolution:={resolution}",
            f"max_steps:={max_steps}", f"encoder:={'oracle' if 'oracle' in encoder else encoder}",
            f"width:={int(image_size[0])}", f"height:={int(image_size[1])}", *(extra_args or [])]
    if bag_dir is None:
        return [sys.executable, "-m", "personal", "launch", "explore", *args]
    # lockstep: the explorer acts only once the mapping node has integrated the newest pose, so the
    # live map holds every pose the bag holds whatever the load (the replay integrates them all)
    args.append(f"map_timeout:={RECORD_MAP_TIMEOUT_S}")
    cmd = [sys.executable, "-m", "personal", "bag", "record", "explore", "-o", str(bag_dir)]
    for topic in record_topics(encoder):
        cmd += ["-t", topic]
    for arg in args:
        cmd += ["-a", arg]
    return cmd


def replay_bag_map(scene: Scene, episode: Episode, bag_dir: str | Path, maps_dir: str | Path, resolution: float,
                   encoder: str = "oracle", work_dir: str | Path = "replay_sets", rate: float = 1.0,
                   camera_prefix: str = "camera", timeout_s: float = 1800.0, log=None) -> dict:
    """Map ``scene`` from its recorded bag with the ``bag_map`` child graph; the map lands in
    ``<maps_dir>/<scene_id>/``. Returns {bag, messages, bag duration, frames live/replayed,
    seconds, map}; raises BagError (broken bag) or ReplayError (the graph failed)."""
    from personal.world.habitat_format import write_episode_set

    if rate <= 0:  # measured: as-fast-as-possible playback can outrun the mapping node and lose frames
        raise ReplayError(f"replay rate must be > 0 to reproduce the recorded run, got {rate}")
    bag = Path(bag_dir)
    checked = check_bag(bag)
    folder = child_path(work_dir, scene.scene_id, "scene_id")
    write_episode_set(folder, [scene], [episode])  # the mapping node's ORACLE captions
    out = child_path(maps_dir, scene.scene_id, "scene_id")
    cmd = [sys.executable, "-m", "personal", "launch", "bag_map", f"bag:={bag.resolve()}",
           f"episodes_dir:={folder.resolve()}", f"maps_dir:={Path(maps_dir).resolve()}", f"map_name:={scene.scene_id}",
           f"feature_resolution:={resolution}", f"encoder:={'oracle' if 'oracle' in encoder else encoder}",
           f"rate:={rate}", f"camera_prefix:={camera_prefix}"]
    keep = lambda line: any(k in line for k in ("playing [", "played ", "maps saved", "ERROR", "error:", "not acknowledged"))  # noqa: E731
    t0 = time.perf_counter()
    with child_domain() as env:
        code, tail = run_child(cmd, env, timeout_s, log, keep)
    frames = saved_map_frames(out)
    if code != 0 or frames is None:
        errors = [l for l in tail if "error" in l.lower()] or tail[-5:]
        raise ReplayError(f"bag {bag}: the bag_map graph exited with code {code} and saved no map: {' | '.join(errors)[-800:]}")
    live = read_live_map_note(bag)
    live_frames = checked["live_frames"] if checked["live_frames"] is not None else live.get("frames")
    info = {"bag": str(bag), "messages": checked["messages"], "bag duration (s)": checked["duration_s"],
            "bag size (MB)": checked["size_mb"], "frames live": live_frames, "frames replayed": frames,
            "frames identical": live_frames == frames,
            "map identical to live": (map_digest(out) == live["digest"]) if live.get("digest") else "unknown (no live_map.yaml)",
            "seconds": round(time.perf_counter() - t0, 1), "rate": rate, "map": str(out / "features.yaml")}
    return info

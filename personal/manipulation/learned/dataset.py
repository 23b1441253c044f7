"""Demonstrations on disk: a LeRobot v2.1 dataset (the layout openpi's training loader reads).

Why this format: openpi trains from LeRobot datasets (``LeRobotDataset``, pinned at LeRobot's v2.1
layout), and LeRobot's own ACT trains on the same files, so these demonstrations can be fed to
either without conversion. Layout (only what LeRobot v2.1 defines, plus one extra metadata file)::

    meta/info.json             codebase_version v2.1, fps 20, features, path templates, totals
    meta/tasks.jsonl           {"task_index", "task"}: the prompts ("Task: … Preference: ….")
    meta/episodes.jsonl        {"episode_index", "tasks", "length"}
    meta/episodes_stats.jsonl  per-episode min / max / mean / std / count of every numeric feature
    meta/perm_episodes.jsonl   ours: mission, layout seed, preference id, wording, noise, oracle score
    data/chunk-000/episode_000000.parquet   one row per 20 Hz step

Row features: ``observation.state`` (8: eef xyz, eef axis-angle, 2 gripper joints — openpi's
LIBERO state), ``observation.environment_state`` (the object slots of ``features.py``),
``action`` (7: the demonstrator's delta-EEF command, gripper -1 open), plus LeRobot's
``timestamp``, ``frame_index``, ``episode_index``, ``index`` and ``task_index``. Action chunks are
not stored twice: the chunk at frame t is ``action[t : t + H]`` of the same episode, padded with its
last action and flagged in ``action_is_pad`` (LeRobot's ``delta_timestamps`` rule).
Images are not recorded (the policy is state-based; rendering would cost ~0.1 s per step here).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from personal.manipulation.learned.features import ENV_DIM, ENV_NAMES, STATE_NAMES

CODEBASE_VERSION = "v2.1"
FPS = 20
CHUNKS_SIZE = 1000
DATA_PATH = "data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet"
ACTION_NAMES = ["dx", "dy", "dz", "droll", "dpitch", "dyaw", "gripper"]
VECTOR_FEATURES = {
    "observation.state": STATE_NAMES,
    "observation.environment_state": ENV_NAMES,
    "action": ACTION_NAMES,
}
INDEX_FEATURES = ("frame_index", "episode_index", "index", "task_index")


class DatasetError(ValueError):
    """A demonstration dataset that is missing, incomplete or not in the expected layout."""


@dataclass
class Episode:
    """One demonstration: per-step arrays plus what it was recorded for."""

    state: np.ndarray  # (T, 8)
    env: np.ndarray  # (T, ENV_DIM)
    action: np.ndarray  # (T, 7)
    prompt: str  # the wording it is labelled with
    meta: dict = field(default_factory=dict)  # mission, seed, preference, ...

    def __post_init__(self) -> None:
        self.state = np.asarray(self.state, np.float32).reshape(-1, 8)
        self.env = np.asarray(self.env, np.float32).reshape(-1, ENV_DIM)
        self.action = np.asarray(self.action, np.float32).reshape(-1, 7)
        if not len(self.state) == len(self.env) == len(self.action) > 0:
            raise ValueError(f"episode arrays disagree: state {self.state.shape}, env {self.env.shape}, "
                             f"action {self.action.shape}")

    def __len__(self) -> int:
        return len(self.state)


def features_spec() -> dict:
    spec = {k: {"dtype": "float32", "shape": [len(names)], "names": list(names)} for k, names in VECTOR_FEATURES.items()}
    spec["timestamp"] = {"dtype": "float32", "shape": [1], "names": None}
    for k in INDEX_FEATURES:
        spec[k] = {"dtype": "int64", "shape": [1], "names": None}
    return spec


def _hf_features() -> dict:
    """The ``datasets.Features`` dict HF datasets stores in parquet metadata (so ``load_dataset`` types match)."""
    out = {k: {"feature": {"dtype": "float32", "_type": "Value"}, "length": len(n), "_type": "Sequence"}
           for k, n in VECTOR_FEATURES.items()}
    out["timestamp"] = {"dtype": "float32", "_type": "Value"}
    out.update({k: {"dtype": "int64", "_type": "Value"} for k in INDEX_FEATURES})
    return out


def _stats(a: np.ndarray) -> dict:
    """LeRobot's per-episode feature stats: reduce over time; 1-D columns keep a length-1 axis."""
    keep = a.ndim == 1
    return {"min": np.min(a, axis=0, keepdims=keep).tolist(), "max": np.max(a, axis=0, keepdims=keep).tolist(),
            "mean": np.mean(a, axis=0, keepdims=keep).tolist(), "std": np.std(a, axis=0, keepdims=keep).tolist(),
            "count": [int(len(a))]}


class LeRobotWriter:
    """Writes episodes one by one; ``close()`` writes info.json (totals)."""

    def __init__(self, root: Path, robot_type: str = "panda") -> None:
        import pyarrow as pa  # noqa: F401 - fail early with a clear ImportError

        self.root = Path(root)
        if (self.root / "meta" / "info.json").exists():
            raise FileExistsError(f"{self.root} already holds a dataset; choose an empty folder")
        (self.root / "meta").mkdir(parents=True, exist_ok=True)
        self.robot_type = robot_type
        self.tasks: dict[str, int] = {}
        self.n_episodes = 0
        self.n_frames = 0

    def add(self, ep: Episode) -> int:
        import pyarrow as pa
        import pyarrow.parquet as pq

        idx = self.n_episodes
        if ep.prompt not in self.tasks:
            self.tasks[ep.prompt] = len(self.tasks)
            _append_jsonl(self.root / "meta/tasks.jsonl", {"task_index": self.tasks[ep.prompt], "task": ep.prompt})
        task_index = self.tasks[ep.prompt]
        T = len(ep)
        cols = {
            "observation.state": ep.state, "observation.environment_state": ep.env, "action": ep.action,
            "timestamp": (np.arange(T) / FPS).astype(np.float32),
            "frame_index": np.arange(T, dtype=np.int64), "episode_index": np.full(T, idx, np.int64),
            "index": np.arange(self.n_frames, self.n_frames + T, dtype=np.int64),
            "task_index": np.full(T, task_index, np.int64),
        }
        arrays, fields = [], []
        for name, values in cols.items():
            if values.ndim == 2:
                arr = pa.FixedSizeListArray.from_arrays(pa.array(values.reshape(-1)), values.shape[1])
            else:
                arr = pa.array(values)
            arrays.append(arr)
            fields.append(pa.field(name, arr.type))
        meta = {b"huggingface": json.dumps({"info": {"features": _hf_features()}}).encode()}
        table = pa.Table.from_arrays(arrays, schema=pa.schema(fields, metadata=meta))
        path = self.root / DATA_PATH.format(episode_chunk=idx // CHUNKS_SIZE, episode_index=idx)
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, path)
        _append_jsonl(self.root / "meta/episodes.jsonl", {"episode_index": idx, "tasks": [ep.prompt], "length": T})
        _append_jsonl(self.root / "meta/episodes_stats.jsonl",
                      {"episode_index": idx, "stats": {k: _stats(v) for k, v in cols.items()}})
        _append_jsonl(self.root / "meta/perm_episodes.jsonl", {"episode_index": idx, **ep.meta})
        self.n_episodes += 1
        self.n_frames += T
        return idx

    def close(self, extra: dict | None = None) -> Path:
        info = {
            "codebase_version": CODEBASE_VERSION, "robot_type": self.robot_type,
            "total_episodes": self.n_episodes, "total_frames": self.n_frames, "total_tasks": len(self.tasks),
            "total_videos": 0, "total_chunks": (self.n_episodes + CHUNKS_SIZE - 1) // CHUNKS_SIZE,
            "chunks_size": CHUNKS_SIZE, "fps": FPS, "splits": {"train": f"0:{self.n_episodes}"},
            "data_path": DATA_PATH, "video_path": None, "features": features_spec(),
        }
        path = self.root / "meta/info.json"
        path.write_text(json.dumps(info, indent=4))
        if extra:
            (self.root / "meta/perm_dataset.json").write_text(json.dumps(extra, indent=2))
        return path


def _append_jsonl(path: Path, row: dict) -> None:
    with path.open("a") as fh:
        fh.write(json.dumps(row) + "\n")


def _read_jsonl(path: Path) -> list[dict]:
    if not path.exists():
        raise DatasetError(f"{path} is missing (not a complete LeRobot v2.1 dataset)")
    out = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if line.strip():
            try:
                out.append(json.loads(line))
            except ValueError as exc:
                raise DatasetError(f"{path}:{n}: not JSON ({exc})") from None
    return out


def read_dataset(root: Path) -> tuple[list[Episode], dict]:
    """All episodes of a dataset written by ``LeRobotWriter`` (or any LeRobot v2.1 dataset with these
    features), with info.json. Errors name the file and the field."""
    import pyarrow.parquet as pq

    root = Path(root)
    info_path = root / "meta/info.json"
    if not info_path.exists():
        raise DatasetError(f"no dataset at {root}: {info_path} is missing (record one with `personal perm demos`)")
    info = json.loads(info_path.read_text())
    if info.get("codebase_version") != CODEBASE_VERSION:
        raise DatasetError(f"{info_path}: codebase_version {info.get('codebase_version')!r}, expected {CODEBASE_VERSION!r}")
    missing = [k for k in VECTOR_FEATURES if k not in info.get("features", {})]
    if missing:
        raise DatasetError(f"{info_path}: features lack {missing}")
    tasks = {t["task_index"]: t["task"] for t in _read_jsonl(root / "meta/tasks.jsonl")}
    metas = {m["episode_index"]: m for m in _read_jsonl(root / "meta/perm_episodes.jsonl")} \
        if (root / "meta/perm_episodes.jsonl").exists() else {}
    episodes = []
    for ep in _read_jsonl(root / "meta/episodes.jsonl"):
        i = ep["episode_index"]
        path = root / info["data_path"].format(episode_chunk=i // info["chunks_size"], episode_index=i)
        if not path.exists():
            raise DatasetError(f"{path} is missing (episode {i} of {root})")
        table = pq.read_table(path)
        cols = {k: _vector_column(table, k, len(n), path) for k, n in VECTOR_FEATURES.items()}
        task_index = int(table.column("task_index")[0].as_py())
        meta = {k: v for k, v in metas.get(i, {}).items() if k != "episode_index"}
        episodes.append(Episode(cols["observation.state"], cols["observation.environment_state"], cols["action"],
                                prompt=tasks.get(task_index, ""), meta=meta))
    if not episodes:
        raise DatasetError(f"{root} holds no episodes")
    return episodes, info


def _vector_column(table, name: str, dim: int, path: Path) -> np.ndarray:
    if name not in table.column_names:
        raise DatasetError(f"{path}: column {name!r} is missing")
    flat = table.column(name).combine_chunks().flatten().to_numpy(zero_copy_only=False)
    if flat.size != table.num_rows * dim:
        raise DatasetError(f"{path}: column {name!r} holds {flat.size} values for {table.num_rows} rows, expected {dim} per row")
    return flat.astype(np.float32).reshape(-1, dim)


def action_chunks(actions: np.ndarray, horizon: int) -> tuple[np.ndarray, np.ndarray]:
    """(T, 7) per-step actions -> (T, H, 7) chunks and (T, H) is_pad, LeRobot's rule: indices past the
    episode end repeat the last action and are flagged as padding."""
    T = len(actions)
    idx = np.arange(T)[:, None] + np.arange(horizon)[None, :]
    return actions[np.minimum(idx, T - 1)], idx >= T

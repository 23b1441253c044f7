"""The training and evaluation view of a perception dataset: every proposal crop of some
households with its targets as rows of a MiniLM vocabulary (captions, structure texts, category
names). Shared by training (:mod:`personal.perception.train`) and held-out evaluation
(:mod:`personal.perception.evaluate`)."""
from __future__ import annotations

import numpy as np


class Vocab:
    """MiniLM embeddings of every text the training refers to, computed once."""

    def __init__(self, texts: list[str]):
        from personal.models.oracle import load_sentence_model

        self.texts = list(dict.fromkeys(texts))
        self.index = {t: i for i, t in enumerate(self.texts)}
        emb = load_sentence_model().encode(self.texts, batch_size=128, normalize_embeddings=True)
        self.emb = np.asarray(emb, np.float32)


def structure_texts() -> list[str]:
    from personal.models.lit import STRUCTURE_TEXTS

    return [STRUCTURE_TEXTS[k] for k in ("wall", "floor", "ceiling", "door")]


def category_texts() -> list[str]:
    from personal.world.catalog import CATEGORIES

    return [f"a {c}" for c in sorted(CATEGORIES)]


def vocab_texts(shards: list[dict]) -> list[str]:
    return [o["caption"] for s in shards for o in s["objects"]] + structure_texts() + category_texts()


class CropSet:
    """The proposal crops of some households with their targets as rows of the vocabulary:
    ``text`` / ``weight`` (N, 4) vocabulary rows and pixel shares of the caption target,
    ``cat`` (N, 4) rows into the category list (+ the 4 structure texts), ``objfrac`` (N,),
    ``allowed`` (households, V) which texts each household's crops are ranked against
    (its captions and the structure texts)."""

    def __init__(self, shards: list[dict], vocab: Vocab, size: int | None = None):
        from personal.world.catalog import CATEGORIES

        cats = sorted(CATEGORIES)
        cat_index = {c: i for i, c in enumerate(cats)}
        n_cat = len(cats)
        struct_rows = [vocab.index[t] for t in structure_texts()]
        parts = {k: [] for k in ("crops", "masks", "hh", "text", "cat", "weight", "objfrac", "view", "preset")}
        self.allowed = np.zeros((len(shards), len(vocab.texts)), bool)
        self.object_rows: list[np.ndarray] = []
        self.scene_ids = []
        for h, s in enumerate(shards):
            objs = {o["instance_id"]: o for o in s["objects"]}
            rows = np.array([vocab.index[o["caption"]] for o in s["objects"]])
            self.allowed[h, rows] = True
            self.allowed[h, struct_rows] = True
            self.object_rows.append(np.unique(rows))
            self.scene_ids.append(s["scene_id"])
            lab, cnt = s["crop_labels"], s["crop_counts"]
            text = np.full(lab.shape, -1, np.int64)
            cat = np.full(lab.shape, -1, np.int64)
            for i, j in zip(*np.nonzero(lab != 0)):
                g = int(lab[i, j])
                if g > 0:
                    text[i, j] = vocab.index[objs[g]["caption"]]
                    cat[i, j] = cat_index[objs[g]["category"]]
                else:
                    text[i, j] = struct_rows[-g - 1]
                    cat[i, j] = n_cat + (-g - 1)
            total = np.maximum(cnt.sum(1), 1e-9)
            crops, masks = s["crops"], s["crop_masks"]
            if size and crops.shape[1] != size:
                crops, masks = resize_crops(crops, masks, size)
            parts["crops"].append(crops)
            parts["masks"].append(masks)
            parts["hh"].append(np.full(len(lab), h, np.int64))
            parts["text"].append(text)
            parts["cat"].append(cat)
            parts["weight"].append(cnt / total[:, None])
            parts["objfrac"].append((cnt * (lab > 0)).sum(1) / total)
            parts["view"].append(s["crop_view"])
            parts["preset"].append(crop_presets(s))
        for k, v in parts.items():
            setattr(self, k, np.concatenate(v))
        self.n_cat = n_cat

    def __len__(self) -> int:
        return len(self.hh)


def crop_presets(shard: dict) -> np.ndarray:
    """The camera preset each crop's view went through: ``cam_preset`` of a randomised dataset's views,
    "ideal" for a dataset rendered without randomisation."""
    n = len(shard["crop_view"])
    if "cam_preset" not in shard or not shard.get("preset_names"):
        return np.full(n, "ideal", dtype=object)
    names = np.asarray(shard["preset_names"], dtype=object)
    return names[np.asarray(shard["cam_preset"])[shard["crop_view"]]]


def resize_crops(crops: np.ndarray, masks: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Crops (area) and masks (nearest) of a dataset resized to the model's crop size."""
    import cv2

    out_c = np.stack([cv2.resize(c, (size, size), interpolation=cv2.INTER_AREA) for c in crops]) if len(crops) else \
        np.zeros((0, size, size, 3), np.uint8)
    out_m = np.stack([cv2.resize(m.astype(np.uint8), (size, size), interpolation=cv2.INTER_NEAREST) > 0 for m in masks]) \
        if len(masks) else np.zeros((0, size, size), bool)
    return out_c, out_m

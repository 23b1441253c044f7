"""Test doubles for the PAN tests: a bag-of-words text model (no weights to load)."""
from __future__ import annotations

import re
import zlib

import numpy as np


class BagOfWordsModel:
    """Stands in for the MiniLM sentence model: texts sharing words get similar vectors."""

    dim = 384

    def encode(self, texts, batch_size=64, normalize_embeddings=True, **_):
        out = np.zeros((len(texts), self.dim), np.float32)
        for i, t in enumerate(texts):
            for w in re.findall(r"[a-z]+", t.lower()):
                if w in {"the", "a", "an", "in", "on", "of", "find", "owns", "with", "next", "to", "s"}:
                    continue
                out[i, zlib.crc32(w.encode()) % self.dim] += 1.0
            out[i, 0] += 0.05  # never a zero vector
        return out / np.linalg.norm(out, axis=1, keepdims=True)

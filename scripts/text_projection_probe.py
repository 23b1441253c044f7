"""Test-time text projections for unseen colour words (issue 30), measured on a crop dataset.

Usage: .venv/bin/python scripts/text_projection_probe.py DATASET TRAIN_DATASET [CHECKPOINT]

The crop tower only ever saw the training captions' words. Two ways to bring a query written in
other words back to them, without training, both built on the frozen MiniLM text tower:

- ``bank k/tau/alpha``: the caption's embedding mixed (weight ``1 - alpha``) with a softmax
  (temperature ``tau``) over its ``k`` nearest training captions;
- ``word``: every word the training captions never use replaced by the training word whose
  substitution keeps the sentence's MiniLM embedding closest.

Prints proposal -> caption top-1 (``personal.perception.evaluate``'s rule: proposals one object
covers at least half of, ranked among their household's captions) for the verbatim captions and
for the unseen-colour ones (``recoloured``), raw and with each projection. The crops are embedded
once; only the texts change.
"""
from __future__ import annotations

import re
import sys
from types import SimpleNamespace

import numpy as np

WORD = re.compile(r"[a-z]+")


def main(dataset: str, train_dataset: str, checkpoint: str = "") -> None:
    import torch

    from personal.models.lit import embed_crops, load_crop_model, shipped_checkpoint
    from personal.models.oracle import load_sentence_model
    from personal.perception.cropset import CropSet, Vocab, vocab_texts
    from personal.perception.dataset import CROP_KEYS, load_dataset
    from personal.perception.evaluate import crop_retrieval, recoloured

    torch.set_num_threads(1)
    _, shards = load_dataset(dataset, keys=CROP_KEYS)
    _, train = load_dataset(train_dataset, keys=("crop_counts",))
    sentence = load_sentence_model()

    def enc(texts):
        return np.asarray(sentence.encode(list(texts), batch_size=256, normalize_embeddings=True), np.float32)

    bank_texts = sorted({o["caption"] for s in train for o in s["objects"]})
    bank = enc(bank_texts)
    words = sorted({w for t in bank_texts for w in WORD.findall(t.lower())})
    print(f"training captions {len(bank_texts)}, words {len(words)}")
    model = load_crop_model(checkpoint or str(shipped_checkpoint())).eval()
    embedded = None
    for name, sh in (("verbatim", shards), ("unseen colour", recoloured(shards))):
        vocab = Vocab(vocab_texts(sh))
        crops = CropSet(sh, vocab, int(model.config.image_size))
        embedded = embedded or embed_crops(model, crops.crops, crops.masks)  # same proposals, other captions

        def top1(emb):
            scored = crop_retrieval(model, crops, SimpleNamespace(emb=emb, texts=vocab.texts), embedded=embedded)
            return round(scored["top1"], 3), scored["proposals"]

        print(f"{name}: {top1(vocab.emb)[1]} proposals, raw top-1 {top1(vocab.emb)[0]}", flush=True)
        for k, tau, alpha in ((3, 0.1, 0.7), (10, 0.1, 0.7), (30, 0.1, 0.7), (30, 0.1, 0.5), (10, 0.03, 0.0)):
            print(f"{name}: bank k={k} tau={tau} alpha={alpha} top-1 {top1(project(vocab.emb, bank, k, tau, alpha))[0]}", flush=True)
        print(f"{name}: word top-1 {top1(enc([substitute(t, words, enc) for t in vocab.texts]))[0]}", flush=True)


def project(emb: np.ndarray, bank: np.ndarray, k: int, tau: float, alpha: float) -> np.ndarray:
    sims = emb @ bank.T
    idx = np.argsort(-sims, axis=1)[:, :k]
    s = np.take_along_axis(sims, idx, 1)
    w = np.exp((s - s[:, :1]) / tau)
    mixed = alpha * emb + (1 - alpha) * np.einsum("nk,nkd->nd", w / w.sum(1, keepdims=True), bank[idx])
    return mixed / np.linalg.norm(mixed, axis=1, keepdims=True)


def substitute(text: str, words: list[str], enc) -> str:
    known, t = set(words), text.lower()
    for m in list(WORD.finditer(t))[::-1]:  # right to left: earlier offsets stay valid
        if m.group(0) in known:
            continue
        options = [t[:m.start()] + w + t[m.end():] for w in words]
        e = enc([t] + options)
        t = options[int(np.argmax(e[1:] @ e[0]))]
    return t


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    main(*sys.argv[1:])

"""Proposal -> caption top-1 with recoloured captions, read through the colour lexicon (issue 30).

Usage: .venv/bin/python scripts/colour_lexicon_probe.py DATASET WORDS SETTINGS

WORDS: ``train`` (the training paraphraser's off-catalog words, first of each: the words the rule is
chosen on) or ``eval`` (the evaluation's unseen words: crimson, cobalt ...).
SETTINGS: comma-separated ``palette:k:tau`` with palette ``catalog`` (the training palette, shipped)
or ``xkcd`` (xkcd's own values for the catalog words), e.g. ``catalog:3:3,catalog:3:6,xkcd:3:3``;
an optional fourth field names the lexicon (``personal.models.colour_words.LEXICONS``, default ``xkcd``),
e.g. ``catalog:3:3:xkcd+bestof``; a fifth field ``context`` reads the curated names only where a colour
word stands (``ColourGrounding.curated_in_context``), e.g. ``catalog:3:3:xkcd+bestof:context``: the fields
after tau are a ``personal.models.colour_words.catalog_grounding_named`` spec.

The crops are embedded once; only the texts' embeddings change (personal.models.colour_words), and
the ranking is ``personal.perception.evaluate.crop_retrieval``'s. docs/perception.md, "Unseen
colour words: a colour lexicon", has the figures.
"""
from __future__ import annotations

import sys
from dataclasses import replace
from types import SimpleNamespace


def main(dataset: str, words: str, settings: str) -> None:
    import torch

    from personal.models.colour_words import catalog_grounding, catalog_grounding_named, lexicon
    from personal.models.lit import embed_crops, load_crop_model, shipped_checkpoint
    from personal.models.oracle import encode_sentences, load_sentence_model
    from personal.perception.cropset import CropSet, Vocab, vocab_texts
    from personal.perception.dataset import CROP_KEYS, load_dataset
    from personal.perception.evaluate import crop_retrieval
    from personal.world.paraphrase import EVAL_COLOUR_WORDS, TRAIN_COLOUR_WORDS, recolour

    torch.set_num_threads(2)
    mapping = EVAL_COLOUR_WORDS if words == "eval" else {k: v[0] for k, v in TRAIN_COLOUR_WORDS.items()}
    _, shards = load_dataset(dataset, keys=CROP_KEYS)
    shards = [{**s, "objects": [{**o, "caption": recolour(o["caption"], mapping)} for o in s["objects"]]} for s in shards]
    model = load_crop_model(str(shipped_checkpoint())).eval()
    vocab = Vocab(vocab_texts(shards))
    crops = CropSet(shards, vocab, int(model.config.image_size))
    embedded = embed_crops(model, crops.crops, crops.masks)
    sentence = load_sentence_model()

    def top1(emb) -> float:
        return crop_retrieval(model, crops, SimpleNamespace(emb=emb, texts=vocab.texts), embedded=embedded)["top1"]

    print(f"{dataset} {words} words: {len(crops)} proposals, tower alone top-1 {top1(vocab.emb):.4f}", flush=True)
    shipped = catalog_grounding()
    for setting in settings.split(","):
        palette, k, tau, *rest = setting.split(":")
        colours = shipped.palette if palette == "catalog" else {n: lexicon()[n] for n in shipped.palette}
        g = replace(catalog_grounding_named(":".join(rest) or "xkcd"), palette=colours, k=int(k), tau=float(tau))
        emb = g.encode(vocab.texts, lambda t: encode_sentences(sentence, t))
        print(f"{setting}: top-1 {top1(emb):.4f}", flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])

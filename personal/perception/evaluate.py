"""Held-out evaluation of the perception path from RGB-D: the proposals (recall of ground-truth
instances at IoU >= 0.5) and proposal -> caption retrieval among a household's objects.

A proposal counts for retrieval when one instance covers at least half of its pixels (ground
truth used for *scoring* only); it is ranked against the captions of every object of its
household: top-1 / top-5 and the top caption's category being right. Structure-dominated
proposals score the objectness head instead.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np


def crop_retrieval(model, cropset, vocab, max_crops: int = 0, per_category: dict | None = None,
                   embedded: tuple[np.ndarray, np.ndarray] | None = None) -> dict:
    """Retrieval over a :class:`personal.perception.cropset.CropSet` (every ``len // max_crops``-th
    proposal when ``max_crops``). ``vocab`` needs ``emb`` and ``texts``; ``embedded`` is the picked
    proposals' (features, objectness) when the caller already has them (the same crops ranked
    against other text embeddings: scripts/text_projection_probe.py)."""
    from personal.models.lit import embed_crops
    from personal.world.catalog import CATEGORIES

    n = len(cropset)
    pick = np.arange(0, n, max(1, n // max_crops)) if max_crops else np.arange(n)
    feats, obj = embedded if embedded is not None else embed_crops(model, cropset.crops[pick], cropset.masks[pick])
    objfrac = cropset.objfrac[pick]
    obj_acc = float(((obj > 0.5) == (objfrac > 0.5)).mean()) if len(pick) else 0.0
    cats = sorted(CATEGORIES)
    cat_of_row = {}
    for k in range(len(pick)):
        for r, c in zip(cropset.text[pick[k]], cropset.cat[pick[k]]):
            if r >= 0 and c < len(cats):
                cat_of_row[int(r)] = int(c)
    ranks, cat_ok = [], []
    for k, i in enumerate(pick):
        true, share, cat = int(cropset.text[i, 0]), float(cropset.weight[i, 0]), int(cropset.cat[i, 0])
        if true < 0 or cat >= len(cats) or share < 0.5:
            continue  # structure-dominated or mixed proposal
        rows = cropset.object_rows[cropset.hh[i]]
        sims = vocab.emb[rows] @ feats[k]
        s_true = float(vocab.emb[true] @ feats[k])
        ranks.append(int((sims > s_true + 1e-7).sum()))
        best = int(rows[int(np.argmax(sims))])
        cat_ok.append(cat_of_row.get(best, -1) == cat or vocab.texts[best] == vocab.texts[true])
        if per_category is not None:
            per_category.setdefault(cats[cat], []).append(int(ranks[-1] == 0))
    r = np.asarray(ranks)
    return {"proposals": int(len(r)), "top1": float((r < 1).mean()) if len(r) else 0.0,
            "top5": float((r < 5).mean()) if len(r) else 0.0,
            "category_acc": float(np.mean(cat_ok)) if cat_ok else 0.0, "objectness_acc": obj_acc,
            "object_proposals_share": float((cropset.objfrac[pick] > 0.5).mean()) if len(pick) else 0.0}


def proposal_recall_on(shards: list[dict], K: np.ndarray, min_pixels: int = 20) -> dict:
    """Recall at IoU 0.5 of the segmenter's object proposals on the stored views (ground-truth
    instances of at least ``min_pixels`` working pixels). Randomised datasets: each view's own K,
    segmenting the stored working-grid depth (the dataset's proposals came from full resolution)."""
    from personal.perception.segment import proposal_recall, segment_rgbd

    hit = total = segs = views = 0
    for s in shards:
        for v in range(len(s["depth"])):
            Kv = s["view_K"][v] if "view_K" in s else K
            seg = segment_rgbd(s["depth"][v].astype(np.float32), Kv, s["poses"][v].astype(np.float64))
            h, t = proposal_recall(seg, s["ids"][v], min_pixels=min_pixels)
            hit, total, segs, views = hit + h, total + t, segs + len(seg.objects()), views + 1
    return {"recall_iou50": hit / max(total, 1), "instances": total, "proposals_per_view": segs / max(views, 1)}


def recoloured(shards: list[dict]) -> list[dict]:
    """The shards with every caption's catalog colour words replaced by the evaluation's unseen
    words (:data:`personal.world.paraphrase.EVAL_COLOUR_WORDS`: crimson, cobalt, ivory ...)."""
    from personal.world.paraphrase import recolour

    return [{**s, "objects": [{**o, "caption": recolour(o["caption"])} for o in s["objects"]]} for s in shards]


def unseen_colour_retrieval(model, shards: list[dict]) -> dict:
    """Retrieval among each household's captions written with unseen colour words: the captions'
    plain MiniLM embeddings (the tower alone), and under ``colour_lexicon`` the embeddings the
    product ranks with (``personal.models.colour_words``: unknown colour words read through the
    training palette). The crops are embedded once for both."""
    from types import SimpleNamespace

    from personal.models.colour_words import catalog_grounding
    from personal.models.lit import embed_crops
    from personal.models.oracle import encode_sentences, load_sentence_model
    from personal.perception.cropset import CropSet, Vocab, vocab_texts

    new = recoloured(shards)
    vocab = Vocab(vocab_texts(new))
    crops = CropSet(new, vocab, int(model.config.image_size))
    embedded = embed_crops(model, crops.crops, crops.masks)
    res = crop_retrieval(model, crops, vocab, embedded=embedded)
    sentence = load_sentence_model()
    grounded = catalog_grounding().encode(vocab.texts, lambda t: encode_sentences(sentence, t))
    lex = crop_retrieval(model, crops, SimpleNamespace(emb=grounded, texts=vocab.texts), embedded=embedded)
    res["colour_lexicon"] = {k: lex[k] for k in ("top1", "top5", "category_acc")}
    pairs = [(a["caption"], b["caption"]) for s, t in zip(shards, new) for a, b in zip(s["objects"], t["objects"])]
    res["captions_changed"] = float(np.mean([a != b for a, b in pairs]))  # the rest name only gold (no unseen word)
    return res


def evaluate_checkpoint(checkpoint: str | Path, dataset: str | Path, out: str | Path | None = None, log=print,
                        recall: bool = True) -> dict:
    """Proposals and retrieval of a saved crop checkpoint on a dataset of held-out households."""
    import torch

    from personal.models.lit import load_crop_model
    from personal.perception.dataset import load_dataset
    from personal.perception.cropset import CropSet, Vocab, vocab_texts

    torch.set_num_threads(1)
    from personal.perception.dataset import CROP_KEYS, VIEW_KEYS

    index, shards = load_dataset(dataset, keys=CROP_KEYS + (VIEW_KEYS if recall else ()))  # views only to segment again
    model = load_crop_model(checkpoint).eval()
    vocab = Vocab(vocab_texts(shards))
    crops = CropSet(shards, vocab, int(model.config.image_size))
    per_cat: dict = {}
    res = crop_retrieval(model, crops, vocab, per_category=per_cat)
    unseen = unseen_colour_retrieval(model, shards)
    res["unseen_colour"] = {k: unseen[k] for k in ("proposals", "top1", "top5", "category_acc", "captions_changed",
                                                   "colour_lexicon")}
    if recall:
        res.update(proposal_recall_on(shards, index["K"]))
    res["chance_top1"] = float(np.mean([1.0 / max(1, len(r)) for r in crops.object_rows]))
    res["households"] = crops.scene_ids
    res["seeds"] = index.get("seeds")
    res["views"] = int(sum(e["n_views"] for e in index["scenes"]))
    res["per_category_top1"] = {k: round(float(np.mean(v)), 3) for k, v in sorted(per_cat.items())}
    if recall:
        log(f"proposals recall@IoU0.5 {res['recall_iou50']:.3f} ({res['proposals_per_view']:.1f} a view)")
    log(f"held-out households {len(shards)} ({res['views']} views): retrieval on {res['proposals']} object proposals: top-1 {res['top1']:.3f}, "
        f"top-5 {res['top5']:.3f}, category {res['category_acc']:.3f}, objectness {res['objectness_acc']:.3f} "
        f"(chance top-1 {res['chance_top1']:.3f}); with unseen colour words: top-1 {unseen['top1']:.3f}, "
        f"top-5 {unseen['top5']:.3f}, read through the colour lexicon (what grounding ranks with) top-1 "
        f"{unseen['colour_lexicon']['top1']:.3f}")
    if out:
        Path(out).write_text(json.dumps(res, indent=1))
    return res

"""Held-out evaluation of a dense image encoder: region -> caption retrieval among a household's
objects, and the objectness of patches.

A region is a visible instance (ground-truth mask, used here for *scoring* only) covering at
least ``min_pixels`` pixels at the model's input size; its embedding is the mean of the patch
features weighted by the instance's pixels in each patch. It is ranked against the captions of
every object of its household: top-1 / top-5 and the caption's category being right.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np


def retrieval_scores(model, picks, text_emb: np.ndarray, patch: int, norm, min_pixels: int = 48, batch: int = 16,
                     per_category: dict | None = None) -> dict:
    """picks: [(Household, view index)] (personal.perception.train.Household)."""
    import torch
    import torch.nn.functional as F

    from personal.perception.train import patch_counts

    ranks, cat_ok, obj_hits, obj_total = [], [], 0, 0
    for start in range(0, len(picks), batch):
        chunk = picks[start:start + batch]
        x = torch.from_numpy(np.stack([norm(np.ascontiguousarray(h.rgb[i])) for h, i in chunk]))
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
            feats, obj = model.dense(x)
        f = F.normalize(feats.float().flatten(1, 2), dim=-1)
        for j, (h, i) in enumerate(chunk):
            n_obj = len(h.texts) - 4
            lab = torch.from_numpy(np.ascontiguousarray(h.labels[i]))[None]
            counts = patch_counts(lab, len(h.texts), patch)[0]  # (P, K)
            frac = counts[:, :n_obj].sum(-1) / counts.sum(-1)
            pred = torch.sigmoid(obj[j].float().flatten()) > 0.5
            obj_hits += int(((frac > 0.5) == pred).sum())
            obj_total += int(frac.numel())
            area = counts[:, :n_obj].sum(0)
            keep = torch.nonzero(area >= min_pixels).flatten()
            if len(keep) == 0:
                continue
            reg = F.normalize(counts[:, keep].T @ f[j], dim=-1)  # (R, D)
            caps = torch.from_numpy(text_emb[h.text_rows[:n_obj]])
            sims = reg @ caps.T  # (R, n_obj)
            true = sims[torch.arange(len(keep)), keep]
            r = (sims > true[:, None]).sum(-1)
            ranks.extend(r.tolist())
            best = sims.argmax(-1)
            cats = h.categories
            for k, b in zip(keep.tolist(), best.tolist()):
                cat_ok.append(cats[k] == cats[b])
                if per_category is not None:
                    per_category.setdefault(cats[k], []).append(int(b == k))
    ranks = np.asarray(ranks)
    n = len(ranks)
    return {"regions": n, "top1": float((ranks < 1).mean()) if n else 0.0, "top5": float((ranks < 5).mean()) if n else 0.0,
            "category_acc": float(np.mean(cat_ok)) if cat_ok else 0.0,
            "objectness_acc": obj_hits / max(obj_total, 1)}


def evaluate_checkpoint(checkpoint: str | Path, dataset: str | Path, out: str | Path | None = None, log=print) -> dict:
    """Retrieval and objectness of a saved lit checkpoint on a dataset of held-out households,
    with a colour-only baseline and chance for reference."""
    import torch

    from personal.models.imaging import normalise
    from personal.models.lit import LitVisionModel
    from personal.perception.dataset import load_dataset
    from personal.perception.train import Household, Vocab, _structure_texts, category_texts

    torch.set_num_threads(1)
    index, shards = load_dataset(dataset)
    model = LitVisionModel.from_pretrained(str(checkpoint), local_files_only=True).eval()
    cats = category_texts()
    cat_index = {c[2:]: i for i, c in enumerate(cats)}
    vocab = Vocab([o["caption"] for s in shards for o in s["objects"]] + _structure_texts() + cats)
    households = [Household(s, vocab, cat_index) for s in shards]
    picks = [(h, i) for h in households for i in range(h.n_views)]
    per_cat: dict = {}
    res = retrieval_scores(model, picks, vocab.emb, model.config.patch_size, normalise, per_category=per_cat)
    res["chance_top1"] = float(np.mean([1.0 / max(1, len(h.texts) - 4) for h in households]))
    res["households"] = [h.scene_id for h in households]
    res["seeds"] = index.get("seeds")
    res["views"] = len(picks)
    res["per_category_top1"] = {k: round(float(np.mean(v)), 3) for k, v in sorted(per_cat.items())}
    log(f"retrieval on {len(households)} held-out households ({len(picks)} views, {res['regions']} regions): "
        f"top-1 {res['top1']:.3f}, top-5 {res['top5']:.3f}, category {res['category_acc']:.3f}, "
        f"objectness {res['objectness_acc']:.3f} (chance top-1 {res['chance_top1']:.3f})")
    if out:
        Path(out).write_text(json.dumps(res, indent=1))
    return res

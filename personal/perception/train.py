"""``personal perception train``: a locked-text image tower (LiT) trained densely on generated
households.

Every 8 x 8 patch of a frame is pulled towards the MiniLM embeddings of what it shows (frozen
text tower): a soft target over the household's captions plus the structure texts ("a wall",
"the floor", ...), in proportion to the pixels of each instance / structure class in the patch
(ground-truth masks are training labels only). An auxiliary target over the category names
("a mug") helps categories generalise; a per-patch objectness head learns object vs structure.
Contrastive (InfoNCE with soft targets) against the household's own captions, with a learned
temperature. AdamW, warm-up then cosine decay over a wall-clock budget, bf16 autocast.
"""
from __future__ import annotations

import json
import math
import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np


@dataclass
class TrainConfig:
    minutes: float = 18.0
    batch: int = 16
    lr: float = 2e-3
    weight_decay: float = 0.05
    warmup: int = 60
    threads: int = 1
    seed: int = 0
    layers: int = 4
    hidden: int = 192
    eval_every_s: float = 120.0
    max_steps: int = 0  # 0 = until the time budget ends
    # "cpu": the budget counts this process's CPU seconds (what the run costs on an idle core, so
    # other jobs on a shared machine do not shorten training); "wall": elapsed time
    budget_clock: str = "wall"
    max_wall_minutes: float = 0.0  # with budget_clock "cpu": stop anyway after this long (0 = never)
    category_weight: float = 0.5
    objectness_weight: float = 0.5


class Vocab:
    """MiniLM embeddings of every text the training refers to, computed once."""

    def __init__(self, texts: list[str]):
        from personal.models.oracle import load_sentence_model

        self.texts = list(dict.fromkeys(texts))
        self.index = {t: i for i, t in enumerate(self.texts)}
        emb = load_sentence_model().encode(self.texts, batch_size=128, normalize_embeddings=True)
        self.emb = np.asarray(emb, np.float32)


def _structure_texts() -> list[str]:
    from personal.models.lit import STRUCTURE_TEXTS

    return [STRUCTURE_TEXTS[k] for k in ("wall", "floor", "ceiling", "door")]


def category_texts() -> list[str]:
    from personal.world.catalog import CATEGORIES

    return [f"a {c}" for c in sorted(CATEGORIES)]


class Household:
    """One shard with its per-pixel label maps into the household's caption list (captions in
    instance order, then the four structure texts) and into the category list."""

    def __init__(self, shard: dict, vocab: Vocab, cat_index: dict[str, int]):
        objs = sorted(shard["objects"], key=lambda o: o["instance_id"])
        self.scene_id = shard["scene_id"]
        self.rgb = shard["rgb"]
        self.texts = [o["caption"] for o in objs] + _structure_texts()
        self.categories = [o["category"] for o in objs]
        self.text_rows = np.array([vocab.index[t] for t in self.texts])
        k = len(objs)
        max_id = max([o["instance_id"] for o in objs], default=0)
        lut = np.zeros(max_id + 1, np.int16)
        cat_lut = np.zeros(max_id + 1, np.int16)
        for i, o in enumerate(objs):
            lut[o["instance_id"]] = i
            cat_lut[o["instance_id"]] = cat_index[o["category"]]
        ids = shard["ids"]
        struct = np.clip(shard["structure"].astype(np.int16), 1, 4) - 1  # wall floor ceiling door -> 0..3
        obj = ids > 0
        self.labels = np.where(obj, lut[np.clip(ids, 0, max_id)], k + struct).astype(np.int16)
        n_cat = len(cat_index)
        self.cat_labels = np.where(obj, cat_lut[np.clip(ids, 0, max_id)], n_cat + struct).astype(np.int16)
        self.n_views = len(self.rgb)


def patch_counts(labels, n: int, patch: int):
    """(B, P, n) pixel counts per label in each patch from (B, H, W) int labels."""
    import torch

    b, h, w = labels.shape
    lab = labels.reshape(b, h // patch, patch, w // patch, patch).permute(0, 1, 3, 2, 4).reshape(b, -1, patch * patch)
    counts = torch.zeros(b, lab.shape[1], n, dtype=torch.float32)
    counts.scatter_add_(2, lab.long(), torch.ones_like(lab, dtype=torch.float32))
    return counts


def build_model(cfg: TrainConfig, height: int, width: int):
    from personal.models.lit import LitVisionModel, tiny_config

    import torch

    torch.manual_seed(cfg.seed)
    conf = tiny_config(num_hidden_layers=cfg.layers, hidden_size=cfg.hidden, intermediate_size=4 * cfg.hidden,
                       num_attention_heads=max(1, cfg.hidden // 64),
                       input_height=height, input_width=width)
    return LitVisionModel(conf)


class Trainer:
    def __init__(self, train_shards: list[dict], val_shards: list[dict], cfg: TrainConfig, height: int, width: int, log=print):
        import torch

        torch.set_num_threads(max(1, int(cfg.threads)))
        self.cfg, self.log = cfg, log
        cats = category_texts()
        self.cat_index = {c[2:]: i for i, c in enumerate(cats)}
        texts = [o["caption"] for s in train_shards + val_shards for o in s["objects"]] + _structure_texts() + cats
        t0 = time.perf_counter()
        self.vocab = Vocab(texts)
        log(f"train: {len(self.vocab.texts)} texts embedded by the frozen MiniLM in {time.perf_counter() - t0:.1f} s")
        self.train = [Household(s, self.vocab, self.cat_index) for s in train_shards]
        self.val = [Household(s, self.vocab, self.cat_index) for s in val_shards]
        self.cat_rows = np.array([self.vocab.index[t] for t in cats + _structure_texts()])
        self.model = build_model(cfg, height, width)
        self.patch = self.model.config.patch_size
        self.logit_scale = torch.nn.Parameter(torch.tensor(math.log(1 / 0.07)))
        params = list(self.model.parameters()) + [self.logit_scale]
        self.opt = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
        self.text_emb = torch.from_numpy(self.vocab.emb)
        self.rng = random.Random(cfg.seed)
        from personal.models.imaging import normalise

        self._norm = normalise
        self.history: list[dict] = []

    # -- batches ---------------------------------------------------------------------------
    def _batch(self, households: list[Household], picks):
        import torch

        rgbs, labs, cats, vocab_rows = [], [], [], []
        for h, i in picks:
            rgb, lab, cat = h.rgb[i], h.labels[i], h.cat_labels[i]
            if households is self.train and self.rng.random() < 0.5:  # horizontal flip
                rgb, lab, cat = rgb[:, ::-1], lab[:, ::-1], cat[:, ::-1]
            rgbs.append(self._norm(np.ascontiguousarray(rgb)))
            labs.append(np.ascontiguousarray(lab))
            cats.append(np.ascontiguousarray(cat))
            vocab_rows.append(h.text_rows)
        k = max(len(r) for r in vocab_rows)
        V = torch.zeros(len(picks), k, self.text_emb.shape[1])
        mask = torch.zeros(len(picks), k, dtype=torch.bool)
        for j, rows in enumerate(vocab_rows):
            V[j, : len(rows)] = self.text_emb[torch.from_numpy(rows)]
            mask[j, : len(rows)] = True
        return (torch.from_numpy(np.stack(rgbs)), torch.from_numpy(np.stack(labs)), torch.from_numpy(np.stack(cats)),
                V, mask, [len(r) for r in vocab_rows])

    def _losses(self, batch):
        import torch
        import torch.nn.functional as F

        x, lab, cat, V, mask, n_texts = batch
        with torch.autocast("cpu", dtype=torch.bfloat16):
            feats, obj = self.model.dense(x)
        f = F.normalize(feats.float().flatten(1, 2), dim=-1)  # (B, P, D)
        scale = self.logit_scale.exp().clamp(max=100.0)
        logits = torch.einsum("bpd,bkd->bpk", f, V) * scale
        logits = logits.masked_fill(~mask[:, None, :], -1e4)
        counts = patch_counts(lab, V.shape[1], self.patch)
        q = counts / counts.sum(-1, keepdim=True)
        ce = -(q * F.log_softmax(logits, -1)).sum(-1)  # (B, P)
        n_struct = 4
        obj_counts = torch.stack([counts[j, :, : n - n_struct].sum(-1) for j, n in enumerate(n_texts)])
        obj_frac = obj_counts / counts.sum(-1)
        w = 0.3 + 0.7 * obj_frac
        loss_cap = (ce * w).sum() / w.sum()
        C = self.text_emb[torch.from_numpy(self.cat_rows)]
        clog = torch.einsum("bpd,kd->bpk", f, C) * scale
        ccounts = patch_counts(cat, C.shape[0], self.patch)
        cq = ccounts / ccounts.sum(-1, keepdim=True)
        loss_cat = ((-(cq * F.log_softmax(clog, -1)).sum(-1)) * w).sum() / w.sum()
        loss_obj = F.binary_cross_entropy_with_logits(obj.float().flatten(1), obj_frac)
        total = loss_cap + self.cfg.category_weight * loss_cat + self.cfg.objectness_weight * loss_obj
        return total, {"caption": loss_cap.detach(), "category": loss_cat.detach(), "objectness": loss_obj.detach()}

    # -- loop --------------------------------------------------------------------------------
    def fit(self) -> dict:
        import torch

        cfg = self.cfg
        budget = cfg.minutes * 60.0
        frames = [(h, i) for h in self.train for i in range(h.n_views)]
        t0, c0 = time.perf_counter(), time.process_time()
        step, last_eval, order = 0, -1e9, []
        self.model.train()
        while True:
            wall = time.perf_counter() - t0
            elapsed = time.process_time() - c0 if cfg.budget_clock == "cpu" else wall
            if elapsed >= budget or (cfg.max_steps and step >= cfg.max_steps):
                break
            if cfg.max_wall_minutes and wall >= cfg.max_wall_minutes * 60:
                break
            if len(order) < cfg.batch:
                order = frames[:]
                self.rng.shuffle(order)
            picks, order = order[: cfg.batch], order[cfg.batch:]
            frac = min(elapsed / budget, 1.0) if not cfg.max_steps else step / cfg.max_steps
            lr = cfg.lr * min(1.0, (step + 1) / cfg.warmup) * 0.5 * (1 + math.cos(math.pi * frac))
            for g in self.opt.param_groups:
                g["lr"] = lr
            loss, parts = self._losses(self._batch(self.train, picks))
            parts = {k: float(v) for k, v in parts.items()}
            self.opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
            self.opt.step()
            step += 1
            rec = {"step": step, "wall_s": round(time.perf_counter() - t0, 1), "cpu_s": round(time.process_time() - c0, 1),
                   "lr": lr, "loss": float(loss.detach()), **parts}
            if time.perf_counter() - last_eval >= cfg.eval_every_s:
                rec.update(self.validate())
                last_eval = time.perf_counter()
                self.log(f"train: step {step}, {rec['wall_s']:.0f} s, loss {rec['loss']:.3f} "
                         f"(caption {parts['caption']:.3f}), val region top-1 {rec['val_top1']:.3f} top-5 {rec['val_top5']:.3f}")
            self.history.append(rec)
        final = self.validate()
        self.history[-1].update(final) if self.history else None
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        return {"steps": step, "wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "frames_seen": step * cfg.batch,
                "budget_clock": cfg.budget_clock,
                "steps_per_cpu_s": round(step / max(cpu, 1e-9), 3), **final}

    def validate(self, max_frames: int = 160) -> dict:
        """Region -> caption retrieval on the validation households (their regions from the
        ground-truth masks, for scoring only)."""
        from personal.perception.evaluate import retrieval_scores

        self.model.eval()
        picks = [(h, i) for h in self.val for i in range(0, h.n_views, max(1, h.n_views * len(self.val) // max_frames))]
        res = retrieval_scores(self.model, picks, self.text_emb.numpy(), self.patch, self._norm)
        self.model.train()
        return {"val_top1": res["top1"], "val_top5": res["top5"], "val_regions": res["regions"], "val_obj_acc": res["objectness_acc"]}


def save_checkpoint(trainer: Trainer, out_dir: str | Path, info: dict, dataset_index: dict, val_index: dict) -> Path:
    """``save_pretrained`` layout + image processor + training log + loss plot."""
    from transformers import CLIPImageProcessor

    from personal.models.imaging import normalise  # noqa: F401 - documents the preprocessing used

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    m = trainer.model
    m.save_pretrained(out, safe_serialization=True)
    CLIPImageProcessor(do_resize=True, size={"height": m.config.input_height, "width": m.config.input_width},
                       do_center_crop=False, image_mean=[0.5, 0.5, 0.5], image_std=[0.5, 0.5, 0.5]).save_pretrained(out)
    log = {"config": asdict(trainer.cfg), "result": info, "train_seeds": dataset_index.get("seeds"),
           "val_seeds": val_index.get("seeds"), "views_per_scene": dataset_index.get("views_per_scene"),
           "logit_scale": float(trainer.logit_scale.exp()), "history": trainer.history}
    (out / "training_log.json").write_text(json.dumps(log, indent=1))
    _plot(trainer.history, out / "loss.png")
    return out


def _plot(history: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not history:
        return
    fig, ax = plt.subplots(1, 2, figsize=(10, 3.5))
    steps = [h["step"] for h in history]
    for key in ("loss", "caption", "category", "objectness"):
        ax[0].plot(steps, [h[key] for h in history], label=key, lw=0.8)
    ax[0].set_xlabel("step")
    ax[0].set_ylabel("training loss")
    ax[0].legend()
    ev = [h for h in history if "val_top1" in h]
    ax[1].plot([h["step"] for h in ev], [h["val_top1"] for h in ev], "o-", label="val region top-1")
    ax[1].plot([h["step"] for h in ev], [h["val_top5"] for h in ev], "o-", label="val region top-5")
    ax[1].set_xlabel("step")
    ax[1].set_ylim(0, 1)
    ax[1].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)

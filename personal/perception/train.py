"""``personal perception train``: a locked-text crop tower (LiT) trained on the proposals the
RGB-D segmenter makes in generated households.

Every proposal crop (RGB + its mask, :mod:`personal.perception.crops`) is pulled towards the
MiniLM embeddings of what its segment covers (frozen text tower): a soft target over its
household's captions plus the structure texts ("a wall", "the floor", ...), in proportion to
each instance's / structure class's pixels in the segment (ground-truth masks are training
labels only). The household's other objects - same-category look-alikes owned by other people
included - are the negatives. An auxiliary target over the category names ("a mug") helps
categories generalise; an objectness head learns object vs structure per proposal.
InfoNCE with soft targets and a learned temperature; AdamW, warm-up then cosine decay over a
time budget, bf16 autocast where the CPU has native bf16 and float32 elsewhere (``precision``).
Two tower architectures (``TrainConfig.arch``): ``"cnn"`` (the shipped one: a small ResNet, :class:`personal.models.lit.LitConvModel`) and ``"vit"`` (the
earlier CLIP-style ViT, :class:`personal.models.lit.LitVisionModel`). Augmentation: horizontal flips, brightness (colour words stay
true: no hue change), shifts of a few pixels.
"""
from __future__ import annotations

import json
import math
import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from personal.perception.cropset import CropSet, Vocab, category_texts, structure_texts, vocab_texts


@dataclass
class TrainConfig:
    minutes: float = 18.0
    batch: int = 128
    lr: float = 1e-3
    weight_decay: float = 0.05
    warmup: int = 60
    threads: int = 1
    seed: int = 0
    # "vit": the CLIP-style ViT (layers, hidden); "cnn": the small ResNet of
    # personal.models.lit.LitConvConfig (widths = its stage widths)
    arch: str = "vit"
    layers: int = 4
    hidden: int = 192
    widths: tuple = (48, 96, 192, 384)
    crop_size: int = 48
    eval_every_s: float = 120.0
    max_steps: int = 0  # 0 = until the time budget ends
    # "cpu": the budget counts this process's CPU seconds (what the run costs on an idle core, so
    # other jobs on a shared machine do not shorten training); "wall": elapsed time
    budget_clock: str = "wall"
    max_wall_minutes: float = 0.0  # with budget_clock "cpu": stop anyway after this long (0 = never)
    category_weight: float = 0.5
    objectness_weight: float = 0.5
    brightness: float = 0.15  # multiplicative jitter, +-
    shift: int = 4  # pixels
    # continue from a saved checkpoint (weights + learned temperature from its training_log.json)
    # instead of a fresh model; "" = fresh
    init_from: str = ""
    # wording randomisation: this many paraphrases of each training caption
    # (personal.world.paraphrase: synonyms, training-only off-catalog colour words, attributes dropped
    # or re-ordered); each caption target is swapped for one of them with probability paraphrase_p
    paraphrases: int = 0
    paraphrase_p: float = 0.5
    # weight of the anchor loss 1 - cos(crop embedding, its target text's embedding): InfoNCE only ranks a
    # crop among its household's texts, so the crop may sit far from every text; anchored, it stays near
    # its caption in MiniLM's space, where words the tower never saw ("crimson") lie near ones it did
    anchor_weight: float = 0.0
    # sensor colour: this camera preset's exposure / white-balance gains and read noise
    # (personal.sim.sensor_model) on a share of the training crops, one episode's draw each ("" = off)
    sensor_colour: str = ""
    sensor_colour_p: float = 0.5
    # weight of the distillation loss 1 - cos(tower(crop as trained), init tower(clean crop)): with
    # init_from, the tower keeps the initial checkpoint's embedding of every clean crop and learns to give
    # the same one through the sensor's colour (invariance without drifting from what it knew; 0 = off)
    distill_weight: float = 0.0
    # the distillation only on crops whose view went through these camera presets (comma-separated, e.g.
    # "ideal": keep the initial tower's embedding of the ideal camera's crops, adapt freely to the d435's;
    # "" = every crop)
    distill_presets: str = ""
    # "auto": bf16 autocast on a CPU with native bf16 (AVX512-BF16 / AMX), float32 elsewhere, where bf16
    # is emulated ~20x slower (bench/bench_tower_precision.py: a step of 128 crops 14 s against 0.7 s
    # on an AVX2 machine, so a CPU-minute budget bought ~20x fewer steps); "bfloat16" / "float32" force one
    precision: str = "auto"


def resolve_precision(precision: str) -> str:
    """"bfloat16" or "float32" for a ``TrainConfig.precision``."""
    if precision in ("bfloat16", "float32"):
        return precision
    if precision != "auto":
        raise ValueError(f"precision must be 'auto', 'bfloat16' or 'float32', got {precision!r}")
    import torch

    try:  # private, but the check torch's own tests use; a torch without it gets float32
        native = bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):
        native = False
    return "bfloat16" if native else "float32"


def build_model(cfg: TrainConfig):
    import torch

    from personal.models.lit import LitConvModel, LitVisionModel, conv_crop_config, crop_config
    from personal.perception.segment import SegmentConfig

    torch.manual_seed(cfg.seed)
    if cfg.arch == "cnn":
        return LitConvModel(conv_crop_config(crop_size=cfg.crop_size, segmenter=asdict(SegmentConfig()),
                                             hidden_sizes=tuple(cfg.widths)))
    if cfg.arch != "vit":
        raise ValueError(f"arch must be 'vit' or 'cnn', got {cfg.arch!r}")
    conf = crop_config(crop_size=cfg.crop_size, segmenter=asdict(SegmentConfig()), num_hidden_layers=cfg.layers,
                       hidden_size=cfg.hidden, intermediate_size=4 * cfg.hidden, num_attention_heads=max(1, cfg.hidden // 64))
    return LitVisionModel(conf)


def load_initial(path: str | Path):
    """(model, logit scale) of a saved crop checkpoint, to continue training it."""
    from personal.models.lit import load_crop_model

    ck = Path(path)
    if not (ck / "config.json").exists():
        raise FileNotFoundError(f"--init-from {ck}: no config.json (not a saved lit checkpoint)")
    model = load_crop_model(ck)
    if getattr(model.config, "input_kind", "frame") != "crop":
        raise ValueError(f"--init-from {ck}: input_kind {model.config.input_kind!r}, training needs a crop tower")
    log_path = ck / "training_log.json"
    scale = json.loads(log_path.read_text()).get("logit_scale", 1 / 0.07) if log_path.exists() else 1 / 0.07
    return model, float(scale)


def augment(crops: np.ndarray, masks: np.ndarray, rng: np.random.Generator, cfg: TrainConfig):
    """Flips, brightness and small shifts (edge-padded) of a batch."""
    crops, masks = crops.copy(), masks.copy()
    flip = rng.random(len(crops)) < 0.5
    crops[flip], masks[flip] = crops[flip, :, ::-1], masks[flip, :, ::-1]
    if cfg.shift:
        s = cfg.shift
        pc = np.pad(crops, ((0, 0), (s, s), (s, s), (0, 0)), mode="edge")
        pm = np.pad(masks, ((0, 0), (s, s), (s, s)))
        n = crops.shape[1]
        for i, (dy, dx) in enumerate(rng.integers(0, 2 * s + 1, size=(len(crops), 2))):
            crops[i], masks[i] = pc[i, dy:dy + n, dx:dx + n], pm[i, dy:dy + n, dx:dx + n]
    gain = 1 + rng.uniform(-cfg.brightness, cfg.brightness, size=(len(crops), 1, 1, 1))
    crops = np.clip(crops * gain, 0, 255).astype(np.uint8)
    return crops, masks


def sensor_colour(crops: np.ndarray, spec, p: float, rng: np.random.Generator) -> np.ndarray:
    """A share ``p`` of the crops through ``spec``'s colour (exposure and white-balance gains, read
    noise), each as one episode of that camera would see it; the rest unchanged."""
    from personal.sim.sensor_model import colour_gains, gains_and_noise

    pick = np.flatnonzero(rng.random(len(crops)) < p)
    if not len(pick):
        return crops
    out = crops.copy()
    out[pick] = gains_and_noise(crops[pick], colour_gains(spec, rng, len(pick)), spec.rgb_noise, rng)
    return out


class Trainer:
    def __init__(self, train_shards: list[dict], val_shards: list[dict], cfg: TrainConfig, log=print):
        import torch

        torch.set_num_threads(max(1, int(cfg.threads)))
        self.cfg, self.log = cfg, log
        self.precision = resolve_precision(cfg.precision)
        log(f"train: {self.precision} ({cfg.precision})")
        t0 = time.perf_counter()
        variants = caption_variants(train_shards, cfg.paraphrases, cfg.seed) if cfg.paraphrases else {}
        self.vocab = Vocab(vocab_texts(train_shards + val_shards) + [t for v in variants.values() for t in v])
        log(f"train: {len(self.vocab.texts)} texts embedded by the frozen MiniLM in {time.perf_counter() - t0:.1f} s")
        self.variant_rows = _variant_rows(self.vocab, variants, cfg.paraphrases)
        self.train = CropSet(train_shards, self.vocab, cfg.crop_size)
        self.val = CropSet(val_shards, self.vocab, cfg.crop_size)
        log(f"train: {len(self.train)} training proposals from {len(train_shards)} households, "
            f"{len(self.val)} validation proposals from {len(val_shards)}")
        cats = category_texts() + structure_texts()
        self.cat_rows = np.array([self.vocab.index[t] for t in cats])
        self.model, scale = load_initial(cfg.init_from) if cfg.init_from else (build_model(cfg), 1 / 0.07)
        if cfg.init_from:
            log(f"train: continuing from {cfg.init_from} (temperature {scale:.1f})")
        self.logit_scale = torch.nn.Parameter(torch.tensor(math.log(scale)))
        params = list(self.model.parameters()) + [self.logit_scale]
        self.opt = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
        self.text_emb = torch.from_numpy(self.vocab.emb)
        self.allowed = torch.from_numpy(self.train.allowed)
        self.rng = np.random.default_rng(cfg.seed)
        self.history: list[dict] = []
        self.colour_spec = None
        if cfg.sensor_colour:
            from personal.sim.sensor_model import sensor_spec

            self.colour_spec = sensor_spec(cfg.sensor_colour)
        self.teacher = None
        if cfg.distill_weight:
            if not cfg.init_from:
                raise ValueError("distill_weight needs init_from (the tower to distil from)")
            self.teacher = load_initial(cfg.init_from)[0].eval()
            for p in self.teacher.parameters():
                p.requires_grad_(False)

    # -- loss ----------------------------------------------------------------------------------
    @staticmethod
    def _soft_target(rows: np.ndarray, weight: np.ndarray, n: int):
        import torch

        q = torch.zeros(len(rows), n)
        ok = rows >= 0
        r = np.nonzero(ok)[0]
        q.index_put_((torch.from_numpy(r), torch.from_numpy(rows[ok])), torch.from_numpy(weight[ok].astype(np.float32)),
                     accumulate=True)
        return q / q.sum(1, keepdim=True).clamp_min(1e-9)

    def _losses(self, idx: np.ndarray, train: bool = True):
        import torch
        import torch.nn.functional as F

        from personal.models.imaging import crop_tensor

        s = self.train
        crops, masks = s.crops[idx], s.masks[idx]
        text, allowed = s.text[idx], self.allowed[torch.from_numpy(s.hh[idx])]
        clean = None
        if train:
            crops, masks = augment(crops, masks, self.rng, self.cfg)
            if self.cfg.paraphrases:
                text, allowed = self._reword(text, allowed)
            clean = crops
            if self.colour_spec is not None:
                crops = sensor_colour(crops, self.colour_spec, self.cfg.sensor_colour_p, self.rng)
        x = torch.from_numpy(crop_tensor(crops, masks))
        bf16 = self.precision == "bfloat16"
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            feats, obj = self.model.embed_crops(x)
        f = F.normalize(feats.float(), dim=-1)
        distill = None
        if self.teacher is not None and clean is not None:
            with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                t = F.normalize(self.teacher.embed_crops(torch.from_numpy(crop_tensor(clean, masks)))[0].float(), dim=-1)
            gap = 1 - (f * t).sum(-1)
            if self.cfg.distill_presets:
                keep = torch.from_numpy(np.isin(s.preset[idx], self.cfg.distill_presets.split(",")).astype(np.float32))
                distill = (gap * keep).sum() / keep.sum().clamp_min(1.0)
            else:
                distill = gap.mean()
        scale = self.logit_scale.exp().clamp(max=100.0)
        logits = (f @ self.text_emb.T) * scale
        logits = logits.masked_fill(~allowed, -1e4)
        q = self._soft_target(text, s.weight[idx], logits.shape[1])
        loss_cap = -(q * F.log_softmax(logits, -1)).sum(-1).mean()
        C = self.text_emb[torch.from_numpy(self.cat_rows)]
        cq = self._soft_target(s.cat[idx], s.weight[idx], C.shape[0])
        loss_cat = -(cq * F.log_softmax((f @ C.T) * scale, -1)).sum(-1).mean()
        loss_obj = F.binary_cross_entropy_with_logits(obj.float(), torch.from_numpy(s.objfrac[idx].astype(np.float32)))
        total = loss_cap + self.cfg.category_weight * loss_cat + self.cfg.objectness_weight * loss_obj
        parts = {"caption": loss_cap.detach(), "category": loss_cat.detach(), "objectness": loss_obj.detach()}
        if self.cfg.anchor_weight:
            target = F.normalize(q @ self.text_emb, dim=-1)  # the soft target's texts, mixed as the target mixes them
            loss_anchor = (1 - (f * target).sum(-1)).mean()
            total = total + self.cfg.anchor_weight * loss_anchor
            parts["anchor"] = loss_anchor.detach()
        if distill is not None:
            total = total + self.cfg.distill_weight * distill
            parts["distill"] = distill.detach()
        return total, parts

    def _reword(self, text: np.ndarray, allowed):
        """Caption targets swapped for one of their paraphrases (probability ``paraphrase_p``): the
        paraphrase is the target and the original caption is no longer ranked for that crop; the
        household's other captions stay the negatives."""
        import torch

        rows = self.variant_rows[np.maximum(text, 0)]  # (B, 4, n) paraphrase rows, -1 = none
        pick = rows[..., 0] >= 0
        pick &= (text >= 0) & (self.rng.random(text.shape) < self.cfg.paraphrase_p)
        if not pick.any():
            return text, allowed
        n_alt = (rows >= 0).sum(-1)
        choice = (self.rng.random(text.shape) * np.maximum(n_alt, 1)).astype(np.int64)
        new = np.take_along_axis(rows, choice[..., None], -1)[..., 0]
        i, j = np.nonzero(pick)
        allowed = allowed.clone()
        allowed[torch.from_numpy(i), torch.from_numpy(text[i, j])] = False
        allowed[torch.from_numpy(i), torch.from_numpy(new[i, j])] = True
        text = text.copy()
        text[i, j] = new[i, j]
        return text, allowed

    # -- loop ----------------------------------------------------------------------------------
    def fit(self) -> dict:
        import torch

        cfg = self.cfg
        budget = cfg.minutes * 60.0
        t0, c0 = time.perf_counter(), time.process_time()
        step, last_eval, order = 0, -1e9, np.zeros(0, np.int64)
        self.model.train()
        while True:
            wall = time.perf_counter() - t0
            elapsed = time.process_time() - c0 if cfg.budget_clock == "cpu" else wall
            if elapsed >= budget or (cfg.max_steps and step >= cfg.max_steps):
                break
            if cfg.max_wall_minutes and wall >= cfg.max_wall_minutes * 60:
                break
            if len(order) < cfg.batch:
                order = self.rng.permutation(len(self.train))
            idx, order = np.sort(order[: cfg.batch]), order[cfg.batch:]
            frac = min(elapsed / budget, 1.0) if not cfg.max_steps else step / cfg.max_steps
            lr = cfg.lr * min(1.0, (step + 1) / cfg.warmup) * 0.5 * (1 + math.cos(math.pi * frac))
            for g in self.opt.param_groups:
                g["lr"] = lr
            loss, parts = self._losses(idx)
            self.opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
            self.opt.step()
            step += 1
            rec = {"step": step, "wall_s": round(time.perf_counter() - t0, 1), "cpu_s": round(time.process_time() - c0, 1),
                   "lr": lr, "loss": float(loss.detach()), **{k: float(v) for k, v in parts.items()}}
            if time.perf_counter() - last_eval >= cfg.eval_every_s:
                rec.update(self.validate())
                last_eval = time.perf_counter()
                self.log(f"train: step {step}, {rec['wall_s']:.0f} s wall, {rec['cpu_s']:.0f} s CPU, loss {rec['loss']:.3f} "
                         f"(caption {rec['caption']:.3f}), val proposal top-1 {rec['val_top1']:.3f} top-5 {rec['val_top5']:.3f}")
            self.history.append(rec)
        final = self.validate()
        if self.history:
            self.history[-1].update(final)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        return {"steps": step, "wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "crops_seen": step * cfg.batch,
                "budget_clock": cfg.budget_clock, "precision": self.precision, "steps_per_cpu_s": round(step / max(cpu, 1e-9), 3), **final}

    def validate(self, max_crops: int = 3000) -> dict:
        """Proposal -> caption retrieval on the validation households."""
        from personal.perception.evaluate import crop_retrieval

        self.model.eval()
        res = crop_retrieval(self.model, self.val, self.vocab, max_crops=max_crops)
        self.model.train()
        return {"val_top1": res["top1"], "val_top5": res["top5"], "val_category": res["category_acc"],
                "val_proposals": res["proposals"], "val_obj_acc": res["objectness_acc"]}


def caption_variants(shards: list[dict], n: int, seed: int = 0) -> dict[str, list[str]]:
    """caption -> up to ``n`` paraphrases (:func:`personal.world.paraphrase.paraphrases`); a
    paraphrase that would also read as another object of its household (a dropped attribute was what
    told two apart) is left out."""
    from collections import Counter

    from personal.world.paraphrase import paraphrases

    out: dict[str, list[str]] = {}
    for s in shards:
        alts = {o["caption"]: paraphrases(o["caption"], o["category"], n, seed) for o in s["objects"]}
        seen = Counter(t for c, ts in alts.items() for t in set(ts) | {c})
        for c, ts in alts.items():
            out[c] = [t for t in ts if seen[t] == 1 and t not in out.get(c, [])]
    return out


def _variant_rows(vocab: Vocab, variants: dict[str, list[str]], n: int) -> np.ndarray:
    """(V, max(n, 1)) vocabulary rows of each text's paraphrases, -1 padded."""
    rows = np.full((len(vocab.texts), max(1, n)), -1, np.int64)
    for caption, alts in variants.items():
        r = vocab.index[caption]
        for k, t in enumerate(alts[:n]):
            rows[r, k] = vocab.index[t]
    return rows


def save_checkpoint(trainer: Trainer, out_dir: str | Path, info: dict, dataset_index: dict, val_index: dict) -> Path:
    """``save_pretrained`` layout + image processor (the RGB normalisation of the crops) +
    training log + loss plot."""
    from transformers import CLIPImageProcessor

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    m = trainer.model
    m.save_pretrained(out, safe_serialization=True)
    size = int(m.config.image_size)
    CLIPImageProcessor(do_resize=True, size={"height": size, "width": size}, do_center_crop=False,
                       image_mean=[0.5, 0.5, 0.5], image_std=[0.5, 0.5, 0.5]).save_pretrained(out)
    log = {"config": asdict(trainer.cfg), "result": info, "train_seeds": dataset_index.get("seeds"),
           "val_seeds": val_index.get("seeds"), "views_per_scene": dataset_index.get("views_per_scene"),
           "train_proposals": len(trainer.train), "logit_scale": float(trainer.logit_scale.detach().exp()),
           "history": trainer.history}
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
    ax[1].plot([h["step"] for h in ev], [h["val_top1"] for h in ev], "o-", label="val proposal top-1")
    ax[1].plot([h["step"] for h in ev], [h["val_top5"] for h in ev], "o-", label="val proposal top-5")
    ax[1].set_xlabel("step")
    ax[1].set_ylim(0, 1)
    ax[1].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)

"""Behaviour cloning with action chunking on a demonstration dataset; writes the checkpoint and its card.

Each sample is one frame: input features (``features.input_features``), the task and preference
embeddings, and the chunk of the next H demonstrated actions (padding past the episode end is masked
out of the L1 loss, as in ACT/LeRobot). An auxiliary loss (weight ``aux_weight``) asks a linear head
to name the episode's preference (or none) from the language features: behaviour cloning alone
barely constrains them where preferences act alike, and unseen wordings then land anywhere.
Two augmentations, both label-preserving:
- the wording: each sample draws one of the training wordings of its episode's preference
  (``phrasings.TRAIN``), so the policy sees every training wording of a preference, never a held-out one;
- the candidate slots: swapped with probability 1/2, so choices follow colour and size, not slot order.
A small share of episodes (every ``val_every``-th) is kept out as a validation set for the loss curve.
"""
from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from personal.manipulation import phrasings
from personal.manipulation import preferences as P
from personal.manipulation.learned.dataset import Episode, action_chunks, read_dataset
from personal.manipulation.learned.features import (
    OBJECT_DIM,
    ROBOT_DIM,
    input_features,
    split_prompt,
    swap_candidates,
)
from personal.manipulation.learned.model import ChunkPolicyNet, save_checkpoint
from personal.manipulation.learned.text import EMBEDDING_MODEL, MAX_TOKENS, PromptEncoder
from personal.manipulation.suite import MISSIONS, make_layout

log = logging.getLogger(__name__)


@dataclass
class TrainConfig:
    horizon: int = 10
    width: int = 256
    depth: int = 3
    lang_width: int = 128
    steps: int = 8000
    batch: int = 256
    lr: float = 1e-3
    weight_decay: float = 1e-4
    warmup: int = 300
    aux_weight: float = 0.05  # auxiliary loss: predict the preference id from the language features (0 = off)
    token_heads: int = 4  # attention pooling heads over MiniLM's preference tokens (0 = pooled sentence vector)
    token_dropout: float = 0.1  # training: share of preference tokens hidden from the pooling ([CLS] kept)
    rewrites: bool = True  # train on phrasings.TRAIN_REWRITTEN (training wordings + rule-based rewrites)
    val_every: int = 20  # every 20th episode is validation
    log_every: int = 100
    eval_every: int = 1000
    threads: int = 1  # one thread: on the shared 2-core machine two threads ran 10-25x slower per step
    max_minutes: float = 20.0  # stop early (and still save) past this wall time
    seed: int = 0


@dataclass
class Samples:
    feats: np.ndarray  # (N, F)
    feats_swapped: np.ndarray  # (N, F); equal to feats where a swap is meaningless
    chunks: np.ndarray  # (N, H, 7)
    pad: np.ndarray  # (N, H) bool
    task: np.ndarray  # (N,) index into Texts.task
    wording_table: np.ndarray  # (G, W) per wording group: indices into Texts.pref (padded by repetition)
    n_wordings: np.ndarray  # (G,) wordings in each group
    group: np.ndarray  # (N,) wording group of each sample
    pref_class: np.ndarray  # (N,) 0 = none, 1 + index in preferences.PREFERENCES, -1 = unknown


@dataclass
class Texts:
    task: np.ndarray  # (K, 384)
    pref: np.ndarray  # (M, 384) sentence embeddings, or (M, T, 384) token embeddings (float16)
    pref_mask: np.ndarray | None = None  # (M, T) bool with token embeddings


def _episode_wordings(ep: Episode, table: dict[str, list[str]]) -> tuple[str, list[str]]:
    """(task sentence, the preference wordings of ``table`` this episode may be labelled with)."""
    pref_id, mission = ep.meta.get("pref"), ep.meta.get("mission")
    if pref_id is None or mission not in MISSIONS:
        task, pref = split_prompt(ep.prompt)  # a foreign dataset: its own prompt only
        return task, [pref]
    task = MISSIONS[mission].task
    if not pref_id:
        return task, [""]
    layout = make_layout(mission, int(ep.meta["seed"]))
    return task, [phrasings.fill(w, layout).rstrip(".") for w in table[pref_id]]


def build_samples(episodes: list[Episode], horizon: int, encoder: PromptEncoder, tokens: bool = False,
                  table: dict[str, list[str]] | None = None) -> tuple[Samples, Texts]:
    """Frames -> samples; the preference wordings (``table``, default ``phrasings.TRAIN``) embedded as
    sentence vectors, or as token embeddings when ``tokens``."""
    table = table or phrasings.TRAIN
    task_texts: dict[str, int] = {}
    pref_texts: dict[str, int] = {}
    groups: dict[tuple[int, ...], int] = {}
    feats, swapped, chunks, pads, task_idx, group_idx, classes = [], [], [], [], [], [], []
    for ep in episodes:
        classes.append(np.full(len(ep), pref_class(ep.meta.get("pref"))))
        task, wordings = _episode_wordings(ep, table)
        t = task_texts.setdefault(task, len(task_texts))
        key = tuple(pref_texts.setdefault(w, len(pref_texts)) for w in wordings)
        g = groups.setdefault(key, len(groups))
        f = input_features(ep.state, ep.env)
        two = ep.env.reshape(len(ep), 4, -1)[:, :2, 0].all()
        feats.append(f)
        swapped.append(input_features(ep.state, swap_candidates(ep.env)) if two else f)
        c, p = action_chunks(ep.action, horizon)
        chunks.append(c)
        pads.append(p)
        task_idx.append(np.full(len(ep), t))
        group_idx.append(np.full(len(ep), g))
    if tokens:
        pref, mask = encoder.tokens(list(pref_texts), dtype=np.float16)
        texts = Texts(encoder.sentences(list(task_texts)), pref, mask)
    else:
        texts = Texts(encoder.sentences(list(task_texts)), encoder.sentences(list(pref_texts)))
    width = max(len(k) for k in groups)
    table = np.array([[k[i % len(k)] for i in range(width)] for k in groups])
    samples = Samples(np.concatenate(feats), np.concatenate(swapped), np.concatenate(chunks), np.concatenate(pads),
                      np.concatenate(task_idx), table, np.array([len(k) for k in groups]), np.concatenate(group_idx),
                      np.concatenate(classes))
    return samples, texts


PREF_CLASSES = ("none", *P.PREFERENCES)


def pref_class(pref: str | None) -> int:
    if pref is None or (pref and pref not in P.PREFERENCES):
        return -1
    return PREF_CLASSES.index(pref or "none")


def feature_stats(s: Samples) -> tuple[np.ndarray, np.ndarray]:
    """Normalisation over the features as trained (both slot orders), the two candidate slots pooled so
    they stay exchangeable."""
    both = np.concatenate([s.feats, s.feats_swapped])
    mean, std = both.mean(0), both.std(0)
    c0 = slice(ROBOT_DIM, ROBOT_DIM + OBJECT_DIM)
    c1 = slice(ROBOT_DIM + OBJECT_DIM, ROBOT_DIM + 2 * OBJECT_DIM)
    for a in (mean, std):
        a[c0] = a[c1] = 0.5 * (a[c0] + a[c1])
    return mean.astype(np.float32), np.maximum(std, 1e-3).astype(np.float32)


def _batch(s: Samples, texts: Texts, idx: np.ndarray, rng: np.random.Generator, augment: bool,
           token_dropout: float = 0.0):
    """(features, task embeddings, preference embeddings or tokens, their mask or None, chunks, valid, class)."""
    swap = rng.random(len(idx)) < 0.5 if augment else np.zeros(len(idx), bool)
    feats = np.where(swap[:, None], s.feats_swapped[idx], s.feats[idx])
    g = s.group[idx]
    pick = (rng.random(len(idx)) * s.n_wordings[g]).astype(int) if augment else np.zeros(len(idx), int)
    pref_rows = s.wording_table[g, pick]
    pref, mask = texts.pref[pref_rows].astype(np.float32), None
    if texts.pref_mask is not None:
        mask = texts.pref_mask[pref_rows]
        if augment and token_dropout > 0:
            keep = rng.random(mask.shape) >= token_dropout
            keep[:, 0] = True  # [CLS]: a preference never vanishes entirely
            mask = mask & keep
        mask = torch.from_numpy(mask)
    return (torch.from_numpy(feats), torch.from_numpy(texts.task[s.task[idx]]), torch.from_numpy(pref), mask,
            torch.from_numpy(s.chunks[idx]), torch.from_numpy(~s.pad[idx]), torch.from_numpy(s.pref_class[idx]))


def masked_l1(pred: torch.Tensor, target: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    err = (pred - target).abs().mean(-1) * valid
    return err.sum() / valid.sum().clamp(min=1)


def train(dataset: Path, out: Path, cfg: TrainConfig = TrainConfig(), encoder: PromptEncoder | None = None,
          progress: Callable[[dict], None] | None = None) -> dict:
    """Train on ``dataset``; write ``out`` (checkpoint .safetensors) plus card, curve and log beside it."""
    t_start = time.perf_counter()
    torch.manual_seed(cfg.seed)
    torch.set_num_threads(max(1, cfg.threads))
    rng = np.random.default_rng(cfg.seed)
    episodes, info = read_dataset(dataset)
    val_eps = [e for i, e in enumerate(episodes) if cfg.val_every and i % cfg.val_every == 0]
    train_eps = [e for i, e in enumerate(episodes) if not (cfg.val_every and i % cfg.val_every == 0)] or episodes
    encoder = encoder or PromptEncoder()
    table = phrasings.TRAIN_REWRITTEN if cfg.rewrites else phrasings.TRAIN
    tokens = cfg.token_heads > 0
    tr, texts = build_samples(train_eps, cfg.horizon, encoder, tokens, table)
    va, va_texts = build_samples(val_eps, cfg.horizon, encoder, tokens) if val_eps else (None, None)
    net = ChunkPolicyNet(cfg.horizon, cfg.width, cfg.depth, cfg.lang_width,
                         pref_classes=len(PREF_CLASSES) if cfg.aux_weight > 0 else 0, token_heads=cfg.token_heads)
    mean, std = feature_stats(tr)
    net.feat_mean.copy_(torch.from_numpy(mean))
    net.feat_std.copy_(torch.from_numpy(std))
    opt = torch.optim.AdamW(net.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda k: min(1.0, (k + 1) / cfg.warmup) *
                                              0.5 * (1 + np.cos(np.pi * min(k, cfg.steps) / cfg.steps)))
    curve: list[dict] = []
    prep_s = time.perf_counter() - t_start
    t0 = time.perf_counter()
    running, step = None, 0
    for step in range(1, cfg.steps + 1):
        net.train()
        feats, temb, pemb, pmask, target, valid, cls = _batch(tr, texts, rng.integers(0, len(tr.feats), cfg.batch), rng,
                                                             True, cfg.token_dropout)
        lang = net.language(temb, pemb, pmask)
        bc = masked_l1(net(feats, temb, pemb, lang=lang), target, valid)
        loss = bc
        if net.pref_head is not None and (cls >= 0).any():
            loss = loss + cfg.aux_weight * torch.nn.functional.cross_entropy(net.pref_head(lang), cls, ignore_index=-1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        running = bc.item() if running is None else 0.98 * running + 0.02 * bc.item()
        if step % cfg.log_every == 0 or step == cfg.steps:
            row = {"step": step, "train_l1": round(running, 5), "elapsed_s": round(time.perf_counter() - t0, 1)}
            if va is not None and (step % cfg.eval_every == 0 or step == cfg.steps):
                row["val_l1"] = round(evaluate_loss(net, va, va_texts), 5)
            curve.append(row)
            if progress:
                progress(row)
        if (time.perf_counter() - t_start) / 60 > cfg.max_minutes:
            log.warning("stopping at step %d: the %.0f min budget is spent", step, cfg.max_minutes)
            if va is not None and "val_l1" not in curve[-1]:
                curve.append({"step": step, "train_l1": round(running, 5), "val_l1": round(evaluate_loss(net, va, va_texts), 5),
                              "elapsed_s": round(time.perf_counter() - t0, 1)})
            break
    train_s = time.perf_counter() - t0
    meta = _training_meta(dataset, info, episodes, train_eps, val_eps, cfg, step, prep_s, train_s, curve)
    path = save_checkpoint(net.eval(), out, meta)
    meta["checkpoint_bytes"] = path.stat().st_size
    write_card(path, meta)
    return meta


@torch.no_grad()
def evaluate_loss(net: ChunkPolicyNet, s: Samples, texts: Texts, batch: int = 2048) -> float:
    net.eval()
    rng = np.random.default_rng(0)
    total, n = 0.0, 0.0
    for a in range(0, len(s.feats), batch):
        idx = np.arange(a, min(a + batch, len(s.feats)))
        feats, temb, pemb, pmask, target, valid, _ = _batch(s, texts, idx, rng, False)
        total += masked_l1(net(feats, temb, pemb, pref_mask=pmask), target, valid).item() * valid.sum().item()
        n += valid.sum().item()
    return total / max(n, 1)


def _training_meta(dataset, info, episodes, train_eps, val_eps, cfg, steps, prep_s, train_s, curve) -> dict:
    seeds = [int(e.meta["seed"]) for e in episodes if "seed" in e.meta]
    prefs = sorted({e.meta.get("preference", "?") for e in episodes})
    summary_path = Path(dataset) / "meta/perm_dataset.json"
    return {
        "dataset": str(dataset), "dataset_format": f"LeRobot {info.get('codebase_version')}",
        "episodes": len(episodes), "train_episodes": len(train_eps), "val_episodes": len(val_eps),
        "frames": int(sum(len(e) for e in episodes)), "missions": sorted({e.meta.get("mission", "?") for e in episodes}),
        "preferences": prefs, "wordings_per_preference": {p: len(w) for p, w in phrasings.TRAIN.items()},
        "rewritten_wordings_per_preference": ({p: len(w) for p, w in phrasings.TRAIN_REWRITTEN.items()}
                                              if cfg.rewrites else None),
        "train_seed_range": [min(seeds), max(seeds)] if seeds else None,
        "demos": json.loads(summary_path.read_text()) if summary_path.exists() else None,
        "embedding_model": EMBEDDING_MODEL, "config": cfg.__dict__, "steps": steps,
        "prep_s": round(prep_s, 1), "train_s": round(train_s, 1), "curve": curve,
        "final_train_l1": curve[-1]["train_l1"] if curve else None,
        "final_val_l1": next((r["val_l1"] for r in reversed(curve) if "val_l1" in r), None),
        "torch": torch.__version__, "trained_at": time.strftime("%Y-%m-%d %H:%M:%S"),
    }


def write_card(checkpoint: Path, meta: dict) -> Path:
    """MODEL_CARD.md, loss_curve.png and train_log.json beside the checkpoint."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder = Path(checkpoint).parent
    curve = meta["curve"]
    (folder / "train_log.json").write_text(json.dumps(meta, indent=1))
    fig, ax = plt.subplots(figsize=(5, 3))
    ax.plot([r["step"] for r in curve], [r["train_l1"] for r in curve], label="train (EMA)")
    val = [r for r in curve if "val_l1" in r]
    if val:
        ax.plot([r["step"] for r in val], [r["val_l1"] for r in val], "o-", label="validation episodes")
    ax.set_xlabel("step")
    ax.set_ylabel("L1 on action chunks")
    ax.set_yscale("log")
    ax.legend()
    fig.tight_layout()
    fig.savefig(folder / "loss_curve.png", dpi=100)
    plt.close(fig)
    c, d = meta["config"], meta.get("demos") or {}
    lines = [
        f"# Model card: {Path(checkpoint).name}", "",
        "A small preference-conditioned manipulation policy for the robosuite tabletop suite "
        "(`personal.manipulation`), trained by behaviour cloning with action chunking from oracle demonstrations.", "",
        "## Inputs and outputs",
        "- `observation/state` (8: eef xyz, axis-angle, 2 gripper joints) and `observation/environment_state` "
        "(4 object slots: presence, position, half extents, colour — the simulator's object poses, i.e. privileged "
        "low-dimensional state; no images).",
        f"- `prompt` split at `Preference:`; both parts embedded by {meta['embedding_model']}, frozen"
        + (f": the task as a sentence vector, the preference as its contextual token embeddings (up to "
           f"{MAX_TOKENS} word pieces) pooled by a learned {c['token_heads']}-head attention." if c.get("token_heads")
           else " (sentence vectors)."),
        f"- Output: a chunk of {c['horizon']} 7-D delta-EEF actions at 20 Hz (gripper −1 open).", "",
        "## Network",
        f"A language-conditioned pointer over the two candidate objects (they are exchangeable: choices follow "
        f"colour and size), then a residual MLP of width {c['width']} with {c['depth']} FiLM blocks conditioned on "
        f"the language features ({c['lang_width']}-d). L1 loss on the chunk (ACT's loss, without its CVAE); AdamW "
        f"lr {c['lr']}, batch {c['batch']}, cosine schedule"
        + (f"; auxiliary loss (weight {c['aux_weight']}): a linear head names the preference from the language "
           "features (training only)." if c.get("aux_weight") else "."), "",
        "## Data",
        f"- {meta['dataset_format']} dataset `{meta['dataset']}`: {meta['episodes']} episodes "
        f"({meta['train_episodes']} train / {meta['val_episodes']} validation), {meta['frames']} frames.",
        f"- Missions {', '.join(meta['missions'])}; preferences {', '.join(meta['preferences'])}.",
        f"- Layout seeds {meta['train_seed_range']} (evaluation uses seeds below 1000: disjoint).",
        f"- Wordings: {sorted(set(meta['wordings_per_preference'].values()))} training wordings per preference "
        "(`phrasings.TRAIN`, near-duplicates of reserved wordings removed)"
        + (f", plus rule-based rewrites (request frames, contractions expanded; `phrasings.TRAIN_REWRITTEN`: "
           f"{sum(meta['rewritten_wordings_per_preference'].values())} wordings in all)"
           if meta.get("rewritten_wordings_per_preference") else "")
        + (f"; token dropout {c.get('token_dropout', 0)}" if c.get("token_heads") else "") + "; the held-out paraphrases "
        "(`phrasings.HELD_OUT`, `HELD_OUT_B`, `HELD_OUT_C`) and the validation wordings (`VALIDATION`) were never "
        "trained on.",
    ]
    if d:
        cpu = f" ({d['cpu_s']:.0f} CPU-s of rollouts)" if d.get("cpu_s") else ""
        lines.append(f"- Recorded in {d.get('wall_s'):.0f} s wall{cpu} with {d.get('workers')} worker processes on a 2-core "
                     "machine shared with other jobs (`bench/bench_perm_learning.py` gives the cost on free cores); "
                     f"{d.get('episodes_kept')}/{d.get('episodes_planned')} oracle episodes succeeded and were kept; "
                     f"DART-style action noise σ = {d.get('noise_sigma')} on half of them.")
    lines += [
        "", "## Training",
        f"- {meta['steps']} steps in {meta['train_s']:.0f} s wall (+ {meta['prep_s']:.0f} s data preparation and "
        f"prompt embedding), {c['threads']} torch thread(s), torch {meta['torch']}, CPU, machine shared with other jobs.",
        f"- Final L1: train {meta['final_train_l1']}, validation {meta['final_val_l1']}.",
        f"- Checkpoint: {meta.get('checkpoint_bytes', 0) / 1e6:.1f} MB (safetensors).", "",
        "![loss curve](loss_curve.png)", "",
        "## Limitations",
        "- Reads true object poses (no perception); trained and evaluated only on this simulated tabletop.",
        "- Single preferences only (no composition or conflict training); contextual (ComprePref) prompts are "
        "treated as a preference sentence but were not trained on.",
        "- Evaluation: see `docs/results/perm/learned/report.md`.",
    ]
    path = folder / "MODEL_CARD.md"
    path.write_text("\n".join(lines) + "\n")
    return path

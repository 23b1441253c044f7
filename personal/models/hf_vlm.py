"""transformers adapters for CLIP, SigLIP, the BLIP-2 feature extractor and the locked-text
image tower trained here (``lit``, :mod:`personal.models.lit`).

Weights are read from a local directory only (``local_files_only=True``; nothing is ever
downloaded). The directory needs the model (config + weights), a tokenizer and an image
processor, as written by ``save_pretrained``; a ``lit`` checkpoint needs no tokenizer: its
text tower is the packaged MiniLM its config names (a checkpoint trained against another text
space is refused, naming the path).

transformers 5.x returns output objects from ``get_image_features`` / ``get_text_features``
(the embedding is ``.pooler_output``); 4.x returned tensors. Both are handled.

Dense features for the feature map: one feature per patch of the whole frame (resized so its
sides are multiples of the patch size, position embeddings interpolated):
- CLIP: MaskCLIP — the last layer's value path (value and output projections of each patch
  token, no query-key mixing), the post layer norm and the visual projection;
- SigLIP: the same through the attention-pooling head (its value/output projections and MLP
  applied to each patch token on its own);
- ``lit`` crop tower (the shipped model, ``input_kind = "crop"``): this adapter embeds crops
  (:meth:`HFImageTextEncoder.embed_crops`) and, from colour alone, a grid of crops. Its RGB-D
  path (the segmenter's object proposals, each cut out and embedded, weighted by objectness) is
  the perception pipeline above this package: :class:`personal.perception.tower.CropTowerEncoder`,
  which ``make_encoder("lit")`` builds;
- ``lit`` frame models (``input_kind = "frame"``): the model's own dense head (patch tokens ->
  post layer norm -> projection) plus an objectness probability per patch;
- BLIP-2 (no patch-level projection): a grid of crops (``crop_grid``, default 2 x 3).
Every pixel belongs to the region of its patch, proposal or crop. Nothing here reads instance ids.

A ``lit`` tower's text side reads colour words its training captions never used ("crimson") as
their nearest training colours (:mod:`personal.models.colour_words`; ``colour_words="off"`` is
plain MiniLM), and with ``category_words`` object nouns they never used ("couch") as the catalog
category WordNet says they name (:mod:`personal.models.category_words`).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from personal.models.base import ImageTextEncoder, l2_normalize
from personal.models.category_words import catalog_category_words
from personal.models.colour_words import catalog_grounding

KINDS = ("clip", "siglip", "blip2", "lit")
# how a lit tower's text side reads object nouns its captions never used (models.category_words)
# name -> (relations, senses) of personal.models.category_words.catalog_category_words, or None (off)
CATEGORY_WORDS = {"off": None, "wordnet-synonyms": (("synonyms",), "first"),
                  "wordnet-first-sense": (("synonyms", "hyponyms"), "first"), "wordnet": (("synonyms", "hyponyms"), "all")}
DEFAULT_CATEGORY_WORDS = "wordnet"  # chosen on validation households (docs/results/category_words/RULES.md)
_MODEL_TYPES = {"clip": "clip", "siglip": "siglip", "blip-2": "blip2", "blip_2": "blip2", "personal_lit_vision": "lit",
                "personal_lit_conv": "lit"}
# text towers a lit checkpoint may name, with their embedding size
KNOWN_TEXT_TOWERS = {"sentence-transformers/all-MiniLM-L6-v2": 384}


class CheckpointError(ValueError):
    """A model directory that cannot be used: missing or corrupt files, or a text space that
    does not match."""


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
                 crop_grid: tuple[int, int] = (2, 3), max_text_length: int = 64,
                 dense_size: tuple[int, int] | None = None, threads: int = 1,
                 objectness_threshold: float = 0.5, colour_words: str = "catalog",
                 category_words: str = DEFAULT_CATEGORY_WORDS) -> None:
        path = Path(model_path).expanduser()
        if not str(model_path) or not path.is_dir():
            raise FileNotFoundError(
                f"model directory {str(model_path)!r} does not exist; pass a local path holding a "
                "save_pretrained() CLIP/SigLIP/BLIP-2/lit checkpoint (models are never downloaded)"
            )
        import torch
        from transformers import AutoConfig, AutoImageProcessor, AutoTokenizer

        import personal.models.lit  # noqa: F401 - registers the lit config and model with transformers

        if threads > 0:
            # one intra-op thread per process: a small model gains little from more, and on a busy
            # machine torch's thread barriers made a 20 ms frame take over a second (measured)
            torch.set_num_threads(int(threads))
        self.path = path
        self.device = torch.device(device)
        self.dense_size = tuple(dense_size) if dense_size else None
        self.objectness_threshold = float(objectness_threshold)
        if not (path / "config.json").exists():
            raise CheckpointError(f"{path}: no config.json (not a save_pretrained() checkpoint)")
        try:
            config = AutoConfig.from_pretrained(path, local_files_only=True)
        except (OSError, ValueError) as exc:
            raise CheckpointError(f"{path / 'config.json'}: unreadable config ({exc})") from exc
        detected = _MODEL_TYPES.get(config.model_type)
        if kind == "auto":
            if detected is None:
                raise ValueError(f"{path}: model_type {config.model_type!r} is not one of CLIP, SigLIP, BLIP-2, lit")
            kind = detected
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS} or 'auto', got {kind!r}")
        self.kind = kind
        self.config = config
        self.crop_grid = tuple(int(v) for v in crop_grid)
        text_cfg = getattr(config, "text_config", None) or getattr(config, "qformer_config", None)
        self.max_text_length = min(max_text_length, int(getattr(text_cfg, "max_position_embeddings", max_text_length)))
        if kind == "lit":
            self._check_text_space(config)
        if colour_words not in ("catalog", "off"):
            raise ValueError(f"colour_words must be 'catalog' or 'off', got {colour_words!r}")
        # a lit tower reads colour words it never trained on through its palette (models.colour_words)
        self.colour_words = catalog_grounding() if kind == "lit" and colour_words == "catalog" else None
        if category_words not in CATEGORY_WORDS:
            raise ValueError(f"category_words must be one of {', '.join(CATEGORY_WORDS)}, got {category_words!r}")
        # ... and object nouns it never trained on as the catalog category WordNet says they name
        self.category_words = (catalog_category_words(*CATEGORY_WORDS[category_words])
                               if kind == "lit" and CATEGORY_WORDS[category_words] else None)
        try:
            self.model = self._load_model(kind, path).to(self.device).eval()
        except Exception as exc:  # torn or foreign weight files raise the storage library's own errors
            raise CheckpointError(f"{path}: cannot load the model weights ({type(exc).__name__}: {exc})") from exc
        try:
            self.tokenizer = None if kind == "lit" else AutoTokenizer.from_pretrained(path, local_files_only=True)
            self.image_processor = AutoImageProcessor.from_pretrained(path, local_files_only=True)
        except (OSError, ValueError) as exc:
            raise FileNotFoundError(f"{path}: tokenizer or image processor files missing ({exc})") from exc
        if kind == "lit":  # the text tower's dimension (checked above): no need to load the sentence model here
            self._dim = int(config.projection_dim)
        else:
            with torch.no_grad():
                self._dim = int(self.encode_text(["probe"]).shape[1])

    def _check_text_space(self, config) -> None:
        tower = getattr(config, "text_tower", "")
        if tower not in KNOWN_TEXT_TOWERS:
            raise CheckpointError(f"{self.path / 'config.json'}: text_tower {tower!r} is not a text space this project "
                                  f"has (known: {sorted(KNOWN_TEXT_TOWERS)})")
        if int(config.projection_dim) != KNOWN_TEXT_TOWERS[tower]:
            raise CheckpointError(f"{self.path / 'config.json'}: projection_dim {config.projection_dim} does not match "
                                  f"the {KNOWN_TEXT_TOWERS[tower]}-d text space of {tower}")

    @staticmethod
    def _load_model(kind: str, path: Path):
        from transformers import Blip2ForImageTextRetrieval, CLIPModel, SiglipModel

        from personal.models.lit import load_crop_model

        if kind == "lit":  # the ViT or the ResNet crop tower, by the config's model_type
            return load_crop_model(path)
        cls = {"clip": CLIPModel, "siglip": SiglipModel, "blip2": Blip2ForImageTextRetrieval}[kind]
        return cls.from_pretrained(path, local_files_only=True)

    @property
    def name(self) -> str:
        return f"{self.kind}:{self.path.name}"

    @property
    def text_space(self) -> str:
        """The space the text embeddings live in: a map is only queried with texts of its space."""
        return str(getattr(self.config, "text_tower", "")) if self.kind == "lit" else self.name

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def crop_model(self) -> bool:
        """A lit crop tower: its dense features come from RGB-D proposals (perception.tower)."""
        return self.kind == "lit" and getattr(self.config, "input_kind", "frame") == "crop"

    # -- text ---------------------------------------------------------------------
    def encode_text(self, texts: list[str]) -> np.ndarray:
        import torch

        if isinstance(texts, str):
            texts = [texts]
        if self.kind == "lit":  # the frozen text tower the image tower was trained against
            from personal.models.oracle import encode_sentences, load_sentence_model

            if not texts:
                return np.zeros((0, KNOWN_TEXT_TOWERS[self.text_space]), np.float32)
            model = load_sentence_model()
            if self.category_words is not None:
                texts = [self.category_words.rewrite(t) for t in texts]
            if self.colour_words is None:
                return l2_normalize(encode_sentences(model, list(texts)))
            return l2_normalize(self.colour_words.encode(list(texts), lambda t: encode_sentences(model, t)))
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

        if self.crop_model:  # the whole image as one crop, mask everywhere
            return self.embed_crops(*_whole_image_crops(images, int(self.config.image_size)))[0]
        if self.kind == "lit":  # the objectness-weighted mean of the patch features
            embs = []
            for img in images:
                feats, weight = self._patch_features(np.asarray(img))
                w = weight.reshape(-1, 1) + 1e-6
                embs.append((feats.reshape(-1, feats.shape[-1]) * w).sum(0) / w.sum())
            return l2_normalize(np.stack(embs)) if embs else np.zeros((0, self.dim), np.float32)
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

    # -- dense features -----------------------------------------------------------
    def dense_input_size(self, h: int, w: int) -> tuple[int, int]:
        """(height, width) the frame is resized to: lit its training size, CLIP / SigLIP shorter
        side = the model's image size; both rounded down to patch multiples."""
        vcfg = getattr(self.config, "vision_config", self.config)
        patch = int(vcfg.patch_size)
        if self.dense_size:
            th, tw = self.dense_size
        elif self.kind == "lit":
            th, tw = int(self.config.input_height), int(self.config.input_width)
        else:
            s = int(vcfg.image_size) / min(h, w)
            th, tw = round(h * s), round(w * s)
        return max(patch, th // patch * patch), max(patch, tw // patch * patch)

    def _dense_input(self, rgb: np.ndarray):
        import torch

        from personal.models.imaging import normalise, resize_area

        th, tw = self.dense_input_size(*rgb.shape[:2])
        x = normalise(resize_area(np.asarray(rgb, dtype=np.uint8), th, tw), self.image_processor)
        return torch.from_numpy(x)[None].to(self.device)

    def _patch_features(self, rgb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(features (h, w, dim) L2-normalised, weight (h, w) in [0, 1]) of every patch."""
        import torch

        pixel = self._dense_input(rgb)
        from personal.models.base import TOWER_PRECISION  # float32 (it says why)

        with torch.no_grad(), torch.autocast(self.device.type, dtype=torch.bfloat16,
                                             enabled=self.kind == "lit" and TOWER_PRECISION == "bfloat16"):
            if self.kind == "lit":
                feats, obj = self.model.dense(pixel)
                weight = torch.sigmoid(obj.float())[0].cpu().numpy().astype(np.float32)
            elif self.kind == "clip":
                feats, weight = _maskclip_clip(self.model, pixel), None
            else:
                feats, weight = _maskclip_siglip(self.model, pixel), None
        f = l2_normalize(feats[0].float().cpu().numpy())
        return f, (np.ones(f.shape[:2], np.float32) if weight is None else weight)

    def embed_crops(self, crops: np.ndarray, masks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(L2-normalised embeddings (N, dim), objectness (N,)) of crop-tower inputs."""
        from personal.models.lit import embed_crops

        if len(crops) == 0:
            return np.zeros((0, self.dim if hasattr(self, "_dim") else self.config.projection_dim), np.float32), np.zeros(0, np.float32)
        return embed_crops(self.model, crops, masks)

    def dense_regions(self, rgb: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """(regions (H, W) int32, embeddings (G, dim), weights (G,) or None): one region per patch
        (a crop for BLIP-2 and, from colour alone, for the lit crop tower); ``weights`` = each
        region's objectness where the model has one."""
        if rgb is None:
            raise ValueError(f"encoder {self.name!r} needs the colour image for dense features")
        if self.kind == "blip2" or self.crop_model:
            return (*self._crop_regions(rgb), None)
        h, w = rgb.shape[:2]
        feats, weight = self._patch_features(rgb)
        gh, gw = feats.shape[:2]
        rows = np.minimum(np.arange(h) * gh // h, gh - 1)
        cols = np.minimum(np.arange(w) * gw // w, gw - 1)
        regions = (rows[:, None] * gw + cols[None, :]).astype(np.int32)
        return regions, feats.reshape(gh * gw, -1), (weight.reshape(-1) if self.kind == "lit" else None)

    def keep_objects(self, regions: np.ndarray, emb: np.ndarray, weights: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """(regions, embeddings) without the regions the model calls structure (objectness under
        ``objectness_threshold``): their pixels become -1."""
        if weights is None:
            return regions, emb
        keep = weights >= self.objectness_threshold
        lut = np.where(keep, np.cumsum(keep) - 1, -1).astype(np.int32)
        return lut[regions], emb[keep]

    def dense_features(self, rgb: np.ndarray | None, instance_ids: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(regions, embeddings); regions the model calls structure (objectness < 0.5) get -1.
        ``instance_ids`` is never read."""
        return self.keep_objects(*self.dense_regions(rgb))

    def frame_features(self, depth, rgb, instance_ids, frame_points):
        """Per back-projected point its patch; per patch its embedding and (lit) objectness
        weight, which MapBuilder multiplies into the point confidences. Never reads
        ``instance_ids``. A crop tower maps through its proposals: build it with
        ``make_encoder("lit")`` (:class:`personal.perception.tower.CropTowerEncoder`)."""
        if self.crop_model:
            raise ValueError(f"encoder {self.name!r} is a crop tower: its map features come from RGB-D proposals "
                             "(personal.perception.tower.CropTowerEncoder, make_encoder('lit'))")
        regions, emb, weights = self.dense_regions(rgb)
        groups = regions.reshape(-1)[frame_points.pixels]
        return (groups, emb) if weights is None else (groups, emb, weights)

    def _crop_regions(self, rgb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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


def _whole_image_crops(images, size: int) -> tuple[np.ndarray, np.ndarray]:
    from personal.models.imaging import resize_area

    crops = np.stack([resize_area(np.asarray(im, np.uint8), size, size) for im in images]) if len(images) else \
        np.zeros((0, size, size, 3), np.uint8)
    return crops, np.ones(crops.shape[:3], bool)


def _maskclip_clip(model, pixel):
    """MaskCLIP dense features of a CLIPModel: every token of the second-to-last layer through
    the last layer's value and output projections (no query-key mixing), the post layer norm
    and the visual projection. (1, h, w, projection_dim)."""
    vm = model.vision_model
    patch = vm.embeddings.patch_size
    gh, gw = pixel.shape[2] // patch, pixel.shape[3] // patch
    x = vm.pre_layrnorm(vm.embeddings(pixel, interpolate_pos_encoding=True))
    for layer in vm.encoder.layers[:-1]:
        out = layer(x, None)
        x = out[0] if isinstance(out, tuple) else out
    last = vm.encoder.layers[-1]
    v = last.self_attn.out_proj(last.self_attn.v_proj(last.layer_norm1(x)))
    tokens = vm.post_layernorm(v[:, 1:])
    return model.visual_projection(tokens).reshape(1, gh, gw, -1)


def _maskclip_siglip(model, pixel):
    """The SigLIP analogue: the attention-pooling head applied to each patch token on its own
    (value + output projections, then the head's layer norm and MLP residual). (1, h, w, dim)."""
    vm = model.vision_model
    patch = vm.config.patch_size
    gh, gw = pixel.shape[2] // patch, pixel.shape[3] // patch
    tokens = vm(pixel_values=pixel, interpolate_pos_encoding=True).last_hidden_state  # post-LN, no class token
    head = vm.head
    attn = head.attention
    d = tokens.shape[-1]
    v = attn.out_proj(tokens @ attn.in_proj_weight[2 * d:].T + attn.in_proj_bias[2 * d:])
    y = v + head.mlp(head.layernorm(v))
    return y.reshape(1, gh, gw, -1)


def _kind_factory(kind: str):
    def make(model_path: str = "", **kw) -> HFImageTextEncoder:
        return HFImageTextEncoder(model_path, kind=kw.pop("kind", kind), **kw)

    make.__doc__ = f"The adapter for a local {kind} checkpoint (``make_encoder({kind!r}, model_path=...)``)."
    return make


# what personal.models.base's registry names (the lit crop tower and "hf" are built one floor up,
# by personal.perception.tower, which adds the RGB-D proposal path)
make_clip, make_siglip, make_blip2 = (_kind_factory(k) for k in ("clip", "siglip", "blip2"))

"""The crop tower's RGB-D path: object proposals -> masked crops -> the tower.

:class:`CropTowerEncoder` is the HF adapter (:class:`personal.models.hf_vlm.HFImageTextEncoder`,
which only wraps the checkpoint) plus this package's pipeline: the classical depth segmenter's
object proposals (:mod:`personal.perception.segment`, with the checkpoint's ``config.segmenter``
settings), each cut out with its mask and context (:mod:`personal.perception.crops`) and embedded
by the tower. Every pixel of a proposal gets the proposal's embedding, weighted in the map by the
tower's objectness (a proposal the tower calls structure gets none). Without depth, or for a
checkpoint that is not a crop tower, it is the plain adapter.

``make_encoder("lit")`` and ``make_encoder("hf")`` (``personal.models.base``'s registry) build it.

An ensemble is a checkpoint whose ``config.json`` names a second crop tower (``ensemble_with``, a
path relative to the checkpoint): every crop is embedded by both, and its embedding is the
normalised mean of the two (objectness: the mean), in the same text space. Segmenter, text side
and colour lexicon are the first tower's. :func:`write_ensemble` makes one.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from personal.depth import depth_to_metres
from personal.models.hf_vlm import CheckpointError, HFImageTextEncoder
from personal.perception.crops import frame_rgb, segment_crops
from personal.perception.segment import SegmentConfig, Segments, segment_rgbd


class CropTowerEncoder(HFImageTextEncoder):
    """An HF checkpoint whose crop tower (``input_kind = "crop"``) maps through RGB-D proposals,
    at most ``max_proposals`` (the largest) a frame."""

    def __init__(self, model_path: str | Path, kind: str = "auto", max_proposals: int = 32, **kw) -> None:
        super().__init__(model_path, kind=kind, **kw)
        self.max_proposals = int(max_proposals)
        partner = getattr(self.config, "ensemble_with", None)
        self.partner = self._load_partner(str(partner)) if partner else None

    def _load_partner(self, rel: str) -> "CropTowerEncoder":
        """The ensemble's second tower: a plain crop tower of the same text space and dimension."""
        where = f"{self.path / 'config.json'}: ensemble_with {rel!r}"
        path = (self.path / rel).resolve()
        if not path.is_dir():
            raise CheckpointError(f"{where}: no checkpoint folder at {path}")
        partner = CropTowerEncoder(path, kind="lit", threads=0, objectness_threshold=self.objectness_threshold)
        if not (self.crop_model and partner.crop_model):
            raise CheckpointError(f"{where}: an ensemble joins two crop towers")
        if partner.text_space != self.text_space or partner.dim != self.dim:
            raise CheckpointError(f"{where}: text space {partner.text_space} ({partner.dim}-d) differs from "
                                  f"{self.text_space} ({self.dim}-d)")
        if partner.partner is not None:
            raise CheckpointError(f"{where}: the second tower is itself an ensemble")
        return partner

    def embed_crops(self, crops: np.ndarray, masks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The tower's (embeddings, objectness); an ensemble's: the normalised mean of both towers'."""
        emb, obj = super().embed_crops(crops, masks)
        if self.partner is None or len(crops) == 0:
            return emb, obj
        emb2, obj2 = self.partner.embed_crops(crops, masks)
        mean = np.asarray(emb, np.float32) + np.asarray(emb2, np.float32)
        mean /= np.maximum(np.linalg.norm(mean, axis=1, keepdims=True), 1e-8)
        return mean, ((np.asarray(obj, np.float32) + np.asarray(obj2, np.float32)) / 2)

    def segments(self, depth: np.ndarray, K: np.ndarray, T_map_camera: np.ndarray) -> Segments:
        """The RGB-D segmenter with this checkpoint's settings (``config.segmenter``)."""
        cfg = SegmentConfig(**{k: v for k, v in (getattr(self.config, "segmenter", None) or {}).items()
                               if k in SegmentConfig.__dataclass_fields__})
        return segment_rgbd(depth, K, T_map_camera, cfg=cfg)

    def proposal_regions(self, rgb: np.ndarray, depth: np.ndarray, K: np.ndarray, T_map_camera: np.ndarray,
                         shape: tuple[int, int] | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(regions (H, W) int32 at ``shape`` (default the depth's), -1 = no proposal; embeddings
        (G, dim); objectness (G,)) of the object proposals of one RGB-D frame."""
        d = depth_to_metres(np.asarray(depth))
        seg = self.segments(d, K, T_map_camera)
        which = seg.objects()
        if len(which) > self.max_proposals:
            which = which[np.argsort(-seg.pixels[which], kind="stable")[: self.max_proposals]]
        crops, masks = segment_crops(frame_rgb(np.asarray(rgb, np.uint8)), seg, which, size=int(self.config.image_size))
        emb, obj = self.embed_crops(crops, masks)
        lut = np.full(seg.n + 1, -1, np.int32)
        lut[which] = np.arange(len(which), dtype=np.int32)
        regions = lut[seg.full_labels(shape or d.shape)]  # label -1 reads lut[-1] = -1
        return regions, emb, obj

    def dense_regions(self, rgb: np.ndarray | None, depth: np.ndarray | None = None, K: np.ndarray | None = None,
                      T_map_camera: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """The adapter's regions, or the proposals' when this is a crop tower and depth, K and the
        pose are given."""
        if rgb is None:
            raise ValueError(f"encoder {self.name!r} needs the colour image for dense features")
        if self.crop_model and depth is not None and K is not None and T_map_camera is not None:
            return self.proposal_regions(rgb, depth, K, T_map_camera, shape=rgb.shape[:2])
        return super().dense_regions(rgb)

    def dense_features(self, rgb: np.ndarray | None, instance_ids: np.ndarray | None = None, *,
                       depth: np.ndarray | None = None, K: np.ndarray | None = None,
                       T_map_camera: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(regions, embeddings) without structure regions. ``instance_ids`` is never read."""
        return self.keep_objects(*self.dense_regions(rgb, depth, K, T_map_camera))

    def frame_features(self, depth, rgb, instance_ids, frame_points):
        """Per back-projected point its proposal; per proposal its embedding and objectness weight
        (0 under ``objectness_threshold``), which MapBuilder multiplies into the point confidences.
        Never reads ``instance_ids``."""
        if not self.crop_model:
            return super().frame_features(depth, rgb, instance_ids, frame_points)
        if rgb is None or depth is None or frame_points.K is None or frame_points.T_map_camera is None:
            raise ValueError(f"encoder {self.name!r} needs colour, depth, intrinsics and the camera pose")
        regions, emb, obj = self.proposal_regions(rgb, depth, frame_points.K, frame_points.T_map_camera)
        if len(emb) == 0:
            return None
        weights = np.where(obj >= self.objectness_threshold, obj, 0.0).astype(np.float32)
        return regions.reshape(-1)[frame_points.pixels], emb, weights


def make_lit_encoder(model_path: str = "", **kw) -> CropTowerEncoder:
    """``make_encoder("lit")``: the shipped checkpoint unless ``model_path`` names another."""
    if not model_path:
        from personal.models.lit import shipped_checkpoint

        model_path = str(shipped_checkpoint())
    return CropTowerEncoder(model_path, kind=kw.pop("kind", "lit"), **kw)


def make_auto_encoder(model_path: str = "", **kw) -> CropTowerEncoder:
    """``make_encoder("hf")``: any local CLIP / SigLIP / BLIP-2 / lit checkpoint, by its config."""
    return CropTowerEncoder(model_path, kind=kw.pop("kind", "auto"), **kw)


def write_ensemble(first: str | Path, second: str | Path, out: str | Path) -> Path:
    """A checkpoint folder ``out``: ``first``'s files, its ``config.json`` naming ``second`` as
    ``ensemble_with`` (relative to ``out``). Checked by loading it; ``out`` must not exist yet."""
    import json
    import os
    import shutil

    first, second, out = Path(first), Path(second).resolve(), Path(out)
    if out.exists():
        raise FileExistsError(f"{out} exists; an ensemble is written to a new folder")
    if not (first / "config.json").is_file():
        raise CheckpointError(f"{first}: no config.json (not a checkpoint)")
    shutil.copytree(first, out)
    config = json.loads((out / "config.json").read_text())
    config["ensemble_with"] = os.path.relpath(second, out.resolve())
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    with open(out / "README.md", "a") as card:  # the copied card describes the first tower alone
        card.write(f"\n\n## Ensemble\n\nThis folder is an ensemble (personal.perception.tower): every crop is "
                   f"embedded by these weights and by `{config['ensemble_with']}`, and the two unit embeddings "
                   f"are averaged. The card above describes the first tower only.\n")
    try:
        CropTowerEncoder(out, kind="lit", threads=0)
    except Exception:
        shutil.rmtree(out)
        raise
    return out

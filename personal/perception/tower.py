"""The crop tower's RGB-D path: object proposals -> masked crops -> the tower.

:class:`CropTowerEncoder` is the HF adapter (:class:`personal.models.hf_vlm.HFImageTextEncoder`,
which only wraps the checkpoint) plus this package's pipeline: the classical depth segmenter's
object proposals (:mod:`personal.perception.segment`, with the checkpoint's ``config.segmenter``
settings), each cut out with its mask and context (:mod:`personal.perception.crops`) and embedded
by the tower. Every pixel of a proposal gets the proposal's embedding, weighted in the map by the
tower's objectness (a proposal the tower calls structure gets none). Without depth, or for a
checkpoint that is not a crop tower, it is the plain adapter.

``make_encoder("lit")`` and ``make_encoder("hf")`` (``personal.models.base``'s registry) build it.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from personal.depth import depth_to_metres
from personal.models.hf_vlm import HFImageTextEncoder
from personal.perception.crops import frame_rgb, segment_crops
from personal.perception.segment import SegmentConfig, Segments, segment_rgbd


class CropTowerEncoder(HFImageTextEncoder):
    """An HF checkpoint whose crop tower (``input_kind = "crop"``) maps through RGB-D proposals,
    at most ``max_proposals`` (the largest) a frame."""

    def __init__(self, model_path: str | Path, kind: str = "auto", max_proposals: int = 32, **kw) -> None:
        super().__init__(model_path, kind=kind, **kw)
        self.max_proposals = int(max_proposals)

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

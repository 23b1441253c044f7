"""Crops of segment proposals for the crop tower: the square around a segment's box (with some
context), resized to ``size`` x ``size``, plus the segment's mask in the same square.

The same function makes the training crops (from rendered views) and the inference crops
(from camera frames), so both see objects the same way. The encoder input is 4 channels: RGB
and the mask (the context stays visible at full contrast, colour words stay true; see
:func:`personal.models.imaging.crop_tensor`).
"""
from __future__ import annotations

import numpy as np

from personal.perception.segment import Segments

CROP_SIZE = 48
CONTEXT = 0.25  # the square extends this fraction of the box's longer side on every side
FILL = 128  # grey outside the image
WORK_RGB_WIDTH = 320  # camera frames are area-resized to this width before cropping


def frame_rgb(rgb: np.ndarray, width: int = WORK_RGB_WIDTH) -> np.ndarray:
    """The colour frame at the crop tower's working width (area resize; unchanged if already)."""
    import cv2

    h, w = rgb.shape[:2]
    if w == width:
        return rgb
    height = round(h * width / w)
    return cv2.resize(np.ascontiguousarray(rgb), (width, height), interpolation=cv2.INTER_AREA)


def square_boxes(boxes: np.ndarray, scale: float, context: float = CONTEXT, min_side: float = 8.0) -> np.ndarray:
    """(N, 4) float [y0, x0, y1, x1] squares around (N, 4) [row0, col0, row1, col1] boxes given in
    units that ``scale`` converts to the target image's pixels."""
    b = boxes.astype(np.float64) * scale
    cy, cx = (b[:, 0] + b[:, 2]) / 2, (b[:, 1] + b[:, 3]) / 2
    side = np.maximum(np.maximum(b[:, 2] - b[:, 0], b[:, 3] - b[:, 1]) * (1 + 2 * context), min_side * scale)
    return np.stack([cy - side / 2, cx - side / 2, cy + side / 2, cx + side / 2], 1)


def crop_square(img: np.ndarray, box, size: int, fill, interpolation: int) -> np.ndarray:
    """``img`` inside the square ``box`` (float pixel coordinates, may leave the image) resized to
    size x size; outside the image is ``fill``."""
    import cv2

    h, w = img.shape[:2]
    y0, x0, y1, x1 = box
    s = size / (y1 - y0)
    out = np.full((size, size) + img.shape[2:], fill, dtype=img.dtype)
    iy0, ix0 = max(int(np.floor(y0)), 0), max(int(np.floor(x0)), 0)
    iy1, ix1 = min(int(np.ceil(y1)), h), min(int(np.ceil(x1)), w)
    if iy1 <= iy0 or ix1 <= ix0:
        return out
    oy0, ox0 = max(int(round((iy0 - y0) * s)), 0), max(int(round((ix0 - x0) * s)), 0)
    oy1, ox1 = min(int(round((iy1 - y0) * s)), size), min(int(round((ix1 - x0) * s)), size)
    if oy1 <= oy0 or ox1 <= ox0:
        return out
    out[oy0:oy1, ox0:ox1] = cv2.resize(np.ascontiguousarray(img[iy0:iy1, ix0:ix1]), (ox1 - ox0, oy1 - oy0),
                                       interpolation=interpolation)
    return out


def segment_crops(rgb: np.ndarray, seg: Segments, which: np.ndarray | None = None, size: int = CROP_SIZE,
                  context: float = CONTEXT) -> tuple[np.ndarray, np.ndarray]:
    """(crops (N, size, size, 3) uint8, masks (N, size, size) bool) of the segments ``which``
    (default: the object proposals), cut from ``rgb`` (any resolution with the frame's aspect)."""
    import cv2

    which = seg.objects() if which is None else np.asarray(which, np.int64)
    n = len(which)
    crops = np.empty((n, size, size, 3), np.uint8)
    masks = np.empty((n, size, size), bool)
    if n == 0:
        return crops, masks
    rgb_scale = rgb.shape[1] / seg.labels.shape[1]
    sq_rgb = square_boxes(seg.boxes[which], rgb_scale, context)
    sq_lab = square_boxes(seg.boxes[which], 1.0, context)
    for k, s in enumerate(which):
        crops[k] = crop_square(rgb, sq_rgb[k], size, FILL, cv2.INTER_AREA)
        lab = (seg.labels == s).astype(np.uint8)
        masks[k] = crop_square(lab, sq_lab[k], size, 0, cv2.INTER_NEAREST) > 0
    return crops, masks

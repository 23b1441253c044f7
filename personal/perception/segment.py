"""Class-agnostic object proposals from one RGB-D frame (classical, no learning, no ground truth).

The depth image is subsampled to a working grid (``SegmentConfig.work_width`` columns) and
back-projected; a pixel stays a graph node unless it lies

- on the far side of a depth jump larger than what the surface's slant explains (occlusion
  boundaries: the near object keeps its pixels), or
- on a concave crease: inverse depth is affine in the pixel coordinates on a plane, so its
  second difference (rows, columns, both diagonals) is 0 on a plane and positive where two
  surfaces meet concavely - where an object stands on the floor or a table, or touches a wall
  (the local-convexity idea of LCCP, Stein et al. CVPR 2014); the faces of one object meet
  along convex edges and stay joined.

Segments are the 4-connected components of the nodes (OpenCV), small ones dropped. Each is
classified geometrically in the map frame (normals from central differences): floor (upward
at floor height), ceiling (downward near the ceiling), wall (vertical and reaching above
``wall_min_top`` - no piece of furniture is that tall) or an object proposal. What geometry
cannot tell (a wall seen close, a door frame) is left to the encoder's objectness per proposal.
Depth only: an object flush with a coplanar surface (a tablet lying on a table) merges with it.

Real depth is noisy (a RealSense D435's error grows with the square of range, i.e. it is about
constant in inverse depth), and a 1 % second-difference test shatters noisy surfaces into
hundreds of pieces. With ``noise_aware`` (default) the segmenter first estimates the frame's
inverse-depth noise from itself (the robust spread of the second differences, which are 0 on
planes: :func:`inverse_depth_noise`). A frame without noise (the renderer's ideal depth) is
segmented exactly as before; a noisy one is first denoised - the working grid takes each
block's median instead of one pixel, an edge-preserving bilateral filter smooths inverse depth
(holes and depth jumps are far outside its range kernel, so neither is bridged), isolated
holes are filled from their neighbours - and the crease and jump tests are widened to what the
remaining noise explains.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

STRUCT_NONE, STRUCT_WALL, STRUCT_FLOOR, STRUCT_CEILING = 0, 1, 2, 3


@dataclass
class SegmentConfig:
    work_width: int = 160  # columns of the working grid (the depth is subsampled to it)
    min_pixels: int = 6  # smaller segments are dropped (working-resolution pixels)
    jump_abs: float = 0.02  # m: always-allowed gap between neighbouring points
    jump_slant: float = 2.5  # x the spacing a surface of that slant would give
    concave_cut: float = 0.01  # relative second difference of 1/z marking a concave crease
    floor_band: float = 0.05  # m above the floor still counted as floor
    wall_min_top: float = 2.15  # m above the floor: vertical surfaces reaching higher are walls
    ceiling_min: float = 2.3  # m above the floor: downward surfaces higher up are the ceiling
    camera_height: float = 0.88  # m: floor z = camera z - this when no floor z is given
    noise_aware: bool = True  # estimate the frame's depth noise; denoise and widen the tests when it has any
    noise_floor: float = 2e-4  # 1/m: second-difference spread of 1/z below which a frame counts as noise-free
    noise_k: float = 1.5  # a crease / jump must exceed this many noise spreads (chosen on households 0-1, 24 views)
    bilateral_px: int = 5  # bilateral filter diameter (working pixels) for noisy frames (0 = none)
    noisy_step: int = 2  # noisy frames: the crease test's second difference spans this many pixels each side


@dataclass
class Segments:
    """Segments of one frame at working resolution."""

    labels: np.ndarray  # (h, w) int32, -1 = no segment (invalid depth or dropped)
    pixels: np.ndarray  # (n,) pixel count
    boxes: np.ndarray  # (n, 4) int [row0, col0, row1, col1] (inclusive-exclusive), working resolution
    structure: np.ndarray  # (n,) int8: STRUCT_NONE (object proposal), WALL, FLOOR, CEILING
    centroid: np.ndarray  # (n, 3) map-frame mean point
    scale: float  # input pixels per working pixel

    @property
    def n(self) -> int:
        return len(self.pixels)

    def objects(self) -> np.ndarray:
        return np.flatnonzero(self.structure == STRUCT_NONE)

    def full_labels(self, shape: tuple[int, int]) -> np.ndarray:
        """Labels at an input resolution (nearest)."""
        h, w = shape
        rows = np.minimum((np.arange(h) * self.labels.shape[0]) // h, self.labels.shape[0] - 1)
        cols = np.minimum((np.arange(w) * self.labels.shape[1]) // w, self.labels.shape[1] - 1)
        return self.labels[rows[:, None], cols[None, :]]


def _subsample(depth: np.ndarray, K: np.ndarray, work_width: int):
    h, w = depth.shape
    f = max(1, w // work_width)
    Kw = np.asarray(K, np.float64).copy()
    Kw[:2] /= f
    return depth[::f, ::f].astype(np.float32), Kw, float(f)


def _normals(P: np.ndarray) -> np.ndarray:
    """(h, w, 3) unit normals (camera frame, facing the camera) from central differences;
    only their broad direction is used (slant, up/down), so creases may blur them."""
    du = np.zeros_like(P)
    dv = np.zeros_like(P)
    du[:, 1:-1] = P[:, 2:] - P[:, :-2]
    dv[1:-1] = P[2:] - P[:-2]
    n = np.empty_like(P)
    n[..., 0] = du[..., 1] * dv[..., 2] - du[..., 2] * dv[..., 1]
    n[..., 1] = du[..., 2] * dv[..., 0] - du[..., 0] * dv[..., 2]
    n[..., 2] = du[..., 0] * dv[..., 1] - du[..., 1] * dv[..., 0]
    n /= np.maximum(np.sqrt(np.einsum("hwc,hwc->hw", n, n)), 1e-12)[..., None]
    n *= -np.sign(np.einsum("hwc,hwc->hw", n, P) + 1e-12)[..., None]  # face the camera (at the origin)
    return n


def inverse_depth_noise(d: np.ndarray, step: int = 1) -> float:
    """Robust spread (1.4826 x median absolute value, 1/m) of the row and column second
    differences of inverse depth over valid triples: 0 on planes, so their spread over a frame of
    mostly planar surfaces is the noise's (creases and edges are a minority)."""
    valid = d > 0
    iz = np.where(valid, 1.0 / np.maximum(d, 1e-6), 0.0).astype(np.float64)
    parts = []
    s = int(step)
    for a, b, c in ((iz[:, :-2 * s], iz[:, s:-s], iz[:, 2 * s:]), (iz[:-2 * s], iz[s:-s], iz[2 * s:])):
        ok = (a > 0) & (b > 0) & (c > 0)
        parts.append(np.abs(a + c - 2 * b)[ok])
    vals = np.concatenate(parts)
    return float(1.4826 * np.median(vals)) if len(vals) else 0.0


def _denoise(depth: np.ndarray, shape: tuple[int, int], f: int, noise: float, cfg: SegmentConfig) -> np.ndarray:
    """Working-grid depth of a noisy frame: block medians of the valid pixels, isolated holes
    filled, inverse depth smoothed by an edge-preserving bilateral filter."""
    import cv2

    h, w = shape
    if f > 1:  # the median of each f x f block's valid pixels (the stride pick keeps one noisy pixel)
        H, W = depth.shape
        pad = np.zeros((h * f, w * f), np.float32)
        pad[: min(H, h * f), : min(W, w * f)] = depth[: h * f, : w * f]
        blocks = pad.reshape(h, f, w, f).transpose(0, 2, 1, 3).reshape(h, w, f * f)
        blocks = np.where(blocks > 0, blocks, np.nan)
        with np.errstate(all="ignore"):
            import warnings

            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                d = np.nanmedian(blocks, axis=2)
        d = np.nan_to_num(d, nan=0.0).astype(np.float32)
    else:
        d = depth[:h, :w].astype(np.float32).copy()
    iz = np.where(d > 0, 1.0 / np.maximum(d, 1e-6), 0.0).astype(np.float32)
    valid = (iz > 0).astype(np.float32)
    # isolated holes (dark / shiny spots, edge dropouts inside a surface): >= 6 of 8 neighbours valid
    kernel = np.ones((3, 3), np.float32)
    kernel[1, 1] = 0
    n_valid = cv2.filter2D(valid, -1, kernel, borderType=cv2.BORDER_CONSTANT)
    s_iz = cv2.filter2D(iz, -1, kernel, borderType=cv2.BORDER_CONSTANT)
    fill = (valid == 0) & (n_valid >= 6)
    iz = np.where(fill, s_iz / np.maximum(n_valid, 1), iz).astype(np.float32)
    # range kernel: a few noise spreads (holes at 1/z = 0 and depth jumps are far outside it)
    if cfg.bilateral_px > 1:
        smooth = cv2.bilateralFilter(iz, cfg.bilateral_px, float(3.0 * noise), float(cfg.bilateral_px) / 2.0)
        smooth = np.where(iz > 0, smooth, 0.0)
    else:
        smooth = iz
    return np.where(smooth > 0, 1.0 / np.maximum(smooth, 1e-6), 0.0).astype(np.float32)


def _concave_creases(d: np.ndarray, valid: np.ndarray, thresh: float, floor: float = 0.0, step: int = 1) -> np.ndarray:
    """Pixels on a concave crease: inverse depth is affine in the pixel coordinates on a plane,
    so its second difference is 0 on a plane, positive where two surfaces meet in a concave
    crease (the visible surface is the nearer one: 1/z = max of two affine functions) and
    negative at convex edges. Relative to 1/z, along rows, columns and both diagonals; the
    row and column tests reach the image border so that creases leave no gap there. ``floor``
    (1/m): the least second difference that counts, above the depth noise (0 = none)."""
    iz = np.where(valid, 1.0 / np.maximum(d, 1e-6), 0.0).astype(np.float32)
    h, w = d.shape
    out = np.zeros(d.shape, bool)
    for dr, dc in ((0, step), (step, 0), (step, step), (step, -step)):
        r0, r1 = dr, h - dr
        c0, c1 = abs(dc), w - abs(dc)
        c = iz[r0:r1, c0:c1]
        p = iz[r0 - dr:r1 - dr, c0 - dc:c1 - dc]
        q = iz[r0 + dr:r1 + dr, c0 + dc:c1 + dc]
        second = p + q - 2 * c
        out[r0:r1, c0:c1] |= (p > 0) & (q > 0) & (second > thresh * c) & (second > floor)
    return out


def _jump_far_side(P: np.ndarray, d: np.ndarray, valid: np.ndarray, spacing: np.ndarray, cfg: SegmentConfig) -> np.ndarray:
    """Pixels on the far side of a depth jump (an occlusion boundary) between 4-neighbours; the
    near side keeps its pixels, so the occluding object stays whole."""
    out = np.zeros(d.shape, bool)
    for a, b in (((slice(None), slice(0, -1)), (slice(None), slice(1, None))),
                 ((slice(0, -1), slice(None)), (slice(1, None), slice(None)))):
        diff = P[b] - P[a]
        dist = np.sqrt(np.einsum("hwc,hwc->hw", diff, diff))
        jump = valid[a] & valid[b] & (dist > cfg.jump_abs + cfg.jump_slant * np.minimum(spacing[a], spacing[b]))
        far_b = d[b] > d[a]
        out[b] |= jump & far_b
        out[a] |= jump & ~far_b
    return out


def segment_rgbd(depth: np.ndarray, K: np.ndarray, T_map_camera: np.ndarray, rgb: np.ndarray | None = None,
                 floor_z: float | None = None, cfg: SegmentConfig | None = None) -> Segments:
    """Segments of one frame. ``depth`` planar metres (0 = invalid), ``K`` its pinhole matrix,
    ``T_map_camera`` optical -> map. ``rgb`` is accepted for callers that pass a whole frame and
    is not read: the proposals come from depth alone."""
    import cv2

    cfg = cfg or SegmentConfig()
    d, Kw, scale = _subsample(np.asarray(depth, np.float32), K, cfg.work_width)
    noise = inverse_depth_noise(d) if cfg.noise_aware else 0.0
    if noise > cfg.noise_floor:  # real-sensor depth: denoise first, then tests that the noise cannot pass
        d = _denoise(np.asarray(depth, np.float32), d.shape, int(round(scale)), noise, cfg)
        noise = inverse_depth_noise(d)
        crease_floor = cfg.noise_k * inverse_depth_noise(d, cfg.noisy_step)  # the spread at the test's own span
    else:
        noise = crease_floor = 0.0  # ideal depth: exactly the tests above
    h, w = d.shape
    valid = d > 0
    ray = _rays(Kw, h, w)
    P = ray * d[..., None]
    n = _normals(P)
    raylen = np.sqrt(np.einsum("hwc,hwc->hw", ray, ray))
    cos_view = np.abs(np.einsum("hwc,hwc->hw", n, ray)) / raylen
    # spacing of neighbouring samples on a surface of this slant at this depth
    spacing = d * raylen / Kw[0, 0] / np.maximum(cos_view, 0.15)
    if noise:
        # the range noise of two neighbours (sqrt 2 of one point's; sigma(z) = sigma(1/z) z^2, sigma(1/z) ~ spread / sqrt 6)
        spacing = spacing + cfg.noise_k * np.sqrt(2.0 / 6.0) * noise * d * d / cfg.jump_slant
    node = (valid & ~_concave_creases(d, valid, cfg.concave_cut, crease_floor, cfg.noisy_step if noise else 1)
            & ~_jump_far_side(P, d, valid, spacing, cfg))
    k, comp, stats, _ = cv2.connectedComponentsWithStats(node.astype(np.uint8), connectivity=4, ltype=cv2.CV_32S)
    area = stats[1:, cv2.CC_STAT_AREA]
    keep = area >= cfg.min_pixels
    lut = np.full(k, -1, np.int32)
    lut[1:][keep] = np.arange(int(keep.sum()), dtype=np.int32)
    labels = lut[comp]
    x0, y0 = stats[1:, cv2.CC_STAT_LEFT][keep], stats[1:, cv2.CC_STAT_TOP][keep]
    boxes = np.stack([y0, x0, y0 + stats[1:, cv2.CC_STAT_HEIGHT][keep], x0 + stats[1:, cv2.CC_STAT_WIDTH][keep]], 1)
    return _describe(labels, area[keep], boxes.astype(np.int32), P, n, np.asarray(T_map_camera, np.float64), floor_z, cfg, scale)


_RAY_CACHE: dict = {}


def _rays(Kw: np.ndarray, h: int, w: int) -> np.ndarray:
    key = (h, w, tuple(np.round(Kw.ravel(), 6)))
    ray = _RAY_CACHE.get(key)
    if ray is None:
        vs, us = np.mgrid[0:h, 0:w].astype(np.float32)
        ray = np.stack([(us - Kw[0, 2]) / Kw[0, 0], (vs - Kw[1, 2]) / Kw[1, 1], np.ones_like(us)], -1).astype(np.float32)
        _RAY_CACHE.clear()
        _RAY_CACHE[key] = ray
    return ray


def _describe(labels, area, boxes, P, n, T, floor_z, cfg: SegmentConfig, scale: float) -> Segments:
    k = len(area)
    lab = np.where(labels >= 0, labels, k).reshape(-1)  # bin k collects the unlabelled pixels
    R, t = T[:3, :3], T[:3, 3]
    if floor_z is None:
        floor_z = float(t[2]) - cfg.camera_height
    counts = np.maximum(area, 1).astype(np.float64)
    Pf = P.reshape(-1, 3)
    # the mean point and normal height are linear: average in the camera frame, then transform
    cen_cam = np.stack([np.bincount(lab, Pf[:, i], minlength=k + 1)[:k] for i in range(3)], 1) / counts[:, None]
    cen = cen_cam @ R.T + t
    nf = n.reshape(-1, 3)
    mean_n = np.stack([np.bincount(lab, nf[:, i], minlength=k + 1)[:k] for i in range(3)], 1) / counts[:, None]
    mean_nz = mean_n @ R[2]
    z = Pf @ R[2].astype(np.float32) + np.float32(t[2])
    reaches_top = np.bincount(lab, z > floor_z + cfg.wall_min_top, minlength=k + 1)[:k] >= 2
    height = cen[:, 2] - floor_z
    struct = np.zeros(k, np.int8)
    struct[(mean_nz > 0.85) & (height < cfg.floor_band)] = STRUCT_FLOOR
    struct[(mean_nz < -0.85) & (height > cfg.ceiling_min)] = STRUCT_CEILING
    struct[(np.abs(mean_nz) < 0.2) & reaches_top] = STRUCT_WALL
    return Segments(labels, area.astype(np.int64), boxes, struct, cen.astype(np.float32), scale)


def proposal_recall(seg: Segments, ids: np.ndarray, min_pixels: int = 20, iou: float = 0.5) -> tuple[int, int]:
    """(instances matched by an object proposal with IoU >= ``iou``, instances of at least
    ``min_pixels`` at working resolution) for one frame; ``ids`` the ground-truth instance ids
    (any resolution; evaluation only)."""
    gt = _resize_nearest(ids, seg.labels.shape)
    lab = seg.labels
    obj = np.isin(lab, seg.objects())
    pl = np.where(obj, lab, -1)
    g = gt.reshape(-1)
    p = pl.reshape(-1)
    inst, inst_count = np.unique(g[g > 0], return_counts=True)
    big = inst[inst_count >= min_pixels]
    if len(big) == 0:
        return 0, 0
    pcount = np.bincount(p[p >= 0], minlength=seg.n)
    both = (g > 0) & (p >= 0)
    pairs, inter = np.unique(np.stack([g[both], p[both]], 1), axis=0, return_counts=True)
    gcount = dict(zip(inst.tolist(), inst_count.tolist()))
    best: dict[int, float] = {}
    for (gi, pi), c in zip(pairs.tolist(), inter.tolist()):
        u = gcount[gi] + pcount[pi] - c
        best[gi] = max(best.get(gi, 0.0), c / u)
    hit = sum(1 for gi in big.tolist() if best.get(gi, 0.0) >= iou)
    return hit, len(big)


def _resize_nearest(img: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    h, w = img.shape[:2]
    rows = np.minimum((np.arange(shape[0]) * h) // shape[0], h - 1)
    cols = np.minimum((np.arange(shape[1]) * w) // shape[1], w - 1)
    return img[rows[:, None], cols[None, :]]


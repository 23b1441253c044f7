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
remaining noise explains. Two steps then undo what the widened tests cost (noisy frames only;
measured in docs/perception.md): neighbouring segments whose shared border is weak along most of
its length (a noise split, not a crease) are rejoined, and segments reclaim the rim of the wider
crease band where depth is continuous, so a small object's proposal is not eroded below the
IoU that matches it.
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
    merge_k: float = 2.0  # noisy frames: rejoin neighbouring segments whose shared border's median crease is under this many crease cuts (0 = off)
    merge_band: int = 2  # working pixels: how far a border pixel may be from each of the two segments it separates
    grow_px: int = 2  # noisy frames: segments reclaim up to this many pixels of the widened crease band, depth permitting (0 = off)


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


def _crease_terms(d: np.ndarray, valid: np.ndarray, step: int):
    """(region, second difference of 1/z (-inf where a neighbour is invalid), 1/z) per direction:
    rows, columns and both diagonals."""
    iz = np.where(valid, 1.0 / np.maximum(d, 1e-6), 0.0).astype(np.float32)
    h, w = d.shape
    for dr, dc in ((0, step), (step, 0), (step, step), (step, -step)):
        r0, r1 = dr, h - dr
        c0, c1 = abs(dc), w - abs(dc)
        c = iz[r0:r1, c0:c1]
        p = iz[r0 - dr:r1 - dr, c0 - dc:c1 - dc]
        q = iz[r0 + dr:r1 + dr, c0 + dc:c1 + dc]
        second = np.where((p > 0) & (q > 0), p + q - 2 * c, -np.inf)
        yield (slice(r0, r1), slice(c0, c1)), second, c


def _concave_creases(d: np.ndarray, valid: np.ndarray, thresh: float, floor: float = 0.0, step: int = 1) -> np.ndarray:
    """Pixels on a concave crease: inverse depth is affine in the pixel coordinates on a plane,
    so its second difference is 0 on a plane, positive where two surfaces meet in a concave
    crease (the visible surface is the nearer one: 1/z = max of two affine functions) and
    negative at convex edges. Relative to 1/z, along rows, columns and both diagonals; the
    row and column tests reach the image border so that creases leave no gap there. ``floor``
    (1/m): the least second difference that counts, above the depth noise (0 = none)."""
    out = np.zeros(d.shape, bool)
    for region, second, iz in _crease_terms(d, valid, step):
        out[region] |= (second > thresh * iz) & (second > floor)
    return out


def _crease_ratio(d: np.ndarray, valid: np.ndarray, thresh: float, floor: float, step: int) -> np.ndarray:
    """How strong a crease each pixel is: its largest second difference over the directions in units
    of the crease test's cut (> 1 on a crease pixel)."""
    out = np.zeros(d.shape, np.float32)
    for region, second, iz in _crease_terms(d, valid, step):
        np.maximum(out[region], second / np.maximum(np.maximum(thresh * iz, floor), 1e-12), out=out[region])
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
    step = cfg.noisy_step if noise else 1
    jump = _jump_far_side(P, d, valid, spacing, cfg)
    node = valid & ~_concave_creases(d, valid, cfg.concave_cut, crease_floor, step) & ~jump
    _, comp = cv2.connectedComponents(node.astype(np.uint8), connectivity=4, ltype=cv2.CV_32S)
    comp = comp - 1  # -1 = not a node
    if noise and cfg.merge_k > 0:
        crease = _crease_ratio(d, valid, cfg.concave_cut, crease_floor, step)
        comp = _rejoin_noise_splits(comp, np.where(jump, np.inf, crease), valid & ~node, cfg)
    labels, area, boxes = _keep_large(comp, cfg.min_pixels)
    if noise and cfg.grow_px > 0:  # only segments large enough to keep grow: a noise speck stays dropped
        grown = _grow_into_border(labels, d, valid, cfg.jump_abs + cfg.jump_slant * spacing, cfg.grow_px)
        labels, area, boxes = _keep_large(grown, cfg.min_pixels)
    return _describe(labels, area, boxes, P, n, np.asarray(T_map_camera, np.float64), floor_z, cfg, scale)


def _rejoin_noise_splits(comp: np.ndarray, strength: np.ndarray, border: np.ndarray, cfg: SegmentConfig) -> np.ndarray:
    """Noisy depth: the crease test, widened to the noise, still cuts some surfaces where the noise
    peaks. One pixel's second difference is noisy, but the median along a whole border is not: a
    real crease (an object standing on a table) is strong along most of it, a noise split is not.
    Two segments are joined when the median ``strength`` (crease ratio; infinite across a depth
    jump) of the border pixels within ``merge_band`` of both is under ``merge_k``; the border pixels
    between them join too."""
    import cv2

    big = 2 ** 24  # labels are exact in float32 (OpenCV's min / max filters take no int32)
    size = 2 * cfg.merge_band + 1
    kernel = np.ones((size, size), np.uint8)
    hi = cv2.dilate(comp.astype(np.float32), kernel).astype(np.int64)  # the largest label nearby (-1 = none)
    lo = cv2.erode(np.where(comp >= 0, comp, big).astype(np.float32), kernel).astype(np.int64)  # the smallest
    between = border & (hi >= 0) & (lo != big) & (lo != hi)
    if not between.any():
        return comp
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    a, b, st = lo[between], hi[between], strength[between]
    n_seg = int(comp.max()) + 1
    key = a * n_seg + b
    order = np.lexsort((st, key))
    key, st = key[order], st[order]
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    ends = np.r_[starts[1:], len(key)]
    medians = st[(starts + ends - 1) // 2]  # the lower median of each pair's sorted strengths
    pairs = key[starts[medians < cfg.merge_k]]
    graph = coo_matrix((np.ones(len(pairs)), (pairs // n_seg, pairs % n_seg)), shape=(n_seg, n_seg))
    _, roots = connected_components(graph, directed=False)  # numbered in order of each group's first segment
    roots = roots.astype(np.int32)
    out = np.where(comp >= 0, roots[np.maximum(comp, 0)], -1).astype(np.int32)
    # the border pixels between two joined segments belong to them (not across a depth jump)
    ra, rb = roots[lo[between]], roots[hi[between]]
    fill = (ra == rb) & np.isfinite(strength[between])
    rows, cols = np.nonzero(between)
    out[rows[fill], cols[fill]] = ra[fill]
    return out


def _grow_into_border(comp: np.ndarray, d: np.ndarray, valid: np.ndarray, gap: np.ndarray, steps: int) -> np.ndarray:
    """Noisy depth widens the crease bands that separate segments (the test spans ``noisy_step``
    pixels, and the noise floor blurs where it fires), so a small object's proposal loses a rim
    that the ideal segmenter keeps. Each step, a valid pixel in no segment joins the 4-neighbour
    segment whose pixel is nearest in depth, if within ``gap`` (the depth-jump test's own
    allowance): the far side of an occlusion never joins the object in front."""
    out = comp.copy()
    h, w = out.shape
    for _ in range(int(steps)):
        free = valid & (out < 0)
        if not free.any():
            break
        best = np.full((h, w), -1, np.int32)
        best_diff = np.full((h, w), np.inf, np.float32)
        for dr, dc in ((0, 1), (0, -1), (1, 0), (-1, 0)):
            lab = np.full((h, w), -1, np.int32)
            dep = np.zeros((h, w), np.float32)
            rs, rd = (slice(dr, None), slice(0, h - dr)) if dr >= 0 else (slice(0, h + dr), slice(-dr, None))
            cs, cd = (slice(dc, None), slice(0, w - dc)) if dc >= 0 else (slice(0, w + dc), slice(-dc, None))
            lab[rd, cd] = out[rs, cs]  # the neighbour's label at (r + dr, c + dc)
            dep[rd, cd] = d[rs, cs]
            diff = np.abs(d - dep)
            ok = free & (lab >= 0) & (diff <= gap) & (diff < best_diff)
            best = np.where(ok, lab, best)
            best_diff = np.where(ok, diff, best_diff)
        out = np.where(best >= 0, best, out)
    return out


def _keep_large(comp: np.ndarray, min_pixels: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Segments of at least ``min_pixels``, numbered 0.. in order of their first label: labels
    (-1 = none), pixel counts and boxes [row0, col0, row1, col1)."""
    from scipy import ndimage

    flat = comp.reshape(-1)
    n_comp = int(flat.max()) + 1 if flat.size else 0
    area = np.bincount(flat[flat >= 0], minlength=n_comp)
    keep = area >= min_pixels
    lut = np.full(n_comp + 1, -1, np.int32)  # index n_comp: the -1 pixels
    lut[:n_comp][keep] = np.arange(int(keep.sum()), dtype=np.int32)
    labels = lut[np.where(comp >= 0, comp, n_comp)]
    k = int(keep.sum())
    boxes = np.zeros((k, 4), np.int32)
    for i, (rs, cs) in enumerate(ndimage.find_objects(labels + 1, max_label=k)):  # label i is i + 1 here
        boxes[i] = (rs.start, cs.start, rs.stop, cs.stop)
    return labels, area[keep].astype(np.int64), boxes


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


"""The renderer's per-pixel pass as one compiled loop (numba): shading, instance ids and depth
clipping of every pixel in a single sweep over the frame.

The numpy formulation of the same maths made a dozen passes over 300 k pixels per frame
(gathers of the per-triangle table, texture lookups, glossy pixels, the final transpose) and
cost about 30 ms of a 45 ms 640 x 480 frame on one core; this loop touches each pixel once.
``shade_frame`` runs on one thread, ``shade_frame_parallel`` splits the rows over numba's
threads (``prange``). Compiled on first use and cached on disk (``cache=True``).

Per pixel (``p`` its triangle, ``t`` its planar depth, ``f = table[:, p]``, see
``personal.sim.render._Shader._frame_table`` for the rows):
surface coordinates ``u = f0 + t (f1 xn + f2 yn + f3)``, ``v`` likewise from rows 4-7; the
material's detail texel (mip level from the pixel's footprint ``t^2 |d|^2 f11``) modulates the
light ``f8`` by ``1 + (texel - 0.5) f10``; a patterned triangle (``code >= 256``) mixes its colour
towards the second colour by the pattern texel at ``f9`` times the detail's repeat; glossy
materials add a Blinn-Phong highlight of the key light and a reflection of the room.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, prange


@njit(cache=True, fastmath=True, inline="always")
def _texel(tex, tex_off, u, v, footprint, tile_mask, tile_shift, level_stride, mip_levels):
    # mip level whose texels are about one pixel: floor(log2(footprint)), clipped
    level = 0
    if footprint >= 1.0:
        level = math.frexp(footprint)[1] - 1
        if level > mip_levels - 1:
            level = mip_levels - 1
    iu = int(u) & tile_mask  # truncation toward zero, as numpy's astype(int32)
    iv = int(v) & tile_mask
    return tex[level * level_stride + tex_off + (iv << tile_shift) + iu]


def _shade_rows(prim, depth, xn, yn, dsq, table, rgb, rgb2, glossy, material, normals, tex, tint, key, R,
                m_spec, m_shin, m_reflect, id_table, min_depth, max_depth, tile_shift, level_stride, mip_levels,
                out_rgb, out_ids, out_depth):
    n = prim.shape[0]
    m = table.shape[1] - 1
    tile_mask = (1 << tile_shift) - 1
    for i in prange(n):
        p = prim[i]
        t = depth[i]
        out_ids[i] = id_table[p]
        out_depth[i] = t if (t >= min_depth and t <= max_depth) else 0.0
        if p >= m:
            out_rgb[i, 0] = 0
            out_rgb[i, 1] = 0
            out_rgb[i, 2] = 0
            continue
        x = xn[i]
        y = yn[i]
        u = table[0, p] + t * (table[1, p] * x + table[2, p] * y + table[3, p])
        v = table[4, p] + t * (table[5, p] * x + table[6, p] * y + table[7, p])
        light = table[8, p]
        code = int(table[12, p])
        pix = t * t * dsq[i] * table[11, p]
        lum = _texel(tex, (code & 255) << (2 * tile_shift), u, v, pix, tile_mask, tile_shift, level_stride, mip_levels)
        lum = ((lum - 0.5) * table[10, p] + 1.0) * light
        r, g, b = rgb[p, 0], rgb[p, 1], rgb[p, 2]
        if code >= 256:
            q = table[9, p]
            w = _texel(tex, (code >> 8) << (2 * tile_shift), u * q, v * q, pix * q, tile_mask, tile_shift,
                       level_stride, mip_levels)
            r += (rgb2[p, 0] - r) * w
            g += (rgb2[p, 1] - g) * w
            b += (rgb2[p, 2] - b) * w
        r *= lum
        g *= lum
        b *= lum
        if glossy[p]:
            # view ray in the map frame
            dx = R[0, 0] * x + R[0, 1] * y + R[0, 2]
            dy = R[1, 0] * x + R[1, 1] * y + R[1, 2]
            dz = R[2, 0] * x + R[2, 1] * y + R[2, 2]
            dn = math.sqrt(dx * dx + dy * dy + dz * dz)
            dx /= dn
            dy /= dn
            dz /= dn
            nx, ny, nz = normals[p, 0], normals[p, 1], normals[p, 2]
            ndotd = nx * dx + ny * dy + nz * dz
            if ndotd > 0:  # the side the camera sees
                nx, ny, nz = -nx, -ny, -nz
            else:
                ndotd = -ndotd
            ndotd = -ndotd
            hx, hy, hz = key[0] - dx, key[1] - dy, key[2] - dz
            hn = math.sqrt(hx * hx + hy * hy + hz * hz)
            ndoth = (nx * hx + ny * hy + nz * hz) / hn if hn > 0 else 0.0
            mat = material[p]
            spec = m_spec[mat] * (ndoth ** m_shin[mat] if ndoth > 0 else 0.0)
            r_z = dz - 2.0 * ndotd * nz  # the reflected ray's height
            extra = (1.6 * spec + (0.55 + 0.4 * r_z) * m_reflect[mat]) * light
            r += extra
            g += extra
            b += extra
        r *= tint[0] * 255.0
        g *= tint[1] * 255.0
        b *= tint[2] * 255.0
        out_rgb[i, 0] = np.uint8(min(max(r, 0.0), 255.0))
        out_rgb[i, 1] = np.uint8(min(max(g, 0.0), 255.0))
        out_rgb[i, 2] = np.uint8(min(max(b, 0.0), 255.0))


shade_frame = njit(cache=True, fastmath=True, nogil=True)(_shade_rows)
shade_frame_parallel = njit(cache=True, fastmath=True, nogil=True, parallel=True)(_shade_rows)


def warm_up() -> None:
    """Compile (or load from the cache) both variants on a one-pixel frame."""
    one = np.zeros(1, np.float32)
    for fn in (shade_frame, shade_frame_parallel):
        fn(np.zeros(1, np.uint32), one + 1, one, one, one + 1, np.zeros((13, 2), np.float32), np.zeros((2, 3), np.float32),
           np.zeros((2, 3), np.float32), np.zeros(2, np.bool_), np.zeros(2, np.int32), np.zeros((1, 3), np.float32),
           np.zeros(1, np.float32), np.ones(3, np.float32), np.ones(3, np.float32), np.eye(3, dtype=np.float32),
           one, one, one, np.zeros(2, np.int32), 0.5, 5.0, 6, 4096, 6,
           np.zeros((1, 3), np.uint8), np.zeros(1, np.int32), np.zeros(1, np.float32))

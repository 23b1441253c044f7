"""CPU renderer for the synthetic household: RGB, planar depth and instance ids.

Ray-casts a :class:`personal.world.mesh.SceneMesh` with open3d's ``RaycastingScene``
(Embree). Ray directions are precomputed once in the camera optical frame with unit z, so
``t_hit`` is the planar z-depth directly.

Shading is per pixel, from per-triangle tables built once: every hit point gets its surface
coordinates (an affine map per triangle, from the mesh's per-corner uv), which place the
object's pattern tile (its colour mixed with a second colour) and its material's detail
texture (wood grain, weave, brushed metal...); light is the household's key + fill +
ambient with a Blinn-Phong highlight and, for metal and glass, a reflection of the room, on
the side of the triangle the camera sees, times the room's gain and the light's tint. The
per-pixel pass (shading, ids, depth clipping) is one compiled loop
(:mod:`personal.sim.shade_kernel`).
"""
from __future__ import annotations

import math
import time

import numpy as np
import open3d as o3d

from personal.world import appearance as ap
from personal.world.mesh import SceneMesh
from personal.sim.backends.base import CameraSpec

_MISS_RGB = (0, 0, 0)


def _unit(v) -> np.ndarray:
    v = np.asarray(v, dtype=np.float64)
    return v / np.linalg.norm(v)


def uv_affine_maps(mesh: SceneMesh) -> np.ndarray:
    """(M, 2, 4) float32 per triangle: (u, v) = A[:, :, :3] @ p + A[:, :, 3] for points p on the
    triangle's plane, matching the mesh's per-corner uv (constant along the normal)."""
    v = mesh.vertices[mesh.triangles].astype(np.float64)  # (M, 3, 3)
    n = mesh.triangle_normals().astype(np.float64)
    m = len(v)
    sys = np.zeros((m, 4, 4))
    sys[:, :3, :3], sys[:, :3, 3] = v, 1.0
    sys[:, 3, :3] = n
    rhs = np.zeros((m, 4, 2))
    rhs[:, :3] = mesh.triangle_uv.astype(np.float64)
    ok = np.abs(np.linalg.det(sys)) > 1e-18
    sol = np.zeros((m, 4, 2))
    if ok.any():
        sol[ok] = np.linalg.solve(sys[ok], rhs[ok])
    return np.ascontiguousarray(sol.transpose(0, 2, 1), dtype=np.float32)


def _plane_groups(mesh: SceneMesh, uv_maps: np.ndarray) -> np.ndarray:
    """(M,) int32 id shared by triangles that are coplanar and look the same (colours, pattern,
    material, instance id, surface coordinates), so a 2x2 pixel block whose corners hit one
    group can be filled by interpolation even when its corners land on the two triangles of one
    box face."""
    n = mesh.triangle_normals()
    off = np.einsum("ij,ij->i", n, mesh.vertices[mesh.triangles[:, 0]].astype(np.float64))
    key = np.column_stack([
        np.round(n * 1e4).astype(np.int64), np.round(off * 1e4).astype(np.int64),
        mesh.triangle_rgb.astype(np.int64), mesh.triangle_rgb2.astype(np.int64), mesh.triangle_instance_id.astype(np.int64),
        mesh.triangle_pattern.astype(np.int64), mesh.triangle_material.astype(np.int64),
        np.round(uv_maps.reshape(len(n), -1).astype(np.float64) * 1e3).astype(np.int64),
    ])
    _, inverse = np.unique(key, axis=0, return_inverse=True)
    return inverse.reshape(-1).astype(np.int32)


class _Shader:
    """Per-pixel shading from per-triangle tables (index M = a miss).

    Everything that is constant over a triangle for one camera pose is folded into a
    per-frame table first (M rows, cheap): the surface coordinates as functions of the pixel's
    normalised image coordinates and depth, and the Lambert light of the side the camera sees.
    The per-pixel loop (:func:`personal.sim.shade_kernel.shade_frame`) then does one table
    lookup, a few multiply-adds and the texture lookups per pixel; highlights and reflections
    only on glossy pixels."""

    def __init__(self, mesh: SceneMesh, xn: np.ndarray, yn: np.ndarray, focal: float) -> None:
        m = mesh.n_triangles
        lt = mesh.lighting
        self.m = m
        self.xn, self.yn = xn.astype(np.float32), yn.astype(np.float32)  # per pixel, optical frame, z = 1
        self.dsq = self.xn * self.xn + self.yn * self.yn + np.float32(1.0)  # squared ray length per unit depth
        self.normals = mesh.triangle_normals()
        self.plane_c = np.einsum("ij,ij->i", self.normals, mesh.vertices[mesh.triangles[:, 0]].astype(np.float64))
        self.uv_maps = uv_affine_maps(mesh).astype(np.float64)  # (M, 2, 4)
        mats = list(ap.MATERIAL_CLASSES.values())
        m_detail = np.array([ap.TEXTURE_ID[c.detail] for c in mats], np.int32)
        m_inv_period = np.array([1.0 / c.period for c in mats], np.float32)
        self.m_spec = np.array([c.spec for c in mats], np.float32)
        self.m_shin = np.array([c.shininess for c in mats], np.float32)
        self.m_reflect = np.array([c.reflect for c in mats], np.float32)
        mat = mesh.triangle_material.astype(np.int64)
        key, fill = _unit(lt.key_dir), _unit(lt.fill_dir)
        self.key = key.astype(np.float32)
        gain = mesh.triangle_gain.astype(np.float64) * np.array([c.diffuse for c in mats])[mat]
        lam = lambda n: lt.ambient + lt.key * np.clip(n @ key, 0, None) + lt.fill * np.clip(n @ fill, 0, None)  # noqa: E731
        self.lit_front, self.lit_back = lam(self.normals) * gain, lam(-self.normals) * gain
        self.inv_period = 1.0 / np.maximum(mesh.triangle_period.astype(np.float64), 1e-3)
        self.detail_ip = m_inv_period[mat].astype(np.float64)
        self.material = np.append(mat, 0).astype(np.int32)
        self.static_rows = np.zeros((3, m + 1))
        self.static_rows[0, :m] = np.array([c.amp for c in mats], np.float32)[mat]
        self.static_rows[1, :m] = self.detail_ip * ap.TILE / focal * math.sqrt(2.0)  # / plane distance per frame
        self.static_rows[2, :m] = mesh.triangle_pattern.astype(np.int64) * 256 + m_detail[mat]
        glaze = np.array([c.glaze for c in mats])[mat][:, None]
        rgb = mesh.triangle_rgb * (1 - glaze) + np.asarray(ap.GLAZE_RGB) * glaze
        rgb2 = mesh.triangle_rgb2 * (1 - glaze) + np.asarray(ap.GLAZE_RGB) * glaze
        self.rgb = np.ascontiguousarray(np.vstack([rgb, [_MISS_RGB]]), dtype=np.float32) / 255.0  # (M + 1, 3)
        self.rgb2 = np.ascontiguousarray(np.vstack([rgb2, [_MISS_RGB]]), dtype=np.float32) / 255.0
        self.glossy = np.append(self.m_spec[mat] > 0, False)
        self.normals32 = np.ascontiguousarray(self.normals, dtype=np.float32)
        self.tex = np.ascontiguousarray(ap.texture_stack().reshape(-1))
        self.tile_shift = int(math.log2(ap.TILE))
        self.level_stride = len(ap.TEXTURE_NAMES) * ap.TILE * ap.TILE
        self.tint = np.asarray(lt.tint, np.float32)

    def _frame_table(self, T: np.ndarray) -> np.ndarray:
        """(13, M + 1) float32 for this pose (one row per quantity): u = c + t * (a * xn + b * yn + e)
        in texels of the material detail (rows 0-3), the same for v (4-7), the Lambert light of
        the side the camera sees (8), the pattern's repeat relative to the detail's (9), the
        detail amplitude (10), the detail texels a pixel covers per unit of t^2 |d|^2 (11) and
        pattern texture id * 256 + detail texture id (12)."""
        R, o = T[:3, :3], T[:3, 3]
        A = self.uv_maps
        tab = np.zeros((13, self.m + 1), np.float64)
        scale = self.detail_ip * ap.TILE
        for k, row in ((0, 0), (1, 4)):
            a = A[:, k, :3]
            tab[row, :-1] = (a @ o + A[:, k, 3]) * scale
            tab[row + 1:row + 4, :-1] = (a @ R).T * scale  # (R^T a) . d_cam
        side = self.normals @ o - self.plane_c
        tab[8, :-1] = np.where(side > 0, self.lit_front, self.lit_back)
        tab[9, :-1] = self.inv_period / self.detail_ip
        tab[10:13] = self.static_rows
        # a pixel at depth t covers about (t |d|)^2 / (focal * distance to the plane) metres
        # along the surface (foreshortening included): row 11 becomes texels per t^2 |d|^2
        tab[11, :-1] /= np.maximum(np.abs(side), 0.05)
        return np.ascontiguousarray(tab, dtype=np.float32)

    def shade(self, prim: np.ndarray, depth: np.ndarray, T: np.ndarray, id_table: np.ndarray, min_depth: float,
              max_depth: float, parallel: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(rgb (N, 3) uint8, ids (N,) int32, depth (N,) float32 with 0 outside [min, max]) for the
        N pixels of a frame from their primitive ids (M = miss) and planar depth."""
        from personal.sim.shade_kernel import shade_frame, shade_frame_parallel

        n = len(prim)
        rgb = np.empty((n, 3), np.uint8)
        ids = np.empty(n, np.int32)
        out_depth = np.empty(n, np.float32)
        fn = shade_frame_parallel if parallel else shade_frame
        fn(np.ascontiguousarray(prim, dtype=np.uint32), np.ascontiguousarray(depth, dtype=np.float32), self.xn, self.yn,
           self.dsq, self._frame_table(T), self.rgb, self.rgb2, self.glossy, self.material, self.normals32, self.tex,
           self.tint, self.key, np.ascontiguousarray(T[:3, :3], dtype=np.float32), self.m_spec, self.m_shin,
           self.m_reflect, id_table, float(min_depth), float(max_depth), self.tile_shift, self.level_stride,
           ap.MIP_LEVELS, rgb, ids, out_depth)
        return rgb, ids, out_depth


def shade_triangles(mesh: SceneMesh) -> np.ndarray:
    """(M, 3) uint8 diffuse colour of every triangle lit from its normal side (no textures):
    a quick preview colour, e.g. for top-down plots."""
    lt = mesh.lighting
    n = mesh.triangle_normals()
    gain = lt.ambient + lt.key * np.clip(n @ _unit(lt.key_dir), 0, None) + lt.fill * np.clip(n @ _unit(lt.fill_dir), 0, None)
    return np.clip(mesh.triangle_rgb.astype(np.float32) * gain[:, None], 0, 255).astype(np.uint8)


class Renderer:
    """Renders RGB (uint8 HxWx3), depth (float32 m, 0 outside [min, max]) and
    instance ids (int32, 0 = structure or miss) for a camera pose.

    ``mode="exact"`` casts one ray per pixel. ``mode="adaptive"`` (default, about
    2-3x faster) casts one ray per 2x2 block corner, fills blocks whose four
    corners hit the same plane group (same plane, colour and instance id) by
    interpolating inverse depth — exact for planes — and casts the remaining
    three pixels of every other block. It differs from ``exact`` only where a
    feature narrower than two pixels falls entirely between block corners.
    ``nthreads`` is passed to Embree's ray casting (0 = all cores).
    """

    def __init__(self, mesh: SceneMesh, camera: CameraSpec | None = None, nthreads: int = 0,
                 mode: str = "adaptive"):
        if mesh.n_triangles == 0:
            raise ValueError("Renderer: the scene mesh has no triangles")
        if mode not in ("adaptive", "exact"):
            raise ValueError(f"Renderer: mode must be 'adaptive' or 'exact', got {mode!r}")
        self.camera = camera or CameraSpec()
        self.K = self.camera.intrinsics()
        self.nthreads = int(nthreads)
        self.mode = mode
        h, w = self.camera.height, self.camera.width
        if mode == "adaptive" and (h % 2 or w % 2):
            raise ValueError(f"Renderer: adaptive mode needs an even image size, got {w}x{h}")
        self._n_tri = mesh.n_triangles
        self._scene = o3d.t.geometry.RaycastingScene()
        self._scene.add_triangles(
            o3d.core.Tensor(np.ascontiguousarray(mesh.vertices, dtype=np.float32)),
            o3d.core.Tensor(np.ascontiguousarray(mesh.triangles, dtype=np.uint32)),
        )
        # Index n_tri holds the miss entry; misses (INVALID_ID = uint32 max) are
        # mapped there with one np.minimum.
        self._class_table = np.append(mesh.triangle_class.astype(np.uint8), np.uint8(0))
        self._id_table = np.append(mesh.triangle_instance_id.astype(np.int32), np.int32(0))
        u, v = np.meshgrid(np.arange(w, dtype=np.float64), np.arange(h, dtype=np.float64))
        self._dirs_cam = self._camera_rays(u, v)
        self._shader = _Shader(mesh, self._dirs_cam[:, 0], self._dirs_cam[:, 1], float(self.K[0, 0]))
        self._group_table = np.append(_plane_groups(mesh, self._shader.uv_maps), np.int32(-1))
        # block-corner lattice: even pixels plus one virtual row/column past the image
        uc, vc = np.meshgrid(np.arange(0, w + 1, 2, dtype=np.float64), np.arange(0, h + 1, 2, dtype=np.float64))
        self._coarse_shape = uc.shape
        self._dirs_coarse = self._camera_rays(uc, vc)
        # flat full-image indices of the three non-corner pixels of every 2x2 block
        bi, bj = np.meshgrid(np.arange(h // 2), np.arange(w // 2), indexing="ij")
        base = (2 * bi * w + 2 * bj).reshape(-1)
        self._block_rest = np.stack([base + 1, base + w, base + w + 1], axis=1)
        self.last_timing: dict[str, float] = {}
        # the per-pixel pass runs on numba's threads unless the renderer is single-threaded
        self._parallel = self.nthreads != 1

    def _camera_rays(self, u: np.ndarray, v: np.ndarray) -> np.ndarray:
        """(N, 3) float32 directions in the optical frame (x right, y down, z forward), z = 1."""
        fx, fy, cx, cy = self.K[0, 0], self.K[1, 1], self.K[0, 2], self.K[1, 2]
        d = np.stack([(u - cx) / fx, (v - cy) / fy, np.ones_like(u)], axis=-1)
        return np.ascontiguousarray(d.reshape(-1, 3), dtype=np.float32)

    def _cast(self, dirs_cam: np.ndarray, T: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(primitive ids clipped to n_tri, planar depth with inf on misses) for camera-frame dirs."""
        rays = np.empty((dirs_cam.shape[0], 6), dtype=np.float32)
        rays[:, :3] = T[:3, 3]
        np.matmul(dirs_cam, T[:3, :3].T.astype(np.float32), out=rays[:, 3:])
        hits = self._scene.cast_rays(o3d.core.Tensor.from_numpy(rays), nthreads=self.nthreads)
        return np.minimum(hits["primitive_ids"].numpy(), self._n_tri), hits["t_hit"].numpy()

    def _trace_exact(self, T: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self._cast(self._dirs_cam, T)

    def _trace_adaptive(self, T: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        h, w = self.camera.height, self.camera.width
        pc, tc = self._cast(self._dirs_coarse, T)
        pc, izc = pc.reshape(self._coarse_shape), (1.0 / tc).reshape(self._coarse_shape)  # inf -> 0
        g = np.take(self._group_table, pc)
        g00 = g[:-1, :-1]
        uniform = (g00 == g[:-1, 1:]) & (g00 == g[1:, :-1]) & (g00 == g[1:, 1:])
        # fill every block from its corners (1/z is affine in pixels on a plane)
        prim = np.empty((h // 2, 2, w // 2, 2), dtype=pc.dtype)
        prim[...] = pc[:-1, :-1, None][:, None, :, :]
        i00, i01, i10, i11 = izc[:-1, :-1], izc[:-1, 1:], izc[1:, :-1], izc[1:, 1:]
        inv = np.empty((h // 2, 2, w // 2, 2), dtype=np.float32)
        inv[:, 0, :, 0] = i00
        inv[:, 0, :, 1] = 0.5 * (i00 + i01)
        inv[:, 1, :, 0] = 0.5 * (i00 + i10)
        inv[:, 1, :, 1] = 0.25 * (i00 + i01 + i10 + i11)
        prim, inv = prim.reshape(-1), inv.reshape(-1)
        # cast the other three pixels of every block that straddles an edge
        rest = self._block_rest[~uniform.reshape(-1)].reshape(-1)
        if rest.size:
            pr, tr = self._cast(self._dirs_cam[rest], T)
            prim[rest] = pr
            inv[rest] = 1.0 / tr
        with np.errstate(divide="ignore"):
            return prim, 1.0 / inv

    def _render(self, T_map_camera: np.ndarray):
        T = np.asarray(T_map_camera, dtype=np.float64)
        if T.shape != (4, 4) or not np.all(np.isfinite(T)):
            raise ValueError(f"Renderer.render: T_map_camera must be a finite 4x4 matrix, got shape {T.shape}")
        t0 = time.perf_counter()
        prim, depth = self._trace_adaptive(T) if self.mode == "adaptive" else self._trace_exact(T)
        t1 = time.perf_counter()
        h, w = self.camera.height, self.camera.width
        rgb, ids, depth = self._shader.shade(prim, depth, T, self._id_table, self.camera.min_depth,
                                             self.camera.max_depth, self._parallel)
        t2 = time.perf_counter()
        self.last_timing = {"raycast": t1 - t0, "shading": t2 - t1}
        return rgb.reshape(h, w, 3), depth.reshape(h, w), ids.reshape(h, w), prim

    def render(self, T_map_camera: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Render from a 4x4 camera-optical -> map transform."""
        rgb, depth, ids, _ = self._render(T_map_camera)
        return rgb, depth, ids

    def render_labels(self, T_map_camera: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(rgb, depth, ids, structure) where ``structure`` (H, W) uint8 is the structure class of
        each pixel (``personal.world.mesh.STRUCTURE_CLASSES``: 0 object or miss, 1 wall, 2 floor,
        3 ceiling, 4 door) — training labels for perception."""
        rgb, depth, ids, prim = self._render(T_map_camera)
        return rgb, depth, ids, np.take(self._class_table, prim).reshape(ids.shape)

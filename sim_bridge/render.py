"""CPU renderer for the synthetic household: RGB, planar depth and instance ids.

Ray-casts a :class:`personal.world.mesh.SceneMesh` with open3d's
``RaycastingScene`` (Embree). Ray directions are precomputed once in the camera
optical frame with unit z, so ``t_hit`` is the planar z-depth directly. Shading is
flat per triangle (a fixed key light, a weaker fill light and ambient), so the
shaded colour of every triangle is computed once at construction and a frame's
RGB is a table lookup by primitive id.
"""
from __future__ import annotations

import time

import numpy as np
import open3d as o3d

from personal.world.mesh import SceneMesh
from sim_bridge.backends.base import CameraSpec

# Lights are fixed in the map frame: a key light from above at an angle so that
# x- and y-facing faces get different brightness, and a fill from below so the
# ceiling and the undersides are not flat black.
_KEY_LIGHT = np.array([0.45, 0.3, 0.84])
_FILL_LIGHT = np.array([-0.5, -0.6, -0.62])
_AMBIENT, _KEY, _FILL = 0.55, 0.45, 0.2
_MISS_RGB = (0, 0, 0)


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v)


def shade_triangles(mesh: SceneMesh) -> np.ndarray:
    """(M, 3) uint8 Lambert-shaded colour of every triangle (one-sided, outward normals)."""
    n = mesh.triangle_normals()
    key = np.clip(n @ _unit(_KEY_LIGHT), 0.0, None)
    fill = np.clip(n @ _unit(_FILL_LIGHT), 0.0, None)
    gain = _AMBIENT + _KEY * key + _FILL * fill
    return np.clip(mesh.triangle_rgb.astype(np.float32) * gain[:, None], 0, 255).astype(np.uint8)


class Renderer:
    """Renders RGB (uint8 HxWx3), depth (float32 m, 0 outside [min, max]) and
    instance ids (int32, 0 = structure or miss) for a camera pose.

    ``nthreads`` is passed to Embree's ray casting (0 = all cores).
    """

    def __init__(self, mesh: SceneMesh, camera: CameraSpec | None = None, nthreads: int = 0):
        if mesh.n_triangles == 0:
            raise ValueError("Renderer: the scene mesh has no triangles")
        self.camera = camera or CameraSpec()
        self.K = self.camera.intrinsics()
        self.nthreads = int(nthreads)
        self._n_tri = mesh.n_triangles
        self._scene = o3d.t.geometry.RaycastingScene()
        self._scene.add_triangles(
            o3d.core.Tensor(np.ascontiguousarray(mesh.vertices, dtype=np.float32)),
            o3d.core.Tensor(np.ascontiguousarray(mesh.triangles, dtype=np.uint32)),
        )
        # Index n_tri holds the miss entry; misses (INVALID_ID = uint32 max) are
        # mapped there with one np.minimum.
        self._rgb_table = np.vstack([shade_triangles(mesh), np.array([_MISS_RGB], np.uint8)])
        self._id_table = np.append(mesh.triangle_instance_id.astype(np.int32), np.int32(0))
        self._dirs_cam = self._camera_rays()
        h, w = self.camera.height, self.camera.width
        self._rays = np.empty((h * w, 6), dtype=np.float32)
        self._rays_tensor = o3d.core.Tensor.from_numpy(self._rays)  # shares memory with _rays
        self.last_timing: dict[str, float] = {}

    def _camera_rays(self) -> np.ndarray:
        """(H*W, 3) float32 directions in the optical frame (x right, y down, z forward), z = 1."""
        h, w = self.camera.height, self.camera.width
        fx, fy, cx, cy = self.K[0, 0], self.K[1, 1], self.K[0, 2], self.K[1, 2]
        u, v = np.meshgrid(np.arange(w, dtype=np.float64), np.arange(h, dtype=np.float64))
        d = np.stack([(u - cx) / fx, (v - cy) / fy, np.ones_like(u)], axis=-1)
        return d.reshape(-1, 3).astype(np.float32)

    def render(self, T_map_camera: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Render from a 4x4 camera-optical -> map transform."""
        T = np.asarray(T_map_camera, dtype=np.float64)
        if T.shape != (4, 4) or not np.all(np.isfinite(T)):
            raise ValueError(f"Renderer.render: T_map_camera must be a finite 4x4 matrix, got shape {T.shape}")
        t0 = time.perf_counter()
        self._rays[:, :3] = T[:3, 3]
        np.matmul(self._dirs_cam, T[:3, :3].T.astype(np.float32), out=self._rays[:, 3:])
        hits = self._scene.cast_rays(self._rays_tensor, nthreads=self.nthreads)
        t1 = time.perf_counter()
        prim = np.minimum(hits["primitive_ids"].numpy(), self._n_tri)
        h, w = self.camera.height, self.camera.width
        rgb = self._rgb_table[prim].reshape(h, w, 3)
        t2 = time.perf_counter()
        ids = self._id_table[prim].reshape(h, w)
        depth = hits["t_hit"].numpy().reshape(h, w)  # inf on misses
        depth = np.where((depth >= self.camera.min_depth) & (depth <= self.camera.max_depth), depth, 0.0).astype(
            np.float32, copy=False
        )
        t3 = time.perf_counter()
        self.last_timing = {"raycast": t1 - t0, "shading": t2 - t1, "post": t3 - t2}
        return rgb, depth, ids

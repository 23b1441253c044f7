"""2-D semantic feature map: per cell an embedding and a confidence.

Per frame, every back-projected pixel adds its embedding (given per pixel, or per group —
an image region of a dense encoder or an instance of the oracle) to the cell its 3-D point
falls in, weighted by its confidence. The frame's per-cell weighted mean ``f_new`` with
weight ``c_new`` (sum of the pixel confidences) is fused OneMap-style::

    f <- (f * c + f_new * c_new) / (c + c_new),   c <- c + c_new

Aggregation is sparse matrix products / bincounts (no Python loops over pixels).
Embeddings are stored un-normalised (a weighted mean); queries L2-normalise them.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import yaml

from personal.mapping.grid import GridGeometry, grow_array

FORMAT_VERSION = 1


class EncoderMismatchError(ValueError):
    """A saved feature map was built with a different encoder than the one configured."""


class MapFileError(ValueError):
    """A saved feature map (``features.yaml`` + its ``.npz``) that is malformed; names file and field."""


MAX_MAP_BYTES = 2 << 30  # embeddings of a saved map at most (a 50 m x 50 m floor at 0.1 m, dim 512: 0.5 GB)
_ARRAY_DTYPES = "f"  # saved arrays are float (f2/f4/f8); never object arrays (np.load refuses pickles too)


def read_descriptor(p: Path) -> dict:
    """``features.yaml`` checked: YAML without Python tags (safe_load), every field typed and in range,
    ``data`` one file name in the same folder."""
    from personal.paths import UnsafeIdError, path_component

    try:
        meta = yaml.safe_load(p.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:  # a !!python/object tag is a ConstructorError here, never code run
        raise MapFileError(f"{p}: not a plain YAML map descriptor ({type(exc).__name__}: {str(exc).splitlines()[0]})") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise MapFileError(f"{p}: cannot read the map descriptor ({exc})") from None
    if not isinstance(meta, dict):
        raise MapFileError(f"{p}: the map descriptor must be a YAML mapping, got {type(meta).__name__}")
    for key in ("encoder", "resolution", "origin", "shape", "data"):
        if key not in meta:
            raise MapFileError(f"{p}: missing field {key!r}")
    enc = meta["encoder"]
    if not isinstance(enc, dict) or not _is_int(enc.get("dim")) or not 1 <= enc["dim"] <= 1 << 16:
        raise MapFileError(f"{p}: field 'encoder' must be a mapping with an integer 'dim' in 1..65536, got {enc!r}"[:300])
    res = meta["resolution"]
    if not _is_number(res) or not math.isfinite(res) or not 1e-4 <= res <= 100.0:
        raise MapFileError(f"{p}: field 'resolution' must be a finite number of metres in [0.0001, 100], got {res!r}")
    origin = meta["origin"]
    if not isinstance(origin, list) or len(origin) != 2 or not all(_is_number(v) and math.isfinite(v) for v in origin):
        raise MapFileError(f"{p}: field 'origin' must be two finite numbers, got {origin!r}"[:300])
    shape = meta["shape"]
    if not isinstance(shape, list) or len(shape) != 3 or not all(_is_int(n) and n >= 0 for n in shape):
        raise MapFileError(f"{p}: field 'shape' must be three non-negative integers [rows, cols, dim], got {shape!r}"[:300])
    if shape[2] != enc["dim"]:
        raise MapFileError(f"{p}: field 'shape' {shape} does not end with the encoder dimension {enc['dim']}")
    if math.prod(shape) * 4 > MAX_MAP_BYTES:
        raise MapFileError(f"{p}: field 'shape' {shape} is a map of {math.prod(shape) * 4 / 1e9:.1f} GB, over the "
                           f"limit of {MAX_MAP_BYTES / 1e9:.1f} GB")
    try:
        path_component(meta["data"], "field 'data'")
    except UnsafeIdError as exc:
        raise MapFileError(f"{p}: {exc} (the arrays must be a file next to the descriptor)") from None
    return meta


def read_arrays(p: Path, meta: dict) -> tuple[np.ndarray, np.ndarray]:
    """The descriptor's ``.npz``: each member's NumPy header (dtype, shape) and its declared size are
    checked against the descriptor *before* it is decompressed, so a zip bomb is refused unread."""
    import zipfile

    data = p.parent / meta["data"]
    shape = tuple(meta["shape"])
    want = {"embeddings": shape, "confidence": shape[:2]}
    try:
        with zipfile.ZipFile(data) as zf:
            for name, expected in want.items():
                _check_member(data, zf, name, expected)
        with np.load(data, allow_pickle=False) as npz:
            return npz["embeddings"], npz["confidence"]
    except MapFileError:
        raise
    except FileNotFoundError:
        raise MapFileError(f"{p}: field 'data': {data} not found") from None
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise MapFileError(f"{data}: not a valid map array file ({type(exc).__name__}: {exc})") from None


def _check_member(data: Path, zf, name: str, expected: tuple) -> None:
    try:
        info = zf.getinfo(f"{name}.npy")
    except KeyError:
        raise MapFileError(f"{data}: no array {name!r}") from None
    with zf.open(info) as fh:
        version = np.lib.format.read_magic(fh)
        header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        shape, _, dtype = header(fh)
    if dtype.kind not in _ARRAY_DTYPES or dtype.hasobject:
        raise MapFileError(f"{data}: array {name!r} has dtype {dtype.str}, expected float")
    if tuple(shape) != expected:
        raise MapFileError(f"{data}: array {name!r} has shape {tuple(shape)}, the descriptor says {list(expected)}")
    needed = math.prod(shape) * dtype.itemsize
    if not needed <= info.file_size <= needed + 4096:  # the .npy header is a few hundred bytes
        raise MapFileError(f"{data}: array {name!r} declares {info.file_size} bytes uncompressed; its shape needs {needed}")


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


class FeatureMap:
    def __init__(
        self,
        dim: int,
        resolution: float = 1.0,
        *,
        encoder: str = "",
        bounds: tuple[float, float, float, float] | None = None,
        frame: str = "map",
    ) -> None:
        if dim < 1:
            raise ValueError(f"feature dimension must be >= 1, got {dim}")
        if not 0.05 - 1e-9 <= resolution:
            raise ValueError(f"feature map resolution must be >= 0.05 m, got {resolution}")
        self.dim = int(dim)
        self.encoder = encoder
        self.frame = frame
        self.geometry = (
            GridGeometry.from_bounds(bounds, resolution) if bounds else GridGeometry(float(resolution), (0.0, 0.0), (0, 0))
        )
        self.embeddings = np.zeros(self.geometry.shape + (self.dim,), np.float32)
        self.confidence = np.zeros(self.geometry.shape, np.float32)

    @property
    def resolution(self) -> float:
        return self.geometry.resolution

    def ensure_contains(self, xmin: float, ymin: float, xmax: float, ymax: float) -> None:
        geo, off = self.geometry.grown_to(xmin, ymin, xmax, ymax, chunk=max(2.0, 4 * self.resolution))
        if geo is not self.geometry:
            self.embeddings = grow_array(self.embeddings, geo.shape, off, 0.0)
            self.confidence = grow_array(self.confidence, geo.shape, off, 0.0)
            self.geometry = geo

    # -- update -------------------------------------------------------------------
    def integrate(
        self,
        xy: np.ndarray,
        confidence: np.ndarray,
        embeddings: np.ndarray,
        groups: np.ndarray | None = None,
    ) -> int:
        """Fuse one frame. Returns the number of cells updated.

        xy: (N, >=2) map-frame point positions. confidence: (N,) per-point weight >= 0.
        embeddings: (G, E) per group with ``groups`` (N,) ints in [0, G) (-1 = skip the point),
        or (N, E) per point when ``groups`` is None.
        """
        embeddings = np.asarray(embeddings, np.float32)
        if embeddings.ndim != 2 or embeddings.shape[1] != self.dim:
            raise ValueError(f"embeddings must be (G, {self.dim}), got {embeddings.shape}")
        conf = np.asarray(confidence, np.float32)
        keep = conf > 0
        if groups is not None:
            groups = np.asarray(groups)
            keep &= groups >= 0
        elif embeddings.shape[0] != len(conf):
            raise ValueError(f"per-point embeddings: {embeddings.shape[0]} rows for {len(conf)} points")
        if not keep.any():
            return 0
        xy, conf = xy[keep], conf[keep]
        self.ensure_contains(xy[:, 0].min(), xy[:, 1].min(), xy[:, 0].max(), xy[:, 1].max())
        iy, ix = self.geometry.cells(xy)
        flat = iy * self.geometry.shape[1] + ix
        cells, cell_of_point = np.unique(flat, return_inverse=True)
        if groups is not None:
            cols, n_cols, emb = groups[keep], embeddings.shape[0], embeddings
        else:
            cols, n_cols, emb = np.arange(len(conf)), len(conf), embeddings[keep]
        # (cells x groups) weight matrix; duplicates summed by the sparse constructor
        W = sp.csr_matrix((conf, (cell_of_point, cols)), shape=(len(cells), n_cols))
        weighted_sum = np.asarray(W @ emb, dtype=np.float32)  # sum_i c_i f_i per cell
        c_new = np.bincount(cell_of_point, weights=conf, minlength=len(cells)).astype(np.float32)
        self._fuse(cells, weighted_sum, c_new)
        return len(cells)

    def _fuse(self, cells: np.ndarray, weighted_sum: np.ndarray, c_new: np.ndarray) -> None:
        E = self.embeddings.reshape(-1, self.dim)
        C = self.confidence.reshape(-1)
        c_old = C[cells]
        total = c_old + c_new
        # (f*c + f_new*c_new) / (c + c_new), with f_new*c_new = weighted_sum
        E[cells] = (E[cells] * c_old[:, None] + weighted_sum) / total[:, None]
        C[cells] = total

    def reset(self) -> None:
        self.embeddings[:] = 0.0
        self.confidence[:] = 0.0

    # -- queries ------------------------------------------------------------------
    def normalized(self) -> np.ndarray:
        n = np.linalg.norm(self.embeddings, axis=-1, keepdims=True)
        return np.divide(self.embeddings, n, out=np.zeros_like(self.embeddings), where=n > 0)

    def similarity(self, query: np.ndarray) -> np.ndarray:
        """Cosine similarity of each cell to ``query`` (E,); NaN where nothing was observed."""
        q = np.asarray(query, np.float32).reshape(-1)
        if q.shape[0] != self.dim:
            raise ValueError(f"query has dimension {q.shape[0]}, map has {self.dim}")
        q = q / max(float(np.linalg.norm(q)), 1e-12)
        sim = self.normalized() @ q
        sim[self.confidence <= 0] = np.nan
        return sim

    def descriptor(self) -> dict:
        geo = self.geometry
        return {
            "format": "personal.feature_map",
            "version": FORMAT_VERSION,
            "frame": self.frame,
            "origin": [float(geo.origin[0]), float(geo.origin[1])],
            "resolution": float(geo.resolution),
            "shape": [int(geo.shape[0]), int(geo.shape[1]), self.dim],
            "layout": "row-major [row=y, col=x, dim]; cell (0,0) lower-left corner at origin",
            "encoder": {"name": self.encoder, "dim": self.dim},
        }

    # -- persistence --------------------------------------------------------------
    def save(self, directory: str | Path, stem: str = "features") -> Path:
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(d / f"{stem}.npz", embeddings=self.embeddings, confidence=self.confidence)
        meta = {**self.descriptor(), "data": f"{stem}.npz"}
        path = d / f"{stem}.yaml"
        path.write_text(yaml.safe_dump(meta, sort_keys=False))
        return path

    @classmethod
    def load(cls, path: str | Path, expected_encoder: str | None = None, expected_dim: int | None = None) -> "FeatureMap":
        """Load ``features.yaml`` (or a map directory holding it): an untrusted file, checked field by
        field before any array is allocated (:func:`read_descriptor`, :func:`read_arrays`).

        Raises MapFileError (a ValueError) naming the file and field on a bad map, and
        EncoderMismatchError when ``expected_encoder``/``expected_dim`` differ from what the map
        was built with.
        """
        p = Path(path)
        if p.is_dir():
            p = p / "features.yaml"
        if not p.exists():
            raise FileNotFoundError(f"feature map descriptor not found: {p}")
        meta = read_descriptor(p)
        enc = meta["encoder"]
        if expected_encoder is not None and enc.get("name") != expected_encoder:
            raise EncoderMismatchError(
                f"{p}: feature map was built with encoder {enc.get('name')!r}, "
                f"but the configured encoder is {expected_encoder!r}; rebuild the map or configure {enc.get('name')!r}"
            )
        if expected_dim is not None and int(enc.get("dim", -1)) != expected_dim:
            raise EncoderMismatchError(f"{p}: feature map dimension {enc.get('dim')} != configured encoder dimension {expected_dim}")
        embeddings, confidence = read_arrays(p, meta)
        fm = cls(dim=int(enc["dim"]), resolution=float(meta["resolution"]), encoder=enc.get("name", ""), frame=str(meta.get("frame", "map")))
        fm.embeddings = embeddings.astype(np.float32)
        fm.confidence = confidence.astype(np.float32)
        fm.geometry = GridGeometry(float(meta["resolution"]), (float(meta["origin"][0]), float(meta["origin"][1])), tuple(meta["shape"][:2]))
        return fm

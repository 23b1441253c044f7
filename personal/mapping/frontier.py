"""Frontiers: free cells next to unknown cells, clustered into connected groups."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import ndimage

from personal.mapping.grid import GridGeometry
from personal.mapping.occupancy import FREE, OCCUPIED, UNKNOWN

_EIGHT = np.ones((3, 3), bool)


@dataclass
class Frontier:
    label: int
    cells: np.ndarray  # (M, 2) int (row, col)
    centroid: tuple[float, float]  # map-frame (x, y)

    @property
    def size(self) -> int:
        return int(len(self.cells))


def _dilate(mask: np.ndarray, eight: bool) -> np.ndarray:
    """Binary dilation by the 3x3 cross (4-neighbours) or the 3x3 square (8-neighbours), nothing
    outside the array: ``ndimage.binary_dilation`` with those structures, by shifted ORs (several
    times faster on a map-sized array)."""
    out = mask.copy()
    out[1:] |= mask[:-1]
    out[:-1] |= mask[1:]
    rows = out if eight else mask
    if not eight:
        out[:, 1:] |= mask[:, :-1]
        out[:, :-1] |= mask[:, 1:]
        return out
    cols = rows.copy()
    cols[:, 1:] |= rows[:, :-1]
    cols[:, :-1] |= rows[:, 1:]
    return cols


def frontier_mask(state: np.ndarray) -> np.ndarray:
    """Free cells with a 4-connected unknown neighbour and no occupied 8-neighbour.

    (int8 state: -1/0/100.) Cells touching an obstacle are left out so that a wall cell
    misread as free (floor-height points at a wall's base) does not make a frontier into
    the unseen inside of the wall.
    """
    near_unknown = _dilate(state == UNKNOWN, eight=False)
    near_occupied = _dilate(state == OCCUPIED, eight=True)
    return (state == FREE) & near_unknown & ~near_occupied


def frontier_labels(state: np.ndarray, min_size: int = 3) -> tuple[np.ndarray, int]:
    """The label image of :func:`detect_frontiers` (clusters under ``min_size`` cells set to 0) and
    the number of labels before that, without building the per-cluster list (the explorer needs
    only the cells)."""
    labels, n = ndimage.label(frontier_mask(state), structure=_EIGHT)
    if n == 0:
        return labels, 0
    sizes = np.bincount(labels.ravel(), minlength=n + 1)
    small = sizes < min_size
    small[0] = False
    labels[small[labels]] = 0
    return labels, n


def frontier_clusters(labels: np.ndarray, geometry: GridGeometry) -> list[Frontier]:
    """The frontiers of a label image from :func:`frontier_labels`, in label order."""
    rows, cols = np.nonzero(labels)
    lab = labels[rows, cols]
    order = np.argsort(lab, kind="stable")
    rows, cols, lab = rows[order], cols[order], lab[order]
    splits = np.flatnonzero(np.diff(lab)) + 1
    out = []
    for r, c, l in zip(np.split(rows, splits), np.split(cols, splits), np.split(lab, splits)):
        if len(r) == 0:
            continue
        x, y = geometry.center(r, c)
        out.append(Frontier(label=int(l[0]), cells=np.stack([r, c], axis=1), centroid=(float(np.mean(x)), float(np.mean(y)))))
    return out


def detect_frontiers(state: np.ndarray, geometry: GridGeometry, min_size: int = 3) -> tuple[list[Frontier], np.ndarray]:
    """Clusters (8-connected) of frontier cells with at least ``min_size`` cells.

    Returns the frontiers and the label image (0 = none) for vectorised per-cluster queries.
    """
    labels, n = frontier_labels(state, min_size)
    if n == 0:
        return [], labels
    return frontier_clusters(labels, geometry), labels

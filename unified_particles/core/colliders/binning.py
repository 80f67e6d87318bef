# SPDX-License-Identifier: GPL-3.0-or-later
"""The triangle binning the exact and deforming surfaces share: hierarchical hash grids of boxes."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ..fastops import rows_all
from ..geometry.mesh import _is_closed, _signed_volume, _with_area, as_triangles, as_vertices
from ..geometry.triangles import _PAIR_BUDGET, _cell_table, _iter_ranges

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


# Most cells per axis of the finest level of an ExactSurface grid: cell keys stay far inside int64.
_SURFACE_GRID_MAX_CELLS = 1 << 20
# Points looked up per window of ExactSurface.candidates (bounds the per-level temporaries).
_SURFACE_QUERY_CHUNK = 1 << 16
# A triangle's box (grown by the band) spans at most this many cells per side on its grid level: finer
# cells than one per box cut the candidates a point sees on a fine mesh ~4x, for ~10x more table entries.
_SURFACE_CELLS_PER_BOX = 4


@dataclass
class _GridLevel:
    """One level of ExactSurface's triangle grid: cell -> triangles as a table sorted by cell key."""

    cell: float
    dims: IntArray
    keys: IntArray
    start: IntArray
    count: IntArray
    tri: IntArray


def _bin_boxes(
    tlo: FloatArray,
    thi: FloatArray,
    lo: FloatArray,
    hi: FloatArray,
    band: float,
    cells_per_box: int = _SURFACE_CELLS_PER_BOX,
) -> list[_GridLevel]:
    """Hierarchical hash grid of boxes (k, 3) ``tlo``..``thi`` (grown by ``band``) inside ``lo``..``hi``.

    Each box goes to the level whose cells are at least ``1 / cells_per_box`` of its size, so it lands in
    at most ``cells_per_box`` cells per side.
    """
    # Boxes are grown by the band, so they are >= 2 band wide and cells >= band / 2.
    g0 = max(0.5 * band, float(np.max(hi - lo)) / _SURFACE_GRID_MAX_CELLS)
    ext = thi - tlo
    size = np.maximum(np.maximum(ext[:, 0], ext[:, 1]), ext[:, 2]) / cells_per_box
    level = np.maximum(np.ceil(np.log2(size / g0)), 0.0).astype(np.int64)
    level += g0 * np.exp2(level) < size  # round-off: at most cells_per_box cells per box side
    levels = []
    for lv in np.unique(level):
        sel = np.flatnonzero(level == lv)
        cell = g0 * 2.0 ** int(lv)
        dims = np.floor((hi - lo) / cell).astype(np.int64) + 1
        c0 = np.clip(np.floor((tlo[sel] - lo) / cell).astype(np.int64), 0, dims - 1)
        c1 = np.clip(np.floor((thi[sel] - lo) / cell).astype(np.int64), 0, dims - 1)
        ext = c1 - c0 + 1
        ukeys, start, count, box = _cell_table(c0, ext, dims)
        levels.append(_GridLevel(cell, dims, ukeys, start, count, sel[box]))
    return levels


def _welded_surface(
    vertices: npt.ArrayLike, faces: npt.ArrayLike
) -> tuple[FloatArray, IntArray, IntArray, bool, float]:
    """A triangle mesh with its corners welded by coordinate and zero-area triangles dropped.

    Returns the welded vertices (W, 3), for each the index of its first input vertex (W,), the faces
    (k, 3) into them (turned outward when the mesh is closed and consistently oriented), whether it is,
    and the mesh's size (longest bounding-box side, metres). A mesh with no area raises.
    """
    v = as_vertices(vertices)
    welded, rep, inverse = np.unique(v, axis=0, return_index=True, return_inverse=True)
    f = inverse.reshape(-1)[as_triangles(faces, v.shape[0])]
    cross = np.cross(welded[f[:, 1]] - welded[f[:, 0]], welded[f[:, 2]] - welded[f[:, 0]])
    area2 = np.sqrt(np.einsum("ij,ij->i", cross, cross))
    scale = max(float(np.ptp(welded, axis=0).max()), 1e-12)
    keep = _with_area(area2, scale)
    f = f[keep]
    directed = f[:, [0, 1, 1, 2, 2, 0]].reshape(-1, 2)
    n_v = welded.shape[0]
    closed = _is_closed(f) and np.unique(directed[:, 0] * n_v + directed[:, 1]).size == len(directed)
    if closed and _signed_volume(welded[f], welded.mean(axis=0))[0] < 0.0:
        f = f[:, ::-1].copy()
    return welded, rep.astype(np.int64), f, bool(closed), scale


def _grid_pairs(
    points: FloatArray, which: IntArray, levels: list[_GridLevel], lo: FloatArray, reach: float, band: float
) -> Iterator[tuple[IntArray, IntArray]]:
    """(point, triangle) index arrays of the triangles binned in each point's cell, level by level, in
    bounded windows: the candidates within ``reach`` (<= the ``band`` the grid was built for) that the
    surfaces' ``candidates`` then filter."""
    if reach > band * (1.0 + 1e-12):
        raise ValueError(f"reach {reach} exceeds the grid's band {band}")
    for first in range(0, which.size, _SURFACE_QUERY_CHUNK):
        chunk = which[first : first + _SURFACE_QUERY_CHUNK]
        p = points[chunk]
        for level in levels:
            c = np.floor((p - lo) / level.cell).astype(np.int64)
            valid = np.all((c >= 0) & (c < level.dims), axis=1)
            key = (c[:, 0] * level.dims[1] + c[:, 1]) * level.dims[2] + c[:, 2]
            slot = np.minimum(np.searchsorted(level.keys, key), level.keys.size - 1)
            rows = np.flatnonzero(valid & (level.keys[slot] == key))
            hs = slot[rows]
            for owner, pos in _iter_ranges(level.start[hs], level.count[hs], _PAIR_BUDGET):
                yield chunk[rows[owner]], level.tri[pos]


def _sorted_pairs(parts: list[tuple[IntArray, IntArray]]) -> tuple[IntArray, IntArray]:
    """The (point, triangle) pairs of ``parts`` in one pair of arrays, sorted by point (stable)."""
    if not parts:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    pi = np.concatenate([p for p, _ in parts])
    ti = np.concatenate([t for _, t in parts])
    order = np.argsort(pi, kind="stable")
    return pi[order], ti[order]


def box_members(q: FloatArray, lo: FloatArray, hi: FloatArray, margin: float) -> IntArray:
    """(M,) indices of the points ``q`` (N, 3) inside the box ``lo``..``hi`` grown by ``margin``."""
    return np.flatnonzero(rows_all((q >= lo - margin) & (q <= hi + margin)))

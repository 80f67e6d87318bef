# SPDX-License-Identifier: GPL-3.0-or-later
"""Kernels on (point, triangle) pairs and the bounded windows they run in."""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


# Working-set budget of one vectorized chunk. The (point, triangle) pair kernels hold up to ~400 bytes of
# float64 temporaries per pair (Ericson's region test; the solid angle needs ~200), so a window of
# ``_PAIR_BUDGET`` pairs stays below ~100 MB.
_CHUNK_BYTES = 64 * 2**20
_PAIR_BUDGET = _CHUNK_BYTES // 320
_FOUR_PI = 4.0 * math.pi


def _iter_ranges(starts: IntArray, counts: IntArray, budget: int) -> Iterator[tuple[IntArray, IntArray]]:
    """Flatten the integer ranges ``[starts[k], starts[k] + counts[k])`` in windows of <= ``budget`` items.

    Yields ``(owner, position)`` with ``owner[i] = k`` and the position inside the range. A single huge range
    is split over several windows, so memory stays bounded whatever one range holds.
    """
    if counts.size == 0:
        return
    cum = np.cumsum(counts)
    total = int(cum[-1])
    begin = cum - counts
    for lo in range(0, total, budget):
        k = np.arange(lo, min(lo + budget, total), dtype=np.int64)
        owner = np.searchsorted(cum, k, side="right").astype(np.int64)
        yield owner, starts[owner] + (k - begin[owner])


def _box_cells(i0: IntArray, ext: IntArray) -> Iterator[tuple[IntArray, IntArray, IntArray, IntArray]]:
    """Every integer cell of the boxes ``i0[k]`` .. ``i0[k] + ext[k] - 1`` (k, 3), in windows of at most
    ``_PAIR_BUDGET`` cells: yields ``(owner, ix, iy, iz)``, the box and the cell's three indices."""
    for owner, local in _iter_ranges(np.zeros(i0.shape[0], dtype=np.int64), ext.prod(axis=1), _PAIR_BUDGET):
        e = ext[owner]
        plane = e[:, 1] * e[:, 2]
        rem = local % plane
        yield (
            owner,
            i0[owner, 0] + local // plane,
            i0[owner, 1] + rem // e[:, 2],
            i0[owner, 2] + rem % e[:, 2],
        )


def _cell_table(c0: IntArray, ext: IntArray, dims: IntArray) -> tuple[IntArray, IntArray, IntArray, IntArray]:
    """Cell -> boxes as a table sorted by cell key, for the integer boxes ``c0[k]`` .. ``c0[k] + ext[k] - 1``
    (k, 3) on a grid of ``dims`` (3,) cells: (occupied cell keys (C,), first entry (C,), entries (C,) of
    each, and the box of every entry in key order (E,))."""
    keys_parts = []
    owner_parts = []
    for owner, ix, iy, iz in _box_cells(c0, ext):
        keys_parts.append((ix * dims[1] + iy) * dims[2] + iz)
        owner_parts.append(owner)
    keys = np.concatenate(keys_parts)
    order = np.argsort(keys, kind="stable")
    ukeys, start, count = np.unique(keys[order], return_index=True, return_counts=True)
    return ukeys, start, count, np.concatenate(owner_parts)[order]


def _solid_angle(a: FloatArray, b: FloatArray, c: FloatArray) -> FloatArray:
    """Signed solid angle of triangles seen from the origin (van Oosterom-Strackee 1983).

    ``a, b, c``: corners relative to the query point, shape (..., 3). Returns shape (...), in
    [-2 pi, 2 pi]; positive when the query point is behind the triangle (on the side its
    counter-clockwise normal points away from), so that a closed outward-oriented mesh sums to 4 pi inside.
    """
    la = np.sqrt(np.einsum("...i,...i->...", a, a))
    lb = np.sqrt(np.einsum("...i,...i->...", b, b))
    lc = np.sqrt(np.einsum("...i,...i->...", c, c))
    det = np.einsum("...i,...i->...", a, np.cross(b, c))
    den = (
        la * lb * lc
        + np.einsum("...i,...i->...", a, b) * lc
        + np.einsum("...i,...i->...", b, c) * la
        + np.einsum("...i,...i->...", c, a) * lb
    )
    result: FloatArray = 2.0 * np.arctan2(det, den)
    return result


def _closest_on_triangles(p: FloatArray, a: FloatArray, b: FloatArray, c: FloatArray) -> FloatArray:
    """Closest point on triangles (a, b, c) to points p, all shape (K, 3); returns (K, 3).

    Ericson, Real-Time Collision Detection, 5.1.5 ("ClosestPtPointTriangle"), vectorized: every pair computes
    the six dot products once, then the Voronoi region (vertex A/B/C, edge AB/AC/BC, face) is chosen with
    masks in reverse order of Ericson's early returns, so the region tested first wins.
    """
    out, _ = _closest_with_region(p, a, b, c, False)
    return out


# Voronoi region codes of ``_closest_with_region``: the feature of the triangle the closest point lies on.
_REGION_FACE, _REGION_A, _REGION_B, _REGION_C, _REGION_AB, _REGION_BC, _REGION_CA = range(7)


def _closest_with_region(
    p: FloatArray, a: FloatArray, b: FloatArray, c: FloatArray, want_region: bool
) -> tuple[FloatArray, npt.NDArray[np.int8] | None]:
    """``_closest_on_triangles`` and, with ``want_region``, the (K,) int8 region code (``_REGION_*``)."""
    out, region, _, _ = _closest_with_barycentric(p, a, b, c, want_region)
    return out, region


def _closest_with_barycentric(
    p: FloatArray, a: FloatArray, b: FloatArray, c: FloatArray, want_region: bool
) -> tuple[FloatArray, npt.NDArray[np.int8] | None, FloatArray, FloatArray]:
    """``_closest_with_region`` and the closest point's barycentric weights (v on AB, w on AC)."""
    ab = b - a
    ac = c - a
    ap = p - a
    d1 = np.einsum("ij,ij->i", ab, ap)
    d2 = np.einsum("ij,ij->i", ac, ap)
    bp = p - b
    d3 = np.einsum("ij,ij->i", ab, bp)
    d4 = np.einsum("ij,ij->i", ac, bp)
    cp = p - c
    d5 = np.einsum("ij,ij->i", ab, cp)
    d6 = np.einsum("ij,ij->i", ac, cp)
    va = d3 * d6 - d5 * d4
    vb = d5 * d2 - d1 * d6
    vc = d1 * d4 - d3 * d2

    def safe_div(num: FloatArray, den: FloatArray) -> FloatArray:
        # Denominators vanish only where the region mask is false (or for slivers): never divide by 0.
        out: FloatArray = np.divide(num, den, out=np.zeros_like(num), where=den != 0.0)
        return out

    # Barycentric weights (v on ab, w on ac); face region by default.
    region = np.zeros(p.shape[0], dtype=np.int8) if want_region else None
    denom = va + vb + vc
    v = safe_div(vb, denom)
    w = safe_div(vc, denom)
    e43 = d4 - d3
    e56 = d5 - d6
    m = (va <= 0.0) & (e43 >= 0.0) & (e56 >= 0.0)  # edge BC
    if region is not None:
        region[m] = _REGION_BC
    t = safe_div(e43, e43 + e56)
    v = np.where(m, 1.0 - t, v)
    w = np.where(m, t, w)
    m = (vb <= 0.0) & (d2 >= 0.0) & (d6 <= 0.0)  # edge AC
    if region is not None:
        region[m] = _REGION_CA
    v = np.where(m, 0.0, v)
    w = np.where(m, safe_div(d2, d2 - d6), w)
    m = (d6 >= 0.0) & (d5 <= d6)  # vertex C
    if region is not None:
        region[m] = _REGION_C
    v = np.where(m, 0.0, v)
    w = np.where(m, 1.0, w)
    m = (vc <= 0.0) & (d1 >= 0.0) & (d3 <= 0.0)  # edge AB
    if region is not None:
        region[m] = _REGION_AB
    v = np.where(m, safe_div(d1, d1 - d3), v)
    w = np.where(m, 0.0, w)
    m = (d3 >= 0.0) & (d4 <= d3)  # vertex B
    if region is not None:
        region[m] = _REGION_B
    v = np.where(m, 1.0, v)
    w = np.where(m, 0.0, w)
    m = (d1 <= 0.0) & (d2 <= 0.0)  # vertex A
    if region is not None:
        region[m] = _REGION_A
    v = np.where(m, 0.0, v)
    w = np.where(m, 0.0, w)
    out: FloatArray = a + ab * v[:, None] + ac * w[:, None]
    return out, region, v, w

# SPDX-License-Identifier: GPL-3.0-or-later
"""Swept tests: where point paths first cross a surface."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .exact import ExactSurface

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


# A segment crossing a triangle within this relative tolerance of its edges counts as a hit, so a path
# through the shared edge of two triangles never slips between them by round-off.
_CROSSING_EDGE_TOLERANCE = 1e-9


def _segment_triangle(
    p0: FloatArray, d: FloatArray, a: FloatArray, b: FloatArray, c: FloatArray
) -> tuple[npt.NDArray[np.bool_], FloatArray, FloatArray, FloatArray]:
    """Segments p0 + t d, t in [0, 1], against triangles (all (K, 3)): Moeller-Trumbore, vectorized.

    Returns (hit (K,), t, u, v): the crossing point is p0 + t d = a + u (b - a) + v (c - a). Segments
    parallel to the triangle's plane never hit.
    """
    e1 = b - a
    e2 = c - a
    pvec = np.cross(d, e2)
    det = np.einsum("ij,ij->i", e1, pvec)
    scale = np.sqrt(
        np.einsum("ij,ij->i", e1, e1) * np.einsum("ij,ij->i", e2, e2) * np.einsum("ij,ij->i", d, d)
    )
    ok = np.abs(det) > 1e-12 * scale
    inv = np.divide(1.0, det, out=np.zeros_like(det), where=ok)
    tvec = p0 - a
    u = np.einsum("ij,ij->i", tvec, pvec) * inv
    qvec = np.cross(tvec, e1)
    v = np.einsum("ij,ij->i", d, qvec) * inv
    t = np.einsum("ij,ij->i", e2, qvec) * inv
    tol = _CROSSING_EDGE_TOLERANCE
    hit = ok & (u >= -tol) & (v >= -tol) & (u + v <= 1.0 + tol) & (t >= 0.0) & (t <= 1.0)
    return hit, t, u, v


def _segment_candidates(
    candidates: Callable[[FloatArray, IntArray, float], tuple[IntArray, IntArray]],
    band: float,
    q0: FloatArray,
    q1: FloatArray,
    which: IntArray,
) -> tuple[IntArray, IntArray]:
    """Unique (point, triangle) pairs whose triangle may meet the segment q0[i] -> q1[i], i in ``which``.

    Each segment is sampled at a spacing of at most ``band``; every point of it is then within band / 2
    of a sample, and each sample looks up the triangles within ``band`` of it.
    """
    if which.size == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    start = q0[which]
    d = q1[which] - start
    length = np.sqrt(np.einsum("ij,ij->i", d, d))
    n_s = np.floor(length / band).astype(np.int64) + 2
    owner = np.repeat(np.arange(which.size, dtype=np.int64), n_s)
    k = np.arange(owner.size, dtype=np.int64) - np.repeat(np.cumsum(n_s) - n_s, n_s)
    t = k / (n_s[owner] - 1.0)
    samples = start[owner] + t[:, None] * d[owner]
    si, ti = candidates(samples, np.arange(samples.shape[0], dtype=np.int64), band)
    if si.size == 0:
        return si, ti
    pi = which[owner[si]]
    n_tri = int(ti.max()) + 1
    key = np.unique(pi * n_tri + ti)
    return key // n_tri, key % n_tri


@dataclass
class SegmentHits:
    """First crossings of point paths through a surface (``first_crossings``).

    Attributes:
        idx: (M,) point indices, each once.
        t: (M,) fraction of the path at the crossing.
        tri: (M,) triangle crossed.
        bary: (M, 3) barycentric weights of the crossing point on the triangle's corners.
        normal: (M, 3) unit normal of the crossed triangle, pointing to the side the path came from.
        point: (M, 3) the crossing point.
    """

    idx: IntArray
    t: FloatArray
    tri: IntArray
    bary: FloatArray
    normal: FloatArray
    point: FloatArray


def _first_crossings(
    tri: FloatArray,
    closed: bool,
    q0: FloatArray,
    q1: FloatArray,
    pi: IntArray,
    ti: IntArray,
    start_shift: FloatArray | None = None,
) -> SegmentHits:
    """The earliest crossing per point among the (point, triangle) pairs; ``tri`` (k, 3, 3) outward.

    On a closed mesh only crossings from outside to inside count (a path leaving the inside is the way
    out); an open mesh is two-sided. ``start_shift`` (per pair) moves the paths' starts with their
    triangle's motion over the step, so the test is made relative to the triangle.
    """
    if pi.size:
        t3 = tri[ti]
        a = t3[:, 0]
        p0 = q0[pi] if start_shift is None else q0[pi] + start_shift
        d = q1[pi] - p0
        hit, t, u, v = _segment_triangle(p0, d, a, t3[:, 1], t3[:, 2])
        n = np.cross(t3[:, 1] - a, t3[:, 2] - a)
        side = np.einsum("ij,ij->i", p0 - a, n)
        if closed:
            hit &= side > 0.0
        sel = np.flatnonzero(hit)
    else:
        sel = np.zeros(0, np.int64)
    if sel.size == 0:
        z = np.zeros((0, 3))
        return SegmentHits(np.zeros(0, np.int64), np.zeros(0), np.zeros(0, np.int64), z, z.copy(), z.copy())
    # Earliest per point: sort by (point, t) and keep each point's first row.
    order = sel[np.lexsort((t[sel], pi[sel]))]
    first = np.concatenate([[True], pi[order][1:] != pi[order][:-1]])
    w = order[first]
    nw = n[w] * np.where(side[w] < 0.0, -1.0, 1.0)[:, None]
    nw /= np.sqrt(np.einsum("ij,ij->i", nw, nw))[:, None]
    bary = np.stack([1.0 - u[w] - v[w], u[w], v[w]], axis=1)
    point = p0[w] + t[w, None] * d[w]
    return SegmentHits(pi[w], t[w], ti[w], bary, nw, point)


def exact_surface_crossings(
    surface: ExactSurface, q0: FloatArray, q1: FloatArray, which: IntArray
) -> SegmentHits:
    """First crossings of the paths q0[i] -> q1[i] (i in ``which``) through a static ``ExactSurface``."""
    pi, ti = _segment_candidates(surface.candidates, surface.band, q0, q1, which)
    return _first_crossings(surface.tri, surface.closed, q0, q1, pi, ti)

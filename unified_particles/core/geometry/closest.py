# SPDX-License-Identifier: GPL-3.0-or-later
"""Exact closest points on a triangle soup, and the signed distance they give."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from .mesh import _as_points, _triangle_soup
from .triangles import _PAIR_BUDGET, _cell_table, _closest_on_triangles, _iter_ranges
from .winding import _make_clusters, _winding_fast

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


def _reduce_closest(
    query: IntArray,
    tri_id: IntArray,
    p: FloatArray,
    tri: FloatArray,
    best_d2: FloatArray,
    best_cp: FloatArray,
    best_tri: IntArray,
) -> None:
    """Evaluate pairs (query[i], tri_id[i]) at points p[i] and keep the closest per query (in place)."""
    t = tri[tri_id]
    cp = _closest_on_triangles(p, t[:, 0], t[:, 1], t[:, 2])
    d2 = np.einsum("ij,ij->i", p - cp, p - cp)
    current = best_d2.copy()
    np.minimum.at(best_d2, query, d2)
    win = (d2 == best_d2[query]) & (d2 < current[query])
    best_cp[query[win]] = cp[win]
    best_tri[query[win]] = tri_id[win]


def _closest_brute(
    tri: FloatArray,
    points: FloatArray,
    best_d2: FloatArray,
    best_cp: FloatArray,
    best_tri: IntArray,
    which: IntArray,
) -> None:
    n_tri = tri.shape[0]
    step = max(1, _PAIR_BUDGET // n_tri)
    for lo in range(0, which.size, step):
        qs = which[lo : lo + step]
        query = np.repeat(qs, n_tri)
        tri_id = np.tile(np.arange(n_tri, dtype=np.int64), qs.size)
        _reduce_closest(query, tri_id, points[query], tri, best_d2, best_cp, best_tri)


def _closest(tri: FloatArray, points: FloatArray) -> tuple[FloatArray, FloatArray, IntArray]:
    """Exact closest point on a triangle soup for each point: (distance (P,), closest (P, 3), triangle (P,)).

    Small problems are brute force. Larger ones bin triangle bounding boxes into a uniform grid (sorted cell
    keys, cells about one triangle wide) and look at the 27 cells around each query: if the best distance
    found is <= the cell size, no triangle outside those cells can be closer, so the answer is exact.
    Queries farther from the surface go to ``_closest_clustered`` (bounding-sphere pruning of triangle
    clusters), also exact.
    """
    n_pts = points.shape[0]
    n_tri = tri.shape[0]
    best_d2 = np.full(n_pts, np.inf)
    best_cp = np.zeros((n_pts, 3))
    best_tri = np.zeros(n_pts, dtype=np.int64)
    pending = np.arange(n_pts, dtype=np.int64)
    if n_pts * n_tri > 2 * _PAIR_BUDGET and n_tri > 16:
        tlo = tri.min(axis=1)
        thi = tri.max(axis=1)
        lo = tlo.min(axis=0)
        hi = thi.max(axis=0)
        diag = float(np.linalg.norm(hi - lo))
        cell = max(float(np.median(np.ptp(tri, axis=1).max(axis=1))), diag / 256.0, 1e-9)
        offsets = np.stack(np.meshgrid([-1, 0, 1], [-1, 0, 1], [-1, 0, 1], indexing="ij"), -1).reshape(-1, 3)
        if pending.size:
            origin = lo - cell
            dims = np.floor((hi - origin) / cell).astype(np.int64) + 2
            c0 = np.floor((tlo - origin) / cell).astype(np.int64)
            c1 = np.floor((thi - origin) / cell).astype(np.int64)
            ext = c1 - c0 + 1
            # (triangle, cell) entries, sorted by cell key: a CSR table cell -> triangles.
            ukeys, ustart, ucount, tri_of = _cell_table(c0, ext, dims)
            qstep = max(1, _PAIR_BUDGET // 27)
            still = []
            for qlo in range(0, pending.size, qstep):
                qs = pending[qlo : qlo + qstep]
                qc = np.floor((points[qs] - origin) / cell).astype(np.int64)
                nb = qc[:, None, :] + offsets[None, :, :]
                valid = ((nb >= 0) & (nb < dims)).all(axis=2)
                nkey = (nb[..., 0] * dims[1] + nb[..., 1]) * dims[2] + nb[..., 2]
                slot = np.minimum(np.searchsorted(ukeys, nkey), ukeys.size - 1)
                hit = valid & (ukeys[slot] == nkey)
                qrow, _ = np.nonzero(hit)
                hs = slot[hit]
                for owner, pos in _iter_ranges(ustart[hs], ucount[hs], _PAIR_BUDGET):
                    query = qs[qrow[owner]]
                    _reduce_closest(query, tri_of[pos], points[query], tri, best_d2, best_cp, best_tri)
                still.append(qs[best_d2[qs] > cell * cell])
            pending = np.concatenate(still) if still else pending[:0]
    if pending.size and n_tri >= 256 and pending.size * n_tri > 2 * _PAIR_BUDGET:
        _closest_clustered(tri, points, best_d2, best_cp, best_tri, pending)
    elif pending.size:
        _closest_brute(tri, points, best_d2, best_cp, best_tri, pending)
    return np.sqrt(best_d2), best_cp, best_tri


def _closest_clustered(
    tri: FloatArray,
    points: FloatArray,
    best_d2: FloatArray,
    best_cp: FloatArray,
    best_tri: IntArray,
    which: IntArray,
) -> None:
    """Exact closest points for ``which`` queries by pruning triangle clusters with bounding spheres.

    A two-level bounding volume hierarchy: first the exact distance to the cluster whose centre is nearest
    gives an upper bound ``u``; then only clusters whose bounding sphere is closer than ``u`` (lower bound
    ``|q - c| - r``) are evaluated triangle by triangle. Exact, and for points far from a surface only the
    clusters facing them survive the pruning.
    """
    cl = _make_clusters(tri)
    n_cl = cl.centre.shape[0]
    step = max(1, _PAIR_BUDGET // (4 * n_cl))
    for lo in range(0, which.size, step):
        qs = which[lo : lo + step]
        q = points[qs]
        dist = np.linalg.norm(cl.centre[None, :, :] - q[:, None, :], axis=2)
        nearest = np.argmin(dist, axis=1)
        rows = np.arange(qs.size, dtype=np.int64)
        for owner, pos in _iter_ranges(cl.start[nearest], cl.count[nearest], _PAIR_BUDGET):
            _reduce_closest(qs[owner], cl.order[pos], q[owner], tri, best_d2, best_cp, best_tri)
        bound = np.sqrt(best_d2[qs])
        candidate = dist - cl.radius[None, :] <= bound[:, None]
        candidate[rows, nearest] = False
        qi, ci = np.nonzero(candidate)
        for owner, pos in _iter_ranges(cl.start[ci], cl.count[ci], _PAIR_BUDGET):
            query = qs[qi[owner]]
            _reduce_closest(query, cl.order[pos], points[query], tri, best_d2, best_cp, best_tri)


def closest_points_on_mesh(
    vertices: npt.ArrayLike, faces: npt.ArrayLike, points: npt.ArrayLike
) -> tuple[FloatArray, FloatArray]:
    """Unsigned distance and closest surface point of a triangle mesh for each query point.

    Exact point-triangle distance (Ericson 5.1.5), accelerated by a uniform grid over triangle bounding
    boxes for large inputs (see ``_closest``); brute force for small ones. Points near the surface are
    cheap; points deep inside a large closed mesh are not (many triangles are nearly equidistant, e.g. near
    a sphere's centre): for millions of queries sample an :class:`SDFVolume` once instead.

    Parameters
    ----------
    vertices : (n, 3) metres. faces : (m, 3) vertex indices. points : (P, 3) metres.

    Returns
    -------
    distance : (P,) float64, metres, >= 0.
    closest : (P, 3) float64, metres, the closest point on the surface.
    """
    tri = _triangle_soup(vertices, faces)
    d, cp, _ = _closest(tri, _as_points(points))
    return d, cp


def _unit_normals(tri: FloatArray) -> FloatArray:
    n = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    out: FloatArray = n / np.linalg.norm(n, axis=1, keepdims=True)
    return out


def _signed(tri: FloatArray, points: FloatArray) -> tuple[FloatArray, FloatArray]:
    d, cp, t = _closest(tri, points)
    inside = _winding_fast(tri, points) > 0.5
    sdf = np.where(inside, -d, d)
    scale = max(float(np.ptp(tri.reshape(-1, 3), axis=0).max()), 1e-12)
    tiny = d <= 1e-9 * scale
    direction = (points - cp) / np.where(tiny, 1.0, d)[:, None]
    direction = np.where(inside[:, None], -direction, direction)
    grad = np.where(tiny[:, None], _unit_normals(tri[t]), direction)
    return sdf, grad


def _surface_gradient(tri: FloatArray, points: FloatArray) -> FloatArray:
    """The gradient of :func:`_signed` alone, bit for bit, for points on or very near the surface.

    A point on the surface (distance <= 1e-9 of the mesh size) takes its closest triangle's normal, which
    needs no side: when all points are such, the winding numbers are skipped. (SDF volumes ask this for
    every node on a face; a modelled box has whole planes of them, and their winding numbers were about
    half of a thin 10 m box's volume build at r = 0.1.) Otherwise they are evaluated for all the points as
    :func:`_signed` does (the clustered sum's path and grouping depend on the point set, and these points
    sit where the winding number is near 0.5).
    """
    d, cp, t = _closest(tri, points)
    scale = max(float(np.ptp(tri.reshape(-1, 3), axis=0).max()), 1e-12)
    tiny = d <= 1e-9 * scale
    grad: FloatArray = _unit_normals(tri[t])
    off = np.flatnonzero(~tiny)
    if off.size:
        inside = (_winding_fast(tri, points) > 0.5)[off]
        direction = (points[off] - cp[off]) / d[off, None]
        grad[off] = np.where(inside[:, None], -direction, direction)
    return grad


def signed_distance(
    vertices: npt.ArrayLike, faces: npt.ArrayLike, points: npt.ArrayLike
) -> tuple[FloatArray, FloatArray]:
    """Signed distance of query points to a triangle mesh, and its gradient.

    The magnitude is the exact distance (``closest_points_on_mesh``); the sign comes from the generalized
    winding number (negative where ``w > 0.5``), so open and non-manifold meshes get a sensible sign. The
    winding number uses the far-field cluster approximation of Barill et al. (2018) for large inputs.

    Returns
    -------
    sdf : (P,) float64, metres, negative inside.
    gradient : (P, 3) float64 unit vectors: the direction from the closest point to the query point, flipped
        inside (so it always points outwards); the triangle's normal where the distance is ~0.
    """
    tri = _triangle_soup(vertices, faces)
    return _signed(tri, _as_points(points))

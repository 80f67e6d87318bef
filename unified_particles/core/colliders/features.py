# SPDX-License-Identifier: GPL-3.0-or-later
"""What the exact and the deforming surfaces share: the pseudo-normals of a mesh's features, and the
closest of each point's candidate triangles, signed by the closest feature's pseudo-normal.

A closed mesh is signed by the angle-weighted pseudo-normal of the closest feature (face, edge or
vertex; Baerentzen and Aanaes, IEEE TVCG 2005), exact for a closed, consistently oriented mesh.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ..geometry.triangles import (
    _PAIR_BUDGET,
    _REGION_A,
    _REGION_AB,
    _REGION_B,
    _REGION_BC,
    _REGION_C,
    _REGION_CA,
    _REGION_FACE,
    _closest_with_barycentric,
)

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
Corners = Callable[[IntArray], tuple[FloatArray, FloatArray, FloatArray]]


def _edge_ids(f: IntArray, n_v: int) -> IntArray:
    """(3 k,) an id per undirected edge for the sides AB, BC, CA of each face, in face order."""
    ends = np.sort(f[:, [0, 1, 1, 2, 2, 0]].reshape(-1, 2), axis=1)
    _, edge_id = np.unique(ends[:, 0] * n_v + ends[:, 1], return_inverse=True)
    return np.asarray(edge_id.reshape(-1), dtype=np.int64)


def pseudo_normals(
    tri: FloatArray, f: IntArray, normal: FloatArray, n_v: int, edge_id: IntArray | None = None
) -> FloatArray:
    """(k, 7, 3) unit pseudo-normal of each triangle's features, indexed by the ``_REGION_*`` codes.

    ``edge_id`` (3 k,): the edge of each triangle side AB, BC, CA (``_edge_ids(f, n_v)``), if known.
    """
    e = [tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 1], tri[:, 0] - tri[:, 2]]  # AB, BC, CA

    def angle(u: FloatArray, w: FloatArray) -> FloatArray:
        den = np.sqrt(np.einsum("ij,ij->i", u, u) * np.einsum("ij,ij->i", w, w))
        cos = np.einsum("ij,ij->i", u, w) / np.maximum(den, 1e-300)
        out: FloatArray = np.arccos(np.clip(cos, -1.0, 1.0))
        return out

    corner_angle = np.stack([angle(e[0], -e[2]), angle(e[1], -e[0]), angle(e[2], -e[1])], axis=1)
    weighted = (corner_angle[:, :, None] * normal[:, None, :]).reshape(-1, 3)
    vid = f.reshape(-1)
    vertex = np.stack([np.bincount(vid, weights=weighted[:, k], minlength=n_v) for k in range(3)], axis=1)
    if edge_id is None:
        edge_id = _edge_ids(f, n_v)
    per_edge = np.repeat(normal, 3, axis=0)
    edge = np.stack([np.bincount(edge_id, weights=per_edge[:, k]) for k in range(3)], axis=1)
    pn = np.empty((tri.shape[0], 7, 3))
    pn[:, _REGION_FACE] = normal
    pn[:, [_REGION_A, _REGION_B, _REGION_C]] = vertex[f]
    pn[:, [_REGION_AB, _REGION_BC, _REGION_CA]] = edge[edge_id].reshape(-1, 3, 3)
    length = np.sqrt(np.einsum("ijk,ijk->ij", pn, pn))
    # Opposite faces on a knife edge cancel: fall back to the face normal there.
    weak = length < 1e-9
    pn = np.where(weak[:, :, None], normal[:, None, :], pn / np.where(weak, 1.0, length)[:, :, None])
    return np.ascontiguousarray(pn)


@dataclass
class ClosestFeatures:
    """The closest of each point's candidate triangles (:func:`closest_of_candidates`).

    Attributes:
        ids: (M,) the points that have candidates, each once, in order.
        tri: (M,) the closest triangle of each.
        region: (M,) int8 the feature of it the closest point lies on (``triangles._REGION_*``).
        dist: (M,) unsigned distance, metres.
        diff: (M, 3) point minus closest point, metres.
        bary: (M, 3) the closest point's barycentric weights on the triangle's corners (only if asked
            for, else (0, 3)).
    """

    ids: IntArray
    tri: IntArray
    region: npt.NDArray[np.int8]
    dist: FloatArray
    diff: FloatArray
    bary: FloatArray

    def signed(self, pn: FloatArray, closed: bool, eps: float) -> tuple[FloatArray, FloatArray]:
        """Signed distances (M,) (negative inside a closed mesh) and outward unit normals (M, 3): from the
        closest point towards the point (away from it inside), the feature's pseudo-normal ``pn`` (M, 3)
        where the point is within ``eps`` of the surface. An open mesh is two-sided (unsigned)."""
        if closed:
            sign = np.where(np.einsum("ij,ij->i", self.diff, pn) < 0.0, -1.0, 1.0)
        else:
            sign = np.ones(self.ids.size)
        tiny = self.dist <= eps
        normal = np.where(tiny[:, None], pn, self.diff * (sign / np.where(tiny, 1.0, self.dist))[:, None])
        return sign * self.dist, normal


def closest_of_candidates(
    points: FloatArray, pair_point: IntArray, pair_tri: IntArray, corners: Corners, want_bary: bool
) -> ClosestFeatures | None:
    """The closest triangle of each point among its (point, triangle) candidate pairs, None for no pairs.

    ``pair_point`` must be sorted (as the surfaces' ``candidates`` return it); ``corners(tri_ids)`` gives
    the triangles' corners a, b, c (K, 3) each. Closest points are computed in windows of
    ``_PAIR_BUDGET`` pairs (Ericson's region test); ties go to the first pair.
    """
    n_pairs = pair_point.size
    if n_pairs == 0:
        return None
    d2 = np.empty(n_pairs)
    cp = np.empty((n_pairs, 3))
    region = np.empty(n_pairs, dtype=np.int8)
    bv = np.empty(n_pairs if want_bary else 0)
    bw = np.empty(n_pairs if want_bary else 0)
    for lo in range(0, n_pairs, _PAIR_BUDGET):
        sl = slice(lo, lo + _PAIR_BUDGET)
        p = points[pair_point[sl]]
        a, b, c = corners(pair_tri[sl])
        closest, reg, v_, w_ = _closest_with_barycentric(p, a, b, c, True)
        diff = p - closest
        d2[sl] = np.einsum("ij,ij->i", diff, diff)
        cp[sl] = closest
        region[sl] = reg
        if want_bary:
            bv[sl], bw[sl] = v_, w_
    first = np.flatnonzero(np.concatenate([[True], pair_point[1:] != pair_point[:-1]]))
    best = np.minimum.reduceat(d2, first)
    counts = np.diff(np.append(first, n_pairs))
    at_min = d2 == np.repeat(best, counts)
    win = np.minimum.reduceat(np.where(at_min, np.arange(n_pairs), n_pairs), first)
    ids = pair_point[first]
    bary = np.stack([1.0 - bv[win] - bw[win], bv[win], bw[win]], axis=1) if want_bary else np.zeros((0, 3))
    return ClosestFeatures(ids, pair_tri[win], region[win], np.sqrt(best), points[ids] - cp[win], bary)

# SPDX-License-Identifier: GPL-3.0-or-later
"""Exact signed distances near a static triangle mesh (``ExactSurface``)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .. import colliders, geometry
from ..geometry.mesh import _check_spacing
from ..pair_cache import PairCache
from .binning import _bin_boxes, _grid_pairs, _GridLevel, _sorted_pairs, _welded_surface, box_members
from .features import closest_of_candidates, pseudo_normals

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

# Triangle centroids probed at most by ExactSurface.thinnest (a deterministic stride beyond).
_THICKNESS_PROBES = 1 << 16


class ExactSurface:
    """Exact signed distances of points near a triangle mesh, from closest points on the triangles.

    For mesh colliders that an :class:`SDFVolume` cannot resolve (cells larger than the particle radius,
    or than a thin part of the mesh). Triangles are binned in a hierarchical hash grid: each goes to the
    level whose cells are at least as wide as its bounding box grown by ``band``, so it lands in at most 8
    cells, and a point finds every triangle within ``band`` by looking up its own cell on each level. Huge
    triangles (the top of a 10 km ground) sit alone on a coarse level and cost one pair per point; small
    ones sit on fine levels. Only points within ``band`` of the surface are measured, in bounded windows.

    A closed mesh is signed by the angle-weighted pseudo-normal of the closest feature (face, edge or
    vertex; Baerentzen and Aanaes, IEEE TVCG 2005), exact for a closed, consistently oriented mesh: a
    point inside a slab thinner than the band is inside, and its normal points out of the nearer side.
    Open or inconsistently oriented meshes get the unsigned distance (two-sided contacts).

    Attributes
    ----------
    tri : (k, 3, 3) float64 triangles (corners welded by coordinate, zero-area ones dropped), outward.
    closed : bool, whether distances are signed.
    band : float, metres; queries must use ``reach <= band``.
    lo, hi : (3,) float64, the mesh's bounding box grown by ``band``.
    """

    def __init__(self, vertices: npt.ArrayLike, faces: npt.ArrayLike, band: float) -> None:
        self.band = _check_spacing(band)
        welded, _, f, self.closed, scale = _welded_surface(vertices, faces)
        n_v = welded.shape[0]
        cross = np.cross(welded[f[:, 1]] - welded[f[:, 0]], welded[f[:, 2]] - welded[f[:, 0]])
        area2 = np.sqrt(np.einsum("ij,ij->i", cross, cross))
        tri = np.ascontiguousarray(welded[f])
        self.tri = tri
        self._eps = 1e-12 * scale
        normal = cross / area2[:, None]
        self._normal = normal
        self._offset = np.einsum("ij,ij->i", normal, tri[:, 0])
        # In-plane outward normals of the edges AB, BC, CA (k, 3, 3) and their offsets (k, 3): a point
        # beyond an edge's line by more than ``reach`` is farther than ``reach`` from the triangle.
        edge = np.roll(tri, -1, axis=1) - tri
        side = np.cross(edge, normal[:, None, :])
        side /= np.sqrt(np.einsum("ijk,ijk->ij", side, side))[:, :, None]
        self._side = np.ascontiguousarray(side)
        self._side_offset = np.einsum("ijk,ijk->ij", side, tri)
        self._pn = pseudo_normals(tri, f, normal, n_v)
        self._tlo = tri.min(axis=1)
        self._thi = tri.max(axis=1)
        self.lo = self._tlo.min(axis=0) - self.band
        self.hi = self._thi.max(axis=0) + self.band
        self._levels = self._bin(self.band)

    def _bin(self, band: float) -> list[_GridLevel]:
        return _bin_boxes(self._tlo - band, self._thi + band, self.lo, self.hi, band)

    def candidates(self, points: FloatArray, which: IntArray, reach: float) -> tuple[IntArray, IntArray]:
        """(point, triangle) pairs, sorted by point, that may be closer than ``reach`` (<= band).

        A superset of the pairs within ``reach``: the point is within ``reach`` of the triangle's bounding
        box, plane and the lines of its three edges (on the triangle's side). ``points`` (N, 3) in the
        mesh's frame; ``which`` the indices to look at.
        """
        parts: list[tuple[IntArray, IntArray]] = []
        for pi, ti in _grid_pairs(points, which, self._levels, self.lo, reach, self.band):
            # Cheapest tests first, each on the survivors of the previous one.
            q = points[pi]
            ok = np.abs(np.einsum("ij,ij->i", q, self._normal[ti]) - self._offset[ti]) <= reach
            pi, ti, q = pi[ok], ti[ok], q[ok]
            ok = np.all((q >= self._tlo[ti] - reach) & (q <= self._thi[ti] + reach), axis=1)
            pi, ti, q = pi[ok], ti[ok], q[ok]
            beyond = np.einsum("ijk,ik->ij", self._side[ti], q) - self._side_offset[ti]
            ok = beyond.max(axis=1, initial=-np.inf) <= reach
            parts.append((pi[ok], ti[ok]))
        return _sorted_pairs(parts)

    def cached_candidates(
        self, q: FloatArray, limit: float, margin: float, cache: PairCache, cacheable: bool
    ) -> tuple[IntArray, IntArray]:
        """:meth:`candidates` within ``limit + margin`` of the points ``q`` in the surface's box, reused
        from ``cache`` while no point moved ``margin`` or more (and ``limit`` is the same): every triangle
        within ``limit`` of a point is then among its pairs. ``cacheable`` False (a moving collider)
        searches afresh and forgets the list."""
        if cacheable and cache.holds_for(q, limit) and cache.within_max_move(q, margin):
            return cache.i, cache.j
        pairs = self.candidates(q, box_members(q, self.lo, self.hi, margin), limit + margin)
        cache.store_if(cacheable, q, *pairs, key=limit)
        return pairs

    def nearest(
        self, points: FloatArray, pair_point: IntArray, pair_tri: IntArray
    ) -> tuple[IntArray, FloatArray, FloatArray]:
        """Closest of the candidate triangles for each point that has any.

        ``pair_point`` must be sorted (as :meth:`candidates` returns it). Returns the points' indices (M,),
        their signed distances (M,) (negative inside a closed mesh) and outward unit normals (M, 3): from
        the closest point towards the point (away from it inside), the feature's pseudo-normal on the
        surface.
        """
        tri = self.tri

        def corners(ids: IntArray) -> tuple[FloatArray, FloatArray, FloatArray]:
            t = tri[ids]
            return t[:, 0], t[:, 1], t[:, 2]

        found = closest_of_candidates(points, pair_point, pair_tri, corners, want_bary=False)
        if found is None:
            return np.zeros(0, np.int64), np.zeros(0), np.zeros((0, 3))
        signed, normal = found.signed(self._pn[found.tri, found.region], self.closed, self._eps)
        return found.ids, signed, normal

    def signed_distance_near(
        self, points: FloatArray, reach: float
    ) -> tuple[IntArray, FloatArray, FloatArray]:
        """:meth:`nearest` over the points within ``reach`` (<= band) of a triangle's box and plane."""
        inside_box = np.all((points >= self.lo) & (points <= self.hi), axis=1)
        pi, ti = self.candidates(points, np.flatnonzero(inside_box), reach)
        return self.nearest(points, pi, ti)

    def thinnest(self, depth: float) -> float:
        """Estimated thickness of the thinnest part thinner than about ``2 depth``, or inf if none is.

        Probes the points ``depth`` behind triangle centroids (up to ``_THICKNESS_PROBES`` of them): inside a
        part thicker than ``2 depth`` such a point is ``depth`` deep. Where it is less deep because the
        nearest surface faces the other way (the far side of a slab or wall, not a face meeting this one at
        an edge), the part is ``depth - signed distance`` thick. Open meshes have no inside: 0.
        """
        if not self.closed:
            return 0.0
        step = max(1, -(-self.tri.shape[0] // _THICKNESS_PROBES))
        n = self._normal[::step]
        probe = self.tri[::step].mean(axis=1) - depth * n
        reach = min(self.band, 1.01 * depth + 2.0 * self._eps)
        ids, sd, normal = self.signed_distance_near(probe, reach)
        opposite = np.einsum("ij,ij->i", normal, n[ids]) < -0.5
        thin = (sd > -0.95 * depth) & opposite
        return float(np.min(depth - sd[thin])) if thin.any() else math.inf


def volume_cell(cell_size: float | None, radius: float, extent: float) -> float:
    """The requested volume cell of a mesh ``extent`` metres long (default max(r, extent / 128))."""
    return cell_size if cell_size is not None else max(radius, extent / geometry.SDF_MAX_CELLS)


@dataclass
class ContactPlan:
    surface: ExactSurface | None
    thinnest: float
    probe: ExactSurface  # the triangles, also when the volume answers: swept contacts use them


def plan_contacts(
    vertices: FloatArray, faces: IntArray, radius: float, cell: float, extent: float
) -> ContactPlan:
    """Exact contacts where the volume cannot resolve the mesh.

    ``cell`` is the requested volume cell; ``SDFVolume.from_mesh`` raises it so the padded box has at
    most ``SDF_MAX_CELLS`` cells per axis. Beyond one radius (the 128-cell cap on a big mesh, or a
    coarse ``cell_size``), or for a closed mesh with a part thinner than two cells (the volume's nodes
    straddle it), contacts are exact. ``thinnest`` is the thickness of a part thinner than the radius
    (0 for an open mesh with exact contacts, inf otherwise): the swept contacts test every fast path
    against such colliders, so thin walls and open sheets hold fast particles too
    (tests/core/test_tunnelling.py).
    """
    r = radius
    volume_cell = max(cell, (extent + 2.0 * (2.0 * r + 2.0 * cell)) / geometry.SDF_MAX_CELLS)
    surface = ExactSurface(vertices, faces, (colliders.EXACT_DEPTH_RADII + colliders.EXACT_MARGIN_RADII) * r)
    coarse = volume_cell > r * (1.0 + colliders.CELL_SLACK)
    if not (coarse or (surface.closed and math.isfinite(surface.thinnest(volume_cell)))):
        return ContactPlan(None, math.inf, surface)
    if not surface.closed:
        return ContactPlan(surface, 0.0, surface)
    return ContactPlan(surface, surface.thinnest(0.5 * r), surface)


def soup_faces(tri: FloatArray) -> IntArray:
    """Faces (k, 3) of a triangle soup (k, 3, 3) whose vertices are its corners in order."""
    return np.arange(tri.shape[0] * 3, dtype=np.int64).reshape(-1, 3)

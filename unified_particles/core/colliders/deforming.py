# SPDX-License-Identifier: GPL-3.0-or-later
"""Exact contacts on a mesh whose vertices move every frame (``DeformingSurface``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from ..errors import SimulationInputError
from ..geometry.mesh import _check_spacing, as_vertices
from ..pair_cache import PairCache
from .binning import _bin_boxes, _grid_pairs, _sorted_pairs, _welded_surface, box_members
from .crossings import SegmentHits, _first_crossings, _segment_candidates
from .features import _edge_ids, closest_of_candidates, pseudo_normals

if TYPE_CHECKING:
    from .mesh import MeshCollider

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


# Cells per triangle box side of DeformingSurface's grid (rebuilt every frame).
_DEFORMING_CELLS_PER_BOX = 2


class DeformingSurface:
    """Exact contacts on a triangle mesh whose vertices move during each frame (deforming colliders).

    The faces are fixed; the vertices are given at the start and the end of a frame
    (:meth:`set_frame`) and interpolated linearly in between (``alpha`` in [0, 1]). Each frame the
    triangles' swept boxes (over both poses, grown by ``band``) are binned in a hierarchical hash grid
    (as in :class:`ExactSurface`; no distance volume is built), so a point finds every triangle that
    comes within ``band`` of it at any time of the frame. Closest points are taken on the triangles at
    ``alpha``; a closed, consistently oriented mesh is signed by the closest feature's angle-weighted
    pseudo-normal, interpolated between the frame's two poses. Open meshes are two-sided.

    Vertices are welded by coordinate in the first pose given; zero-area faces there are dropped.

    Attributes
    ----------
    closed : bool, whether distances are signed.
    band : float, metres; queries must use ``reach <= band``.
    faces : (k, 3) int64 faces into the welded vertices, outward on a closed mesh.
    lo, hi : (3,) float64, the frame's swept bounding box grown by ``band``.
    """

    def __init__(self, vertices: npt.ArrayLike, faces: npt.ArrayLike, band: float) -> None:
        self.band = _check_spacing(band)
        welded, rep, f, self.closed, scale = _welded_surface(vertices, faces)
        n_v = welded.shape[0]
        self.faces = np.ascontiguousarray(f)
        self.vertex_count = len(as_vertices(vertices))
        self._rep = rep.astype(np.int64)
        self._n_v = n_v
        self._edge_id = _edge_ids(self.faces, n_v)
        self._eps = 1e-12 * scale
        self._w0 = self._w1 = welded
        self._pn0 = self._pn1 = self._pseudo(welded)
        self._bin_frame()

    def _pseudo(self, w: FloatArray) -> FloatArray:
        tri = w[self.faces]
        cross = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
        area2 = np.sqrt(np.einsum("ij,ij->i", cross, cross))
        normal = cross / np.maximum(area2, 1e-300)[:, None]
        return pseudo_normals(tri, self.faces, normal, self._n_v, self._edge_id)

    def _bin_frame(self, plane0: FloatArray | None = None) -> None:
        m = self._w1 - self._w0
        self._travel = float(np.sqrt(np.einsum("ij,ij->i", m, m).max(initial=0.0)))
        t0 = self._w0[self.faces]
        t1 = self._w1[self.faces]
        # Every point of a triangle moves at most as far as its farthest vertex over the frame (linear
        # interpolation), so its distance to a point changes by at most that much: the planes at the
        # frame's start and end, less that slack, bound the distance at any time in between.
        move = self._w1 - self._w0
        travel = np.sqrt(np.einsum("ij,ij->i", move, move))[self.faces]
        # Column by column: NumPy 1.26 reduces over a length-3 axis many times slower (see fastops).
        self._slack = np.maximum(np.maximum(travel[:, 0], travel[:, 1]), travel[:, 2])
        self._plane0 = self._planes(t0) if plane0 is None else plane0
        self._plane1 = self._plane0 if np.array_equal(self._w0, self._w1) else self._planes(t1)
        # In-plane outward normals of the edges AB, BC, CA at the frame's start, and their offsets.
        side = np.cross(np.roll(t0, -1, axis=1) - t0, self._plane0[:, None, :3])
        length = np.sqrt(np.einsum("ijk,ijk->ij", side, side))[:, :, None]
        side = np.divide(side, length, out=np.zeros_like(side), where=length > 0.0)
        self._side0 = np.concatenate([side, np.einsum("ijk,ijk->ij", side, t0)[:, :, None]], axis=2)
        lo0 = np.minimum(np.minimum(t0[:, 0], t0[:, 1]), t0[:, 2])
        lo1 = np.minimum(np.minimum(t1[:, 0], t1[:, 1]), t1[:, 2])
        hi0 = np.maximum(np.maximum(t0[:, 0], t0[:, 1]), t0[:, 2])
        hi1 = np.maximum(np.maximum(t1[:, 0], t1[:, 1]), t1[:, 2])
        self._tlo = np.minimum(lo0, lo1)
        self._thi = np.maximum(hi0, hi1)
        self.lo = self._tlo.min(axis=0) - self.band
        self.hi = self._thi.max(axis=0) + self.band
        # Rebinned every frame: 2 cells per box side (8 table entries per triangle, not 64 as in
        # ExactSurface) bins 20k triangles several times faster for a few more candidates to reject.
        self._levels = _bin_boxes(
            self._tlo - self.band,
            self._thi + self.band,
            self.lo,
            self.hi,
            self.band,
            _DEFORMING_CELLS_PER_BOX,
        )

    def set_frame(self, start: npt.ArrayLike, end: npt.ArrayLike) -> None:
        """The vertices (V, 3) at the frame's start and end, in the order of the constructor's."""
        a = np.asarray(start, dtype=np.float64)
        b = np.asarray(end, dtype=np.float64)
        if a.shape != (self.vertex_count, 3) or b.shape != a.shape:
            raise SimulationInputError(
                f"a deforming mesh needs {self.vertex_count} vertices (same faces), "
                f"got {a.shape} and {b.shape}"
            )
        w0, w1 = a[self._rep], b[self._rep]
        if np.array_equal(w0, self._w0) and np.array_equal(w1, self._w1):
            return
        # The previous frame's end is usually this one's start: its pseudo-normals are reused.
        follows = np.array_equal(w0, self._w1)
        pn0 = self._pn1 if follows else self._pseudo(w0)
        pn1 = pn0 if np.array_equal(w1, w0) else self._pseudo(w1)
        self._w0, self._w1, self._pn0, self._pn1 = w0, w1, pn0, pn1
        self._bin_frame(self._plane1 if follows else None)

    def vertices_at(self, alpha: float) -> FloatArray:
        """(n, 3) welded vertices at fraction ``alpha`` of the frame."""
        if alpha >= 1.0:
            return self._w1
        return self._w0 + alpha * (self._w1 - self._w0)

    def vertex_motion(self) -> FloatArray:
        """(n, 3) welded vertices' displacement over the frame (end - start)."""
        return self._w1 - self._w0

    def triangles_at(self, alpha: float) -> FloatArray:
        """(k, 3, 3) triangles at fraction ``alpha`` of the frame."""
        return self.vertices_at(alpha)[self.faces]

    def candidates(self, points: FloatArray, which: IntArray, reach: float) -> tuple[IntArray, IntArray]:
        """(point, triangle) pairs, sorted by point, whose triangle may come within ``reach`` (<= band) of
        the point at any time of the frame (the point is within ``reach`` of its swept box)."""
        parts: list[tuple[IntArray, IntArray]] = []
        for pi, ti in _grid_pairs(points, which, self._levels, self.lo, reach, self.band):
            q = points[pi]
            gap = np.maximum(self._tlo[ti] - q, q - self._thi[ti])
            ok = (gap[:, 0] <= reach) & (gap[:, 1] <= reach) & (gap[:, 2] <= reach)
            pi, ti, q = pi[ok], ti[ok], q[ok]
            # Within reach of the triangle at some time: of its start plane, less its travel.
            p0 = self._plane0[ti]
            d0 = np.abs(np.einsum("ij,ij->i", q, p0[:, :3]) - p0[:, 3])
            slack = self._slack[ti]
            ok = d0 - slack <= reach
            pi, ti, q, slack = pi[ok], ti[ok], q[ok], slack[ok]
            s0 = self._side0[ti]
            beyond = np.einsum("ijk,ik->ij", s0[:, :, :3], q) - s0[:, :, 3]
            far = np.maximum(np.maximum(beyond[:, 0], beyond[:, 1]), beyond[:, 2])
            ok = far - slack <= reach
            parts.append((pi[ok], ti[ok]))
        return _sorted_pairs(parts)

    @staticmethod
    def _planes(tri: FloatArray) -> FloatArray:
        """(k, 4) unit normal and offset of each triangle's plane (zero for a degenerate triangle)."""
        cross = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
        area2 = np.sqrt(np.einsum("ij,ij->i", cross, cross))
        n = np.divide(cross, area2[:, None], out=np.zeros_like(cross), where=area2[:, None] > 0.0)
        return np.concatenate([n, np.einsum("ij,ij->i", n, tri[:, 0])[:, None]], axis=1)

    def cached_candidates(
        self, q: FloatArray, limit: float, margin: float, cache: PairCache, frame: int, cacheable: bool
    ) -> tuple[IntArray, IntArray]:
        """:meth:`candidates` within ``limit + margin`` of the points ``q`` in the frame's box, reused from
        ``cache`` within frame number ``frame``: the particles that moved ``margin`` or more since look
        again, alone while they are few, so every triangle that comes within ``limit`` of a particle
        during the frame is among its pairs. ``cacheable`` False (a moving collider) searches afresh and
        forgets the list."""
        if cacheable and cache.holds_for(q, frame):
            far = cache.moved_beyond(q, margin)
            if far.size == 0:
                return cache.i, cache.j
            if 4 * far.size < q.shape[0]:
                # Only the particles that moved beyond the margin look again (the others' pairs hold).
                ref = cache.reference.copy()
                ref[far] = q[far]
                moved_far = np.zeros(q.shape[0], dtype=bool)
                moved_far[far] = True
                keep = ~moved_far[cache.i]
                box = far[box_members(q[far], self.lo, self.hi, margin)]
                new_p, new_t = self.candidates(q, box, limit + margin)
                pi = np.concatenate([cache.i[keep], new_p])
                order = np.argsort(pi, kind="stable")
                pairs = pi[order], np.concatenate([cache.j[keep], new_t])[order]
                cache.store(ref, pairs[0], pairs[1], frame)
                return pairs
        pairs = self.candidates(q, box_members(q, self.lo, self.hi, margin), limit + margin)
        cache.store_if(cacheable, q, *pairs, key=frame)
        return pairs

    def near_pairs(
        self, points: FloatArray, pair_point: IntArray, pair_tri: IntArray, reach: float, alpha: float
    ) -> tuple[IntArray, IntArray]:
        """The pairs (order kept) whose triangle may be within ``reach`` of the point at ``alpha``.

        The point must be within ``reach`` of the triangle's swept box, and of its planes: the triangle
        at ``alpha`` is within ``alpha * slack`` of itself at the frame's start and within
        ``(1 - alpha) * slack`` of itself at the end (``slack``: its farthest vertex's travel), so its
        distance to the point is at least each plane's distance less that.
        """
        q = points[pair_point]
        gap = np.maximum(np.maximum(self._tlo[pair_tri] - q, q - self._thi[pair_tri]), 0.0)
        keep = np.einsum("ij,ij->i", gap, gap) <= reach * reach  # the swept box
        pair_point, pair_tri, q = pair_point[keep], pair_tri[keep], q[keep]
        p0 = self._plane0[pair_tri]
        d0 = np.abs(np.einsum("ij,ij->i", q, p0[:, :3]) - p0[:, 3])
        slack = self._slack[pair_tri]
        bound = d0 - alpha * slack
        if self._plane1 is not self._plane0:
            p1 = self._plane1[pair_tri]
            d1 = np.abs(np.einsum("ij,ij->i", q, p1[:, :3]) - p1[:, 3])
            bound = np.maximum(bound, d1 - (1.0 - alpha) * slack)
        keep = bound <= reach
        return pair_point[keep], pair_tri[keep]

    def nearest(
        self, points: FloatArray, alpha: float, pair_point: IntArray, pair_tri: IntArray
    ) -> tuple[IntArray, FloatArray, FloatArray, IntArray, FloatArray]:
        """Closest of the candidate triangles at ``alpha`` for each point that has any.

        ``pair_point`` sorted. Returns the points' indices (M,), signed distances (M,) (negative inside a
        closed mesh), outward unit normals (M, 3), the closest triangle (M,) and the closest point's
        barycentric weights on its corners (M, 3).
        """
        w = self.vertices_at(alpha)
        faces = self.faces

        def corners(ids: IntArray) -> tuple[FloatArray, FloatArray, FloatArray]:
            fc = faces[ids]
            return w[fc[:, 0]], w[fc[:, 1]], w[fc[:, 2]]

        found = closest_of_candidates(points, pair_point, pair_tri, corners, want_bary=True)
        if found is None:
            z = np.zeros((0, 3))
            return np.zeros(0, np.int64), np.zeros(0), z, np.zeros(0, np.int64), z.copy()
        tw, rw = found.tri, found.region
        pn = (1.0 - alpha) * self._pn0[tw, rw] + alpha * self._pn1[tw, rw]
        pn /= np.maximum(np.sqrt(np.einsum("ij,ij->i", pn, pn)), 1e-300)[:, None]
        signed, normal = found.signed(pn, self.closed, self._eps)
        return found.ids, signed, normal, tw, found.bary

    def velocity(self, tri: IntArray, bary: FloatArray, dt: float) -> FloatArray:
        """(M, 3) velocity of the deformation, m/s, at points with barycentric weights ``bary`` (M, 3) on
        triangles ``tri`` (M,), for a frame ``dt`` seconds long (the vertices' motion over it)."""
        motion = self.vertex_motion()[self.faces[tri]]
        return np.asarray(np.einsum("ij,ijk->ik", bary, motion) / dt, dtype=np.float64)

    def max_vertex_travel(self) -> float:
        """Largest distance a vertex moves over the frame, metres."""
        return self._travel

    def crossings(
        self, q0: FloatArray, q1: FloatArray, which: IntArray, alpha_prev: float, alpha: float
    ) -> SegmentHits:
        """First crossings of the paths q0[i] (at ``alpha_prev``) -> q1[i] (at ``alpha``), i in ``which``.

        Relative to each triangle: the path's start moves with the triangle's centroid over the step
        (exact for a translating triangle), and the path is tested against the triangle at ``alpha``.
        """
        pi, ti = _segment_candidates(self.candidates, self.band, q0, q1, which)
        motion = (alpha - alpha_prev) * (self._w1 - self._w0)
        shift = motion[self.faces[ti]].mean(axis=1) if pi.size else None
        return _first_crossings(self.triangles_at(alpha), self.closed, q0, q1, pi, ti, shift)


def deforming_vertices(meshes: list[MeshCollider]) -> FloatArray:
    """(2 V, 3) each deforming collider's vertices at the frame's start, then now, in order (snapshots)."""
    parts = [np.concatenate([m.frame_start_vertices, m.vertices]) for m in meshes if m.deforming]
    return np.concatenate(parts) if parts else np.zeros((0, 3))


def restore_deforming_vertices(meshes: list[MeshCollider], saved: FloatArray) -> None:
    """Put back what :func:`deforming_vertices` saved. A snapshot that does not match (taken before a
    collider began to deform, e.g. the start frame's) puts every deforming collider back to the mesh it
    was built with, at rest."""
    deforming = [m for m in meshes if m.deforming]
    if saved.shape != (sum(2 * len(m.vertices) for m in deforming), 3):
        for m in deforming:
            m.restore_vertices(m.rest_vertices, m.rest_vertices)
        return
    at = 0
    for m in deforming:
        n = len(m.vertices)
        m.restore_vertices(saved[at : at + n], saved[at + n : at + 2 * n])
        at += 2 * n

# SPDX-License-Identifier: GPL-3.0-or-later
"""Particle-triangle contacts: a cloth holds grains and rigid particles smaller than its mesh (issue 22).

Particle-particle contacts alone see a cloth as beads on its vertices: a grain smaller than the gaps
between them (r = 1 cm on a 10 cm mesh) fell through between the vertices. Here every load particle
(grain, rigid) near a cloth triangle is kept on the side of the triangle it was on at the start of the
small step, at least ``thickness + r`` from the triangle's plane where its projection falls inside the
triangle (barycentric weights u_k >= -``BARYCENTRIC_TOLERANCE``; beyond the edges the neighbouring
triangle or the vertex's own particle contact holds it).

The constraint C = s n . (p - sum_k u_k x_k) - (thickness + r) >= 0 (n the unit normal, s the side) is
solved as PBD's point-triangle constraint: with W the inverse masses, the particle moves
W_p / D of the correction and vertex k moves -u_k W_k / D of it, D = W_p + sum_k u_k^2 W_k. Since
sum_k u_k = 1 the mass-weighted sum of the four moves is zero: momentum is conserved. Coulomb friction
(Macklin et al. 2014, Eq. 24-26) acts on the particle's motion relative to the triangle's point under
it, distributed the same way. Each contact is scaled by omega / (the largest contact count of its four
particles), so the averaging keeps momentum too (as ``corrections.apply_pair_jacobi`` for pairs).

The contacts run after the particle contacts (``Solver._contact_pass``) with their mass-ratio limit, and
again after the stretch solve with the cloth held (``cloth_contacts.hold_loads_on_cloth``, which explains
why), where the loads only move out and may rest ``CLOTH_CONTACT_SLOP_RADII`` r deep.

Only triangles with a hole between their vertices' particles that a load fits through (circumradius
beyond thickness + r) take part: on finer meshes the particle contacts hold every load as before.
Candidate (particle, triangle) pairs come from a grid of triangle centroids and are kept while no
particle or vertex moved half the margin from where they were searched (:class:`ClothTriangles`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from .fastops import column_max, column_min

if TYPE_CHECKING:
    from .model import ParticleModel
    from .settings import SolverSettings

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]

# A projection this far outside a triangle (in barycentric weight) still counts as on it: over an edge
# both triangles hold the particle, and a fold's ridge leaves no gap a grain slips through.
BARYCENTRIC_TOLERANCE = 0.05
# The 27 cells around a particle's cell (the grid's cells are as large as the reach).
_OFFSETS = np.stack(np.meshgrid([-1, 0, 1], [-1, 0, 1], [-1, 0, 1], indexing="ij"), -1).reshape(-1, 3)


def _cross(p: FloatArray, q: FloatArray) -> FloatArray:
    """(K, 3) row-wise cross products."""
    return np.stack(
        [p[:, 1] * q[:, 2] - p[:, 2] * q[:, 1], p[:, 2] * q[:, 0] - p[:, 0] * q[:, 2],
         p[:, 0] * q[:, 1] - p[:, 1] * q[:, 0]], axis=1,
    )  # fmt: skip


def _dot(p: FloatArray, q: FloatArray) -> FloatArray:
    return np.asarray(np.einsum("ij,ij->i", p, q), dtype=np.float64)


def candidate_pairs(
    x: FloatArray, loads: IntArray, tris: IntArray, reach: FloatArray
) -> tuple[IntArray, IntArray]:
    """(particle, triangle) pairs whose particle may lie within ``reach`` of the triangle.

    Args:
        x: (N, 3) positions, metres.
        loads: (L,) the particles that may touch cloth triangles.
        tris: (T, 3) the triangles' particle indices.
        reach: (T,) how far from each triangle a particle counts, metres (thickness + radius + margin).

    Returns:
        (p, t): particle indices and triangle numbers, sorted by (t, p): a pure function of the inputs.
    """
    none = (np.zeros(0, np.int64), np.zeros(0, np.int64))
    if not len(loads) or not len(tris):
        return none
    corners = x[tris]  # (T, 3, 3)
    cen = corners.mean(axis=1)
    rad = np.sqrt(np.max(np.sum((corners - cen[:, None, :]) ** 2, axis=2), axis=1)) + reach
    cell = float(rad.max())  # a triangle's bounding sphere fits in the 27 cells around any point in it
    lo = column_min(cen) - cell
    hi = column_max(cen) + cell
    q = x[loads]
    inside = np.all((q >= lo) & (q <= hi), axis=1)
    loads, q = loads[inside], q[inside]
    if not len(loads):
        return none
    dims = np.floor((hi - lo) / cell).astype(np.int64) + 1
    tc = np.minimum(np.floor((cen - lo) / cell).astype(np.int64), dims - 1)
    tkey = (tc[:, 0] * dims[1] + tc[:, 1]) * dims[2] + tc[:, 2]
    order = np.argsort(tkey, kind="stable")
    skey = tkey[order]
    pc = np.minimum(np.floor((q - lo) / cell).astype(np.int64), dims - 1)  # (Q, 3)
    nb = pc[:, None, :] + _OFFSETS[None, :, :]  # (Q, 27, 3)
    ok = np.all((nb >= 0) & (nb < dims), axis=2)
    nkey = np.where(ok, (nb[..., 0] * dims[1] + nb[..., 1]) * dims[2] + nb[..., 2], -1).ravel()
    start = np.searchsorted(skey, nkey, "left")
    count = np.searchsorted(skey, nkey, "right") - start
    count[nkey < 0] = 0
    total = int(count.sum())
    if total == 0:
        return none
    owner = np.repeat(np.arange(len(nkey)) // len(_OFFSETS), count)
    first = np.repeat(start - np.cumsum(count) + count, count)
    t = order[first + np.arange(total)]
    p = owner
    d = q[p] - cen[t]
    near = _dot(d, d) <= rad[t] ** 2
    p, t = loads[p[near]], t[near]
    key = np.lexsort((p, t))
    return p[key], t[key]


def triangle_contacts(
    x_pred: FloatArray,
    x: FloatArray | None,
    p: IntArray,
    tris: IntArray,
    w_load: FloatArray,
    w_cloth: FloatArray,
    gap: FloatArray,
    friction: FloatArray,
    static_scale: float,
    dynamic_scale: float,
    max_mass_ratio: float = np.inf,
) -> tuple[IntArray, FloatArray]:
    """The corrections of the active particle-triangle contacts among candidates ``p`` (K,), ``tris``
    (K, 3) (not applied).

    Args:
        x_pred: (N, 3) predicted positions, metres.
        x: (N, 3) positions at the start of the small step (the side each particle is on, friction).
            None: positions ``x_pred`` give the side, no friction.
        w_load, w_cloth: (N,) inverse masses, 1/kg, of the particle and the cloth vertices (0: held).
        gap: (K,) the distance each particle keeps from its triangle's plane, metres (thickness + r).
        friction: (N,) Coulomb coefficients (a contact takes the mean of its particle's and vertex a's);
            static_scale, dynamic_scale: their multipliers.
        max_mass_ratio: the heavier side (the particle, or the triangle's point under it with inverse
            mass sum_k u_k^2 W_k) counts as at most this many times the lighter, as in the particle
            contacts (``contacts.contact_inv_mass_pairs``): a heavy crate on a light cloth otherwise
            hardly moves out and pushes the cloth through its stretch limit (a hammock sagged 19 cm
            instead of 16). Zero inverse masses stay zero. Momentum is conserved while the ratio is below.

    Returns:
        (idx, delta): the particles moved, (4M,) (the M active contacts' loads, then their vertices a, b,
        c), and their moves, (4M, 3) metres, before averaging (:func:`apply_triangle_contacts`).
    """
    a, b, c = x_pred[tris[:, 0]], x_pred[tris[:, 1]], x_pred[tris[:, 2]]
    e1, e2 = b - a, c - a
    rel = x_pred[p] - a
    # Barycentric weights of the projection (Ericson 2005, 3.4), with the Gram matrix of e1, e2: first,
    # as most candidates project outside their triangle and need nothing more.
    d11, d12, d22 = _dot(e1, e1), _dot(e1, e2), _dot(e2, e2)
    r1, r2 = _dot(rel, e1), _dot(rel, e2)
    det = d11 * d22 - d12 * d12
    ok = det > 1e-30 * d11 * d22
    det = np.where(ok, det, 1.0)
    v_ = (d22 * r1 - d12 * r2) / det
    w_ = (d11 * r2 - d12 * r1) / det
    u_ = 1.0 - v_ - w_
    tol = -BARYCENTRIC_TOLERANCE
    ok &= (u_ >= tol) & (v_ >= tol) & (w_ >= tol)
    p, tris, e1, e2, rel, gap = p[ok], tris[ok], e1[ok], e2[ok], rel[ok], gap[ok]
    u_, v_, w_ = u_[ok], v_[ok], w_[ok]
    normal = _cross(e1, e2)
    normal /= np.sqrt(_dot(normal, normal))[:, None]  # det > 0: not degenerate
    dist = _dot(rel, normal)
    # The side: where the particle was at the start of the step (the plane then).
    if x is None:
        side = np.where(dist >= 0.0, 1.0, -1.0)
    else:
        a0, b0, c0 = x[tris[:, 0]], x[tris[:, 1]], x[tris[:, 2]]
        side = np.where(_dot(x[p] - a0, _cross(b0 - a0, c0 - a0)) >= 0.0, 1.0, -1.0)
    depth = gap - side * dist  # > 0: closer than the gap (or through)
    ok = depth > 0.0
    if not ok.any():
        return np.zeros(0, np.int64), np.zeros((0, 3))
    p, tris, normal, depth, side = p[ok], tris[ok], normal[ok], depth[ok], side[ok]
    bary = np.stack([u_[ok], v_[ok], w_[ok]], axis=1)
    bary = np.maximum(bary, 0.0)
    bary /= bary.sum(axis=1, keepdims=True)
    wv = w_cloth[tris]  # (M, 3)
    wp = w_load[p]
    if np.isfinite(max_mass_ratio):
        k = 1.0 / max_mass_ratio
        wt = np.einsum("ij,ij->i", bary * bary, wv)
        wp = np.where(wp > 0.0, np.maximum(wp, k * wt), 0.0)
        wv = np.where(wv > 0.0, np.maximum(wv, k * wp[:, None]), 0.0)
    den = wp + np.einsum("ij,ij->i", bary * bary, wv)
    live = den > 0.0
    p, tris, normal, depth, side = p[live], tris[live], normal[live], depth[live], side[live]
    bary, wv, wp, den = bary[live], wv[live], wp[live], den[live]
    push = (side * depth)[:, None] * normal  # the relative move that restores the gap
    if x is not None:
        # Friction on the particle's motion relative to the triangle's point under it, tangential part.
        under = np.einsum("ij,ijk->ik", bary, x_pred[tris] - x[tris])
        slide = (x_pred[p] - x[p]) - under
        slide -= _dot(slide, normal)[:, None] * normal
        length = np.sqrt(_dot(slide, slide))
        mu = 0.5 * (friction[p] + friction[tris[:, 0]])
        stick = length < mu * static_scale * depth
        keep = np.where(stick, 1.0, np.minimum(mu * dynamic_scale * depth / np.maximum(length, 1e-300), 1.0))
        push -= keep[:, None] * slide
    share = push / den[:, None]
    idx = np.concatenate([p, tris[:, 0], tris[:, 1], tris[:, 2]])
    delta = np.concatenate(
        [wp[:, None] * share] + [-(bary[:, k] * wv[:, k])[:, None] * share for k in range(3)]
    )
    return idx, delta


def apply_triangle_contacts(x: FloatArray, idx: IntArray, delta: FloatArray, omega: float) -> None:
    """x += each contact's four moves scaled by omega / (the largest contact count of its particles that
    it moves), so the averaged moves still conserve momentum. ``idx``, ``delta``: from
    :func:`triangle_contacts`."""
    n = len(x)
    # Particles a contact does not move (held cloth, pins) do not count: the held pass then averages over
    # each load's own contacts only, not over the tens of loads on a vertex's triangles.
    moves = np.any(delta != 0.0, axis=1)
    count = np.maximum(np.bincount(idx, weights=moves.astype(np.float64), minlength=n), 1.0)
    m = len(idx) // 4
    per = count[idx].reshape(4, m)
    scale = np.tile(omega / per.max(axis=0), 4)
    for axis in range(3):  # column by column: see fastops on (N, 3) broadcasting
        x[:, axis] += np.bincount(idx, weights=delta[:, axis] * scale, minlength=n)


class ClothTriangles:
    """Every cloth's triangles with their thickness, and the cached (particle, triangle) candidates.

    ``World.add_cloth`` adds a cloth's triangles (``Solver.cloth_triangles``); the solver asks for the
    candidates each small step (:meth:`candidates`).
    """

    def __init__(self) -> None:
        self.triangles = np.zeros((0, 3), np.int64)  # (T, 3) global particle indices
        self.thickness = np.zeros(0)  # (T,) metres: how far a particle's surface stays from the plane
        self.circumradius = np.zeros(0)  # (T,) metres, in the rest shape
        self._reference = np.zeros((0, 3))  # positions of the watched particles at the last search
        self._coarse = np.zeros(0, np.int64)  # the triangles with a hole a load fits through
        self._watched = np.zeros(0, np.int64)  # the loads and those triangles' vertices
        self._pairs = (np.zeros(0, np.int64), np.zeros(0, np.int64))
        self._key: tuple[int, float] = (0, 0.0)
        self._loads = np.zeros(0, np.int64)  # the particles that are neither cloth nor fluid
        self._loads_key = -1

    def add_cloth(self, indices: IntArray, faces: IntArray, thickness: float, vertices: FloatArray) -> None:
        """Add a cloth's triangles ``faces`` (F, 3), local vertex numbers of ``indices``, with its rest
        ``vertices`` (V, 3), metres."""
        faces = np.asarray(faces, np.int64)
        tris = np.asarray(indices, np.int64)[faces]
        self.triangles = np.concatenate([self.triangles, tris])
        # Circumradius abc / (4 A): the hole at a triangle's circumcentre between its vertices' particles.
        a, b, c = (vertices[faces[:, k]] for k in range(3))
        lengths = np.prod([np.linalg.norm(q, axis=1) for q in (b - a, c - b, a - c)], axis=0)
        area4 = 2.0 * np.linalg.norm(np.cross(b - a, c - a), axis=1)
        hole = np.divide(lengths, area4, out=np.full(len(faces), np.inf), where=area4 > 0.0)
        self.circumradius = np.concatenate([self.circumradius, hole])
        self.thickness = np.concatenate([self.thickness, np.full(len(tris), float(thickness))])
        self.reset()

    def reset(self) -> None:
        """Forget the candidates (the model changed)."""
        self._reference, self._key = np.zeros((0, 3)), (0, 0.0)
        self._pairs = (np.zeros(0, np.int64), np.zeros(0, np.int64))
        self._loads_key = -1

    def candidates(
        self, x: FloatArray, loads: IntArray, radius: float, margin: float
    ) -> tuple[IntArray, IntArray]:
        """(particle, triangle) candidates within thickness + ``radius`` + ``margin`` of the triangles,
        searched again once a load or a cloth vertex moved half the margin from where they were searched."""
        key = (len(x), radius + margin)
        if key != self._key:
            # Only triangles whose vertices' particles leave a hole a load fits through (circumradius
            # beyond thickness + r): on a finer mesh the particle contacts hold every load, and the plane
            # would lift loads out of the hollows between the vertices (a crate in a hammock of 4 cm
            # cells sagged it 3 cm more: the changed contacts stretched the inextensible cloth further).
            self._coarse = np.flatnonzero(self.circumradius > self.thickness + radius)
            corners = self.triangles[self._coarse].ravel()
            self._watched = np.unique(np.concatenate([loads, corners])) if len(self._coarse) else corners
            self._reference, self._key = np.zeros((0, 3)), key
            self._pairs = (np.zeros(0, np.int64), np.zeros(0, np.int64))
        coarse, watched = self._coarse, self._watched
        if not len(coarse):
            return self._pairs
        if len(self._reference) == len(watched):
            d = x[watched] - self._reference
            if float(np.max(np.einsum("ij,ij->i", d, d), initial=0.0)) < (0.5 * margin) ** 2:
                return self._pairs
        p, t = candidate_pairs(x, loads, self.triangles[coarse], self.thickness[coarse] + radius + margin)
        self._pairs = p, coarse[t]
        self._reference = x[watched]
        return self._pairs

    def contacts(
        self,
        model: ParticleModel,
        settings: SolverSettings,
        x_pred: FloatArray,
        x: FloatArray,
        w: FloatArray,
        slop: float | None,
        radius: float | FloatArray,
        margin: float | FloatArray,
    ) -> tuple[IntArray, FloatArray]:
        """The loads' (grains', rigid particles') contacts with the cloth triangles, not applied
        (:func:`triangle_contacts`).

        Args:
            model: the particles (which are loads, their friction).
            settings: the friction scales.
            x_pred, x: (N, 3) predicted positions and those at the start of the small step, metres.
            w: (N,) contact inverse masses, 1/kg.
            slop: None, or the cloth counts as immovable and the loads may rest ``slop`` r deep in it
                (``cloth_contacts.hold_loads_on_cloth``, after the stretch solve).
            radius: the loads' particle radius r, metres, or (N,) per particle (core/sizes.py); margin:
                the candidates' margin, metres (scalar or (N,); the search takes the largest).
        """
        if self._loads_key != model.particle_count:
            self._loads = np.flatnonzero(~model.particle_is_cloth & ~model.particle_is_fluid)
            self._loads_key = model.particle_count
        if not len(self._loads):
            return np.zeros(0, np.int64), np.zeros((0, 3))
        p, t = self.candidates(x_pred, self._loads, float(np.max(radius)), float(np.max(margin)))
        if not len(p):
            return np.zeros(0, np.int64), np.zeros((0, 3))
        held = slop is not None
        r_p = radius[p] if np.ndim(radius) else radius  # type: ignore[index]
        gap = self.thickness[t] + r_p * (1.0 - (slop or 0.0))
        return triangle_contacts(
            x_pred, x, p, self.triangles[t], w, np.zeros_like(w) if held else w, gap,
            model.particle_friction, settings.static_friction_scale, settings.dynamic_friction_scale,
            np.inf if held else settings.max_mass_ratio,
        )  # fmt: skip

    def solve(
        self,
        model: ParticleModel,
        settings: SolverSettings,
        x_pred: FloatArray,
        x: FloatArray,
        w: FloatArray,
        radius: float | FloatArray,
        margin: float | FloatArray,
    ) -> IntArray:
        """:meth:`contacts` (cloth movable) applied to ``x_pred`` in place; returns the particles moved."""
        idx, delta = self.contacts(model, settings, x_pred, x, w, None, radius, margin)
        if len(idx):
            apply_triangle_contacts(x_pred, idx, delta, settings.relaxation)
        return idx

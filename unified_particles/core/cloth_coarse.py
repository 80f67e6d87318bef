# SPDX-License-Identifier: GPL-3.0-or-later
"""A coarse correction of the stiff cloth edges each small step: the cloth's long-range tension in one step.

One coloured Gauss-Seidel sweep per small step (``distance.GaussSeidelSolver``) removes short-range
stretch cheaply, but carries the weight of a hanging cloth to its supports only a few edges per small
step. With its multipliers restarted each step, a sweep acts on the stretch it sees like a spring of
stiffness ~ m / h^2 per edge, so a cloth hangs stretched by ~ (edges to the support)^2 g h^2 / 2 over its
length: 3.7 % for a 1 m strip of 2.5 cm edges at the default budget (docs/physics.md, item 10). The
fast projection (``projection.StretchProjection``) fixes that with ~10 CG iterations at twice the cost.

This pass is the coarse level of a two-level method (algebraic multigrid by aggregation; Vanek, Mandel
and Brezina 1996) applied to the fast projection's system (Goldenthal et al. 2007; XPBD with the
multipliers starting at zero): (J W J^T) lambda = C, x -= W J^T lambda, with J the stiff edges' unit
directions and W the inverse masses. The edges are grouped into patches of a few edges across (a grid
on the rest shape); in each patch the multipliers are restricted to those of a uniform membrane stress,
lambda_e = s_e sum_j mu_(patch, j) phi_j(e) with phi = ((t.u)^2, (t.v)^2, 2 (t.u)(t.v)) for the edge's
rest direction t in the patch's plane (u, v) and s_e the edge's share of the mass (``_mass_share``):
three unknowns per patch. The Galerkin system (P^T J W J^T P) mu = P^T C is small (at most
``MAX_COARSE`` unknowns) and solved densely each small step; lambda = P mu is then the smallest
mass-weighted correction that removes the patch-wise uniform part of the stretch. It runs before the
sweep, which then removes what varies within a patch (the smoother; after the sweep instead, the jumps
of the patch-wise stress at patch borders stayed in the cloth: edges alternately +-0.9 % there against
+-0.35 %), so the stretch left at rest is that of a chain a patch long instead of the whole cloth's.

The coarse matrix is assembled without the edge-by-edge matrix: G = J^T P holds, for each (vertex,
unknown) pair on a pattern fixed at build time, sum s_e phi_j(e) n_e over the edges of that unknown's
patch at the vertex (s = +1 at a, -1 at b), and P^T J W J^T P = G^T W G sums w_p G_q . G_r over the pairs
(q, r) at the same movable vertex p: one ``np.bincount`` over ~ 3 x 3 entries per edge for G and one over
~ 6 pairs per vertex for the matrix, then one dense solve. A uniform stress is in equilibrium inside a
patch, so the correction moves the vertices where patches (or the cloth) end; the sweep spreads it.

Only edges stiff enough to count as inextensible within the step take part (as in the fast
projection: the sweep's XPBD update already gave soft edges their compliance).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from .distance import DistanceConstraints

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]

# An edge takes part when alpha / h^2 < STIFF_EDGE * (w_a + w_b): inextensible within the step.
STIFF_EDGE = 1e-3
# Patch size, in rest edge lengths: the stretch left at rest is that of a chain this many edges long.
PATCH_EDGES = 6.0
# Largest number of coarse unknowns (3 per patch) per cloth: the dense solve costs ~ MAX_COARSE^3 / 3 flops
# per renewal for one cloth; larger cloths get larger patches. Several cloths are solved in one matrix
# (block-diagonal: patches never span two cloths), so k cloths cost up to k^3 times one: a known limit.
MAX_COARSE = 150
# Tikhonov term of the coarse matrix, relative to its mean diagonal: unknowns no edge uses (a patch
# whose edges are all parallel has no shear) get a zero row, and nothing else is changed measurably.
REGULARIZE = 1e-9
# The coarse matrix is renewed every this many small steps (a substep's iterations at the default budget):
# assembling and inverting it costs about two corrections. Renewed every 8 or 16 small steps, the matrix
# of a sheet pinned along its edges, assembled while it lay flat, bulged the sheet 4-5 cm upwards within
# the frame and threw a box resting on it (test_cloth_triangles.py): the staleness is not safe, MAX_SHIFT
# only bounds it.
RENEW_STEPS = 4
# A correction moves no vertex farther than this many rest edge lengths in one small step: at rest the
# corrections are ~ g h^2 times the edges to the support; only a matrix too stale (fast folding) asks more.
MAX_SHIFT = 0.1


def _patches(mid: FloatArray, group: IntArray, spacing: float, max_patches: int) -> tuple[IntArray, int]:
    """(E,) patch of each edge midpoint ``mid`` (E, 3): cells of a grid of ``spacing`` metres, one set per
    ``group`` (each cloth its own patches), numbered cloth by cloth. Each cloth's grid starts at its own
    lowest midpoint and its cell grows until that cloth has at most ``max_patches``: a cloth gets the same
    patches wherever it is and whatever else is in the scene (a duplicate 4 m away moved as the original
    to 1e-4 m only so; with one grid for the scene it differed by 5.6 mm after 16 frames)."""
    cloths, gi = np.unique(group, return_inverse=True)
    gi = gi.reshape(-1)
    lo = np.full((len(cloths), 3), np.inf)
    np.minimum.at(lo, gi, mid)
    size = np.full(len(cloths), spacing)
    while True:
        cell = np.floor((mid - lo[gi]) / size[gi][:, None]).astype(np.int64)
        key = np.column_stack([gi, cell])
        unique, patch = np.unique(key, axis=0, return_inverse=True)
        per_cloth = np.bincount(unique[:, 0], minlength=len(cloths))
        over = per_cloth > max_patches
        if not over.any():
            return patch.reshape(-1).astype(np.int64), len(unique)
        size[over] *= np.maximum(1.1, np.sqrt(per_cloth[over] / max_patches))


def _stress_basis(t: FloatArray, patch: IntArray, count: int) -> FloatArray:
    """(E, 3) the membrane-stress shape functions phi_j of each edge of rest direction ``t`` (E, 3) in the
    plane of its patch, phi = ((t.u)^2, (t.v)^2, 2 (t.u)(t.v)). The plane is that of the two largest
    eigenvectors of the patch's direction tensor sum t t^T. The three functions span the same space in any
    frame (u, v) of the plane, so u is the world axis the plane shows longest (v = n x u): a grid along
    the axes then has phi = (1, 0, 0) and (0, 1, 0) on its sides, and the zeros drop out of G."""
    tensor = np.zeros((count, 9))
    outer = (t[:, :, None] * t[:, None, :]).reshape(-1, 9)
    for k in range(9):
        tensor[:, k] = np.bincount(patch, weights=outer[:, k], minlength=count)
    _, vec = np.linalg.eigh(tensor.reshape(count, 3, 3))  # ascending eigenvalues
    normal = vec[:, :, 0]
    axes = np.eye(3)[None, :, :] - normal[:, :, None] * normal[:, None, :]  # (P, 3 axes, 3) projected
    best = np.argmax(np.einsum("pij,pij->pi", axes, axes), axis=1)
    u = axes[np.arange(count), best]
    u /= np.linalg.norm(u, axis=1)[:, None]
    v = np.cross(normal, u)
    tu, tv = np.einsum("ij,ij->i", t, u[patch]), np.einsum("ij,ij->i", t, v[patch])
    phi = np.column_stack([tu * tu, tv * tv, 2.0 * tu * tv])
    phi[np.abs(phi) < 1e-12] = 0.0  # rounding of exact zeros
    return phi


def _mass_share(wa: FloatArray, wb: FloatArray) -> FloatArray:
    """(E,) each edge's weight in a uniform stress: the mass of its two ends (a pinned end counts as the
    other), over the mean. A cloth's vertex masses are its area shares, and a uniform membrane stress
    loads an edge in proportion to the area it spans: a border edge carries half an interior one. Without
    it the difference (a 5 cm strip's middle row is twice as heavy as its borders) had to reach the pins
    through the sweep alone, and the strip's centre line hung 0.44 % long instead of -0.01 %."""
    ma = np.where(wa > 0.0, 1.0 / np.where(wa > 0.0, wa, 1.0), 0.0)
    mb = np.where(wb > 0.0, 1.0 / np.where(wb > 0.0, wb, 1.0), 0.0)
    share = np.where(ma > 0.0, ma, mb) + np.where(mb > 0.0, mb, ma)
    return share / share.mean()


def _runs(key: IntArray) -> IntArray:
    """Start of each run of equal values in the sorted ``key``."""
    return np.flatnonzero(np.r_[True, key[1:] != key[:-1]]).astype(np.int64)


def _pairs_within_runs(start: IntArray, count: int) -> tuple[IntArray, IntArray]:
    """(rows, cols): every ordered pair of positions within the same run of ``count`` sorted entries whose
    runs begin at ``start`` (the diagonal included)."""
    size = np.diff(np.r_[start, count])
    run_of = np.repeat(np.arange(len(start)), size)
    degree = size[run_of]
    row = np.repeat(np.arange(count), degree)
    offset = np.arange(len(row)) - np.repeat(np.cumsum(degree) - degree, degree)
    return row, start[run_of[row]] + offset


class CoarseStretch:
    """The coarse correction of the stiff cloth edges for one step size h (see the module docstring).

    Args:
        con: the stretch constraints of the model (all cloths; ropes' links are left out by ``cloth``).
        inv_mass: (N,) inverse masses, 1/kg (0: pinned).
        rest_x: (N, 3) positions at build time, metres (the patches and their planes).
        group: (N,) each particle's body (collision group): patches never span two cloths.
        cloth: (N,) bool, cloth particles.
        h: small step, s.
    """

    def __init__(
        self,
        con: DistanceConstraints,
        inv_mass: FloatArray,
        rest_x: FloatArray,
        group: IntArray,
        cloth: BoolArray,
        h: float,
    ) -> None:
        wa, wb = inv_mass[con.a], inv_mass[con.b]
        stiff = (con.compliance / (h * h) < STIFF_EDGE * (wa + wb)) & (wa + wb > 0.0)
        stiff &= cloth[con.a] & cloth[con.b]
        a, b, rest = con.a[stiff], con.b[stiff], con.rest_length[stiff]
        self.count, self.n = 0, len(inv_mass)
        self.renew = True  # assemble the coarse matrix at the next solve (set by the solver: see solve)
        self.inverse: FloatArray | None = None
        if not len(a):
            return
        spacing = PATCH_EDGES * float(np.median(rest))
        patch, n_patch = _patches(0.5 * (rest_x[a] + rest_x[b]), group[a], spacing, MAX_COARSE // 3)
        share = _mass_share(inv_mass[a], inv_mass[b])
        m, c = len(a), 3 * n_patch
        self.count, self.rest = c, rest
        d = rest_x[a] - rest_x[b]
        phi = _stress_basis(d / np.linalg.norm(d, axis=1)[:, None], patch, n_patch) * share[:, None]
        self.phi = np.ascontiguousarray(phi.T)  # (3, m)
        three = np.arange(3, dtype=np.int64)[:, None]
        self.edge_dof = (3 * patch[None, :] + three).reshape(-1)  # P^T C's unknown of each (j, edge)
        # G = J^T P: a row q per (movable vertex, unknown) that the vertex's edges reach; entry
        # (edge end, unknown j) adds s phi_j(e) n_e to its row.
        ends = np.concatenate([a, b])
        edge = np.tile(np.arange(m), 2)
        sign = np.repeat([1.0, -1.0], m)
        j = np.tile(np.arange(3), 2 * m)
        end_j, edge_j = np.repeat(ends, 3), np.repeat(edge, 3)
        dof_j = 3 * patch[edge_j] + j
        coef = np.repeat(sign, 3) * phi[edge_j, j]
        keep = (inv_mass[end_j] > 0.0) & (coef != 0.0)
        row_key, q_of = np.unique((end_j * c + dof_j)[keep], return_inverse=True)
        q_of = q_of.reshape(-1)
        self.q_vertex, self.q_dof = row_key // c, row_key % c  # sorted by vertex
        self.nq = nq = len(row_key)
        self.g_coef = np.tile(coef[keep], 3)  # one per (coordinate, entry)
        # Pairs (q, r), q <= r, of G's rows at the same vertex: the upper triangle of G^T W G.
        pq, pr = _pairs_within_runs(_runs(self.q_vertex), nq)
        upper = self.q_dof[pq] <= self.q_dof[pr]
        pq, pr = pq[upper], pr[upper]
        self.cell = self.q_dof[pq] * c + self.q_dof[pr]
        self.p_weight = inv_mass[self.q_vertex[pq]]
        # Flat indices into coordinate-major copies (a 1-D gather is several times faster than np.take
        # along an axis of a (3, k) array, and one np.bincount over three coordinates beats three):
        # the edge ends in x (3, N), G's entries' edges in the unit directions (3, m) and rows in G
        # (3, nq), the pairs' rows in G.
        n = self.n
        self.flat_ab = (three * n + np.concatenate([a, b])[None, :]).reshape(-1)
        self.flat_a, self.flat_b = (three * n + a[None, :]).reshape(-1), (three * n + b[None, :]).reshape(-1)
        self.flat_g_edge = (three * m + edge_j[keep][None, :]).reshape(-1)
        self.flat_g_row = (three * nq + q_of[None, :]).reshape(-1)
        self.flat_pqr = (three * nq + np.concatenate([pq, pr])[None, :]).reshape(-1)
        self.a, self.b, self.patch = a, b, patch
        self.inv_mass = inv_mass
        self.max_shift = MAX_SHIFT * float(np.median(rest))

    def __len__(self) -> int:
        return self.count

    def solve(self, x: FloatArray) -> None:
        """One coarse correction of ``x`` (N, 3) in place. Coordinate-major (3, k) arrays throughout, as
        in ``distance.GaussSeidelSolver`` (NumPy scales (3, k) rows much faster than (k, 3) ones).

        The coarse matrix is that of the edge directions at the last renewal (``renew``: the solver
        renews it every ``RENEW_STEPS`` small steps); P^T C and W J^T are of the directions now."""
        c, m, n = self.count, len(self.a), self.n
        if c == 0:
            return
        g2 = np.ascontiguousarray(x.T).reshape(-1)[self.flat_ab].reshape(3, 2 * m)
        d = g2[:, :m] - g2[:, m:]
        length = np.sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2])
        rhs = np.bincount(self.edge_dof, weights=(self.phi * (length - self.rest)).reshape(-1), minlength=c)
        d /= np.maximum(length, 1e-12)
        if self.renew or self.inverse is None:
            self.inverse = np.linalg.inv(self._matrix(d))
        mu = self.inverse @ rhs
        # lambda = P mu, tension only: cloth buckles rather than carry compression, and a patch-wise push
        # against compression kept a drape's folds from forming (Silk's drape coefficient 0.33 -> 0.41).
        lam = np.einsum("ij,ij->j", self.phi, mu.take(self.edge_dof).reshape(3, m))
        np.maximum(lam, 0.0, out=lam)
        d *= lam
        flat = d.reshape(-1)
        pull: FloatArray = np.asarray(np.bincount(self.flat_a, weights=flat, minlength=3 * n), np.float64)
        pull -= np.bincount(self.flat_b, weights=flat, minlength=3 * n)
        shift = pull.reshape(3, n)
        shift *= self.inv_mass  # W J^T lambda
        size2 = shift[0] * shift[0] + shift[1] * shift[1] + shift[2] * shift[2]
        if float(size2.max()) > self.max_shift * self.max_shift:  # rare: a stale matrix, fast folding
            shift *= np.minimum(1.0, self.max_shift / np.sqrt(np.maximum(size2, 1e-300)))
        x -= shift.T

    def _matrix(self, unit: FloatArray) -> FloatArray:
        """P^T J W J^T P = G^T W G for the unit edge directions ``unit`` (3, m), regularized (c, c)."""
        c, nq = self.count, self.nq
        gv = unit.reshape(-1)[self.flat_g_edge]
        gv *= self.g_coef
        g = np.bincount(self.flat_g_row, weights=gv, minlength=3 * nq)
        half = len(self.p_weight)
        gp = g[self.flat_pqr].reshape(3, 2 * half)
        prod = gp[:, :half] * gp[:, half:]
        dots = (prod[0] + prod[1] + prod[2]) * self.p_weight
        upper = np.bincount(self.cell, weights=dots, minlength=c * c).reshape(c, c)
        diag = np.diagonal(upper).copy()
        mat = upper + upper.T
        mat[np.diag_indices(c)] = diag * (1.0 + REGULARIZE) + REGULARIZE * float(diag.mean()) + 1e-300
        return mat

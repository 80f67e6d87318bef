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
(q, r) at the same movable vertex p: a few ``np.bincount`` calls over arrays of ~ 4 (vertices) and ~ 15
(vertices) entries, then one dense solve.

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
# Largest number of coarse unknowns (3 per patch): the dense solve costs ~ MAX_COARSE^3 / 3 flops per
# small step (80 us at 150 here); larger cloths get larger patches.
MAX_COARSE = 150
# Tikhonov term of the coarse matrix, relative to its mean diagonal: unknowns no edge uses (a patch
# whose edges are all parallel has no shear) get a zero row, and nothing else is changed measurably.
REGULARIZE = 1e-9


def _patches(mid: FloatArray, group: IntArray, spacing: float, max_patches: int) -> tuple[IntArray, int]:
    """(E,) patch of each edge midpoint ``mid`` (E, 3): cells of a grid of ``spacing`` metres, one set per
    ``group`` (each cloth its own patches), the cell grown until there are at most ``max_patches``."""
    size = spacing
    lo = mid.min(axis=0)
    while True:
        cell = np.floor((mid - lo) / size).astype(np.int64)
        key = np.column_stack([group, cell])
        _, patch = np.unique(key, axis=0, return_inverse=True)
        count = int(patch.max()) + 1 if len(patch) else 0
        if count <= max_patches:
            return patch.reshape(-1).astype(np.int64), count
        size *= max(1.1, float(np.sqrt(count / max_patches)))


def _stress_basis(t: FloatArray, patch: IntArray, count: int) -> FloatArray:
    """(E, 3) the membrane-stress shape functions phi_j of each edge of rest direction ``t`` (E, 3) in the
    plane of its patch: the two main directions (u, v) of the patch's edges (their direction tensor's
    largest eigenvectors), phi = ((t.u)^2, (t.v)^2, 2 (t.u)(t.v))."""
    tensor = np.zeros((count, 9))
    outer = (t[:, :, None] * t[:, None, :]).reshape(-1, 9)
    for k in range(9):
        tensor[:, k] = np.bincount(patch, weights=outer[:, k], minlength=count)
    _, vec = np.linalg.eigh(tensor.reshape(count, 3, 3))  # ascending eigenvalues
    u, v = vec[patch, :, 2], vec[patch, :, 1]
    tu, tv = np.einsum("ij,ij->i", t, u), np.einsum("ij,ij->i", t, v)
    return np.column_stack([tu * tu, tv * tv, 2.0 * tu * tv])


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
        a, b = con.a[stiff], con.b[stiff]
        self.a, self.b, self.rest = a, b, con.rest_length[stiff]
        self.inv_mass = inv_mass
        m = len(a)
        self.count = 0
        if m == 0:
            return
        d = rest_x[a] - rest_x[b]
        t = d / np.maximum(np.linalg.norm(d, axis=1), 1e-300)[:, None]
        spacing = PATCH_EDGES * float(np.median(self.rest))
        patch, n_patch = _patches(0.5 * (rest_x[a] + rest_x[b]), group[a], spacing, MAX_COARSE // 3)
        phi = _stress_basis(t, patch, n_patch)
        phi *= _mass_share(wa[stiff], wb[stiff])[:, None]
        c = 3 * n_patch
        self.count = c
        # Restriction P^T C: each edge's stretch times phi_j into its patch's unknown j; (3, m) layout.
        self.edge_dof = (3 * patch[None, :] + np.arange(3)[:, None]).reshape(-1)
        self.phi = np.ascontiguousarray(phi.T)
        # The (vertex, unknown) pairs q of G = J^T P, at movable vertices only (W is 0 at pins).
        ends = np.concatenate([a, b])
        edge = np.concatenate([np.arange(m), np.arange(m)])
        sign = np.concatenate([np.ones(m), -np.ones(m)])
        j = np.tile(np.arange(3), 2 * m)
        end_j, edge_j = np.repeat(ends, 3), np.repeat(edge, 3)
        dof_j = 3 * patch[edge_j] + j
        coef = np.repeat(sign, 3) * phi[edge_j, j]
        keep = (inv_mass[end_j] > 0.0) & (coef != 0.0)
        end_j, edge_j, dof_j, coef = end_j[keep], edge_j[keep], dof_j[keep], coef[keep]
        pair_key, q_of = np.unique(end_j * c + dof_j, return_inverse=True)
        self.q_vertex = (pair_key // c).astype(np.int64)
        self.q_dof = (pair_key % c).astype(np.int64)
        self.nq = nq = len(pair_key)
        # G's entries: each (edge end, unknown) adds coef * n_edge to its row q.
        self.g_edge, self.g_index, self.g_coef = edge_j, q_of.reshape(-1).astype(np.int64), coef
        # Pairs (q, r), q <= r, of G's rows at the same vertex: the upper triangle of G^T W G.
        order = np.argsort(self.q_vertex, kind="stable")
        qv = self.q_vertex[order]
        first = np.flatnonzero(np.r_[True, qv[1:] != qv[:-1]])
        size = np.diff(np.r_[first, nq])
        group_of = np.repeat(np.arange(len(first)), size)
        degree = size[group_of]
        row = np.repeat(np.arange(nq), degree)
        offset = np.arange(len(row)) - np.repeat(np.cumsum(degree) - degree, degree)
        col = first[group_of[row]] + offset
        pq, pr = order[row], order[col]
        upper = self.q_dof[pq] <= self.q_dof[pr]
        pq, pr = pq[upper], pr[upper]
        self.pqr = np.concatenate([pq, pr])
        self.p_weight = inv_mass[self.q_vertex[pq]]
        self.p_flat = self.q_dof[pq] * c + self.q_dof[pr]
        self.q_inv_mass = inv_mass[self.q_vertex]
        self.n = len(inv_mass)
        self.ab = np.concatenate([a, b])

    def __len__(self) -> int:
        return self.count

    def solve(self, x: FloatArray) -> None:
        """One coarse correction of ``x`` (N, 3) in place. Coordinate-major (3, k) arrays throughout, as
        in ``distance.GaussSeidelSolver`` (NumPy scales (3, k) rows much faster than (k, 3) ones)."""
        c, m, nq = self.count, len(self.a), self.nq
        if c == 0:
            return
        g2 = np.take(np.ascontiguousarray(x.T), self.ab, axis=1)  # (3, 2m)
        d = g2[:, :m] - g2[:, m:]
        length = np.sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2])
        d /= np.maximum(length, 1e-12)
        rhs = np.bincount(self.edge_dof, weights=(self.phi * (length - self.rest)).reshape(-1), minlength=c)
        gv = np.take(d, self.g_edge, axis=1)
        gv *= self.g_coef
        g = np.empty((3, nq))
        for k in range(3):
            g[k] = np.bincount(self.g_index, weights=gv[k], minlength=nq)
        gp = np.take(g, self.pqr, axis=1)
        half = len(self.p_weight)
        prod = gp[:, :half] * gp[:, half:]
        dots = (prod[0] + prod[1] + prod[2]) * self.p_weight
        upper = np.bincount(self.p_flat, weights=dots, minlength=c * c).reshape(c, c)
        diag = np.diagonal(upper).copy()
        mat = upper + upper.T
        mat[np.diag_indices(c)] = diag * (1.0 + REGULARIZE) + REGULARIZE * float(diag.mean()) + 1e-300
        mu = np.linalg.solve(mat, rhs)
        g *= np.take(mu, self.q_dof) * self.q_inv_mass
        for k in range(3):
            x[:, k] -= np.bincount(self.q_vertex, weights=g[k], minlength=self.n)

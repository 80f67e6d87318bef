# SPDX-License-Identifier: GPL-3.0-or-later
"""Distance constraints for cloth: stretch/shear on mesh edges, bending across adjacent triangles.

XPBD (Macklin, Müller, Chentanez 2016): C = |x_a - x_b| - L, with compliance alpha (m/N) and
alpha~ = alpha / h^2, dlambda = -C / (w_a + w_b + alpha~), x_a += w_a dlambda n, x_b -= w_b dlambda n.
The solver runs one iteration per small step, so the accumulated lambda starts at zero each time and
need not be stored.

Stretch constraints are solved graph-coloured Gauss-Seidel: within one colour no two constraints share
a particle, so they are applied together without Jacobi averaging (which left draped cloth visibly
stretched in calibration). Bending is softer and solved Jacobi in one pass.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


def mesh_edges(triangles: IntArray) -> IntArray:
    """(E, 2) unique undirected edges (a < b) of a triangle mesh, sorted."""
    e = np.concatenate([triangles[:, [0, 1]], triangles[:, [1, 2]], triangles[:, [2, 0]]])
    e = np.sort(e, axis=1)
    e = e[e[:, 0] != e[:, 1]]
    return np.unique(e, axis=0).astype(np.int64)


def edge_diamonds(triangles: IntArray) -> IntArray:
    """(D, 4) the diamond of each edge shared by two triangles: the edge's ends (lo < hi), then the
    vertices opposite it in the two triangles. An edge shared by more than two triangles (non-manifold)
    gets one diamond per pair of consecutive triangles; diamonds whose opposite vertices coincide are
    dropped."""
    t = np.asarray(triangles, dtype=np.int64)
    # Each triangle contributes its three edges with the vertex opposite each.
    a = np.concatenate([t[:, 0], t[:, 1], t[:, 2]])
    b = np.concatenate([t[:, 1], t[:, 2], t[:, 0]])
    opp = np.concatenate([t[:, 2], t[:, 0], t[:, 1]])
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    n = int(t.max()) + 1 if t.size else 1
    key = lo * n + hi
    order = np.argsort(key, kind="stable")
    key, lo, hi, opp = key[order], lo[order], hi[order], opp[order]
    same = np.flatnonzero(key[1:] == key[:-1])
    idx = np.stack([lo[same], hi[same], opp[same], opp[same + 1]], axis=1)
    return idx[idx[:, 2] != idx[:, 3]]


def bending_pairs(triangles: IntArray) -> IntArray:
    """(K, 2) pairs of vertices opposite an edge shared by two triangles (one pair per triangle pair).

    Cloth gets unilateral distance limits on them (``ParticleModel.stretch_limit``): they bound the
    stretch across each edge's diamond, and do not resist bending (folding brings the pair closer).
    """
    p = np.sort(edge_diamonds(triangles)[:, 2:], axis=1)
    return np.unique(p, axis=0).astype(np.int64) if len(p) else np.zeros((0, 2), np.int64)


def greedy_edge_colouring(edges: IntArray, n_vertices: int) -> IntArray:
    """(E,) colour per edge such that edges of one colour share no vertex.

    Greedy in edge order with per-vertex bit masks of used colours. Sorted edges of a grid mesh get
    about as many colours as the maximum vertex degree (~6-8), so a colour round stays cheap. Runs
    once at build time (a Python loop over edges is fine there, never in the step).
    """
    used = [0] * n_vertices
    colour = np.empty(len(edges), dtype=np.int64)
    for k, (a, b) in enumerate(edges.tolist()):
        m = used[a] | used[b]
        c = (~m & (m + 1)).bit_length() - 1  # lowest free colour
        colour[k] = c
        bit = 1 << c
        used[a] |= bit
        used[b] |= bit
    return colour


@dataclass
class DistanceConstraints:
    """A set of XPBD distance constraints.

    Attributes:
        a, b: (K,) particle indices.
        rest_length: (K,) rest lengths L, metres.
        compliance: (K,) XPBD compliance alpha, m/N (0 = inextensible).
        colour_slices: for Gauss-Seidel sets: constraints are sorted by colour and colour c occupies
            ``slice(colour_slices[c], colour_slices[c + 1])``; None for Jacobi sets.
    """

    a: IntArray
    b: IntArray
    rest_length: FloatArray
    compliance: FloatArray
    colour_slices: IntArray | None = None

    @staticmethod
    def build(
        pairs: IntArray, x: FloatArray, compliance: FloatArray, coloured: bool, n_particles: int
    ) -> DistanceConstraints:
        a = pairs[:, 0].astype(np.int64)
        b = pairs[:, 1].astype(np.int64)
        comp = np.asarray(compliance, dtype=np.float64)
        slices = None
        if coloured and len(a):
            col = greedy_edge_colouring(pairs, n_particles)
            order = np.argsort(col, kind="stable")
            a, b, comp = a[order], b[order], comp[order]
            slices = np.searchsorted(col[order], np.arange(int(col.max()) + 2)).astype(np.int64)
        rest = np.linalg.norm(x[a] - x[b], axis=1)
        return DistanceConstraints(a, b, rest, comp, slices)

    def __len__(self) -> int:
        return len(self.a)

    @staticmethod
    def concatenate(
        parts: list[DistanceConstraints], coloured: bool, n_particles: int
    ) -> DistanceConstraints:
        """Merge sets of several bodies (disjoint particles), keeping colours merged by colour."""
        parts = [p for p in parts if len(p)]
        if not parts:
            z = np.zeros(0, np.int64)
            return DistanceConstraints(z, z.copy(), np.zeros(0), np.zeros(0), None)
        a = np.concatenate([p.a for p in parts])
        b = np.concatenate([p.b for p in parts])
        rest = np.concatenate([p.rest_length for p in parts])
        comp = np.concatenate([p.compliance for p in parts])
        if not coloured:
            return DistanceConstraints(a, b, rest, comp, None)
        colours = []
        for p in parts:
            assert p.colour_slices is not None
            colours.append(np.repeat(np.arange(len(p.colour_slices) - 1), np.diff(p.colour_slices)))
        col = np.concatenate(colours)
        order = np.argsort(col, kind="stable")
        slices = np.searchsorted(col[order], np.arange(int(col.max()) + 2)).astype(np.int64)
        return DistanceConstraints(a[order], b[order], rest[order], comp[order], slices)


class GaussSeidelSolver:
    """Coloured XPBD distance solve with per-constraint coefficients precomputed for one step size.

    For constraint k between a and b: k_a = w_a / (w_a + w_b + alpha~), k_b likewise, so that one
    pass is dx_a = k_a (L / |d| - 1) d, dx_b = -k_b (L / |d| - 1) d with d = x_a - x_b: the XPBD
    update with lambda starting at zero. Each colour gathers its particles once and scatters once.

    The arithmetic runs coordinate-major, on (3, m) arrays: NumPy 1.26 scales the rows of an (m, 3)
    array by an (m,) factor 8-10x slower than it scales a (3, m) array (78 us against 9 us for
    12 000 rows), so the positions are transposed once per pass (8 us for 4 225 vertices) and each
    colour gathers and scatters columns.
    """

    def __init__(
        self,
        con: DistanceConstraints,
        inv_mass: FloatArray,
        h: float,
        relaxation: float = 1.0,
        unilateral: bool = False,
        stiff_edge: float = 0.0,
    ) -> None:
        assert con.colour_slices is not None
        self.h = h
        # unilateral: |x_a - x_b| <= L only (a strain limit: pushes nothing apart, never resists folding).
        self.unilateral = unilateral
        n = len(inv_mass)
        wa, wb = inv_mass[con.a], inv_mass[con.b]
        denom = wa + wb + con.compliance / (h * h)
        safe = np.where(denom > 0.0, denom, 1.0)
        ka = np.where(denom > 0.0, relaxation * wa / safe, 0.0)
        kb = np.where(denom > 0.0, relaxation * wb / safe, 0.0)
        self.colours: list[tuple[IntArray, IntArray, FloatArray, FloatArray, FloatArray]] = []
        sl = con.colour_slices
        for c in range(len(sl) - 1):
            s = slice(int(sl[c]), int(sl[c + 1]))
            ab = np.concatenate([con.a[s], con.b[s]])
            # Flat indices of the colour's particles in the (3, N) coordinate-major copy.
            flat = (np.arange(3, dtype=np.int64)[:, None] * n + ab[None, :]).ravel()
            self.colours.append((ab, flat, ka[s], kb[s], con.rest_length[s]))
        # (N,) the particles with an edge that is compliant within the step, alpha~ >= stiff_edge (w_a +
        # w_b) (cloth_load.py: their loads weigh on them at the true mass ratio).
        soft = (con.compliance / (h * h) >= stiff_edge * (wa + wb)) & (denom > 0.0)
        self.compliant = np.zeros(n, dtype=bool)
        self.compliant[con.a[soft]] = True
        self.compliant[con.b[soft]] = True

    def solve(self, x: FloatArray) -> None:
        """One pass over all colours, updating ``x`` (N, 3) in place."""
        xt = np.ascontiguousarray(x.T)
        flat = xt.reshape(-1)
        for ab, flat_ab, ka, kb, rest in self.colours:
            m = len(rest)
            g = np.take(xt, ab, axis=1)  # (3, 2m): a-sides then b-sides
            d = g[:, :m] - g[:, m:]
            dist = np.sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2])
            scale = rest / np.maximum(dist, 1e-12) - 1.0
            d *= np.minimum(scale, 0.0) if self.unilateral else scale
            g[:, :m] += d * ka
            g[:, m:] -= d * kb
            flat[flat_ab] = g.reshape(-1)
        x[...] = xt.T


class JacobiSolver:
    """XPBD distance constraints solved all at once, averaged by mass splitting (momentum conserving).

    Used for bending: soft, and one pass with a few large array operations is much cheaper than a
    round of NumPy calls per colour. Coefficients are precomputed for one step size like
    :class:`GaussSeidelSolver`; corrections are summed per coordinate with ``np.bincount`` and scaled
    by ``relaxation``.

    The paper's Eq. 11 divides each particle's summed corrections by its own constraint count n_i, so
    the two ends of a constraint with n_a != n_b get unequal impulses: a free cloth drifted sideways at
    ~3 % of the momentum of a grain that hit it. Here each particle's mass is split evenly among its
    constraints (Tonge et al. 2012, "Mass splitting for jitter-free parallel rigid body simulation"):
    constraint c sees inverse masses n_a w_a and n_b w_b and one multiplier, lambda = -C / (n_a w_a +
    n_b w_b + n_c alpha / h^2), and moves its ends by w_a lambda n and -w_b lambda n, so every
    constraint's impulses are equal and opposite (linear and angular momentum kept). n_c = (n_a w_a +
    n_b w_b) / (w_a + w_b) splits the compliance alike: with n_a = n_b (a regular mesh's interior) or
    a pinned end, each correction is exactly Eq. 11's.
    """

    def __init__(
        self, con: DistanceConstraints, inv_mass: FloatArray, h: float, relaxation: float = 1.0
    ) -> None:
        self.h = h
        n = len(inv_mass)
        wa, wb = inv_mass[con.a], inv_mass[con.b]
        self.rest = con.rest_length
        self.m = len(con.a)
        ab = np.concatenate([con.a, con.b])
        self.ab = ab
        count = np.bincount(ab, minlength=n).astype(np.float64)
        self.n = n
        # Mass splitting (see the class): one multiplier per constraint, -C / (n_c (w_a + w_b + alpha~)).
        split = count[con.a] * wa + count[con.b] * wb
        wsum = wa + wb
        n_c = np.where(wsum > 0.0, split / np.where(wsum > 0.0, wsum, 1.0), 1.0)
        denom = n_c * (wsum + con.compliance / (h * h))
        safe = np.where(denom > 0.0, denom, 1.0)
        k = np.concatenate([np.where(denom > 0.0, wa / safe, 0.0), -np.where(denom > 0.0, wb / safe, 0.0)])
        self.k = k * relaxation
        self._acc = np.empty((n, 3))

    def solve(self, x: FloatArray) -> None:
        """One Jacobi pass, updating ``x`` (N, 3) in place (coordinate-major, see GaussSeidelSolver)."""
        m, n = self.m, self.n
        g = np.take(np.ascontiguousarray(x.T), self.ab, axis=1)  # (3, 2m)
        d = g[:, :m] - g[:, m:]
        dist = np.sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2])
        d *= self.rest / np.maximum(dist, 1e-12) - 1.0
        delta = np.concatenate([d, d], axis=1)
        delta *= self.k
        acc = self._acc
        for axis in range(3):
            acc[:, axis] = np.bincount(self.ab, weights=delta[axis], minlength=n)
        x += acc


# Membrane tension, N/m (force per metre of cloth width), of a plausible maximal load: a 100 kg load
# hanging from a 1 m wide cloth (a hammock) pulls ~1000 N through it. Tethers leave a cloth the stretch
# its own compliance allows under this tension (compliant_strain) and bound only what lies beyond.
TETHER_TENSION = 1000.0


def compliant_strain(compliance: float, tension: float = TETHER_TENSION) -> float:
    """Strain the stretch compliance alpha (m/N per edge) allows under a membrane tension (N/m).

    An edge of length l carrying force T stretches by alpha T, a strain of alpha T / l; edges a spacing
    l apart carry T = tension * l each, so the strain is alpha * tension whatever the mesh resolution.
    """
    return float(compliance) * float(tension)


def tethers(edges: IntArray, x: FloatArray, pinned: IntArray) -> tuple[IntArray, IntArray, FloatArray]:
    """Long-range attachments of a pinned cloth: (free vertex, nearest pin, path length) triples.

    Kim, Chentanez and Müller, "Long Range Attachments - A Method to Simulate Inextensible Clothing
    in Computer Games" (SCA 2012); the "tethers" of FleX and NvCloth. Each vertex connected to a pin
    is tied to its nearest pin along the mesh edges, with the length of that path in the rest shape.
    A path along edges is never shorter than the true geodesic distance, so a tether never pulls
    cloth tighter than it rests; it only stops it from sagging further than its length allows,
    whatever the iteration count and the mass ratio to what lies on it.

    Multi-source Dijkstra over the edge graph; runs once when the cloth is added (a Python loop at
    build time, never in the step). Vertices without a path to a pin get no tether.
    """
    import heapq

    n = len(x)
    if len(pinned) == 0 or len(edges) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
    length = np.linalg.norm(x[edges[:, 0]] - x[edges[:, 1]], axis=1)
    # Adjacency in CSR form (both directions).
    src = np.concatenate([edges[:, 0], edges[:, 1]])
    dst = np.concatenate([edges[:, 1], edges[:, 0]])
    wgt = np.concatenate([length, length])
    order = np.argsort(src, kind="stable")
    start = np.searchsorted(src[order], np.arange(n + 1)).tolist()
    nbr, w = dst[order].tolist(), wgt[order].tolist()
    dist = [np.inf] * n
    anchor = [-1] * n
    heap: list[tuple[float, int]] = []
    for p in pinned.tolist():
        dist[p], anchor[p] = 0.0, p
        heap.append((0.0, p))
    heapq.heapify(heap)
    while heap:
        d, u = heapq.heappop(heap)
        if d > dist[u]:
            continue
        for k in range(start[u], start[u + 1]):
            v, nd = nbr[k], d + w[k]
            if nd < dist[v]:
                dist[v], anchor[v] = nd, anchor[u]
                heapq.heappush(heap, (nd, v))
    dist_a, anchor_a = np.array(dist), np.array(anchor, dtype=np.int64)
    free = np.flatnonzero((anchor_a >= 0) & (dist_a > 0.0)).astype(np.int64)
    return free, anchor_a[free], dist_a[free]


class TetherSolver:
    """Unilateral tethers |x_i - x_pin| <= L, projected exactly in one pass.

    The pin end has infinite mass and each free vertex has at most one tether, so the projections
    do not interact: a gather, a norm and a scatter of the vertices that are too far.
    """

    def __init__(self, free: IntArray, anchor: IntArray, length: FloatArray) -> None:
        self.free, self.anchor, self.length = free, anchor, length

    def __len__(self) -> int:
        return len(self.free)

    def solve(self, x: FloatArray) -> None:
        """Pull every vertex farther than its tether length back onto the sphere around its pin."""
        p = np.take(x, self.anchor, axis=0)
        d = np.take(x, self.free, axis=0) - p
        dist = np.sqrt(np.einsum("ij,ij->i", d, d))
        over = np.flatnonzero(dist > self.length)
        if len(over):
            scale = (self.length[over] / dist[over])[:, None]
            x[self.free[over]] = p[over] + d[over] * scale

# SPDX-License-Identifier: GPL-3.0-or-later
"""Tearing cloth: edges that break above a strain, and vertices that split so that the pieces part.

Representation (docs/physics.md, "Tearing cloth"). The cloth is simulated welded (one particle per mesh
vertex) but drawn unwelded: every triangle corner is its own render vertex and follows one particle
(``corner_particle``, (3F,)). Each tearable vertex (in the tear mask, not pinned or soft-pinned) gets a
spare particle, reserved when the cloth is added and inactive (``ParticleState.active``: it takes part in
nothing) until used. After every small step an interior edge whose membrane strain across it (fan-averaged,
:meth:`TearingCloth._fan_stretch`) exceeds ``tear_strain`` breaks: its two triangles part there. Each keeps
its own copy of the edge (the edge's twin constraint, idle until then, holds the second triangle's
corners); the bending constraint across it and its diamond's stretch limit go (infinite compliance, zero
stiffness: the coloured solvers keep their colours). Then the
corners around each vertex are grouped into the fans still joined by unbroken edges (connected components
of the corner links, by label propagation); a vertex whose fan fell apart keeps its particle for one part
and gives each other part a spare, which starts at the vertex's position with its velocity. Every particle
weighs the sum of its corners' masses (a third of each triangle's mass), so mass and momentum are
conserved exactly by a split. The render mesh keeps its 3F vertices and F triangles, so a bake of render
vertex positions (shape keys, point caches, Alembic) replays the separating pieces without the add-on.

When the spares run out (a cloth shredded at more vertices than it has), further parts stay on their
vertex's particle: the edges are broken but the vertex still joins the parts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from .bending import BendingConstraints, BendingSolver, greedy_stencil_colouring, stencil_weights
from .distance import DistanceConstraints, GaussSeidelSolver, JacobiSolver, greedy_edge_colouring
from .errors import SimulationInputError
from .state import ParticleState

if TYPE_CHECKING:
    from .model import ParticleModel
    from .projection import DistanceSolver
    from .solver import Solver

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]


def tear_vertices(
    tear_strain: float | None,
    tear_mask: IntArray | None,
    n: int,
    balloon: bool,
    pinned: IntArray,
    soft_pins: IntArray,
) -> BoolArray | None:
    """(n,) the vertices a cloth may split at (None: it never tears): those of ``tear_mask`` (vertex
    indices; None: all) that are neither pinned nor soft-pinned (a pin holds one particle)."""
    if tear_strain is None:
        if tear_mask is not None:
            raise SimulationInputError("tear_mask needs a tear_strain (the strain at which edges break)")
        return None
    strain = float(tear_strain)
    if not (np.isfinite(strain) and strain > 0.0):
        raise SimulationInputError(
            f"tear_strain must be a positive strain (0.2: edges break at 20% stretch), got {tear_strain!r}"
        )
    if balloon:
        raise SimulationInputError("a balloon cannot tear: give either inflation or tear_strain")
    mask = np.ones(n, dtype=bool)
    if tear_mask is not None:
        mask[:] = False
        mask[tear_mask] = True
    mask[pinned] = False
    mask[soft_pins] = False
    return mask


def _coloured(
    pairs: IntArray, x: FloatArray, compliance: float, corners: IntArray, edge: IntArray, coloured: bool
) -> tuple[DistanceConstraints, IntArray, IntArray]:
    """Distance constraints on vertex ``pairs`` (K, 2) of rest shape ``x``, sorted by colour if
    ``coloured``, with their corners (K, 2) and edges (K,) in the same order."""
    order = np.arange(len(pairs))
    slices = None
    if coloured and len(pairs):
        col = greedy_edge_colouring(pairs, len(x))  # once, when the cloth is added
        order = np.argsort(col, kind="stable")
        slices = np.searchsorted(col[order], np.arange(int(col.max()) + 2)).astype(np.int64)
    p = pairs[order]
    rest = np.linalg.norm(x[p[:, 0]] - x[p[:, 1]], axis=1)
    con = DistanceConstraints(p[:, 0].copy(), p[:, 1].copy(), rest, np.full(len(p), compliance), slices)
    return con, corners[order], edge[order]


class TearingCloth:
    """One tearing cloth's constraints, corners and tear state (the module docstring).

    Attributes:
        first: global index of its first particle; vertices are ``first + 0..V-1``, spares follow.
        n_vertices: V. spares: (S,) global indices of the spare particles, used in order.
        tear_strain: strain above which an edge breaks (dimensionless, > 0).
        edges: (E, 2) local vertex indices of the mesh edges; edge_alive: (E,) not broken (state).
        corner_vertex: (3F,) local vertex of each triangle corner (corner 3t + k is vertex k of triangle t).
        corner_particle: (3F,) global particle each corner (render vertex) follows (state).
        used: spares used so far (state). spare_vertex: (S,) local vertex each used spare split from.
    """

    def __init__(
        self,
        x: FloatArray,
        faces: IntArray,
        first: int,
        tearable: BoolArray,
        n_spares: int,
        tear_strain: float,
        mass: float,
        inv_mass: FloatArray,
        stretch_compliance: float,
        bend_compliance: float,
        rigidity: float | None,
    ) -> None:
        n, f = len(x), np.asarray(faces, np.int64)
        self.first, self.n_vertices, self.tear_strain = int(first), n, float(tear_strain)
        self.spares = np.arange(first + n, first + n + n_spares, dtype=np.int64)
        self.rest = x.copy()
        cv = f.ravel()  # corner 3t + k sits on vertex f[t, k]
        self.corner_vertex = cv
        ca = np.arange(len(cv), dtype=np.int64)
        cb = ca - ca % 3 + (ca % 3 + 1) % 3  # half-edge from corner ca to the next corner of its triangle
        co = ca - ca % 3 + (ca % 3 + 2) % 3  # the corner opposite that half-edge
        va, vb = cv[ca], cv[cb]
        lo_c, hi_c = np.where(va < vb, ca, cb), np.where(va < vb, cb, ca)
        key = np.minimum(va, vb) * n + np.maximum(va, vb)
        keys, edge_of = np.unique(key, return_inverse=True)
        edge_of = edge_of.ravel()
        self.edges = np.stack([keys // n, keys % n], axis=1).astype(np.int64)
        e_first = np.full(len(keys), len(ca), np.int64)
        np.minimum.at(e_first, edge_of, ca)  # one half-edge per edge: its corners carry the constraint
        # Half-edges of one edge in consecutive triangles: their corners at each end are linked (the same
        # particle while the edge holds), and they make the edge's bending diamond.
        order = np.argsort(key, kind="stable")
        same = np.flatnonzero(key[order][1:] == key[order][:-1])
        h1, h2 = order[same], order[same + 1]
        self.link_a = np.concatenate([lo_c[h1], hi_c[h1]])
        self.link_b = np.concatenate([lo_c[h2], hi_c[h2]])
        self.link_edge = np.concatenate([edge_of[h1], edge_of[h1]])
        ends = np.stack([lo_c[e_first], hi_c[e_first]], axis=1)
        self.stretch, self.stretch_corners, self.stretch_edge = _coloured(
            self.edges, x, stretch_compliance, ends, np.arange(len(keys), dtype=np.int64), True
        )
        self.stretch_compliance = stretch_compliance
        # Each interior edge's twin: the same edge on its second triangle's corners, idle (infinite
        # compliance) until the edge breaks; then each side keeps its own copy of the edge.
        twin = ends.copy()
        twin[edge_of[h1]] = np.stack([lo_c[h2], hi_c[h2]], axis=1)
        interior = np.zeros(len(keys), dtype=bool)
        interior[edge_of[h1]] = True
        self.twin_corners = twin[self.stretch_edge]
        st = self.stretch
        self.twin = DistanceConstraints(
            st.a.copy(), st.b.copy(), st.rest_length, np.full(len(st.a), np.inf), st.colour_slices
        )
        diamond_c = np.stack([lo_c[h1], hi_c[h1], co[h1], co[h2]], axis=1)
        keep = cv[diamond_c[:, 2]] != cv[diamond_c[:, 3]]
        diamond_c, diamond_e = diamond_c[keep], edge_of[h1][keep]
        self.bend_iso: BendingConstraints | None = None
        self.limit: DistanceConstraints | None = None
        self.bend: DistanceConstraints | None = None
        pairs = cv[diamond_c[:, 2:]]
        if rigidity is None:  # legacy bending: a distance constraint across each diamond (Jacobi)
            self.bend, self.bend_corners, self.bend_edge = _coloured(
                pairs, x, bend_compliance, diamond_c[:, 2:], diamond_e, False
            )
            self.bend_compliance = bend_compliance
        else:  # isometric bending (core/bending.py) and the diamonds' unilateral stretch limits
            weights, area, good = stencil_weights(x, cv[diamond_c])
            self.iso_corners, self.iso_edge = diamond_c[good], diamond_e[good]
            idx = cv[self.iso_corners]
            self.iso_stiffness = float(rigidity) / area[good]
            rest = np.linalg.norm(np.einsum("ek,ekj->ej", weights[good], x[idx]), axis=1)
            self.bend_iso = BendingConstraints(idx + first, weights[good], self.iso_stiffness.copy(), rest)
            self.iso_colour = greedy_stencil_colouring(idx, n) if len(idx) else np.zeros(0, np.int64)
            self.limit, self.limit_corners, self.limit_edge = _coloured(
                pairs, x, 0.0, diamond_c[:, 2:], diamond_e, True
            )
        # Interior edges with both ends tearable may part (a boundary edge has nothing to part from).
        both = tearable[self.edges[:, 0]] & tearable[self.edges[:, 1]] & interior
        self.tearable_con = np.flatnonzero(both[self.stretch_edge])
        self.splittable = tearable
        # Rest data of the fan stretch (_fan_stretch): each triangle's Dm^+ (2, 3) (its rest edge vectors'
        # pseudo-inverse), area, and the tearable edges' rest directions and rest readings d C_rest d.
        dm = np.stack([x[f[:, 1]] - x[f[:, 0]], x[f[:, 2]] - x[f[:, 0]]], axis=2)  # (F, 3, 2)
        pinv = np.linalg.pinv(dm)  # (F, 2, 3)
        p0, p1 = pinv[:, 0], pinv[:, 1]
        outer = [np.einsum("fi,fj->fij", u, w).reshape(-1, 9) for u, w in ((p0, p0), (p1, p1), (p0, p1))]
        mixed = outer[2] + outer[2].reshape(-1, 3, 3).transpose(0, 2, 1).reshape(-1, 9)
        self._basis = (outer[0], outer[1], mixed)
        normal = np.cross(dm[:, :, 0], dm[:, :, 1])  # (F, 3), |normal| = 2 A
        self._tri_area = 0.5 * np.linalg.norm(normal, axis=1)
        edge_id = self.stretch_edge[self.tearable_con]
        e = self.edges[edge_id]
        # The direction across each edge, in the cloth's rest plane there: the edge times the mean normal
        # of its two triangles. A crack along the edge opens under the stretch across it (mode I).
        tri_edges = edge_of.reshape(-1, 3)
        side = np.stack(
            [np.bincount(tri_edges.ravel(), np.repeat(normal[:, k], 3), len(keys)) for k in range(3)]
        )
        d = np.cross(x[e[:, 1]] - x[e[:, 0]], side[:, edge_id].T)
        d = d / np.maximum(np.linalg.norm(d, axis=1), 1e-300)[:, None]
        self._edge_dd = np.einsum("ki,kj->kij", d, d).reshape(-1, 9)
        self._edge_rest_c = np.ones(len(d))
        # Each corner's mass: a third of its triangle's (lumped_vertex_mass spreads the cloth by area).
        area_t = 0.5 * np.linalg.norm(np.cross(x[f[:, 1]] - x[f[:, 0]], x[f[:, 2]] - x[f[:, 0]]), axis=1)
        self.corner_mass = np.repeat(area_t / 3.0, 3) * (mass / max(float(area_t.sum()), 1e-300))
        self.base_inv_mass = np.concatenate([inv_mass, np.zeros(n_spares)])  # pins 0, spares 0 until used
        self.fixed = inv_mass == 0.0  # pinned vertices keep infinite mass
        self.triangle_slots: list[tuple[object, str, int]] = []  # (holder, attribute, first row)
        self.reset()
        if len(d):  # d C_rest d: 1 on a flat mesh, less where the fan is curved at rest
            self._edge_rest_c = np.maximum(self._fan_stretch(np.concatenate([x, x[tearable]])) ** 2, 1e-12)

    def reset(self) -> None:
        """The state at build: nothing broken, every corner on its vertex's particle, no spare used."""
        self.edge_alive = np.ones(len(self.edges), dtype=bool)
        self.corner_particle = self.corner_vertex + self.first
        self.used = 0
        self.spare_vertex = np.full(len(self.spares), -1, np.int64)
        self._constraints_changed()

    @property
    def render_triangles(self) -> IntArray:
        """(F, 3) triangles of the unwelded render mesh: corner numbers 0..3F-1."""
        return np.arange(len(self.corner_vertex), dtype=np.int64).reshape(-1, 3)

    # ------------------------------------------------------------------ constraints on the particles now
    def _constraints_changed(self) -> None:
        """Point the constraints at the corners' particles; those across broken edges get no stiffness,
        the broken edges' twins theirs."""
        cp = self.corner_particle
        local = cp - self.first  # the fan stretch's corners, weighted by their triangles' areas
        self._tri_particles = local.reshape(-1, 3)
        self._corner_weight = np.repeat(self._tri_area, 3)[:, None]
        n = self.n_vertices + len(self.spares)
        self._particle_weight = np.bincount(local, weights=self._corner_weight[:, 0], minlength=n)
        self._flat9 = (local[:, None] * 9 + np.arange(9)).ravel()
        s = self.stretch
        s.a, s.b = cp[self.stretch_corners[:, 0]], cp[self.stretch_corners[:, 1]]
        t = self.twin
        t.a, t.b = cp[self.twin_corners[:, 0]], cp[self.twin_corners[:, 1]]
        t.compliance = np.where(self.edge_alive[self.stretch_edge], np.inf, self.stretch_compliance)
        if self.bend is not None:
            self.bend.a, self.bend.b = cp[self.bend_corners[:, 0]], cp[self.bend_corners[:, 1]]
            self.bend.compliance = np.where(self.edge_alive[self.bend_edge], self.bend_compliance, np.inf)
        if self.bend_iso is not None and self.limit is not None:
            self.bend_iso.idx = cp[self.iso_corners]
            self.bend_iso.stiffness = np.where(self.edge_alive[self.iso_edge], self.iso_stiffness, 0.0)
            self.limit.a, self.limit.b = cp[self.limit_corners[:, 0]], cp[self.limit_corners[:, 1]]
            self.limit.compliance = np.where(self.edge_alive[self.limit_edge], 0.0, np.inf)

    def solvers(self, inv_mass: FloatArray, h: float) -> list[DistanceSolver]:
        """Bending, stretch, then stretch limits for step size ``h`` (as ``Solver._distance_solvers``)."""
        out: list[DistanceSolver] = []
        if self.bend is not None and len(self.bend):
            out.append(JacobiSolver(self.bend, inv_mass, h))
        if self.bend_iso is not None and len(self.bend_iso):
            out.append(BendingSolver(self.bend_iso, inv_mass, h, self.iso_colour))
        if len(self.stretch):
            out.append(GaussSeidelSolver(self.stretch, inv_mass, h))
            out.append(GaussSeidelSolver(self.twin, inv_mass, h))  # the broken edges' second sides
        if self.limit is not None and len(self.limit):
            out.append(GaussSeidelSolver(self.limit, inv_mass, h, unilateral=True))
        return out

    def masses(self) -> tuple[IntArray, FloatArray]:
        """(this cloth's particles (V + S,), their inverse masses): each the sum of its corners' masses."""
        idx = np.arange(self.first, self.first + self.n_vertices + len(self.spares), dtype=np.int64)
        m = np.bincount(self.corner_particle - self.first, weights=self.corner_mass, minlength=len(idx))
        w = np.where(m > 0.0, 1.0 / np.maximum(m, 1e-300), self.base_inv_mass)
        w[: self.n_vertices][self.fixed] = 0.0
        return idx, w

    # ------------------------------------------------------------------ tearing
    def _fan_stretch(self, xl: FloatArray) -> FloatArray:
        """Stretch (1 + strain) of the membrane across each tearable edge at positions ``xl``: the right
        Cauchy-Green tensor C = F^T F of every triangle (F its deformation gradient), averaged over the
        fans of the edge's two particles (area-weighted), read across the edge (its rest in-plane normal d):
        sqrt(d C d / d C_rest d). Edge lengths would not do: with more pull than the stiff edges allow, a
        Gauss-Seidel sweep leaves its last colour at rest length and the others over-stretched (a strip
        pulled 5% showed edges at 0% and 12.6% alternating); the fan mean reads the 5%."""
        p = self._tri_particles  # (F, 3) local particle numbers; xl: (V + S, 3) this cloth's particles
        e1, e2 = xl[p[:, 1]] - xl[p[:, 0]], xl[p[:, 2]] - xl[p[:, 0]]
        g00, g11, g01 = (np.einsum("ij,ij->i", u, w)[:, None] for u, w in ((e1, e1), (e2, e2), (e1, e2)))
        # C = Dm+^T (Ds^T Ds) Dm+ = g00 p0 p0^T + g11 p1 p1^T + g01 (p0 p1^T + p1 p0^T), p_i the rows of Dm+
        c = g00 * self._basis[0] + g11 * self._basis[1] + g01 * self._basis[2]  # (F, 9)
        weighted = (self._corner_weight * np.repeat(c, 3, axis=0)).ravel()  # (3F * 9,) corner-major
        acc = np.bincount(self._flat9, weights=weighted, minlength=9 * len(xl))
        acc = acc.reshape(-1, 9) / np.maximum(self._particle_weight, 1e-300)[:, None]
        s, k = self.stretch, self.tearable_con
        mean = 0.5 * (acc[s.a[k] - self.first] + acc[s.b[k] - self.first])  # (K, 9)
        reading = np.einsum("kj,kj->k", mean, self._edge_dd)  # d^T C d, d across the edge
        return np.sqrt(np.maximum(reading, 0.0) / self._edge_rest_c)

    def tear(self, x: FloatArray) -> bool:
        """Break the tearable edges strained beyond ``tear_strain`` at positions ``x`` (N, 3); True if any."""
        k = self.tearable_con
        xl = x[self.first : self.first + self.n_vertices + len(self.spares)]
        over = self._fan_stretch(xl) > 1.0 + self.tear_strain
        edge = self.stretch_edge[k[over]]
        edge = edge[self.edge_alive[edge]]
        if not len(edge):
            return False
        self.edge_alive[edge] = False
        return True

    def split(self, state: ParticleState) -> None:
        """Give every part of a fan that fell apart its own particle (a spare at the vertex, with its
        velocity), as far as the spares go; then re-point the constraints."""
        dead = self.edges[~self.edge_alive].ravel()
        near = np.zeros(self.n_vertices, dtype=bool)
        near[dead] = True
        near &= self.splittable
        in_fan = near[self.corner_vertex]
        corners = np.flatnonzero(in_fan)
        link = in_fan[self.link_a] & self.edge_alive[self.link_edge]
        la, lb = self.link_a[link], self.link_b[link]
        label = np.arange(len(self.corner_vertex), dtype=np.int64)
        while True:  # label propagation: a few sweeps (a fan has ~6 corners), each vectorized
            m = np.minimum(label[la], label[lb])
            new = label.copy()
            np.minimum.at(new, la, m)
            np.minimum.at(new, lb, m)
            new = new[new]
            if np.array_equal(new, label):
                break
            label = new
        roots = np.unique(label[corners])
        owner = self.corner_particle[roots]
        order = np.lexsort((roots, owner))
        roots, owner = roots[order], owner[order]
        keeps = np.ones(len(roots), dtype=bool)
        keeps[1:] = owner[1:] != owner[:-1]  # the lowest part of each particle keeps it
        new_roots = roots[~keeps][: len(self.spares) - self.used]
        if len(new_roots):
            self._use_spares(state, new_roots, corners, label)
        self._constraints_changed()

    def _use_spares(
        self, state: ParticleState, new_roots: IntArray, corners: IntArray, label: IntArray
    ) -> None:
        """Move the parts of ``new_roots`` (their corners: those of ``corners`` with that ``label``) onto
        spares that start where their particle is, at its velocity."""
        spares = self.spares[self.used : self.used + len(new_roots)]
        src = self.corner_particle[new_roots]
        self.spare_vertex[self.used : self.used + len(new_roots)] = self.corner_vertex[new_roots]
        self.used += len(new_roots)
        state.positions[spares] = state.positions[src]
        state.velocities[spares] = state.velocities[src]
        state.active[spares] = True
        target = np.full(len(label), -1, np.int64)
        target[new_roots] = spares
        moved = corners[target[label[corners]] >= 0]
        self.corner_particle[moved] = target[label[moved]]

    def triangles(self) -> IntArray:
        """(F, 3) global particles of the triangles now (for the triangle loads, air and wind)."""
        return self.corner_particle.reshape(-1, 3)

    # ------------------------------------------------------------------ snapshots
    def encode(self) -> FloatArray:
        """The tear state as floats: edge_alive (E,), corner_particle (3F,), spare_vertex (S,), used."""
        parts = [self.edge_alive, self.corner_particle, self.spare_vertex, [self.used]]
        return np.concatenate([np.asarray(p, dtype=np.float64) for p in parts])

    def decode(self, data: FloatArray) -> None:
        e, c, s = len(self.edges), len(self.corner_vertex), len(self.spares)
        self.edge_alive = data[:e] > 0.5
        self.corner_particle = np.rint(data[e : e + c]).astype(np.int64)
        self.spare_vertex = np.rint(data[e + c : e + c + s]).astype(np.int64)
        self.used = round(float(data[e + c + s]))
        self._constraints_changed()

    @property
    def state_size(self) -> int:
        return len(self.edges) + len(self.corner_vertex) + len(self.spares) + 1


class TearSystem:
    """Every tearing cloth of a world (``Solver.tearing``): their solvers, the tear after each small
    step, and what a tear changes elsewhere (masses, the triangles of loads, air and wind)."""

    def __init__(self) -> None:
        self.cloths: list[TearingCloth] = []
        self._solvers: dict[float, list[DistanceSolver]] = {}

    def add(self, cloth: TearingCloth) -> None:
        self.cloths.append(cloth)
        self._solvers = {}

    def solvers(self, model: ParticleModel, h: float) -> list[DistanceSolver]:
        """The tearing cloths' distance solvers for step size ``h`` (cached until something tears)."""
        out = self._solvers.get(h)
        if out is None:
            out = [s for c in self.cloths for s in c.solvers(model.particle_inv_mass, h)]
            self._solvers = {h: out}
        return out

    def apply(self, model: ParticleModel, solver: Solver | None = None) -> None:
        """Write the particles' masses and rest positions into the model and the triangles where they are
        used; ``solver``: also drop what it derived from them (after a tear)."""
        for c in self.cloths:
            idx, w = c.masses()
            model.particle_inv_mass[idx] = w
            model.particle_contact_inv_mass[idx] = w
            model.particle_dynamic[idx] = w > 0.0
            used = c.spare_vertex >= 0  # a spare rests where its vertex does (self-collision exclusion)
            model.particle_rest_q[c.spares[used]] = c.rest[c.spare_vertex[used]]
            tris = c.triangles()
            for holder, name, row in c.triangle_slots:
                if isinstance(getattr(holder, name), list):
                    getattr(holder, name)[row] = tris
                else:
                    getattr(holder, name)[row : row + len(tris)] = tris
        self._solvers = {}
        if solver is not None:  # pair lists, triangle searches and the wind's per-particle weights
            solver.activity_changed()
            if solver.cloth_triangles is not None:
                solver.cloth_triangles.reset()
            if solver.air is not None:
                solver.air.reset()
            if solver.fields is not None:
                solver.fields.reset()

    def after_step(self, state: ParticleState, solver: Solver) -> None:
        """Break what is strained too far and split the vertices along it (after a small step)."""
        torn = False
        for c in self.cloths:
            if len(c.tearable_con) and c.tear(state.positions):
                c.split(state)
                torn = True
        if torn:
            self.apply(solver.model, solver)
            # The spares just used are live from the next small step of this frame on (begin_frame
            # listed the inactive particles for the whole frame).
            solver.refresh_inactive(state)

    def encode(self) -> FloatArray:
        """Every tearing cloth's state, concatenated ((0,) without tearing cloth)."""
        return np.concatenate([np.zeros(0), *(c.encode() for c in self.cloths)])

    def restore(self, data: FloatArray, model: ParticleModel, solver: Solver) -> None:
        """Put back :meth:`encode`'s output ((0,): nothing torn, as in older snapshots)."""
        size = sum(c.state_size for c in self.cloths)
        if len(data) not in (0, size):
            raise ValueError(f"tear state has {len(data)} values, this world's tearing cloth {size}")
        at = 0
        for c in self.cloths:
            if len(data):
                c.decode(data[at : at + c.state_size])
                at += c.state_size
            else:
                c.reset()
        self.apply(model, solver)

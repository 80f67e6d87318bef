# SPDX-License-Identifier: GPL-3.0-or-later
"""Position Based Fluids (Macklin and Mueller, SIGGRAPH 2013), two-way coupled with every other body.

Fluid particles carry no contacts among themselves; a density constraint per fluid particle keeps their
number density at the rest density instead. Solid particles (rigid, cloth, grain) count in that
density as fluid would, so the fluid pushes them and they displace it (Macklin et al. 2014, Sec. 7.1).
The pieces, each over a list of particle pairs (fluid-fluid and fluid-solid) within the kernel radius
``H = KERNEL_RADII * r`` (two lattice spacings), vectorized with ``np.bincount``:

* the density constraint ``C_i = max(n_i / n0 - 1, 0)``, unilateral so a free surface does not pull
  (PBF Eq. 1-12 with Poly6 density and Spiky gradients), with constraint-force mixing ``eps`` and the
  artificial pressure ``s_corr`` of PBF Eq. 13 against clumping;
* XSPH viscosity (PBF Eq. 17, taken implicitly: :mod:`.viscosity`), vorticity confinement (PBF
  Eq. 15-16), cohesion (Akinci et al. 2013, "Versatile surface tension and adhesion for SPH fluids", their
  cohesion kernel) and adhesion to solids (Akinci's adhesion kernel), all at the velocity level after the
  position update.

The density is a *number* density: ``n_i = sum_j W(x_i - x_j)`` over fluid and solid neighbours and
the particle itself, and ``n0`` is that sum on the lattice grains and fluid fills use (spacing 2r), so
a freshly filled volume is exactly at rest. Masses enter through the inverse-mass weighting of every
pair correction (``2 w_i / (w_i + w_j)``), which keeps fluid-solid momentum exact: a body denser than
the fluid yields less to its pressure than the fluid does, and sinks; a lighter one floats.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .collider_set import ColliderSet
from .colliders import MeshCollider, PlaneCollider
from .errors import SimulationInputError
from .fastops import column_max, column_min, gather_difference, rows_all, take_columns
from .fluid_boundary import Boundary
from .fluid_calm import calm_surface
from .fluid_mix import PhaseDrift, several_liquids
from .geometry import sample_interior
from .neighbors import find_pairs
from .pair_cache import PairCache
from .viscosity import implicit_velocities

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]

# Kernel support H in particle radii: two lattice spacings (2r each), about 33 neighbours at rest.
KERNEL_RADII = 4.0
# Margin of the fluid pair list, in radii (at most the world's collision margin). The list holds every
# pair within H + margin, about (1 + margin / H)^3 times the pairs within H, and is rebuilt once a particle
# moved half the margin from the common shift (list_holds). With the old test (half the spread per axis)
# a flowing liquid rebuilt every step whatever the margin, and 0.25 r cost least (S7 at 100k: 6.4 s
# against 7.6 s at 1 r); with the per-particle test a collapsing 1,152-particle block rebuilt 57 times in
# 9 frames at 1 r against 144 at 0.25 r, and S7-10k took the same time (1.84-1.87 s per frame CPU).
FLUID_MARGIN_RADII = 1.0
# Constraint-force mixing (PBF Eq. 11's epsilon) as a fraction of the rest-lattice denominator: softens
# the constraint where the neighbourhood is sparse (the free surface) so corrections stay bounded.
CFM_FRACTION = 0.05
# Artificial pressure (PBF Eq. 13): s_corr = -k (W(d) / W(dq))^n, as a density error; dq = 0.2 H, n = 4.
ARTIFICIAL_PRESSURE_K = 0.02
# ... plus CLOSE_PAIR_K times the part of (W(d) / W(dq))^n above its value at the rest spacing 2r: a
# repulsion of pairs closer than the fill lattice's neighbours that is zero on the lattice, so it neither
# pushes a resting fill nor a free surface outwards. The fill (simple cubic) is not a packing the liquid
# keeps: under its own weight it shifts by about 0.7 r into a disordered one, and with the Eq. 13 term
# alone particles kept hopping between neighbours' gaps for 5-6 s (a still 0.2 m tank moved 2.4-5.1 mm
# in its fourth second over 1e-9 m perturbations of the fill; its test bounds the median by 5 mm). With
# 0.3: 1.5-3.9 mm. A larger k in Eq. 13 holds particles too (0.1: 1.4-3.5 mm) but is a pressure at the
# rest spacing: a free 0.25 m cube of water in zero gravity grew to 0.30 m in one second.
CLOSE_PAIR_K = 0.3
ARTIFICIAL_PRESSURE_DQ = 0.2
ARTIFICIAL_PRESSURE_N = 4
# Largest displacement of a particle by one density solve, in radii (a safety against overshoot).
MAX_CORRECTION_RADII = 0.25
# Relaxation of the Jacobi density solve, as the gain of the lattice mode it over-corrects most (see
# jacobi_gain): every correction is scaled by RELAXED_GAIN / jacobi_gain(), 0.47 with the kernel and
# CFM above. PBD feeds each correction into the next step's velocity, x_{n+1} = P(2 x_n - x_{n-1} + g h^2),
# so a mode the projection P leaves at mu = 1 - gain of its error evolves as z^2 - 2 mu z + mu = 0:
# damped for 0 <= mu < 1, but growing once mu < -1/3, i.e. gain > 4/3. Unrelaxed, the lattice's
# diagonal waves of about 3.5 spacings have gain 2.7: a still tank 0.6 m deep boiled at 0.2 m/s rms (fastest
# particles 0.5-0.9 m/s) for as long as it ran. At 1.25 every mode is damped (|z| <= 0.81 for the worst
# one); the long waves converge more slowly, so a deep column sits slightly more compressed.
RELAXED_GAIN = 1.25
# Density iterations per small step: passes until the mean density error of the live fluid is within
# DENSITY_TOLERANCE, as PCISPH iterates to a density error (Solenthaler and Pajarola 2009), at most
# MAX_DENSITY_ITERATIONS. One relaxed pass per small step holds a column like an equation of state whose
# compression grows with depth: a still tank 0.6 m deep sat 1.2-1.5 per cent low (0.2 m: within 0.5).
# Passes stay stable (each mode's error is multiplied by mu^k, |mu| <= 0.25 where negative, see
# RELAXED_GAIN); shallow liquid (a mean error below 0.3 per cent) keeps its one pass per small step.
DENSITY_TOLERANCE = 0.003
MAX_DENSITY_ITERATIONS = 4  # the default of the world's liquid_density_passes (settings.py)
# The passes after the first run only while the liquid is at rest: at least REST_SHARE of the live fluid
# particles moved less than REST_GH g h^2 in this small step (slower than REST_GH g h, 0.2 m/s at 24 fps
# and 16 small steps; the rest noise above is about g h). The level of still water is what the passes are
# for; a flowing liquid's density error is mostly its motion's, above the tolerance in nearly every step,
# and passes over all of it cost up to 1.9 times one pass (S8, issue 25). Measured shares below 8 g h: a
# still tank 0.6 m deep 0.65-1 while its fill settles in its first 1.5 s, then 1; a 1.5 m dam break
# (1,800 particles) 0-0.22 over its first 30 frames, a 1 m column 0.006-0.2 (all 1 in their first steps,
# still at rest, when the error is within the tolerance anyway). At 4 g h the tank's share fell to 0.22:
# the passes switched off and on while it settled, and the column's level shifted with them (one pass
# holds it 0.5 per cent lower) into motion at 0.07 m/s rms. In zero gravity every step has one pass:
# nothing is compressed by its weight. Passes over the resting particles alone were tried: they cost 10
# per cent of a full pass each (the pair masks), and the velocity pass, seeing the first pass's pairs,
# left the deep still tank's fastest particle at 0.82 g h (0.13 before).
REST_GH = 8.0
REST_SHARE = 0.5
# Sleeping liquid: a fluid particle slower than SLEEP_GH * g h after a small step of length h is held
# where it was (see FluidSolver.settle). Below 1, so liquid starting to fall (g h after one step) is never
# held. One pass per small step leaves a rest noise of about g h (gravity added, then taken back
# imperfectly in a disordered packing): a still tank 0.6 m deep kept its fastest particles at 0.07-0.13
# m/s for seconds; at 0.5 every particle rests within 2 s (0.1: no change; 0.25: half of them by 3 s).
# The price is a threshold: a resting particle whose net acceleration is below SLEEP_GH g stays put.
SLEEP_GH = 0.5
# Peak pair accelerations, m/s^2, of cohesion = 1 and adhesion = 1 (the settings are fractions of these).
# A surface particle has about 15 neighbours pulling: cohesion = 1 holds it with about 6 g.
COHESION_ACCELERATION = 4.0
ADHESION_ACCELERATION = 4.0
# Vorticity confinement: acceleration = vorticity * H * |omega| * (N x omega), m/s^2 (PBF Eq. 16, with
# epsilon = vorticity * H |omega| so the setting is dimensionless).
#
# Presets: keyword arguments of World.add_fluid. Viscosity is the XSPH fraction per small step (implicit,
# core/viscosity.py: Honey's 1.0 slumps half again as slowly as 0.4, where explicit XSPH saturated), cohesion
# and adhesion fractions of the accelerations above, vorticity dimensionless (see the module docstring).
FLUID_PRESETS: dict[str, dict[str, float]] = {
    "WATER": {"density": 1000.0, "viscosity": 0.01, "cohesion": 0.02, "adhesion": 0.0, "vorticity": 0.1},
    "HONEY": {"density": 1420.0, "viscosity": 1.0, "cohesion": 0.05, "adhesion": 0.1, "vorticity": 0.0},
    "OIL": {"density": 900.0, "viscosity": 0.08, "cohesion": 0.01, "adhesion": 0.02, "vorticity": 0.05},
    "SLIME": {"density": 1100.0, "viscosity": 0.25, "cohesion": 0.4, "adhesion": 0.3, "vorticity": 0.0},
}


def _pair_share(wi: FloatArray, wj: FloatArray) -> FloatArray:
    """The factor s of a pair term D, applied as +s w_i D to i and -s w_j D to j: 2 / (w_i + w_j) when
    both can move (equal masses: +D and -D, PBF; any masses: equal and opposite momentum), 1 / w when one
    side is immovable (a wall, a pin, a kinematic body: the other takes only its own constraint's share,
    as against a plane wall), 0 when neither moves."""
    wsum = wi + wj
    both = (wi > 0.0) & (wj > 0.0)
    return np.asarray(np.where(both, 2.0, 1.0) / np.where(wsum > 0.0, wsum, np.inf), dtype=np.float64)


@dataclass(frozen=True)
class PairBlocks:
    """Where the blocks of an ordered fluid pair list end (:meth:`FluidSolver.build`): pairs [0, ff) are
    two fluid particles, [ff, real) a fluid and a solid particle, [real, K) a fluid particle and a mesh
    collider's surface sample. The fluid particle is i in every pair, so a pass sums over i for all
    pairs and over j for the first block alone, with no per-pair mask (np.where over the pair list
    cost as much as a kernel)."""

    ff: int = 0
    real: int = 0

    @staticmethod
    def order(
        i: IntArray, j: IntArray, is_fluid: BoolArray, n_real: int
    ) -> tuple[PairBlocks, IntArray, IntArray]:
        """The pairs (i, j) (each with a fluid particle in it) reordered into blocks, the fluid one first;
        ``is_fluid`` covers the collider samples too (indices >= ``n_real``, not fluid)."""
        solid_first = ~is_fluid[i]
        if solid_first.any():
            i, j = np.where(solid_first, j, i), np.where(solid_first, i, j)
        kind = np.where(is_fluid[j], 0, np.where(j < n_real, 1, 2))
        counts = np.bincount(kind, minlength=3)
        if counts[0] < len(i):
            # The stable sort by kind (np.argsort(kind, kind="stable")), 3x faster as three index lists.
            order = np.concatenate([np.flatnonzero(kind == k) for k in range(3)])
            i, j = i[order], j[order]
        return PairBlocks(int(counts[0]), int(counts[0] + counts[1])), i, j

    def kept(self, keep: IntArray) -> PairBlocks:
        """The blocks of the list after keeping the pairs at the ascending indices ``keep``, order
        unchanged."""
        return PairBlocks(int(np.searchsorted(keep, self.ff)), int(np.searchsorted(keep, self.real)))


def list_holds(x: FloatArray, reference: FloatArray, margin: float) -> bool:
    """Whether a pair list searched at ``reference`` (N, 3) with ``margin`` (metres) still holds every pair
    within its cutoff at ``x``: |x_i - x_j| changes by at most |u_i - c| + |u_j - c| for displacements u
    and any common shift c, so every particle within margin / 2 of c suffices. c is the midrange of u per
    axis; tested per particle, which is tighter than bounding every particle by half the spread of u on
    each axis at once (``PairCache.within_half_spread``): a calm tank keeps its list about twice as long."""
    if len(x) == 0:
        return True
    moved = x - reference
    c = 0.5 * (column_max(moved) + column_min(moved))
    for axis in range(3):
        moved[:, axis] -= c[axis]
    return float(np.einsum("ij,ij->i", moved, moved).max()) < (0.5 * margin) ** 2


def fill_mesh_with_fluid(vertices: ArrayLike, faces: ArrayLike, radius: float) -> FloatArray:
    """Fluid particle centres (P, 3), metres, filling a closed mesh on the regular lattice of spacing 2r
    (:func:`~.geometry.sample_interior`): the arrangement whose density is the rest density."""
    r = float(radius)
    if not math.isfinite(r) or r <= 0.0:
        raise SimulationInputError(
            f"fluid particle radius must be a positive length in metres, not {radius!r}"
        )
    return sample_interior(vertices, faces, 2.0 * r).points


def _poly6(r2: FloatArray, h: float) -> FloatArray:
    """Poly6 kernel W(r) = 315 / (64 pi H^9) (H^2 - r^2)^3 for r < H (Mueller et al. 2003)."""
    t = np.maximum(h * h - r2, 0.0)
    return np.asarray((315.0 / (64.0 * np.pi * h**9)) * t * t * t, dtype=np.float64)


def _spiky_over_r(r: FloatArray, h: float) -> FloatArray:
    """|grad W| / r of the Spiky kernel: 45 / (pi H^6) (H - r)^2 / r; grad_i W_ij = -this * (x_i - x_j)."""
    t = np.maximum(h - r, 0.0)
    return np.asarray((45.0 / (np.pi * h**6)) * t * t / np.maximum(r, 1e-12 * h), dtype=np.float64)


def _cohesion_kernel(r: FloatArray, h: float) -> FloatArray:
    """Akinci et al. 2013 Eq. 2 spline, divided by its peak (at r = H/2): repulsive (< 0) below ~0.32 H."""
    t = (h - r) ** 3 * r**3
    c = np.where(2.0 * r > h, t, 2.0 * t - h**6 / 64.0)
    c = np.where(r < h, c, 0.0)
    return np.asarray(c / (h**6 / 64.0), dtype=np.float64)


def _adhesion_kernel(r: FloatArray, h: float) -> FloatArray:
    """Akinci et al. 2013 Eq. 7 shape (-4 r^2 / H + 6 r - 2 H)^(1/4) on H/2 < r < H, divided by its peak."""
    inner = np.maximum(-4.0 * r * r / h + 6.0 * r - 2.0 * h, 0.0)
    a = np.where((2.0 * r > h) & (r < h), inner**0.25, 0.0)
    return np.asarray(a / (0.25 * h) ** 0.25, dtype=np.float64)


@functools.cache
def jacobi_gain() -> float:
    """The largest eigenvalue of one unrelaxed Jacobi density solve (PBF Eq. 8-12) linearised on the fill
    lattice: the factor by which it corrects the error of its most over-corrected mode (1 would be exact).

    A displacement wave u e^{i q.x} changes C_i by -i S(q).u with S(q) = sum_j g_j sin(q.r_j), g_j the
    neighbour's gradient grad W / n0; lambda and the pair corrections give back S S^T u / (D + eps), so the
    gain is |S(q)|^2 / (D + eps) at its largest over the Brillouin zone (about 2.7, at q = 0.33 pi / 2r
    along a diagonal). Dimensionless, the same for every radius: computed at r = 1 on a 21^3 grid of q.
    """
    radius, h = 1.0, KERNEL_RADII
    rest = LatticeRest.for_radius(radius)
    span = int(np.ceil(h / (2.0 * radius)))
    k = np.arange(-span, span + 1, dtype=np.float64) * 2.0 * radius
    g = np.stack(np.meshgrid(k, k, k, indexing="ij"), axis=-1).reshape(-1, 3)
    r = np.sqrt(np.einsum("ij,ij->i", g, g))
    g, r = g[r > 0.0], r[r > 0.0]
    grad = (_spiky_over_r(r, h) / rest.n0)[:, None] * g  # (K, 3)
    q1 = np.linspace(0.0, np.pi / (2.0 * radius), 21)
    q = np.stack(np.meshgrid(q1, q1, q1, indexing="ij"), axis=-1).reshape(-1, 3)
    s = np.sin(q @ g.T) @ grad  # (Q, 3)
    return float(np.einsum("ij,ij->i", s, s).max() / ((1.0 + CFM_FRACTION) * rest.denominator))


@dataclass(frozen=True)
class LatticeRest:
    """Kernel sums on the fill lattice (spacing 2r): rest number density and constraint scale."""

    n0: float  # rest number density sum_j W_ij including the particle itself, 1/m^3
    denominator: float  # sum_j |grad_j C_i|^2 at rest, 1/m^2 (grad_i C_i is zero by symmetry)
    w_dq: float  # W at 0.2 H, for the artificial pressure
    dq_lattice: float  # (W(2r) / W(0.2 H))^n: the artificial pressure's ratio at the rest spacing

    @classmethod
    def for_radius(cls, radius: float) -> LatticeRest:
        h = KERNEL_RADII * radius
        span = int(np.ceil(h / (2.0 * radius)))
        k = np.arange(-span, span + 1, dtype=np.float64) * 2.0 * radius
        g = np.stack(np.meshgrid(k, k, k, indexing="ij"), axis=-1).reshape(-1, 3)
        r2 = np.einsum("ij,ij->i", g, g)
        n0 = float(_poly6(r2, h).sum())
        others = r2 > 0.0
        r = np.sqrt(r2[others])
        grad = _spiky_over_r(r, h) * r / n0
        w_dq = float(_poly6(np.array([(ARTIFICIAL_PRESSURE_DQ * h) ** 2]), h)[0])
        w_lattice = float(_poly6(np.array([(2.0 * radius) ** 2]), h)[0])
        return cls(n0, float((grad * grad).sum()), w_dq, (w_lattice / w_dq) ** ARTIFICIAL_PRESSURE_N)


class WallDensity:
    """The number density a plane wall stands in for: the fill lattice continued beyond the wall.

    A fluid particle at distance s from a plane collider misses the neighbours the wall cuts off; a
    particle touching the wall (s = r) would have had lattice layers at r, 3r, 5r, ... beyond it. The
    table holds that lattice sum (laterally aligned, as a fill sits on a floor), so a filled tank is
    exactly at rest density, and the wall pushes fluid off as fluid would (Akinci et al. 2012 call such
    a term boundary handling; here it is a 1-D lookup per plane).
    """

    SAMPLES = 256

    def __init__(self, radius: float, n0: float) -> None:
        h = KERNEL_RADII * radius
        d = 2.0 * radius
        span = int(np.ceil(h / d))
        k = np.arange(-span, span + 1, dtype=np.float64) * d
        lateral = (k[:, None] ** 2 + k[None, :] ** 2).ravel()
        layers = radius + d * np.arange(span + 1, dtype=np.float64)  # beyond the wall: r, 3r, ...
        self.s = np.linspace(0.0, h, self.SAMPLES)
        depth = self.s[:, None] + layers[None, :]  # (S, layers) distance of each layer from the particle
        r2 = lateral[None, None, :] + (depth**2)[:, :, None]
        self.density = _poly6(r2, h).sum(axis=(1, 2)) / n0  # in units of n0
        self.slope = np.gradient(self.density, self.s)  # d(n / n0) / ds, 1/m (negative)
        self.range = h

    def lookup(self, s: FloatArray) -> tuple[FloatArray, FloatArray]:
        """(n_wall / n0, d(n_wall / n0) / ds) at distances ``s`` from the wall, metres."""
        sc = np.clip(s, 0.0, self.range)
        return np.interp(sc, self.s, self.density, right=0.0), np.interp(sc, self.s, self.slope, right=0.0)


class FluidSolver:
    """The fluid passes of one small step over a model's fluid particles.

    Args:
        radius: particle radius r, metres.
        margin: the world's neighbour-list margin, metres; the fluid list uses at most
            FLUID_MARGIN_RADII r of it (rebuilt when anything moved > margin / 2).
        is_fluid: (N,) bool, fluid particles.
        viscosity, cohesion, adhesion, vorticity: (N,) per-particle fluid parameters (0 for solids).
        colliders: the solver's colliders, read each small step (None: none).
    """

    def __init__(
        self,
        radius: float,
        margin: float,
        is_fluid: BoolArray,
        viscosity: FloatArray,
        cohesion: FloatArray,
        adhesion: FloatArray,
        vorticity: FloatArray,
        colliders: ColliderSet | None = None,
        inv_mass: FloatArray | None = None,
    ) -> None:
        self.radius, self.margin = radius, min(margin, FLUID_MARGIN_RADII * radius)
        self.threads = 1  # threads of the pair search (set by the solver; the same list with any count)
        # The solver's colliders (it owns them; a collider added later is seen here too).
        self.colliders = ColliderSet() if colliders is None else colliders
        self.boundary = Boundary()
        self.h = KERNEL_RADII * radius
        self.rest = LatticeRest.for_radius(radius)
        self.relaxation = RELAXED_GAIN / jacobi_gain()  # scales every density correction (see there)
        self.wall = WallDensity(radius, self.rest.n0)
        self.is_fluid = is_fluid
        self.viscosity, self.cohesion = viscosity, cohesion
        self.adhesion, self.vorticity = adhesion, vorticity
        self.any_cohesion = bool(cohesion.any())
        self.any_adhesion = bool(adhesion.any())
        self.any_vorticity = bool(vorticity.any())
        # Pairs (i < j) with at least one fluid particle within H + margin, and the positions (with the
        # collider samples) they were built from.
        self.pairs = PairCache()
        # This small step's pairs within H (set by solve_density, reused by the velocity pass).
        self._pi = self._pj = np.zeros(0, np.int64)
        self._d = np.zeros((3, 0))
        self._r = np.zeros(0)
        self._ff = 0  # of them, the fluid-fluid pairs (the first block)
        self.blocks = PairBlocks()  # the blocks of the list in ``pairs`` (set by build)
        self._is_fluid_now = is_fluid
        self._fluid_ext = is_fluid  # is_fluid with the collider samples appended (_extended)
        self.viscosity_iterations = 0  # conjugate-gradient iterations of the last viscosity solve
        self.density_iterations = 0  # Jacobi passes of the last density solve
        self._compressed = np.zeros(len(is_fluid), dtype=bool)  # above rest density at the last pass
        self._w_ff = np.zeros(0)  # W of the fluid-fluid pairs of the last pass (fluid_calm)
        self.fluid_count = int(np.count_nonzero(is_fluid))
        # More than one liquid density: the liquids drift through each other (fluid_mix.py).
        several = inv_mass is not None and several_liquids(is_fluid, inv_mass)
        self.phase_drift = PhaseDrift(len(is_fluid), radius) if several else None

    def reset(self) -> None:
        """Forget the pair list (particles were activated or removed)."""
        self.pairs.reset()

    @property
    def planes(self) -> tuple[PlaneCollider, ...]:
        """Plane colliders: walls that count in the density (WallDensity)."""
        return self.colliders.planes

    @property
    def meshes(self) -> tuple[MeshCollider, ...]:
        """Mesh colliders: their surface samples count in the density (Boundary)."""
        return self.colliders.meshes

    # ------------------------------------------------------------------ neighbours
    def _extended(
        self, x: FloatArray, w: FloatArray, active: BoolArray | None, alpha: float
    ) -> tuple[FloatArray, FloatArray, BoolArray | None, BoolArray, FloatArray]:
        """x, w, active and is_fluid with the mesh colliders' surface samples appended (immovable solids,
        w = 0), and the samples' density weights psi (B,)."""
        xb = (
            self.boundary.points(self.meshes, alpha, self.radius, self.wall, self.rest.n0)
            if self.meshes
            else None
        )
        if xb is None or len(xb) == 0:
            return x, w, active, self.is_fluid, np.zeros(0)
        nb = len(xb)
        live = None if active is None else np.concatenate([active, np.ones(nb, dtype=bool)])
        if len(self._fluid_ext) != len(x) + nb:  # the same until a collider is added
            self._fluid_ext = np.concatenate([self.is_fluid, np.zeros(nb, dtype=bool)])
        return (
            np.concatenate([x, xb]),
            np.concatenate([w, np.zeros(nb)]),
            live,
            self._fluid_ext,
            self.boundary.psi,
        )

    def _pair_list(self, x: FloatArray, active: BoolArray | None) -> tuple[IntArray, IntArray]:
        """Candidate pairs within H + margin, rebuilt only when a particle moved more than margin / 2
        relative to the common shift (``list_holds``)."""
        p = self.pairs
        if p.holds_for(x) and list_holds(x, p.reference, self.margin):
            return p.i, p.j
        i, j = self.build(x, active, self._is_fluid_now)
        p.store(x.copy(), i, j)
        return i, j

    def restore(self, reference: FloatArray, active: BoolArray | None) -> None:
        """The pair list a snapshot was taken with, rebuilt from its reference positions (which include
        the collider samples of the moment it was built)."""
        n = len(self.is_fluid)
        is_fluid = np.concatenate([self.is_fluid, np.zeros(len(reference) - n, dtype=bool)])
        live = None if active is None else np.concatenate([active, np.ones(len(reference) - n, dtype=bool)])
        self.pairs.store(reference.copy(), *self.build(reference, live, is_fluid))

    def build(
        self, x: FloatArray, active: BoolArray | None, is_fluid: BoolArray | None = None
    ) -> tuple[IntArray, IntArray]:
        """Pairs within H + margin with a fluid particle in them, among active particles: a pure function
        of x and the activity (snapshots rebuild it from the reference positions). Ordered in blocks
        (``PairBlocks``): fluid-fluid, then fluid-solid particle, then fluid-collider sample, the fluid
        particle first in every pair, so the passes need no per-pair masks."""
        is_fluid = self.is_fluid if is_fluid is None else is_fluid
        i, j = self._search(x, active, is_fluid)
        self.blocks, i, j = PairBlocks.order(i, j, is_fluid, len(self.is_fluid))
        return i, j

    def _search(
        self, x: FloatArray, active: BoolArray | None, is_fluid: BoolArray
    ) -> tuple[IntArray, IntArray]:
        """Pairs within H + margin with a fluid particle in them (lo, hi), among active particles."""
        fluid = is_fluid if active is None else is_fluid & active
        fidx = np.flatnonzero(fluid)
        if len(fidx) == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        cutoff = self.h + self.margin
        xf = x[fidx]
        lo, hi = column_min(xf) - cutoff, column_max(xf) + cutoff
        near = ~is_fluid & rows_all((x >= lo) & (x <= hi))
        if active is not None:
            near &= active
        subset = np.flatnonzero(fluid | near)
        group = np.where(is_fluid[subset], 0, 1).astype(np.int64)
        i, j = find_pairs(
            x[subset],
            cutoff,
            group,
            np.array([True, False]),
            threads=self.threads,
        )
        return subset[i], subset[j]

    # ------------------------------------------------------------------ density (positions)
    def solve_density(
        self,
        x_in: FloatArray,
        w_in: FloatArray,
        active_in: BoolArray | None,
        alpha: float,
        max_passes: int = MAX_DENSITY_ITERATIONS,
        start: FloatArray | None = None,
        g_h2: float = 0.0,
    ) -> None:
        """The density constraints on the predicted positions ``x`` (in place): Jacobi passes until the
        mean density error is within DENSITY_TOLERANCE, at most ``max_passes`` (the world's
        ``liquid_density_passes``) while the liquid is at rest (``at_rest``), one pass while it flows.

        ``w`` (N,) are the inverse masses the corrections are split by (0: immovable); ``alpha`` the
        fraction of the frame reached (mesh colliders' pose); ``start`` (N, 3) the positions at the small
        step's start and ``g_h2`` gravity times the small step squared, m (None: the liquid counts as
        at rest).
        """
        if start is not None and not self.at_rest(x_in, start, active_in, g_h2):
            max_passes = 1
        self.density_iterations = 0
        for _ in range(max_passes):
            self.density_iterations += 1
            if self._density_pass(x_in, w_in, active_in, alpha) <= DENSITY_TOLERANCE:
                break

    def at_rest(self, x: FloatArray, start: FloatArray, active: BoolArray | None, g_h2: float) -> bool:
        """Whether at least REST_SHARE of the live liquid moved less than REST_GH ``g_h2`` (m) from
        ``start`` (N, 3) to ``x`` (N, 3) in this small step."""
        live = self.is_fluid if active is None else self.is_fluid & active
        d = x - start
        slow = np.einsum("ij,ij->i", d, d) < (REST_GH * g_h2) ** 2
        return bool(np.count_nonzero(slow & live) >= REST_SHARE * np.count_nonzero(live))

    def _density_pass(
        self, x_in: FloatArray, w_in: FloatArray, active_in: BoolArray | None, alpha: float
    ) -> float:
        """One Jacobi pass of the density constraints (see solve_density); returns the mean density
        error max(n / n0 - 1, 0) of the live fluid particles it started from."""
        n_real = len(x_in)
        x, w, active, is_fluid, psi = self._extended(x_in, w_in, active_in, alpha)
        self._is_fluid_now = is_fluid
        pi, pj = self._pair_list(x, active)
        n = len(x)
        h = self.h
        d = gather_difference(np.ascontiguousarray(x.T), pi, pj)
        r2 = np.einsum("ij,ij->j", d, d)
        close = np.flatnonzero(r2 < h * h)  # np.take: boolean indexing cost 4 times as much
        blocks = self.blocks.kept(close)
        pi, pj, d, r2 = pi.take(close), pj.take(close), take_columns(d, close), r2.take(close)
        r = np.sqrt(r2)
        # The blocks (PairBlocks): [0, ff) fluid-fluid, [ff, real) fluid-solid particle, [real, K) a
        # collider sample; i is the fluid particle of every pair. The velocity pass skips the samples.
        ff, real = blocks.ff, blocks.real
        self._pi, self._pj, self._d, self._r, self._ff = pi[:real], pj[:real], d[:, :real], r[:real], ff
        if len(pi) == 0:
            return 0.0
        rest = self.rest
        wk_raw = _poly6(r2, h)
        wk = wk_raw
        g = _spiky_over_r(r, h) / rest.n0
        if real < len(pi):  # collider samples count psi times (the fluid side's psi is 1)
            wk = wk_raw.copy()
            weight = psi[pj[real:] - n_real]
            wk[real:] *= weight
            g[real:] *= weight
        pjf = pj[:ff]  # the j side of the pairs where it is fluid too
        # n_i sums W over every neighbour j of a fluid particle i (fluid or solid): every pair adds W to
        # its i, and to its j in the fluid-fluid block.
        density = np.bincount(pi, weights=wk, minlength=n)
        density += np.bincount(pjf, weights=wk[:ff], minlength=n)
        density += _poly6(np.zeros(1), h)[0]
        ratio_n = density / rest.n0
        # Gradients: grad_i C_i = (1/n0) sum_j grad_i W_ij = -(1/n0) sum_j g d; grad_j C_i = (1/n0) g d.
        gd = g * d  # (3, K)
        a = np.zeros((3, n))
        for axis in range(3):
            a[axis] = np.bincount(pjf, weights=gd[axis, :ff], minlength=n)
            a[axis] -= np.bincount(pi, weights=gd[axis], minlength=n)
        walls = self._wall_terms(x_in, ratio_n, a, active_in)
        c = np.maximum(ratio_n - 1.0, 0.0)
        c[~is_fluid] = 0.0
        self._compressed = ratio_n[:n_real] > 1.0  # inside the liquid (not its surface): may sleep
        self._w_ff = wk_raw[:ff]  # the fluid-fluid pairs' kernel values, for calm_surface
        live = self.fluid_count if active_in is None else np.count_nonzero(self.is_fluid & active_in)
        error = float(c.sum()) / max(live, 1)
        g2 = g * g * r2
        b = np.bincount(pi, weights=g2, minlength=n)
        b += np.bincount(pjf, weights=g2[:ff], minlength=n)
        denom = np.einsum("ij,ij->j", a, a) + b + CFM_FRACTION * rest.denominator
        lam = -c / denom
        # Pair corrections (PBF Eq. 12 and 14): D = (lambda_i + lambda_j + s_corr) grad_i W_ij / n0
        # = -(lambda_i + lambda_j + s_corr) g d, split by inverse masses so that momentum is exact; the
        # artificial pressure s_corr acts between fluid particles only.
        s = lam[pi] + lam[pj]
        q = (wk_raw[:ff] / rest.w_dq) ** ARTIFICIAL_PRESSURE_N
        s[:ff] -= (ARTIFICIAL_PRESSURE_K * q + CLOSE_PAIR_K * np.maximum(q - rest.dq_lattice, 0.0)) / (
            rest.denominator
        )
        if ff == len(pi) and float(w.min()) == float(w.max()):
            # One liquid: equal masses, so the shares are +D and -D (PBF as published).
            ci = -s * g
            cj = -ci
        else:
            # The pair vector D times the share is coef * d. Collider samples are immovable (w_j = 0):
            # their share 1 / w_i is _pair_share(w_i, 0), taken without gathering w_j, and no j side.
            wi, wj = w[pi], w[pj[:real]]
            share = np.empty(len(pi))
            share[:real] = _pair_share(wi[:real], wj)
            np.divide(1.0, np.where(wi[real:] > 0.0, wi[real:], np.inf), out=share[real:])
            coef = -s * g * share
            ci, cj = coef * wi, -coef[:real] * wj
        pjr, cjr = pj[:real], cj[:real]
        dx = np.zeros((3, n_real))
        for axis in range(3):
            dx[axis] = np.bincount(pi, weights=ci * d[axis], minlength=n)[:n_real]
            dx[axis] += np.bincount(pjr, weights=cjr * d[axis, :real], minlength=n)[:n_real]
        for idx, grad in walls:  # the wall is immovable: the particle takes its own constraint's share
            dx[:, idx] += (lam[idx, None] * grad).T
        dx *= self.relaxation  # stable in PBD's position-velocity update (RELAXED_GAIN)
        # Safety: no particle moves more than MAX_CORRECTION_RADII r in one density solve. At the bottom
        # of a deep column one iteration per small step leaves a large density error, and its full
        # correction overshot into a blow-up (a 2.5 m column at r = 2.5 cm diverged within 0.3 s).
        length2 = np.einsum("ij,ij->j", dx, dx)
        limit = MAX_CORRECTION_RADII * self.radius
        over = length2 > limit * limit
        if over.any():
            dx[:, over] *= limit / np.sqrt(length2[over])
        x_in += dx.T
        return error

    def _wall_terms(
        self, x: FloatArray, ratio_n: FloatArray, a: FloatArray, active: BoolArray | None
    ) -> list[tuple[IntArray, FloatArray]]:
        """Add the planes' density (in units of n0, the union of their half spaces) to ``ratio_n`` and its
        gradient to ``a`` (3, N) in place, for fluid particles within H of a plane; returns (particles,
        grad_i C_i (P, 3)) per plane, each plane's share of the gradient."""
        out: list[tuple[IntArray, FloatArray]] = []
        if not self.planes:
            return out
        fluid = self.is_fluid if active is None else self.is_fluid & active
        fidx = np.flatnonzero(fluid)
        xf = x[fidx]
        # Where walls meet (a tank's corners and the floor's edges) the lattice beyond two walls is one
        # region, and adding each wall's half space counted it twice: the fill's corner columns started at
        # 1.09 n0 and the first small steps threw them inward at 0.8 m/s. The walls stand for the union of
        # their half spaces instead, each wall k seen as the fraction f_k of the lattice it removes,
        # independently: n_walls / n0 = 1 - prod_k (1 - f_k) (inclusion-exclusion with the overlap of
        # walls k and m taken as f_k f_m, exact for a separable kernel and orthogonal walls). One wall
        # gives f_k; at a corner this is within 1.5 per cent of the lattice sum (0.345 against 0.352 n0
        # beside two walls, 0.470 against 0.485 beside three) where the sum was 9 per cent over, and
        # under-counting leaves the unilateral constraint slack instead of pushing.
        near_walls: list[tuple[IntArray, FloatArray, FloatArray, FloatArray]] = []
        keep = np.ones(len(fidx))  # prod_k (1 - f_k), per fluid particle
        for plane in self.planes:
            normal = plane.normal
            s = (xf - plane.point) @ normal
            near = np.flatnonzero(s < self.wall.range)
            if len(near) == 0:
                continue
            value, slope = self.wall.lookup(s[near])
            keep[near] *= 1.0 - value
            near_walls.append((near, value, slope, normal))
        if not near_walls:
            return out
        touched = keep < 1.0
        ratio_n[fidx[touched]] += 1.0 - keep[touched]
        for near, value, slope, normal in near_walls:
            # grad_i (1 - prod_m (1 - f_m)) = sum_k f_k' n_k prod_{m != k} (1 - f_m); f_k < 1 always.
            others = keep[near] / (1.0 - value)
            grad = (slope * others)[:, None] * normal[None, :]  # along the normal, < 0
            idx = fidx[near]
            a[:, idx] += grad.T
            out.append((idx, grad))
        return out

    def drift(self, x: FloatArray, x_pred: FloatArray, w: FloatArray, gravity: FloatArray, h: float) -> None:
        """Liquids of different densities drift through each other (:mod:`.fluid_mix`) over the fluid pairs
        of this small step's last density pass: ``x``, ``x_pred`` (N, 3) in place, ``w`` (N,) inverse
        masses. Not with one liquid."""
        if self.phase_drift is not None and self._ff:
            pi, pj, wk = self._pi[: self._ff], self._pj[: self._ff], _poly6(self._r[: self._ff] ** 2, self.h)
            self.phase_drift.step(x, x_pred, pi, pj, wk, _poly6(np.zeros(1), self.h)[0], w, gravity, h)

    # ------------------------------------------------------------------ rest
    def settle(
        self, x: FloatArray, x_pred: FloatArray, v: FloatArray, gh: float, pushed: BoolArray | None = None
    ) -> None:
        """Liquid at rest sleeps (Macklin et al. 2014, Sec. 4.4's particle sleeping): a fluid particle
        slower than SLEEP_GH * g h after this small step stays at ``x`` with zero velocity (``x_pred``
        and ``v`` (N, 3) in place); ``gh`` is g times the small step, m/s. The surface above it, which
        never sleeps, is calmed first (:func:`.fluid_calm.calm_surface`), except where a force field
        pushed in this small step (``pushed`` (N,), None: nowhere)."""
        if gh <= 0.0:
            return
        pairs = (self._pi, self._pj, self._ff, self._w_ff)
        calm_surface(v, pairs, self._compressed, self.is_fluid, pushed, gh)
        if SLEEP_GH <= 0.0:
            return
        limit = SLEEP_GH * gh
        slow = np.einsum("ij,ij->i", v, v) < limit * limit
        slow &= self.is_fluid & self._compressed
        v[slow] = 0.0
        x_pred[slow] = x[slow]

    # ------------------------------------------------------------------ velocities
    def velocity_pass(self, v: FloatArray, w: FloatArray, dt: float, steps: int = 1) -> None:
        """XSPH viscosity, cohesion, adhesion and vorticity confinement on the new velocities ``v`` (in
        place), over this small step's pairs (positions as at the end of the density solve). ``dt`` is the
        time the pass stands for, ``steps`` the number of small steps in it (the solver runs it once per
        substep)."""
        pi, pj, d, r = self._pi, self._pj, self._d, self._r
        if len(pi) == 0:
            return
        n, h = len(v), self.h
        # i is the fluid particle of every pair; j is fluid in the first block (PairBlocks).
        both = np.arange(len(pi)) < self._ff
        fi, fj = np.ones(len(pi), dtype=bool), both
        wi, wj = w[pi], w[pj]
        share = _pair_share(wi, wj)
        dv = gather_difference(np.ascontiguousarray(v.T), pj, pi)  # v_j - v_i, (3, K)
        # Each pair term is an impulse per unit "shared" mass: particle i gets +q w_i share, j gets -q w_j
        # share, so m_i dv_i + m_j dv_j = 0 (equal masses: +q and -q).
        q = np.zeros((3, len(pi)))
        # XSPH (PBF Eq. 17), implicit: v_i += c sum_j (v'_j - v'_i) W_ij / n0 at the end velocities v'
        # (core/viscosity.py: no saturation at high c); c is the fluid side's viscosity per small step,
        # times the small steps the pass stands for.
        visc = np.where(fi, self.viscosity[pi], 0.0) + np.where(fj, self.viscosity[pj], 0.0)
        visc = np.where(both, 0.5 * visc, visc)
        if visc.any():
            c = (steps * visc) * _poly6(r * r, h) / self.rest.n0
            mass = np.where(w > 0.0, 1.0 / np.where(w > 0.0, w, 1.0), 0.0)
            end, self.viscosity_iterations = implicit_velocities(
                np.ascontiguousarray(v.T), mass, c * share, pi, pj
            )
            q += c * gather_difference(end, pj, pi)
        unit = d / np.maximum(r, 1e-12 * h)  # from j to i
        if self.any_cohesion:
            # Akinci cohesion between fluid particles: a_i = -gamma C(r) (x_i - x_j) / r.
            gamma = 0.5 * (self.cohesion[pi] + self.cohesion[pj]) * both * COHESION_ACCELERATION
            q -= (dt * gamma * _cohesion_kernel(r, h)) * unit
        if self.any_adhesion:
            # Akinci adhesion between fluid and solid: attraction with the adhesion kernel.
            beta = (np.where(fi, self.adhesion[pi], 0.0) + np.where(fj, self.adhesion[pj], 0.0)) * ~both
            q -= (dt * beta * ADHESION_ACCELERATION * _adhesion_kernel(r, h)) * unit
        dvi, dvj = q * (wi * share), q * (-wj * share)
        if self.any_vorticity:
            ff = self._ff  # the pairs of two fluid particles are the first ff (``both``): slices, no mask
            both_i, both_j = pi[:ff], pj[:ff]
            g = _spiky_over_r(r[:ff], h) / self.rest.n0
            gd = g * d[:, :ff]  # grad_j W_ij / n0 = g d; grad_i W_ij / n0 = -g d
            rel = dv[:, :ff]
            # omega_i = sum_j (v_j - v_i) x grad_j W_ij (PBF Eq. 15); for j the pair's terms flip twice.
            cross = np.cross(rel.T, gd.T).T
            omega = np.zeros((3, n))
            for axis in range(3):
                omega[axis] = np.bincount(both_i, weights=cross[axis], minlength=n)
                omega[axis] += np.bincount(both_j, weights=cross[axis], minlength=n)
            mag = np.sqrt(np.einsum("ij,ij->j", omega, omega))
            # eta_i = grad |omega|_i = sum_j |omega_j| grad_i W_ij (PBF Eq. 16's location vector).
            eta = np.zeros((3, n))
            for axis in range(3):
                eta[axis] = np.bincount(both_i, weights=-mag[both_j] * gd[axis], minlength=n)
                eta[axis] += np.bincount(both_j, weights=mag[both_i] * gd[axis], minlength=n)
            eta_len = np.sqrt(np.einsum("ij,ij->j", eta, eta))
            normal = eta / np.maximum(eta_len, 1e-30)
            f = np.cross(normal.T, omega.T).T * (self.vorticity * h * mag)
            v += dt * f.T * self.is_fluid[:, None]
        for axis in range(3):
            v[:, axis] += np.bincount(pi, weights=dvi[axis], minlength=n)
            v[:, axis] += np.bincount(pj, weights=dvj[axis], minlength=n)

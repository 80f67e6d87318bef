# SPDX-License-Identifier: GPL-3.0-or-later
"""Ropes and chains (``World.add_rope``): a chain of particles along a polyline (Macklin et al. 2014, Sec. 6).

The polyline is resampled at equal arc-length steps of about one particle diameter 2r, so the chain is
closed to anything the size of a particle and its length is the polyline's. Each link is an XPBD distance
constraint solved with the cloth stretch (graph-coloured Gauss-Seidel: a chain needs two colours, see
:mod:`.distance`); bending is a distance constraint across two links whose rest length is the straight
one (2 links long), Jacobi-averaged with the cloth bending, so a rope is straight at rest whatever shape
it was drawn in. A pinned rope also gets tethers (long-range attachments, as pinned cloth does): no
particle gets farther from its nearest pin than its rest arc length along the rope times (1 + give), which
holds the length of a long chain that a few Gauss-Seidel sweeps per small step cannot (a chain of n links
needs about n^2 sweeps to carry a pull end to end).

Rope particles are ordinary particles (``KIND_ROPE``): they collide with everything, and with the rest of
their own rope except their neighbours within ``ROPE_SELF_EXCLUDED_LINKS`` links along the chain (which
always touch; the solver's candidate filter drops them). Pins are infinite-mass particles:
``Rope.set_pin_targets`` moves them like cloth pins (:mod:`.pins`). A particle can be tied to a rigid body:
a distance constraint from it to the body's nearest particle, in the same coloured stretch solve, so the
rope pulls the body and the body the rope (two-way, through the shape matching that carries the pulled
particle to the whole body); a pinned rope's tethers hold the tied particle too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .bodies import Body, RigidBody
from .builder import WorldBuilder, nonnegative, positive, vector
from .distance import DistanceConstraints, compliant_strain, tethers
from .errors import SimulationInputError
from .geometry import MAX_COORDINATE
from .model import KIND_ROPE

if TYPE_CHECKING:
    from .world import World

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


class Rope(Body):
    """A rope or chain: particles along a polyline, in order from its first point to its last.

    Attributes:
        pinned: (K,) particle indices (local to this rope, 0 = the first point's end) of infinite mass.
        link_length: rest distance between neighbouring particles, metres (about 2r).
        length: rest length of the whole rope, metres.
        mass: total mass of the free particles, kg.
        attached: (rope particle (local), rigid particle (world index)) per tie to a rigid body.
    """

    kind = "rope"

    def __init__(
        self,
        world: World,
        indices: IntArray,
        group: int,
        name: str | None,
        pinned: IntArray,
        link_length: float,
        mass: float,
        attached: list[tuple[int, int]],
    ) -> None:
        super().__init__(world, indices, group, name)
        self.pinned = pinned
        self.link_length = link_length
        self.length = link_length * (len(indices) - 1)
        self.mass = mass
        self.attached = attached

    def set_pin_targets(self, positions: ArrayLike) -> None:
        """Move the pinned particles to ``positions`` (K, 3), world metres, in the order of ``pinned``, by
        the end of the next step (a straight line over its small steps); see :meth:`World.set_pin_targets`."""
        self._world.set_pin_targets(self.indices[self.pinned], positions)


def resample_polyline(points: FloatArray, spacing: float) -> FloatArray:
    """(P, 3) points at equal arc-length steps (the nearest to ``spacing`` that divides the length) along
    the polyline ``points`` (K, 3), both ends kept; P >= 2."""
    seg = np.linalg.norm(np.diff(points, axis=0), axis=1)
    s = np.concatenate([[0.0], np.cumsum(seg)])
    length = float(s[-1])
    if length <= 0.0:
        raise SimulationInputError("the rope's points all coincide: give a polyline with a length > 0")
    n_links = max(1, round(length / spacing))
    t = np.linspace(0.0, length, n_links + 1)
    keep = np.concatenate([[True], seg > 0.0])  # np.interp needs increasing abscissae
    out: FloatArray = np.stack([np.interp(t, s[keep], points[keep, k]) for k in range(3)], axis=1)
    return out


def _pinned_local(pinned: ArrayLike | str | None, n: int) -> IntArray:
    """Local particle indices from None, "start", "end", "both", indices (negative from the end) or a mask."""
    if pinned is None:
        return np.zeros(0, np.int64)
    if isinstance(pinned, str):
        ends = {"start": [0], "end": [n - 1], "both": [0, n - 1]}
        if pinned not in ends:
            raise SimulationInputError(f"pinned must be 'start', 'end', 'both' or indices, got {pinned!r}")
        return np.unique(np.array(ends[pinned], np.int64))
    p = np.asarray(pinned)
    if p.dtype == bool:
        if p.shape != (n,):
            raise SimulationInputError(
                f"a pinned mask needs one entry per rope particle ({n}), got {p.shape}"
            )
        return np.flatnonzero(p).astype(np.int64)
    p = p.ravel()
    if p.size and (not np.issubdtype(p.dtype, np.integer) or p.min() < -n or p.max() >= n):
        raise SimulationInputError(
            f"pinned must be rope particle indices in {-n}..{n - 1} (-1 is the last), got {pinned!r}"
        )
    return np.unique(np.where(p < 0, p + n, p).astype(np.int64))


def rope_constraints(
    x: FloatArray,
    first: int,
    stretch_compliance: float,
    bend_compliance: float | None,
    give: float | None,
    pin_local: IntArray,
) -> tuple[DistanceConstraints, DistanceConstraints, tuple[IntArray, IntArray, FloatArray] | None]:
    """A rope's links, bending pairs (empty without ``bend_compliance``) and tethers (None without pins or
    ``give``), on global indices (``first`` + local) of its particles ``x`` (P, 3)."""
    n = len(x)
    local = np.arange(n, dtype=np.int64)
    links = np.stack([local[:-1], local[1:]], axis=1)
    stretch = DistanceConstraints.build(links, x, np.full(n - 1, stretch_compliance), True, n)
    if bend_compliance is None or n < 3:
        pairs = np.zeros((0, 2), np.int64)
    else:
        pairs = np.stack([local[:-2], local[2:]], axis=1)
    bend = DistanceConstraints.build(pairs, x, np.full(len(pairs), bend_compliance or 0.0), False, n)
    # Straight at rest: two links end to end (a rope remembers no curl).
    bend.rest_length = stretch.rest_length.mean() * 2.0 * np.ones(len(pairs))
    for con in (stretch, bend):
        con.a = con.a + first
        con.b = con.b + first
    tether = None
    if give is not None and len(pin_local):
        free, anchor, length = tethers(links, x, pin_local)
        limit = 1.0 + give + compliant_strain(stretch_compliance, ROPE_TETHER_TENSION)
        tether = (free + first, anchor + first, length * limit)
    return stretch, bend, tether


# Tension, N, of a plausible maximal load on a rope (a 100 kg climber): tethers leave a rope the stretch
# its compliance allows under it (compliance alpha, m/N per link of length l: strain alpha T / l; the
# per-link form ``compliant_strain`` uses is alpha T, exact for 1 m links, an upper bound for shorter).
ROPE_TETHER_TENSION = 1000.0


def _ties(
    attach: Sequence[tuple[int, RigidBody]] | None, x: FloatArray, world_x: FloatArray, bodies: list[Body]
) -> list[tuple[int, int, float]]:
    """(rope particle (local), rigid particle (world), distance now) per ``attach`` item (local index,
    body): the body's particle nearest the rope particle."""
    ties: list[tuple[int, int, float]] = []
    n = len(x)
    for item in attach or ():
        try:
            k, body = item
        except (TypeError, ValueError):
            raise SimulationInputError(
                f"attach items must be (rope particle index, rigid body), got {item!r}"
            ) from None
        if not isinstance(body, RigidBody) or not any(b is body for b in bodies):
            raise SimulationInputError(f"attach: {body!r} is not a rigid body of this world")
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not -n <= k < n:
            raise SimulationInputError(f"attach: rope particle index must be in {-n}..{n - 1}, got {k!r}")
        k = int(k) % n
        d = np.linalg.norm(world_x[body.indices] - x[k], axis=1)
        j = int(np.argmin(d))
        ties.append((k, int(body.indices[j]), float(d[j])))
    return ties


def _tie_tethers(
    tether: tuple[IntArray, IntArray, FloatArray],
    ties: list[tuple[int, int, float]],
    first: int,
    x: FloatArray,
    pin_local: IntArray,
    give: float,
    compliance: float,
) -> tuple[IntArray, IntArray, FloatArray]:
    """``tether`` with one more per tie: the rigid particle to the rope's pin nearest the tied rope particle
    along the chain, as long as that particle's arc length to it plus the tie, times the rope's limit."""
    free, anchor, length = tether
    arc = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(x, axis=0), axis=1))])
    limit = 1.0 + give + compliant_strain(compliance, ROPE_TETHER_TENSION)
    extra = []
    for k, j, d in ties:
        nearest = int(pin_local[np.argmin(np.abs(arc[pin_local] - arc[k]))])
        extra.append((j, first + nearest, abs(arc[k] - arc[nearest]) * limit + d))
    return (
        np.concatenate([free, np.array([e[0] for e in extra], np.int64)]),
        np.concatenate([anchor, np.array([e[1] for e in extra], np.int64)]),
        np.concatenate([length, np.array([e[2] for e in extra])]),
    )


def add_rope(
    builder: WorldBuilder,
    points: ArrayLike,
    radius: float | None,
    mass: float | None,
    density: float,
    stretch_compliance: float,
    bend_compliance: float | None,
    pinned: ArrayLike | str | None,
    friction: float,
    self_collision: bool,
    name: str | None,
    initial_velocity: ArrayLike,
    tether_give: float | None,
    attach: Sequence[tuple[int, RigidBody]] | None,
) -> Rope:
    """Add a rope: particles every ~2r along a polyline, links, bending, pins and ties.

    Args:
        builder: the world's builder (checks, particle arrays).
        points: (K, 3) polyline, world metres, K >= 2; resampled every ~2r (both ends kept).
        radius: the rope's particle radius, metres; None: the world's (core/sizes.py: contacts at the
            sum of the two radii).
        mass: whole rope, kg, spread evenly over its particles; None: ``density`` times a solid
            cylinder of radius r along the rope.
        density: kg/m^3, used without ``mass``.
        stretch_compliance: XPBD compliance of each link, m/N (0 = inextensible).
        bend_compliance: XPBD compliance of the distance constraint across two links, m/N (rest: the
            straight rope); None: no bending stiffness (a chain).
        pinned: "start", "end", "both", rope particle indices (negative from the end) or a (P,) mask:
            particles of infinite mass (they follow ``Rope.set_pin_targets``).
        friction: Coulomb coefficient.
        self_collision: the rope collides with itself (neighbours within 2 links excluded).
        name: optional label.
        initial_velocity: (3,) velocity of every free particle at the start, m/s.
        tether_give: pinned ropes: no particle farther from its nearest pin than (1 + give +
            stretch_compliance * 1000 N) times its rest arc length; None: no tethers.
        attach: (rope particle index, rigid body) pairs: the particle is tied to the body's nearest particle.
    """
    v0 = vector(initial_velocity, "initial_velocity")
    r = builder._radius(radius)
    p = np.asarray(points, dtype=np.float64) if not isinstance(points, np.ndarray) else points.astype(float)
    if p.ndim != 2 or p.shape[1] != 3 or len(p) < 2:
        raise SimulationInputError(f"rope points must be a (K, 3) polyline with K >= 2, got shape {p.shape}")
    if not np.all(np.isfinite(p)) or np.abs(p).max() > MAX_COORDINATE:
        raise SimulationInputError(
            f"rope points must be finite and within {MAX_COORDINATE:g} m of the origin"
        )
    sc = nonnegative(stretch_compliance, "stretch_compliance")
    bc = None if bend_compliance is None else nonnegative(bend_compliance, "bend_compliance")
    friction = nonnegative(friction, "friction")
    give = None if tether_give is None else nonnegative(tether_give, "tether_give")
    x = resample_polyline(p, 2.0 * r)
    n = len(x)
    builder._check_capacity(n, f"{name!r} as a rope" if name else "this rope")
    link = float(np.linalg.norm(x[1] - x[0]))
    if mass is None:
        m_particle = positive(density, "density") * np.pi * r * r * link * (n - 1) / n
    else:
        m_particle = positive(mass, "rope mass") / n
    pin_local = _pinned_local(pinned, n)
    ties = _ties(attach, x, builder.state.positions, builder.bodies)
    inv_mass = np.full(n, 1.0 / m_particle)
    inv_mass[pin_local] = 0.0
    velocity = np.tile(v0, (n, 1))
    velocity[pin_local] = 0.0
    idx, group = builder._append(
        x, bool(self_collision), velocity, inv_mass=inv_mass, contact_inv_mass=inv_mass, kind=KIND_ROPE,
        friction=friction, radius=r,
    )  # fmt: skip
    first = int(idx[0])
    stretch, bend, tether = rope_constraints(x, first, sc, bc, give, pin_local)
    if ties:  # the ties join the coloured links; rest lengths: the distances now (build measures them)
        pairs = np.concatenate(
            [np.stack([stretch.a, stretch.b], axis=1), [(first + k, j) for k, j, _ in ties]]
        )
        total = builder.state.particle_count
        stretch = DistanceConstraints.build(
            pairs, builder.state.positions, np.full(len(pairs), sc), True, total
        )
    if ties and tether is not None:
        # A tied body hangs on the rope's tethers too (its particle no farther from the rope's pin than
        # the rope end's tether plus the tie): the links alone, between light rope particles and a heavy
        # body, stretched 11% under an 8 kg crate on a 0.08 kg rope.
        tether = _tie_tethers(tether, ties, first, x, pin_local, give or 0.0, sc)
    builder.model.add_cloth_constraints(stretch, bend, tether)
    total_mass = float(m_particle * (n - len(pin_local)))
    body = Rope(builder.world, idx, group, name, pin_local, link, total_mass, [(k, j) for k, j, _ in ties])
    builder.bodies.append(body)
    return body

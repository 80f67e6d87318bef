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
from .rope_ties import RopeTies

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
        attached: (rope particle (local), rigid body number) per tie to a rigid body.
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

    @property
    def tie_forces(self) -> FloatArray:
        """(T,) force each of this rope's ties (``attached`` order) applied in the last small step, N: the
        rope's tension where it holds the body."""
        ties = self._world.model.rope_ties
        if ties is None:
            return np.zeros(0)
        return ties.force[np.isin(ties.particle, self.indices)].copy()

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
    link: float,
) -> tuple[DistanceConstraints, DistanceConstraints, tuple[IntArray, IntArray, FloatArray] | None]:
    """A rope's links, bending pairs (empty without ``bend_compliance``) and tethers (None without pins or
    ``give``), on global indices (``first`` + local) of its particles ``x`` (P, 3), every link ``link``
    metres long at rest (the arc-length step: a link across a corner of the drawn polyline is a shorter
    chord, and measured as such a 65-link rope drawn as a V was 0.36% short)."""
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
    stretch.rest_length = np.full(n - 1, link)
    bend.rest_length = np.full(len(pairs), 2.0 * link)
    for con in (stretch, bend):
        con.a = con.a + first
        con.b = con.b + first
    tether = None
    if give is not None and len(pin_local):
        straight = np.outer(local * link, (1.0, 0.0, 0.0))  # arc lengths along the rope, not chords
        free, anchor, length = tethers(links, straight, pin_local)
        limit = 1.0 + give + compliant_strain(stretch_compliance, ROPE_TETHER_TENSION)
        tether = (free + first, anchor + first, length * limit)
    return stretch, bend, tether


# Tension, N, of a plausible maximal load on a rope (a 100 kg climber): tethers leave a rope the stretch
# its compliance allows under it (compliance alpha, m/N per link of length l: strain alpha T / l; the
# per-link form ``compliant_strain`` uses is alpha T, exact for 1 m links, an upper bound for shorter).
ROPE_TETHER_TENSION = 1000.0


def _ties(
    attach: Sequence[tuple[int, RigidBody]] | None, n: int, bodies: list[Body]
) -> list[tuple[int, int]]:
    """(rope particle (local), rigid body number) per ``attach`` item (local index, body), checked."""
    ties: list[tuple[int, int]] = []
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
        ties.append((int(k) % n, body.number))
    return ties


def _rope_ties(
    ties: list[tuple[int, int]],
    first: int,
    x: FloatArray,
    builder: WorldBuilder,
    tether: tuple[IntArray, IntArray, FloatArray] | None,
) -> RopeTies:
    """The ties as point attachments (:mod:`.rope_ties`): each pivot where its rope particle is now, in its
    body's build frame; with tethers, each body's pivot tethered to the pin its rope particle is."""
    state = builder.state
    k = np.array([t[0] for t in ties], np.int64)
    number = np.array([t[1] for t in ties], np.int64)
    offset = x[k] - state.rigid_center[number]
    anchor = np.einsum("kji,kj->ki", state.rigid_rotation[number], offset)  # R^T (x - c)
    pin, limit = np.full(len(k), -1, np.int64), np.full(len(k), np.inf)
    if tether is not None:  # the tied particle's own tether, if it has one (a pinned one has none)
        free, anchor_pin, length = tether
        row = {int(f): i for i, f in enumerate(free.tolist())}  # build time only
        for i, kk in enumerate(k.tolist()):
            if first + kk in row:
                pin[i], limit[i] = anchor_pin[row[first + kk]], length[row[first + kk]]
    return RopeTies(k + first, number, anchor, pin, limit)


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
        attach: (rope particle index, rigid body) pairs: the particle is held at the point of the body
            where it is now (a point attachment solved on the body's pose, :mod:`.rope_ties`).
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
    link = float(np.linalg.norm(np.diff(p, axis=0), axis=1).sum()) / (n - 1)  # the arc-length step
    if mass is None:
        m_particle = positive(density, "density") * np.pi * r * r * link * (n - 1) / n
    else:
        m_particle = positive(mass, "rope mass") / n
    pin_local = _pinned_local(pinned, n)
    ties = _ties(attach, n, builder.bodies)
    inv_mass = np.full(n, 1.0 / m_particle)
    inv_mass[pin_local] = 0.0
    velocity = np.tile(v0, (n, 1))
    velocity[pin_local] = 0.0
    idx, group = builder._append(
        x, bool(self_collision), velocity, inv_mass=inv_mass, contact_inv_mass=inv_mass, kind=KIND_ROPE,
        friction=friction, radius=r,
    )  # fmt: skip
    first = int(idx[0])
    stretch, bend, tether = rope_constraints(x, first, sc, bc, give, pin_local, link)
    builder.model.add_cloth_constraints(stretch, bend, tether)
    a = np.arange(first, first + n - 1, dtype=np.int64)
    builder.model.add_rope_links(a, a + 1, np.full(n - 1, link), np.full(n - 1, sc))
    if ties:  # point attachments solved on the bodies' poses (core/rope_ties.py)
        builder.model.add_ties(_rope_ties(ties, first, x, builder, tether))
    total_mass = float(m_particle * (n - len(pin_local)))
    body = Rope(builder.world, idx, group, name, pin_local, link, total_mass, ties)
    builder.bodies.append(body)
    return body

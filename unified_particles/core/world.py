# SPDX-License-Identifier: GPL-3.0-or-later
"""The particle world: rigid bodies, cloth and grains as one set of particles (Macklin et al. 2014).

How to use it::

    import numpy as np
    from unified_particles.core import World

    w = World(radius=0.05)                                   # SI units, Z up, gravity -9.81 m/s^2
    w.add_collider_plane(point=(0, 0, 0), normal=(0, 0, 1))  # the ground
    box = w.add_rigid(box_vertices, box_faces, density=500)  # any triangle mesh with volume
    cloth = w.add_cloth(grid_vertices, grid_faces, mass=0.2, pinned=[0, 10])
    sand = w.add_granular(points, friction=0.8)              # (N, 3) grain centres
    bowl = w.add_collider_mesh(bowl_vertices, bowl_faces, transform=np.eye(4))
    for frame in range(48):
        bowl.set_transform(matrix_for(frame))                # animated collider (optional)
        w.step(1 / 24)                                       # one frame
        box.transform                                        # 4x4: build-time vertices -> now
        cloth.vertex_positions                               # (V, 3) in the input vertex order
        sand.positions                                       # (N, 3)
    snap = w.state()                                         # a typed Snapshot (np.savez(**snap.to_arrays()))
    w.set_state(snap)                                        # resume bit-identically

* ``World.positions`` / ``World.velocities`` are the live (N, 3) arrays; edit them in place between
  steps. Adding a body replaces them by longer arrays, so read them again after ``add_*``.
* Bodies and colliders may be added at any time, also after steps have run; new particles start at
  rest. A snapshot only restores into a world with the same bodies (same particle count).
* Every bad input raises :class:`SimulationInputError` with a message a user can act on.
* Solver budget: one frame ``step(dt)`` runs ``substeps * iterations`` small steps of one solver
  iteration each ("Small Steps", Macklin et al. 2019): for the same cost this converges much better
  than few substeps with several Jacobi iterations, and XPBD needs no stored multipliers.

``World`` is a façade over three parts, as in Newton/warp.sim: the static :class:`~.model.ParticleModel`
(masses, groups, rest shapes, constraints), the time-varying :class:`~.state.ParticleState` and the
:class:`~.solver.Solver`, whose :meth:`~.solver.Solver.small_step` follows Algorithm 1 of the paper;
each constraint family is a pure function in its own module (contacts, colliders, shape_matching,
distance). Settings are declared once in :mod:`.settings`.

Choices worth knowing (each measured; see the tests):

* Cloth stretch is graph-coloured Gauss-Seidel (no Jacobi dilution), bending is Jacobi, stretch last.
* Particle contacts scale each pair by 1 / max(n_i, n_j) instead of dividing per particle: the same
  bound on a particle's total correction, but equal and opposite, so momentum is conserved.
* Rigid particles that touch something weigh ``rigid_contact_weight`` times more in shape matching
  (else friction is averaged away and a box creeps down a slope it should stick to); their contact
  mass is raised to match, so the body's momentum change still equals its partner's.
* Contact mass ratios are limited to ``max_mass_ratio`` (a heavy box on a light cloth would tunnel).
* Neighbour candidates carry a margin; when a particle moves beyond half of it, only the particles that
  moved are searched again (or, when many did, everything).

Known limits (docs/physics.md): a column of boxes turned by a degree or off-centre still falls; an
unpinned cloth draped over a collider stretches at the support (26% at the apex in the S1 benchmark), as
the weight reaches it a few edges per small step; Position Based Fluids compress under deep columns with
one density iteration per small step.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import fields
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import geometry
from .bodies import Body, Cloth, Fluid, Granular, RigidBody
from .colliders import (
    MeshCollider,
    PlaneCollider,
    as_transform,
    deforming_vertices,
    restore_deforming_vertices,
)
from .distance import DistanceConstraints, bending_pairs, compliant_strain, mesh_edges, tethers
from .errors import SimulationInputError
from .fields import FieldSystem, ForceField
from .kinematic import nearest_rotation
from .model import KIND_CLOTH, KIND_FLUID, KIND_GRANULAR, KIND_RIGID, ParticleModel
from .settings import SolverSettings
from .solver import PinMotion, SoftPinMotion, Solver, diverged_particles, divergence_error
from .state import ParticleState, Snapshot, rigid_transforms

__all__ = ["BYTES_PER_PARTICLE", "SolverSettings", "World"]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

# Rough peak bytes per particle during a step (state, model, candidate pairs and temporaries).
BYTES_PER_PARTICLE = 1200
# Physical memory assumed where the OS does not tell (bytes).
FALLBACK_PHYSICAL_MEMORY = 8e9
# Default memory_limit as a fraction of physical memory (SolverSettings.memory_limit = None).
DEFAULT_MEMORY_FRACTION = 0.5
# Default rolling resistance of grains (contacts.rolling_resistance): poured dry sand (friction 0.7, the
# Dry Sand preset) piles at 32-33 degrees with it (tests/core/test_granular_pile.py, docs/physics.md).
DEFAULT_ROLLING_FRICTION = 0.0


def _positive(value: float, what: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise SimulationInputError(f"{what} must be a number, got {value!r}") from None
    if not np.isfinite(v) or v <= 0.0:
        raise SimulationInputError(f"{what} must be a finite number > 0, got {value!r}")
    return v


def _nonnegative(value: float, what: str, upper: float = float("inf")) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise SimulationInputError(f"{what} must be a number, got {value!r}") from None
    if not np.isfinite(v) or v < 0.0 or v > upper:
        bound = f" and <= {upper}" if np.isfinite(upper) else ""
        raise SimulationInputError(f"{what} must be a finite number >= 0{bound}, got {value!r}")
    return v


def _count(value: int, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise SimulationInputError(f"{what} must be a whole number >= 1, got {value!r}")
    return int(value)


def _vector(value: ArrayLike, what: str) -> FloatArray:
    """Three finite numbers (a velocity), as a (3,) array."""
    try:
        v = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise SimulationInputError(f"{what} must be 3 numbers (x, y, z), got {value!r}") from None
    if v.shape != (3,) or not np.all(np.isfinite(v)):
        raise SimulationInputError(f"{what} must be 3 finite numbers (x, y, z), got {value!r}")
    return v


def _physical_memory() -> float:
    try:
        return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return FALLBACK_PHYSICAL_MEMORY


class World:
    """All particles, constraints and colliders of one simulation, and the solver step.

    Args:
        radius: particle radius r, metres (> 0). One radius for the whole world, as in FleX; rigid
            bodies and grains are sampled at spacing 2r, cloth has one particle per vertex.
        gravity: (3,) acceleration, m/s^2.
        substeps, iterations: solver budget per frame; ``step`` runs substeps * iterations small
            steps of one iteration each.
        **settings: see :class:`SolverSettings`. Unknown names raise SimulationInputError.

    Attributes:
        model: the static :class:`ParticleModel` (read it, do not change it).
        settings: the :class:`SolverSettings` (substeps and iterations included).
        bodies, planes, meshes: what was added, in order.
        time, frame: simulated time (s) and number of ``step`` calls so far.
    """

    def __init__(
        self,
        radius: float,
        gravity: ArrayLike = (0.0, 0.0, -9.81),
        substeps: int = 4,
        iterations: int = 4,
        **settings: Any,
    ) -> None:
        self.radius = _positive(radius, "radius")
        g = np.asarray(gravity, dtype=np.float64)
        if g.shape != (3,) or not np.all(np.isfinite(g)):
            raise SimulationInputError(f"gravity must be 3 finite numbers, got {gravity!r}")
        self.gravity = g
        substeps = _count(substeps, "substeps")
        iterations = _count(iterations, "iterations")
        known = {f.name for f in fields(SolverSettings)}
        unknown = sorted(set(settings) - known)
        if unknown:
            raise SimulationInputError(
                f"unknown setting(s) {', '.join(unknown)}; known settings: {', '.join(sorted(known))}"
            )
        self.settings = SolverSettings(substeps=substeps, iterations=iterations, **settings)
        self.settings.validate()
        margin = self.settings.collision_margin
        self.margin = self.radius if margin is None else float(margin)
        limit = self.settings.memory_limit
        self.memory_limit = DEFAULT_MEMORY_FRACTION * _physical_memory() if limit is None else float(limit)

        self.time = 0.0
        self.frame = 0
        self.bodies: list[Body] = []
        self.model = ParticleModel()
        self._state = ParticleState()
        # (particles, positions at the end of the next step) given by set_pin_targets since the last step
        self._pin_targets: list[tuple[IntArray, FloatArray]] = []
        self._soft_pin_targets: list[tuple[IntArray, FloatArray]] = []  # the same for soft pins' anchors
        self._solver = Solver(self.model, self.settings, self.radius, self.margin, g)

    # ------------------------------------------------------------------ public state
    @property
    def planes(self) -> list[PlaneCollider]:
        """The plane colliders added so far, in order (a copy of the list)."""
        return list(self._solver.colliders.planes)

    @property
    def meshes(self) -> list[MeshCollider]:
        """The mesh colliders added so far, in order (a copy of the list)."""
        return list(self._solver.colliders.meshes)

    @property
    def substeps(self) -> int:
        """Substeps per frame (``settings.substeps``)."""
        return int(self.settings.substeps)

    @property
    def iterations(self) -> int:
        """Solver iterations per substep (``settings.iterations``)."""
        return int(self.settings.iterations)

    @property
    def particle_count(self) -> int:
        """Number of particles N."""
        return self._state.particle_count

    @property
    def positions(self) -> FloatArray:
        """(N, 3) particle positions, metres: the live array, writable between steps."""
        return self._state.positions

    @positions.setter
    def positions(self, value: ArrayLike) -> None:
        self._state.positions[...] = self._checked_state_array(value, "positions")

    @property
    def velocities(self) -> FloatArray:
        """(N, 3) particle velocities, m/s: the live array, writable between steps."""
        return self._state.velocities

    @velocities.setter
    def velocities(self, value: ArrayLike) -> None:
        self._state.velocities[...] = self._checked_state_array(value, "velocities")

    @property
    def inverse_masses(self) -> FloatArray:
        """(N,) particle inverse masses, 1/kg (0 for pinned particles)."""
        self._ensure_built()
        return self.model.particle_inv_mass.copy()

    @property
    def rigid_rotations(self) -> FloatArray:
        """(B, 3, 3) each rigid body's rotation from its build frame to now: the live array."""
        return self._state.rigid_rotation

    @property
    def rigid_centers(self) -> FloatArray:
        """(B, 3) each rigid body's current centre of mass, metres: the live array."""
        return self._state.rigid_center

    def _checked_state_array(self, value: ArrayLike, what: str) -> FloatArray:
        a = np.asarray(value, dtype=np.float64)
        if a.shape != self._state.positions.shape or not np.all(np.isfinite(a)):
            raise SimulationInputError(
                f"{what} must be a finite ({self.particle_count}, 3) array, got {a.shape}"
            )
        return a

    # ------------------------------------------------------------------ bodies
    def check_capacity(self, new_particles: int, what: str = "this") -> None:
        """Raise SimulationInputError if ``new_particles`` more would not fit in the memory limit.

        The message names the memory needed and the smallest particle radius that fits. Front ends
        call it with an estimate (``geometry.estimate_interior_count``) before they build anything.
        """
        total = self.particle_count + int(new_particles)
        need = total * BYTES_PER_PARTICLE
        if need > self.memory_limit:
            allowed = max(self.memory_limit / BYTES_PER_PARTICLE - self.particle_count, 1.0)
            suggested = self.radius * (max(new_particles, 1) / allowed) ** (1.0 / 3.0)
            raise SimulationInputError(
                f"{what} would make {total:,} particles (about {need / 1e9:.1f} GB while stepping), "
                f"more than the memory limit of {self.memory_limit / 1e9:.1f} GB; "
                f"use a particle radius of at least {suggested:.4g} m (now {self.radius:.4g} m) "
                "or fewer/smaller objects"
            )

    def check_fill(
        self,
        vertices: ArrayLike,
        faces: ArrayLike,
        what: str = "this",
        max_count: float | None = None,
        unit: str = "particles",
    ) -> None:
        """Raise SimulationInputError if filling this mesh at this radius breaks any limit.

        The limits: the memory limit (with the particles already in the world), the sampling grid
        (``geometry.MAX_SAMPLE_GRID_NODES``) and, if given, ``max_count`` (e.g. a front end's grain limit).
        The message names every limit broken and the smallest radius (4 digits) that keeps all of them,
        computed with the estimate the fill itself uses, so the number it suggests works.
        """
        spacing = 2.0 * self.radius
        measure = geometry.fill_measure(vertices, faces)
        count = measure.count(spacing)
        nodes = measure.grid_nodes(spacing)
        total = self.particle_count + count
        need = total * BYTES_PER_PARTICLE
        allowed = max(self.memory_limit / BYTES_PER_PARTICLE - self.particle_count, 1.0)
        reasons = []
        if need > self.memory_limit:
            reasons.append(
                f"would make {total:,} particles (about {need / 1e9:.1f} GB while stepping), "
                f"more than the memory limit of {self.memory_limit / 1e9:.1f} GB"
            )
        if max_count is not None and count > max_count:
            reasons.append(f"would hold about {count:,} {unit} (at most {int(max_count):,})")
        if nodes > geometry.MAX_SAMPLE_GRID_NODES:
            limit_nodes = geometry.MAX_SAMPLE_GRID_NODES
            reasons.append(f"needs a grid of {nodes:,} candidate particles to fill (limit {limit_nodes:,})")
        if not reasons:
            return
        limit = allowed if max_count is None else min(allowed, float(max_count))
        suggested = geometry.smallest_fill_radius(measure, max_count=limit)
        raise SimulationInputError(
            f"{what} {' and '.join(reasons)}; use a particle radius of at least {suggested:.4g} m "
            f"(now {self.radius:.4g} m) or fewer/smaller objects"
        )

    def _append(
        self,
        x: FloatArray,
        group_self_collides: bool,
        velocity: FloatArray | None = None,
        active: int | None = None,
        **per_particle: Any,
    ) -> tuple[IntArray, int]:
        """New particles (at rest, or with ``velocity`` (P, 3)) in the model and the state, the first
        ``active`` of them live (None: all); the solver forgets what it derived."""
        idx, group = self.model.add_particles(x, group_self_collides, **per_particle)
        v = None if velocity is None else np.broadcast_to(velocity, x.shape).copy()
        self._state.add_particles(x, v, active)
        self._solver.invalidate()
        return idx, group

    def add_rigid(
        self,
        vertices: ArrayLike,
        faces: ArrayLike,
        density: float = 1000.0,
        friction: float = 0.5,
        mass: float | None = None,
        name: str | None = None,
        initial_velocity: ArrayLike = (0.0, 0.0, 0.0),
        angular_velocity: ArrayLike = (0.0, 0.0, 0.0),
    ) -> RigidBody:
        """Add a rigid body filled with particles on a grid of spacing 2r inside the mesh.

        Args:
            vertices: (V, 3) mesh vertices in world space at build time, metres.
            faces: (F, 3) triangle vertex indices (open and non-manifold meshes are fine).
            density: kg/m^3; each particle weighs density * (2r)^3. Ignored if ``mass`` is given.
            friction: Coulomb coefficient of the surface.
            mass: total mass, kg (optional, overrides density).
            name: optional label.
            initial_velocity: (3,) velocity of the centre of mass at the start, m/s (world axes).
            angular_velocity: (3,) spin at the start, rad/s about world axes through the centre of
                mass (right-handed: (0, 0, 1) turns counter-clockwise seen from above).
        """
        v0 = _vector(initial_velocity, "initial_velocity")
        w0 = _vector(angular_velocity, "angular_velocity")
        v = geometry.as_vertices(vertices)
        f = geometry.as_triangles(faces, len(v))
        density = _positive(density, "density")
        friction = _nonnegative(friction, "friction")
        spacing = 2.0 * self.radius
        self.check_fill(v, f, f"{name!r} as a rigid body" if name else "this rigid body")
        s = geometry.sample_interior(v, f, spacing)
        pts = np.asarray(s.points, dtype=np.float64)
        n = len(pts)
        m_particle = _positive(mass, "mass") / n if mass is not None else density * spacing**3
        total = m_particle * n
        center = pts.mean(axis=0)
        # Depth below the body's outermost particle layer, not below the mesh: the contacts treat a
        # particle deeper than 1.75 r as interior (its SDF normal replaces the pair direction). A
        # coarsely filled body can have its outer layer that deep in the mesh (a 0.2 m box at
        # r = 3.5 cm is 8 particles 6.5 cm inside), and then every contact on it pushed along an
        # arbitrary face normal: grains landing on such a box were shoved sideways, not up, by the
        # whole overlap in every iteration and shot it and themselves away at 10-20 m/s.
        depth = np.maximum(-np.asarray(s.sdf, dtype=np.float64), 0.0)
        depth -= depth.min()
        idx, group = self._append(
            pts,
            False,
            v0 + np.cross(w0, pts - center),  # rigid motion: v_i = v + w x (x_i - c)
            inv_mass=1.0 / m_particle,
            # Contacts use the particle's own mass, as in FleX: with the whole body's mass a box on
            # a cloth reaches mass ratios of 1e4 and needs the ratio limit for every contact.
            # Shape matching (touching particles weigh more) then carries the correction to the body.
            contact_inv_mass=1.0 / m_particle,
            kind=KIND_RIGID,
            friction=friction,
            sdf_depth=depth,
            sdf_normal=np.asarray(s.sdf_gradient, dtype=np.float64),
        )
        number = self.model.add_rigid_body(idx, pts, center, m_particle, s.faces())
        self._state.add_rigid_body(center)
        body = RigidBody(self, idx, group, name, number, total, center)
        self.bodies.append(body)
        return body

    def add_cloth(
        self,
        vertices: ArrayLike,
        faces: ArrayLike,
        mass: float = 1.0,
        stretch_compliance: float = 0.0,
        bend_compliance: float = 1e-3,
        pinned: ArrayLike | None = None,
        self_collision: bool = False,
        friction: float = 0.5,
        name: str | None = None,
        tether_give: float | None = 0.1,
        initial_velocity: ArrayLike = (0.0, 0.0, 0.0),
        soft_pins: ArrayLike | None = None,
        soft_pin_frequency: ArrayLike = 2.0,
    ) -> Cloth:
        """Add a cloth: one particle per vertex, distance constraints on edges and across edges.

        Args:
            vertices: (V, 3) world-space vertex positions, metres.
            faces: (F, 3) triangles.
            mass: whole cloth, kg, spread over the vertices in proportion to their triangle area.
            stretch_compliance: XPBD compliance of edges, m/N (0 = inextensible).
            bend_compliance: XPBD compliance of the bending distance constraints, m/N.
            pinned: vertex indices (or a (V,) bool mask) that never move (infinite mass).
            self_collision: let the cloth's particles collide with each other (those closer than
                two diameters in the rest shape are excluded).
            friction: Coulomb coefficient.
            name: optional label.
            tether_give: pinned cloth only: no vertex gets farther from its nearest pin than
                (1 + tether_give + stretch_compliance * 1000 N/m) times its rest path length along the
                mesh (long-range attachments, FleX's "tether give"), however heavy the load: the stretch
                the cloth's own compliance allows under a plausible maximal load (1000 N per metre of
                width, ``distance.compliant_strain``) plus this give; 0.1 lets an inextensible cloth
                stretch 10%. None: no tethers.
            initial_velocity: (3,) velocity of every free vertex at the start, m/s (pinned ones stay).
            soft_pins: vertex indices (or a (V,) bool mask), not also in ``pinned``, each held to a target
                (its start position, moved by ``Cloth.set_soft_pin_targets``) by a zero-length spring: a
                soft pin, like Blender's cloth *Pin Stiffness*.
            soft_pin_frequency: Hz, > 0, scalar or one per soft pin: each spring's stiffness as the
                natural frequency of its vertex on it, k = m (2 pi f)^2 (XPBD compliance 1 / k), so a
                soft pin's give does not depend on the mesh resolution or the cloth's mass.
        """
        v0 = _vector(initial_velocity, "initial_velocity")
        v = geometry.as_vertices(vertices)
        f = geometry.as_triangles(faces, len(v))
        mass = _positive(mass, "cloth mass")
        sc = _nonnegative(stretch_compliance, "stretch_compliance")
        bc = _nonnegative(bend_compliance, "bend_compliance")
        friction = _nonnegative(friction, "friction")
        give = None if tether_give is None else _nonnegative(tether_give, "tether_give")
        n = len(v)
        self.check_capacity(n, f"{name!r} as cloth" if name else "this cloth")
        pin_local = self._pinned_indices(pinned, n)
        soft_local = self._pinned_indices(soft_pins, n)
        if np.intersect1d(soft_local, pin_local).size:
            raise SimulationInputError("a vertex cannot be both pinned and soft-pinned: pick one")
        frequency = np.broadcast_to(np.asarray(soft_pin_frequency, dtype=np.float64), soft_local.shape)
        if soft_local.size and not (np.all(np.isfinite(frequency)) and np.all(frequency > 0.0)):
            raise SimulationInputError(f"soft_pin_frequency must be positive Hz, got {soft_pin_frequency!r}")
        # Lumped mass: each triangle gives a third of its area to each corner.
        area = 0.5 * np.linalg.norm(np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]]), axis=1)
        vert_area = np.bincount(f.ravel(), weights=np.repeat(area / 3.0, 3), minlength=n)
        if vert_area.sum() <= 0.0:
            raise SimulationInputError("cloth mesh has zero area (all triangles degenerate)")
        vert_area = np.where(vert_area > 0.0, vert_area, vert_area[vert_area > 0].mean())
        m = mass * vert_area / vert_area.sum()
        inv_mass = 1.0 / m
        inv_mass[pin_local] = 0.0
        velocity = np.tile(v0, (n, 1))
        velocity[pin_local] = 0.0
        idx, group = self._append(
            v,
            bool(self_collision),
            velocity,
            inv_mass=inv_mass,
            contact_inv_mass=inv_mass,
            kind=KIND_CLOTH,
            friction=friction,
        )
        edges = mesh_edges(f)
        bend = bending_pairs(f)
        stretch = DistanceConstraints.build(edges, v, np.full(len(edges), sc), True, n)
        bending = DistanceConstraints.build(bend, v, np.full(len(bend), bc), False, n)
        for con in (stretch, bending):
            con.a = con.a + idx[0]
            con.b = con.b + idx[0]
        tether = None
        if give is not None:
            free, anchor, length = tethers(edges, v, pin_local)
            # Tethers bound only the stretch beyond what the cloth's compliance allows (a soft cloth sags
            # further under a heavier load); they hold what a few solver sweeps per step cannot.
            limit = 1.0 + give + compliant_strain(sc)
            tether = (free + idx[0], anchor + idx[0], length * limit)
        self.model.add_cloth_constraints(stretch, bending, tether)
        if soft_local.size:  # k = m (2 pi f)^2, compliance 1 / k
            self.model.add_soft_pins(
                soft_local + idx[0], inv_mass[soft_local] / (2.0 * np.pi * frequency) ** 2
            )
            self._state.soft_pin_target = np.concatenate([self._state.soft_pin_target, v[soft_local]])
        body = Cloth(self, idx, group, name, pin_local, len(stretch), len(bending), soft_local)
        self.bodies.append(body)
        self._field_system().add_cloth(idx, f)  # wind presses on the triangles (core/fields.py)
        return body

    @staticmethod
    def _pinned_indices(pinned: ArrayLike | None, n: int) -> IntArray:
        if pinned is None:
            return np.zeros(0, np.int64)
        p = np.asarray(pinned)
        if p.dtype == bool:
            if p.shape != (n,):
                raise SimulationInputError(f"pinned mask must have one entry per vertex ({n}), got {p.shape}")
            return np.flatnonzero(p).astype(np.int64)
        p = p.ravel()
        if p.size and (not np.issubdtype(p.dtype, np.integer) or p.min() < 0 or p.max() >= n):
            raise SimulationInputError(f"pinned must be vertex indices in 0..{n - 1}, got {pinned!r}")
        return np.unique(p.astype(np.int64))

    def add_granular(
        self,
        points: ArrayLike,
        density: float = 1600.0,
        friction: float = 0.5,
        cohesion: float = 0.0,
        name: str | None = None,
        initial_velocity: ArrayLike = (0.0, 0.0, 0.0),
        rolling_friction: float = DEFAULT_ROLLING_FRICTION,
    ) -> Granular:
        """Add grains: one particle per point.

        Args:
            points: (P, 3) grain centres, metres (see ``fill_mesh_with_grains``).
            density: kg/m^3; each grain weighs density * (2r)^3.
            friction: Coulomb coefficient between grains and against anything.
            cohesion: 0..1, fraction of a small gap (< r/2) closed per iteration, for damp sand.
            name: optional label.
            initial_velocity: (3,) velocity of every grain at the start, m/s.
            rolling_friction: rolling resistance coefficient between touching grains (>= 0; the
                default makes dry sand, friction 0.7, pile at 30-35 degrees; see docs/physics.md).
        """
        v0 = _vector(initial_velocity, "initial_velocity")
        pts = geometry.as_vertices(points)
        density = _positive(density, "density")
        friction = _nonnegative(friction, "friction")
        cohesion = _nonnegative(cohesion, "cohesion", 1.0)
        rolling_friction = _nonnegative(rolling_friction, "rolling_friction")
        self.check_capacity(len(pts), f"the grains of {name!r}" if name else "these grains")
        w = 1.0 / (density * (2.0 * self.radius) ** 3)
        idx, group = self._append(
            pts,
            True,
            v0,
            inv_mass=w,
            contact_inv_mass=w,
            kind=KIND_GRANULAR,
            friction=friction,
            cohesion=cohesion,
            rolling_friction=rolling_friction,
        )
        body = Granular(self, idx, group, name)
        self.bodies.append(body)
        return body

    def add_fluid(
        self,
        points: ArrayLike,
        density: float = 1000.0,
        viscosity: float = 0.01,
        cohesion: float = 0.02,
        adhesion: float = 0.0,
        vorticity: float = 0.1,
        name: str | None = None,
        initial_velocity: ArrayLike = (0.0, 0.0, 0.0),
        capacity: int | None = None,
    ) -> Fluid:
        """Add a liquid: one particle per point, held at rest density by Position Based Fluids
        (:mod:`.fluid`), two-way coupled with every other body.

        Args:
            points: (P, 3) particle centres, metres, P may be 0 (an emitter); points on the lattice of
                ``fill_mesh_with_fluid`` (spacing 2r) are exactly at rest density.
            density: kg/m^3; each particle weighs density * (2r)^3. Bodies lighter than it float.
            viscosity: 0..1, XSPH viscosity: the fraction of the velocity difference to the neighbours
                removed per small step (water 0.01, honey 0.4).
            cohesion: 0..1, surface tension and cohesion between fluid particles (Akinci et al. 2013),
                as a fraction of a 4 m/s^2 peak acceleration per neighbour pair
                (``fluid.COHESION_ACCELERATION``).
            adhesion: 0..1, attraction to solid particles, a fraction of the same acceleration.
            vorticity: 0..1, vorticity confinement (keeps swirls alive).
            name: optional label.
            initial_velocity: (3,) velocity of every particle at the start, m/s.
            capacity: particle slots to reserve (>= P; None: P). Slots beyond P start free for
                :meth:`Fluid.emit`; the particle count of the world stays fixed, so snapshots and
                point caches keep working while fluid pours in and drains.

        Presets: ``core.FLUID_PRESETS`` ("WATER", "HONEY", "OIL", "SLIME") hold these keywords.
        """
        v0 = _vector(initial_velocity, "initial_velocity")
        pts = np.zeros((0, 3)) if np.size(points) == 0 else geometry.as_vertices(points)
        material = {
            "density": _positive(density, "density"),
            "viscosity": _nonnegative(viscosity, "viscosity", 1.0),
            "cohesion": _nonnegative(cohesion, "cohesion", 1.0),
            "adhesion": _nonnegative(adhesion, "adhesion", 1.0),
            "vorticity": _nonnegative(vorticity, "vorticity", 1.0),
        }
        slots = len(pts) if capacity is None else _count(capacity, "capacity")
        if slots < len(pts):
            raise SimulationInputError(
                f"capacity ({slots}) must be at least the number of points ({len(pts)}); leave it None "
                "to reserve exactly the points"
            )
        if slots == 0:
            raise SimulationInputError("a fluid needs points or a capacity > 0 to emit into")
        self.check_capacity(slots, f"the fluid {name!r}" if name else "this fluid")
        # Free slots wait at the first point (or the origin); they take part in nothing until emitted.
        park = pts[:1] if len(pts) else np.zeros((1, 3))
        x = np.concatenate([pts, np.repeat(park, slots - len(pts), axis=0)])
        w = 1.0 / (material["density"] * (2.0 * self.radius) ** 3)
        idx, group = self._append(
            x,
            False,
            v0,
            active=len(pts),
            inv_mass=w,
            contact_inv_mass=w,
            kind=KIND_FLUID,
            friction=0.0,
            viscosity=material["viscosity"],
            fluid_cohesion=material["cohesion"],
            adhesion=material["adhesion"],
            vorticity=material["vorticity"],
        )
        self._state.velocities[idx[len(pts) :]] = 0.0
        body = Fluid(self, idx, group, name, material)
        self.bodies.append(body)
        return body

    def emit_fluid(self, fluid: Fluid, points: ArrayLike, velocity: ArrayLike = (0.0, 0.0, 0.0)) -> IntArray:
        """Put live fluid at ``points`` (P, 3) with ``velocity`` ((3,) or (P, 3), m/s) into ``fluid``'s
        free slots, lowest first; returns their world indices. Between steps, like adding a body."""
        self._own_fluid(fluid)
        pts = np.zeros((0, 3)) if np.size(points) == 0 else geometry.as_vertices(points)
        vel = np.asarray(velocity, dtype=np.float64)
        if vel.shape not in ((3,), (len(pts), 3)) or not np.all(np.isfinite(vel)):
            raise SimulationInputError(
                f"velocity must be 3 finite numbers or a row per point, not {vel.shape}"
            )
        free = fluid.indices[~self._state.active[fluid.indices]]
        if len(pts) > len(free):
            raise SimulationInputError(
                f"the fluid {fluid.name or ''!s} has {len(free)} free slots for {len(pts)} new particles; "
                "add it with a larger capacity"
            )
        idx = free[: len(pts)]
        st = self._state
        st.positions[idx] = pts
        st.velocities[idx] = np.broadcast_to(vel, pts.shape)
        st.active[idx] = True
        self._solver.activity_changed()
        return idx

    def remove_fluid(self, fluid: Fluid, which: ArrayLike) -> None:
        """Free the slots ``which`` of ``fluid`` (a (capacity,) bool mask or local slot numbers): those
        particles stop and take part in nothing until emitted again."""
        self._own_fluid(fluid)
        sel = np.asarray(which)
        if sel.dtype == bool:
            if sel.shape != fluid.indices.shape:
                raise SimulationInputError(
                    f"mask needs an entry per slot ({fluid.capacity}), not {sel.shape}"
                )
            idx = fluid.indices[sel]
        else:
            sel = sel.ravel()
            bad = sel.size and (not np.issubdtype(sel.dtype, np.integer) or sel.min() < 0)
            if bad or (sel.size and sel.max() >= fluid.capacity):
                raise SimulationInputError(f"slots must be in 0..{fluid.capacity - 1}, got {which!r}")
            idx = fluid.indices[sel.astype(np.int64)]
        if len(idx):
            self._state.active[idx] = False
            self._state.velocities[idx] = 0.0
            self._solver.activity_changed()

    def _own_fluid(self, fluid: Fluid) -> None:
        if not isinstance(fluid, Fluid) or fluid._world is not self:
            raise SimulationInputError(f"{fluid!r} is not a fluid of this world")

    @property
    def particle_active(self) -> NDArray[np.bool_]:
        """(N,) bool, live particles (a copy): False only for free fluid slots (``Fluid.emit``)."""
        return self._state.active.copy()

    def add_collider_plane(
        self,
        point: ArrayLike = (0.0, 0.0, 0.0),
        normal: ArrayLike = (0.0, 0.0, 1.0),
        friction: float = 0.5,
        name: str | None = None,
    ) -> PlaneCollider:
        """Add a static infinite plane through ``point``; particles stay on the ``normal`` side."""
        plane = PlaneCollider.create(point, normal, friction, name)
        self._solver.colliders.add_plane(plane)
        return plane

    def add_collider_mesh(
        self,
        vertices: ArrayLike,
        faces: ArrayLike,
        transform: ArrayLike | None = None,
        friction: float = 0.5,
        name: str | None = None,
        cell_size: float | None = None,
        deforming: bool = False,
    ) -> MeshCollider:
        """Add a triangle-mesh collider (turned into a signed distance volume once).

        Args:
            vertices: (V, 3) vertices in the collider's own frame, metres.
            faces: (F, 3) triangles.
            transform: (4, 4) object-to-world matrix (default identity); move it later with
                ``collider.set_transform(M)``.
            friction: Coulomb coefficient.
            name: optional label.
            cell_size: SDF voxel size, metres (default: max(r, largest extent / 128)).
            deforming: start as a deforming collider (``collider.set_vertices``) without building the
                volume, for a mesh that will deform anyway (a 20k-triangle volume takes seconds).
        """
        v = geometry.as_vertices(vertices)
        f = geometry.as_triangles(faces, len(v))
        m = as_transform(np.eye(4) if transform is None else transform, "collider transform")
        cs = None if cell_size is None else _positive(cell_size, "cell_size")
        mu = _nonnegative(friction, "friction")
        collider = MeshCollider(v, f, mu, self.radius, cs, name, m, start_deforming=bool(deforming))
        self._solver.colliders.add_mesh(collider)
        return collider

    # ------------------------------------------------------------------ force fields
    def add_force_field(
        self,
        kind: str,
        transform: ArrayLike | None = None,
        strength: float = 1.0,
        name: str | None = None,
        **settings: Any,
    ) -> ForceField:
        """Add a force field acting on every particle, with Blender's meaning of its settings.

        Args:
            kind: "FORCE", "WIND", "VORTEX", "TURBULENCE" or "DRAG" (Blender's ``field.type``).
            transform: (4, 4) object-to-world matrix (default identity): the field's origin and, along
                its Z axis, its direction. Move it later with ``field.set_transform(M)``.
            strength: Blender's ``field.strength``: newtons for Force, Vortex and Turbulence (on each
                object as a whole), the air speed in m/s for Wind.
            name: optional label.
            **settings: Blender's ``FieldSettings`` names: ``flow``, ``shape`` (POINT, LINE, PLANE),
                ``falloff_type`` (SPHERE, TUBE, CONE), ``falloff_power``, ``use_min_distance``,
                ``distance_min``, ``use_max_distance``, ``distance_max``, ``radial_falloff``,
                ``use_radial_min``, ``radial_min``, ``use_radial_max``, ``radial_max``, ``z_direction``,
                ``noise``, ``size``, ``seed``, ``linear_drag``, ``quadratic_drag``,
                ``use_global_coords``, ``enabled``. Change them later with ``field.configure(...)``.

        The field's pose and settings hold for a whole ``step``; a snapshot does not hold them (set
        them before each step, as the Blender layer does). See docs/physics.md, "Force fields".
        """
        field = ForceField(kind, transform, name, strength=strength, **settings)
        self._field_system().fields.append(field)
        return field

    def remove_force_field(self, field: ForceField) -> None:
        """Take a force field out of the world."""
        system = self._field_system()
        if field not in system.fields:
            raise SimulationInputError(f"{field!r} is not a force field of this world")
        system.fields.remove(field)

    @property
    def force_fields(self) -> list[ForceField]:
        """The force fields added so far, in order (a copy of the list)."""
        return list(self._field_system().fields)

    def set_field_weight(self, body: Body, weight: float) -> None:
        """How strongly force fields act on ``body``: 0 not at all, 1 fully (default), more is allowed.

        Blender's effector weight "All" (``object.unified_particles.field_weight`` in the add-on).
        """
        if not any(b is body for b in self.bodies):
            raise SimulationInputError(f"{body!r} is not a body of this world")
        self._field_system().set_weight(body, weight)

    def field_weight(self, body: Body) -> float:
        """The force-field weight of ``body`` (1 unless set by :meth:`set_field_weight`)."""
        return self._field_system().weight(body)

    def _field_system(self) -> FieldSystem:
        """The solver's force fields, made on first use (a world without fields never evaluates any)."""
        system = self._solver.fields
        if system is None:
            system = self._solver.fields = FieldSystem(self.bodies, self.radius, lambda: self.time)
        return system

    def _ensure_built(self) -> None:
        """Freeze the model (after bodies were added); the solver then derives what it needs anew."""
        if not self.model.built:
            self.model.finalize()
            self._solver.invalidate()

    # ------------------------------------------------------------------ moving pins
    def set_pin_targets(self, indices: ArrayLike, positions: ArrayLike) -> None:
        """Move pinned particles ``indices`` (K,) to ``positions`` (K, 3), world metres, by the end of the
        next :meth:`step`, in a straight line over its small steps (``Cloth.set_pin_targets`` does this
        for one cloth's pins). Pinned particles have infinite mass: they drag the cloth along and push
        what they touch. Targets last one step; set them again before each step the pins move in.

        Raises:
            SimulationInputError: an index is not a pinned particle, or the shapes or values are wrong.
        """
        self._ensure_built()
        idx, target = self._pin_request(indices, positions, "pin targets")
        if (self.model.particle_inv_mass[idx] != 0.0).any():
            raise SimulationInputError("only pinned particles (infinite mass) can be given pin targets")
        self._pin_targets.append((idx, target.copy()))

    def set_soft_pin_targets(self, indices: ArrayLike, positions: ArrayLike) -> None:
        """Move the anchors of soft-pinned particles ``indices`` (K,) to ``positions`` (K, 3), world metres,
        by the end of the next :meth:`step` (in a straight line over its small steps). Anchors stay where
        they were last put (``Cloth.set_soft_pin_targets`` does this for one cloth's soft pins).

        Raises:
            SimulationInputError: an index is not a soft-pinned particle, or the shapes or values are wrong.
        """
        self._ensure_built()
        idx, target = self._pin_request(indices, positions, "soft pin targets")
        rows = np.searchsorted(self.model.soft_pin_idx, idx)
        rows = np.minimum(rows, max(len(self.model.soft_pin_idx) - 1, 0))
        if idx.size and (len(self.model.soft_pin_idx) == 0 or (self.model.soft_pin_idx[rows] != idx).any()):
            raise SimulationInputError(
                "only soft-pinned particles (add_cloth(soft_pins=...)) have soft pin targets"
            )
        self._soft_pin_targets.append((rows, target))

    def _pin_request(
        self, indices: ArrayLike, positions: ArrayLike, what: str
    ) -> tuple[IntArray, FloatArray]:
        """Checked (K,) particle indices and (K, 3) positions of a pin target request."""
        idx = np.asarray(indices, dtype=np.int64).reshape(-1)
        target = np.asarray(positions, dtype=np.float64)
        if target.shape != (idx.size, 3):
            raise SimulationInputError(
                f"{what} must be ({idx.size}, 3) positions, one per pin; got {target.shape}"
            )
        if not np.isfinite(target).all():
            raise SimulationInputError(f"{what} contain NaN or infinite coordinates")
        if idx.size and (idx.min() < 0 or idx.max() >= self.particle_count):
            raise SimulationInputError(f"pin indices must be in 0..{self.particle_count - 1}")
        return idx, target.copy()

    def _take_soft_pin_motion(self) -> SoftPinMotion | None:
        """This frame's soft pin anchors: from where they are to the targets set since the last step."""
        model = self.model
        if not len(model.soft_pin_idx):
            return None
        start = self._state.soft_pin_target.copy()
        end = start.copy()
        for rows, target in self._soft_pin_targets:  # the requests since the last step, in order
            end[rows] = target
        self._soft_pin_targets.clear()
        return SoftPinMotion(model.soft_pin_idx, start, end - start, model.soft_pin_compliance)

    def _take_pin_motion(self) -> PinMotion | None:
        """This frame's moving pins (the targets set since the last step), and forget the targets."""
        if not self._pin_targets:
            return None
        all_idx = np.concatenate([i for i, _ in self._pin_targets])
        all_target = np.concatenate([t for _, t in self._pin_targets])
        self._pin_targets.clear()
        # A particle given several targets keeps the last one: unique over the reversed list.
        idx, last = np.unique(all_idx[::-1], return_index=True)
        target = all_target[::-1][last]
        start = self._state.positions[idx].copy()
        return PinMotion(idx, start, target - start)

    # ------------------------------------------------------------------ the step
    def step(self, dt: float) -> None:
        """Advance one frame of ``dt`` seconds as substeps * iterations small solver steps."""
        dt = _positive(dt, "dt")
        self._ensure_built()
        n = self.substeps * self.iterations
        h = dt / n
        if self.particle_count:
            before = self.state()  # the last good state, put back if this step blows up
            try:
                self._solver.begin_frame(self._state)  # kinematic bodies' paths over this frame
                self._solver.pin_motion = pins = self._take_pin_motion()
                self._solver.soft_pin_motion = soft = self._take_soft_pin_motion()
                for k in range(n):
                    self._small_step(h, (k + 1) / n, dt, stabilize=k == 0)
                if pins is not None:  # exactly on target (no round-off), and still until moved again
                    self._state.positions[pins.idx] = pins.start + pins.travel
                    self._state.velocities[pins.idx] = 0.0
                if soft is not None:
                    self._state.soft_pin_target = soft.start + soft.travel
                self._solver.update_rigid_frames(self._state)
                self._follow_dynamic_targets()
            except Exception:
                if not diverged_particles(self._state, self.settings.max_speed).any():
                    raise  # a genuine error, not a blow-up
            finally:
                self._solver.pin_motion = self._solver.soft_pin_motion = None
            bad = diverged_particles(self._state, self.settings.max_speed)
            if bad.any():
                error = divergence_error(
                    bad, self._state, self.bodies, self.settings, self.frame, self.time, dt
                )
                self.set_state(before)
                raise error
        self._solver.colliders.end_frame()
        self.time += dt
        self.frame += 1

    def _follow_dynamic_targets(self) -> None:
        """A dynamic rigid body's target is where it is, so switching it kinematic holds it there."""
        st = self._state
        dynamic = ~st.rigid_kinematic
        if dynamic.any():
            now = rigid_transforms(st.rigid_rotation, st.rigid_center, self.model.rigid_rest_center)
            st.rigid_target[dynamic] = now[dynamic]

    # ------------------------------------------------------------------ kinematic rigid bodies
    def set_kinematic(self, body: RigidBody | int, kinematic: bool) -> None:
        """Switch a rigid body (its handle or number) between dynamic and kinematic.

        Kinematic: infinite mass (pushes everything, nothing pushes it, colliders and gravity ignore
        it), moving to its target (:meth:`set_rigid_target`) over each frame with its particles'
        velocities those of that motion. Switched back to dynamic it keeps the velocity it last had.
        Switched on without a new target it holds the pose it has.
        """
        number = self._rigid_number(body)
        self._state.rigid_kinematic[number] = bool(kinematic)

    def set_rigid_target(self, body: RigidBody | int, transform: ArrayLike) -> None:
        """The pose a kinematic rigid body reaches at the end of the next ``step``.

        ``transform`` is a 4x4 rigid motion from the build frame, as ``RigidBody.transform`` (for a body
        built from an object's world-space mesh: the object's matrix now @ its matrix at build time^-1).
        Scale and shear are dropped (the nearest rotation is used). The body moves there over the
        frame, its centre of mass in a straight line, its rotation along the shortest arc.
        """
        number = self._rigid_number(body)
        m = as_transform(transform, "rigid body target")
        if np.abs(m[:3, 3]).max() > geometry.MAX_COORDINATE:
            raise SimulationInputError(
                f"rigid body target is farther than {geometry.MAX_COORDINATE:g} m from the origin"
            )
        target = np.eye(4)
        target[:3, :3] = nearest_rotation(m[:3, :3])
        target[:3, 3] = m[:3, 3]
        self._state.rigid_target[number] = target

    @property
    def rigid_kinematic(self) -> NDArray[np.bool_]:
        """(B,) bool, which rigid bodies are kinematic (a copy; change it with :meth:`set_kinematic`)."""
        return self._state.rigid_kinematic.copy()

    @property
    def rigid_targets(self) -> FloatArray:
        """(B, 4, 4) each rigid body's target transform (a copy; see :meth:`set_rigid_target`)."""
        return self._state.rigid_target.copy()

    def _rigid_number(self, body: RigidBody | int) -> int:
        number = body.number if isinstance(body, RigidBody) else body
        count = len(self._state.rigid_center)
        if isinstance(number, bool) or not isinstance(number, (int, np.integer)) or not 0 <= number < count:
            raise SimulationInputError(f"no rigid body {body!r} in this world ({count} rigid bodies)")
        if isinstance(body, RigidBody) and body._world is not self:
            raise SimulationInputError(f"{body!r} belongs to another World")
        return int(number)

    def _small_step(self, h: float, alpha: float, dt_frame: float, stabilize: bool) -> None:
        """One small step (:meth:`Solver.small_step`, Algorithm 1); a method here so that fault tests
        can wrap it."""
        self._solver.small_step(self._state, h, alpha, dt_frame, stabilize)

    # ------------------------------------------------------------------ snapshots
    def state(self) -> Snapshot:
        """Everything time-varying, copied into a :class:`Snapshot` (``to_arrays()`` for np.savez)."""
        st, meshes = self._state, self.meshes
        return Snapshot(
            particle_count=self.particle_count,
            time=float(self.time),
            frame=int(self.frame),
            positions=st.positions.copy(),
            velocities=st.velocities.copy(),
            rigid_rotation=st.rigid_rotation.copy(),
            rigid_center=st.rigid_center.copy(),
            rigid_touch_count=st.rigid_touch_count.copy(),
            # Positions at the last candidate-list build; the list itself is rebuilt from them.
            neighbor_reference=self._solver.candidates.reference.copy(),
            collider_transform=np.array([m.transform for m in meshes]).reshape(len(meshes), 4, 4),
            collider_frame_start=np.array([m.frame_start for m in meshes]).reshape(len(meshes), 4, 4),
            rigid_kinematic=st.rigid_kinematic.astype(np.float64),
            rigid_target=st.rigid_target.copy(),
            collider_vertices=deforming_vertices(meshes),
            soft_pin_target=st.soft_pin_target.copy(),
            particle_active=st.active.astype(np.float64),
            fluid_reference=self._solver.fluid.pairs.reference.copy()
            if self._solver.fluid is not None
            else np.zeros((0, 3)),
        )

    def set_state(self, snapshot: Snapshot | Mapping[str, Any]) -> None:
        """Restore a snapshot taken by :meth:`state` from a world with the same bodies and colliders.

        ``snapshot`` is a :class:`Snapshot`, or its ``to_arrays()`` (e.g. loaded from an .npz).
        """
        snap = snapshot if isinstance(snapshot, Snapshot) else Snapshot.from_arrays(snapshot)
        try:
            n = int(snap.particle_count)
            x = np.asarray(snap.positions, dtype=np.float64)
            v = np.asarray(snap.velocities, dtype=np.float64)
            rot = np.asarray(snap.rigid_rotation, dtype=np.float64)
            center = np.asarray(snap.rigid_center, dtype=np.float64)
            touch = np.asarray(snap.rigid_touch_count, dtype=np.float64)
            ct = np.asarray(snap.collider_transform, dtype=np.float64)
            cs = np.asarray(snap.collider_frame_start, dtype=np.float64)
            nb_ref = np.asarray(snap.neighbor_reference, dtype=np.float64)
            kinematic = np.asarray(snap.rigid_kinematic, dtype=np.float64)
            target = np.asarray(snap.rigid_target, dtype=np.float64)
            soft = np.asarray(snap.soft_pin_target, dtype=np.float64).reshape(-1, 3)
            active = np.asarray(snap.particle_active, dtype=np.float64).ravel()
            fluid_ref = np.asarray(snap.fluid_reference, dtype=np.float64).reshape(-1, 3)
            time, frame = float(snap.time), int(snap.frame)
        except (TypeError, ValueError) as exc:
            raise SimulationInputError(f"not a World snapshot: {exc}") from None
        st = self._state
        if n != self.particle_count or x.shape != (n, 3) or v.shape != (n, 3):
            raise SimulationInputError(
                f"snapshot has {n} particles but this world has {self.particle_count}: "
                "restore into a world built with the same bodies"
            )
        if rot.shape != st.rigid_rotation.shape or ct.shape != (len(self.meshes), 4, 4):
            raise SimulationInputError("snapshot has a different number of rigid bodies or mesh colliders")
        if not (np.all(np.isfinite(x)) and np.all(np.isfinite(v))):
            raise SimulationInputError("snapshot positions/velocities contain NaN or inf")
        bodies = center.shape[:1]
        if touch.shape != bodies or kinematic.shape != bodies or target.shape != (*bodies, 4, 4):
            raise SimulationInputError("snapshot has a different number of rigid bodies")
        # The fluid reference also holds the mesh colliders' surface samples (fluid.Boundary) after N rows.
        if nb_ref.shape not in ((0, 3), (n, 3)) or not (len(fluid_ref) == 0 or len(fluid_ref) >= n):
            raise SimulationInputError(f"snapshot neighbour reference has shape {nb_ref.shape}")
        if active.shape not in ((0,), (n,)):
            raise SimulationInputError(f"snapshot particle activity has shape {active.shape}")
        st.positions[...] = x
        st.velocities[...] = v
        st.rigid_rotation, st.rigid_center = rot.copy(), center.copy()
        st.rigid_touch_count = touch.copy()
        st.rigid_kinematic, st.rigid_target = kinematic > 0.5, target.copy()
        self._ensure_built()  # the model's soft pins
        n_soft = len(self.model.soft_pin_idx)
        if soft.shape == (n_soft, 3):
            st.soft_pin_target = soft.copy()
        elif len(soft) == 0:  # a snapshot from before soft pins: anchors where the particles are
            st.soft_pin_target = x[self.model.soft_pin_idx].copy()
        else:
            raise SimulationInputError("snapshot has a different number of soft pins")
        self._ensure_built()
        st.active = active > 0.5 if len(active) else np.ones(n, dtype=bool)
        self._solver.restore_candidates(nb_ref, st.active, fluid_ref)
        for mesh, m, m0 in zip(self.meshes, ct, cs, strict=True):
            mesh.restore_pose(m, m0)
        restore_deforming_vertices(self.meshes, np.asarray(snap.collider_vertices, dtype=np.float64))
        self.time, self.frame = time, frame

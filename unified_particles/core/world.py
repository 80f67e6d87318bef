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
    snap = w.state()                                         # dict of arrays + numbers (np.savez-able)
    w.set_state(snap)                                        # resume bit-identically

* ``World.positions`` / ``World.velocities`` are the live (N, 3) arrays; edit them in place between
  steps. Adding a body replaces them by longer arrays, so read them again after ``add_*``.
* Bodies and colliders may be added at any time, also after steps have run; new particles start at
  rest. A snapshot only restores into a world with the same bodies (same particle count).
* Every bad input raises :class:`SimulationInputError` with a message a user can act on.
* Solver budget: one frame ``step(dt)`` runs ``substeps * iterations`` small steps of one solver
  iteration each ("Small Steps", Macklin et al. 2019): for the same cost this converges much better
  than few substeps with several Jacobi iterations, and XPBD needs no stored multipliers.

The step (:meth:`World._small_step`) follows Algorithm 1 of the paper; each constraint family is a
pure function in its own module (contacts, colliders, shape_matching, distance).

Choices worth knowing (each measured; see the tests):

* Cloth stretch is graph-coloured Gauss-Seidel (no Jacobi dilution), bending is Jacobi, stretch last.
* Particle contacts scale each pair by 1 / max(n_i, n_j) instead of dividing per particle: the same
  bound on a particle's total correction, but equal and opposite, so momentum is conserved.
* Rigid particles that touch something weigh ``rigid_contact_weight`` times more in shape matching
  (else friction is averaged away and a box creeps down a slope it should stick to); their contact
  mass is raised to match, so the body's momentum change still equals its partner's.
* Contact mass ratios are limited to ``max_mass_ratio`` (a heavy box on a light cloth would tunnel).
* Neighbour candidates carry a margin and are rebuilt only when relative motion exceeds half of it.

Known limits: tall columns of rigid bodies (> ~6) slowly creep; granular piles stand lower than
the Coulomb angle of repose (friction is averaged over a grain's contacts); draped cloth stretches
a few percent at folds pressed onto colliders.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import geometry
from .bodies import Body, Cloth, Granular, RigidBody
from .colliders import (
    ColliderContacts,
    MeshCollider,
    PlaneCollider,
    as_transform,
    collider_corrections,
    plane_contacts,
)
from .contacts import COHESION_RANGE_RADII, particle_contacts
from .distance import (
    DistanceConstraints,
    GaussSeidelSolver,
    JacobiSolver,
    TetherSolver,
    bending_pairs,
    mesh_edges,
    tethers,
)
from .errors import SimulationDivergedError, SimulationInputError
from .fastops import column_max, column_min, row_abs_max
from .neighbors import find_pairs
from .shape_matching import ShapeMatching

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

# Rough peak bytes per particle during a step (state, model, candidate pairs and temporaries).
BYTES_PER_PARTICLE = 1200
# Cloth particles closer than this many diameters in the rest shape never self-collide.
SELF_COLLISION_REST_DIAMETERS = 2.0
KIND_GRANULAR, KIND_RIGID, KIND_CLOTH = 0, 1, 2
# A particle within this many radii of a contact counts as touching for the shape-matching weights:
# resting contacts flicker on and off at exactly zero gap, and weights that flicker inject energy.
TOUCH_TOLERANCE_RADII = 0.1
# A load (grain, rigid particle) may rest this many radii deep in a cloth (see _cloth_contact_pass).
# Going through between the vertices takes an overlap of about a radius. With no slop the load's mass
# stops mattering (a 5000 kg/m^3 box sagged a cloth no more than a 2 kg/m^3 one); with 0.25 a box
# corner still poked through a loaded cloth for a frame.
CLOTH_CONTACT_SLOP_RADII = 0.2
# After a step, a particle faster than this (m/s, ~30x the speed of sound) means the solver blew up.
DIVERGED_SPEED = 1.0e4


@dataclass
class SolverSettings:
    """Solver settings (keyword arguments of :class:`World`), named after the paper and FleX.

    Attributes:
        stabilization_iterations: contact-only passes at the start of each frame that move both x
            and x*, removing overlap without turning it into velocity (paper Sec. 4.4). Default 1.
        relaxation: successive over-relaxation factor omega for Jacobi-averaged families (paper
            Eq. 11), 1..2. Default 1.0 (1.5 with shock propagation blew up a falling block of grains).
        static_friction_scale: multiplies every contact's Coulomb coefficient (the mean of the two
            sides' ``friction``) for the sticking test. Default 1.0.
        dynamic_friction_scale: multiplies it for sliding (kinetic) friction. Default 1.0.
        restitution: coefficient of restitution for collider contacts, 0..1. Default 0.
        damping: velocity damping rate, 1/s (v *= exp(-damping dt)). Default 0 (no damping).
        max_speed: particle speed limit, m/s. Default inf (no limit).
        sleep_threshold: particles slower than this (m/s) after a small step that touch something
            (or belong to a rigid body that does) are frozen for that step. Default 0 (off).
        shock_propagation: mass-scaling factor k, 1/m: contact masses m* = m exp(-k height) so
            lower particles in a stack act heavier (paper Sec. 4.3). Default 2 (0.5 let columns of
            five boxes creep and topple within 3 s).
        collision_margin: extra distance, metres, for neighbour candidates; candidate pairs are
            reused across small steps until some particle moved more than half of it. Default None
            means one particle radius.
        max_mass_ratio: largest inverse-mass ratio between the two sides of a particle contact; the
            heavier side is made lighter beyond it so it cannot tunnel. Default 10.
        rigid_contact_weight: extra shape-matching weight of a rigid particle that touches
            something, relative to its mass (so friction and contact corrections are not averaged
            away by the fit). Default 50.
        memory_limit: refuse to create more particles than fit in this many bytes (estimated at
            ``BYTES_PER_PARTICLE`` each). Default None means half the machine's physical memory.
    """

    stabilization_iterations: int = 1
    relaxation: float = 1.0
    static_friction_scale: float = 1.0
    dynamic_friction_scale: float = 1.0
    restitution: float = 0.0
    damping: float = 0.0
    max_speed: float = float("inf")
    sleep_threshold: float = 0.0
    shock_propagation: float = 2.0
    collision_margin: float | None = None
    max_mass_ratio: float = 10.0
    rigid_contact_weight: float = 50.0
    memory_limit: float | None = None

    def validate(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None:
                continue
            if not isinstance(value, (int, float, np.integer, np.floating)) or isinstance(value, bool):
                raise SimulationInputError(f"setting {f.name} must be a number, got {value!r}")
            if np.isnan(value) or value < 0:
                raise SimulationInputError(f"setting {f.name} must be >= 0, got {value!r}")
            if f.name != "max_speed" and f.name != "memory_limit" and not np.isfinite(value):
                raise SimulationInputError(f"setting {f.name} must be finite, got {value!r}")
        if int(self.stabilization_iterations) != self.stabilization_iterations:
            raise SimulationInputError("stabilization_iterations must be a whole number")
        if not 0.0 < self.relaxation <= 2.0:
            raise SimulationInputError(f"relaxation must be in (0, 2], got {self.relaxation}")
        if self.restitution > 1.0:
            raise SimulationInputError(f"restitution must be in [0, 1], got {self.restitution}")
        if self.max_mass_ratio < 1.0:
            raise SimulationInputError(f"max_mass_ratio must be >= 1, got {self.max_mass_ratio}")
        if self.max_speed <= 0.0:
            raise SimulationInputError(f"max_speed must be > 0, got {self.max_speed}")


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


def _physical_memory() -> float:
    try:
        return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return 8e9


class World:
    """All particles, constraints and colliders of one simulation, and the solver step.

    Args:
        radius: particle radius r, metres (> 0). One radius for the whole world, as in FleX; rigid
            bodies and grains are sampled at spacing 2r, cloth has one particle per vertex.
        gravity: (3,) acceleration, m/s^2.
        substeps, iterations: solver budget per frame; ``step`` runs substeps * iterations small
            steps of one iteration each.
        **settings: see :class:`SolverSettings`. Unknown names raise SimulationInputError.
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
        self.substeps = _count(substeps, "substeps")
        self.iterations = _count(iterations, "iterations")
        known = {f.name for f in fields(SolverSettings)}
        unknown = sorted(set(settings) - known)
        if unknown:
            raise SimulationInputError(
                f"unknown setting(s) {', '.join(unknown)}; known settings: {', '.join(sorted(known))}"
            )
        self.settings = SolverSettings(**settings)
        self.settings.validate()
        margin = self.settings.collision_margin
        self.margin = self.radius if margin is None else float(margin)
        limit = self.settings.memory_limit
        self.memory_limit = 0.5 * _physical_memory() if limit is None else float(limit)

        self.time = 0.0
        self.frame = 0
        self.bodies: list[Body] = []
        self.planes: list[PlaneCollider] = []
        self.meshes: list[MeshCollider] = []
        # Particle state, (N, 3) each.
        self._x = np.zeros((0, 3))
        self._v = np.zeros((0, 3))
        # Per-particle model, appended per body and concatenated lazily in _build().
        self._parts: dict[str, list[Any]] = {
            k: []
            for k in (
                "inv_mass",
                "contact_inv_mass",
                "group",
                "kind",
                "friction",
                "cohesion",
                "rest",
                "sdf_depth",
                "sdf_normal",
                "rigid_idx",
                "rigid_body",
                "rigid_rest",
                "rigid_mass",
            )
        }
        self._group_self_collides: list[bool] = []
        self._stretch: list[DistanceConstraints] = []
        self._bend: list[DistanceConstraints] = []
        self._tethers: list[tuple[IntArray, IntArray, FloatArray]] = []
        self._rigid_rotation = np.zeros((0, 3, 3))
        self._rigid_center = np.zeros((0, 3))
        # Touching particles per rigid body in the last small step (for effective contact masses).
        self._rigid_touch_count = np.zeros(0)
        self._built = False
        self._reset_neighbors()

    # ------------------------------------------------------------------ public state
    @property
    def particle_count(self) -> int:
        """Number of particles N."""
        return int(self._x.shape[0])

    @property
    def positions(self) -> FloatArray:
        """(N, 3) particle positions, metres: the live array, writable between steps."""
        return self._x

    @positions.setter
    def positions(self, value: ArrayLike) -> None:
        self._x[...] = self._checked_state_array(value, "positions")

    @property
    def velocities(self) -> FloatArray:
        """(N, 3) particle velocities, m/s: the live array, writable between steps."""
        return self._v

    @velocities.setter
    def velocities(self, value: ArrayLike) -> None:
        self._v[...] = self._checked_state_array(value, "velocities")

    @property
    def inverse_masses(self) -> FloatArray:
        """(N,) particle inverse masses, 1/kg (0 for pinned particles)."""
        self._ensure_built()
        return self._inv_mass.copy()

    def _checked_state_array(self, value: ArrayLike, what: str) -> FloatArray:
        a = np.asarray(value, dtype=np.float64)
        if a.shape != self._x.shape or not np.all(np.isfinite(a)):
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
        self._check_memory(new_particles, what)

    def _check_memory(self, new_particles: int, what: str) -> None:
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

    def _append(self, x: FloatArray, group_self_collides: bool, **per_particle: Any) -> tuple[IntArray, int]:
        n0 = self.particle_count
        n = len(x)
        idx = np.arange(n0, n0 + n, dtype=np.int64)
        group = len(self._group_self_collides)
        self._group_self_collides.append(group_self_collides)
        self._x = np.concatenate([self._x, x])
        self._v = np.concatenate([self._v, np.zeros((n, 3))])
        p = self._parts
        p["group"].append(np.full(n, group, np.int64))
        p["rest"].append(x.copy())
        defaults = {"sdf_depth": np.full(n, np.inf), "sdf_normal": np.zeros((n, 3)), "cohesion": np.zeros(n)}
        for key in (
            "inv_mass",
            "contact_inv_mass",
            "kind",
            "friction",
            "cohesion",
            "sdf_depth",
            "sdf_normal",
        ):
            value = np.asarray(per_particle[key] if key in per_particle else defaults[key])
            p[key].append(np.broadcast_to(value, (n, *value.shape[1:])).copy())
        self._built = False
        self._reset_neighbors()
        return idx, group

    def add_rigid(
        self,
        vertices: ArrayLike,
        faces: ArrayLike,
        density: float = 1000.0,
        friction: float = 0.5,
        mass: float | None = None,
        name: str | None = None,
    ) -> RigidBody:
        """Add a rigid body filled with particles on a grid of spacing 2r inside the mesh.

        Args:
            vertices: (V, 3) mesh vertices in world space at build time, metres.
            faces: (F, 3) triangle vertex indices (open and non-manifold meshes are fine).
            density: kg/m^3; each particle weighs density * (2r)^3. Ignored if ``mass`` is given.
            friction: Coulomb coefficient of the surface.
            mass: total mass, kg (optional, overrides density).
            name: optional label.
        """
        v = geometry.as_vertices(vertices)
        f = geometry.as_triangles(faces, len(v))
        density = _positive(density, "density")
        friction = _nonnegative(friction, "friction")
        spacing = 2.0 * self.radius
        self._check_memory(geometry.estimate_interior_count(v, f, spacing), "this rigid body")
        s = geometry.sample_interior(v, f, spacing)
        pts = np.asarray(s.points, dtype=np.float64)
        n = len(pts)
        m_particle = _positive(mass, "mass") / n if mass is not None else density * spacing**3
        total = m_particle * n
        number = len(self._rigid_center)
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
        p = self._parts
        p["rigid_idx"].append(idx)
        p["rigid_body"].append(np.full(n, number, np.int64))
        p["rigid_rest"].append(pts - center)
        p["rigid_mass"].append(np.full(n, m_particle))
        self._rigid_rotation = np.concatenate([self._rigid_rotation, np.eye(3)[None]])
        self._rigid_center = np.concatenate([self._rigid_center, center[None]])
        self._rigid_touch_count = np.concatenate([self._rigid_touch_count, [0.0]])
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
                (1 + tether_give) times its rest path length along the mesh (long-range attachments,
                FleX's "tether give"), however heavy the load; 0.1 lets it stretch 10%. None: no tethers.
        """
        v = geometry.as_vertices(vertices)
        f = geometry.as_triangles(faces, len(v))
        mass = _positive(mass, "cloth mass")
        sc = _nonnegative(stretch_compliance, "stretch_compliance")
        bc = _nonnegative(bend_compliance, "bend_compliance")
        friction = _nonnegative(friction, "friction")
        n = len(v)
        self._check_memory(n, "this cloth")
        pin_local = self._pinned_indices(pinned, n)
        # Lumped mass: each triangle gives a third of its area to each corner.
        area = 0.5 * np.linalg.norm(np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]]), axis=1)
        vert_area = np.bincount(f.ravel(), weights=np.repeat(area / 3.0, 3), minlength=n)
        if vert_area.sum() <= 0.0:
            raise SimulationInputError("cloth mesh has zero area (all triangles degenerate)")
        vert_area = np.where(vert_area > 0.0, vert_area, vert_area[vert_area > 0].mean())
        m = mass * vert_area / vert_area.sum()
        inv_mass = 1.0 / m
        inv_mass[pin_local] = 0.0
        idx, group = self._append(
            v,
            bool(self_collision),
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
        self._stretch.append(stretch)
        self._bend.append(bending)
        if tether_give is not None:
            give = _nonnegative(tether_give, "tether_give")
            free, anchor, length = tethers(edges, v, pin_local)
            self._tethers.append((free + idx[0], anchor + idx[0], length * (1.0 + give)))
        body = Cloth(self, idx, group, name, pin_local, len(stretch), len(bending))
        self.bodies.append(body)
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
    ) -> Granular:
        """Add grains: one particle per point.

        Args:
            points: (P, 3) grain centres, metres (see ``fill_mesh_with_grains``).
            density: kg/m^3; each grain weighs density * (2r)^3.
            friction: Coulomb coefficient between grains and against anything.
            cohesion: 0..1, fraction of a small gap (< r/2) closed per iteration, for damp sand.
            name: optional label.
        """
        pts = geometry.as_vertices(points)
        density = _positive(density, "density")
        friction = _nonnegative(friction, "friction")
        cohesion = _nonnegative(cohesion, "cohesion", 1.0)
        self._check_memory(len(pts), "these grains")
        w = 1.0 / (density * (2.0 * self.radius) ** 3)
        idx, group = self._append(
            pts,
            True,
            inv_mass=w,
            contact_inv_mass=w,
            kind=KIND_GRANULAR,
            friction=friction,
            cohesion=cohesion,
        )
        body = Granular(self, idx, group, name)
        self.bodies.append(body)
        return body

    def add_collider_plane(
        self,
        point: ArrayLike = (0.0, 0.0, 0.0),
        normal: ArrayLike = (0.0, 0.0, 1.0),
        friction: float = 0.5,
        name: str | None = None,
    ) -> PlaneCollider:
        """Add a static infinite plane through ``point``; particles stay on the ``normal`` side."""
        plane = PlaneCollider.create(point, normal, friction, name)
        self.planes.append(plane)
        return plane

    def add_collider_mesh(
        self,
        vertices: ArrayLike,
        faces: ArrayLike,
        transform: ArrayLike | None = None,
        friction: float = 0.5,
        name: str | None = None,
        cell_size: float | None = None,
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
        """
        v = geometry.as_vertices(vertices)
        f = geometry.as_triangles(faces, len(v))
        m = as_transform(np.eye(4) if transform is None else transform, "collider transform")
        cs = None if cell_size is None else _positive(cell_size, "cell_size")
        collider = MeshCollider(v, f, _nonnegative(friction, "friction"), self.radius, cs, name, m)
        self.meshes.append(collider)
        return collider

    # ------------------------------------------------------------------ model
    def _ensure_built(self) -> None:
        """Concatenate the per-body model arrays (after bodies were added)."""
        if self._built:
            return
        p = self._parts

        def cat(key: str, empty_shape: tuple[int, ...], dtype: type = np.float64) -> Any:
            return np.concatenate(p[key]) if p[key] else np.zeros(empty_shape, dtype)

        n = self.particle_count
        self._inv_mass: FloatArray = cat("inv_mass", (0,))
        self._contact_inv_mass: FloatArray = cat("contact_inv_mass", (0,))
        self._dynamic: NDArray[np.bool_] = self._inv_mass > 0.0
        self._group: IntArray = cat("group", (0,), np.int64)
        self._kind: IntArray = cat("kind", (0,), np.int64)
        self._friction: FloatArray = cat("friction", (0,))
        self._cohesion: FloatArray = cat("cohesion", (0,))
        self._rest: FloatArray = cat("rest", (0, 3))
        self._sdf_depth: FloatArray = cat("sdf_depth", (0,))
        self._sdf_normal_local: FloatArray = cat("sdf_normal", (0, 3))
        self._self_collides = np.array(self._group_self_collides, dtype=bool)
        self._has_cohesion = bool(np.any(self._cohesion > 0.0))
        # Particle contacts are possible if two groups exist or one group collides with itself.
        self._any_pairs = len(self._self_collides) > 1 or bool(np.any(self._self_collides))
        self._is_cloth = self._kind == KIND_CLOTH
        self._cloth_and_others = bool(self._is_cloth.any()) and not bool(self._is_cloth.all())
        self._any_cloth_self = bool(np.any(self._self_collides[self._group[self._kind == KIND_CLOTH]]))
        self._shape: ShapeMatching | None = None
        if p["rigid_idx"]:
            self._shape = ShapeMatching(
                cat("rigid_idx", (0,), np.int64),
                cat("rigid_body", (0,), np.int64),
                cat("rigid_rest", (0, 3)),
                cat("rigid_mass", (0,)),
                len(self._rigid_center),
            )
        self._rigid_body_mass = np.array([b.mass for b in self.bodies if isinstance(b, RigidBody)])
        # Rigid body number of each particle (0 for non-rigid ones, whose SDF normal is zero).
        self._body_of_particle = np.zeros(n, np.int64)
        if self._shape is not None:
            self._body_of_particle[self._shape.idx] = self._shape.body
        self._stretch_all = DistanceConstraints.concatenate(self._stretch, True, n)
        self._bend_all = DistanceConstraints.concatenate(self._bend, False, n)
        tether = [*self._tethers, (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0))]
        self._tether = TetherSolver(*(np.concatenate([t[k] for t in tether]) for k in range(3)))
        self._solver_cache: dict[float, list[GaussSeidelSolver | JacobiSolver]] = {}
        self._built = True

    # ------------------------------------------------------------------ neighbours
    def _reset_neighbors(self) -> None:
        self._nb_i = np.zeros(0, np.int64)
        self._nb_j = np.zeros(0, np.int64)
        self._nb_ref = np.zeros((0, 3))

    def _candidates(self, x: FloatArray) -> tuple[IntArray, IntArray]:
        """Candidate pairs within 2r + margin, rebuilt only when a particle moved > margin / 2.

        Two particles each moving less than margin/2 (relative to the common motion) since the build
        cannot have closed a gap of more than the margin, so every pair that can touch now is listed.
        """
        if not self._any_pairs:
            return self._nb_i, self._nb_j
        if len(self._nb_ref) == len(x):
            # Only relative motion changes which pairs are close: |d_ij| changes by at most
            # |u_i - u_j| <= |u_i - c| + |u_j - c| for displacements u and any common shift c. With
            # c the midrange, a block of grains falling together never triggers a rebuild.
            # Per axis the deviation from the midrange is at most half the spread (ptp), which
            # bounds |u_i - c| without a per-particle norm.
            moved = x - self._nb_ref
            half_spread = 0.5 * (column_max(moved) - column_min(moved))
            if float((half_spread * half_spread).sum()) < (0.5 * self.margin) ** 2:
                return self._nb_i, self._nb_j
        i, j = self._build_candidates(x)
        self._nb_i, self._nb_j, self._nb_ref = i, j, x.copy()
        return i, j

    def _build_candidates(self, x: FloatArray) -> tuple[IntArray, IntArray]:
        """Candidate pairs for reference positions x: a pure function of x and the model, so a
        snapshot needs to keep only x to rebuild the identical list (same order, same sums)."""
        cutoff = 2.0 * self.radius + self.margin
        if self._has_cohesion:
            cutoff += COHESION_RANGE_RADII * self.radius
        i, j = find_pairs(x, cutoff, self._group, self._self_collides)
        if self._any_cloth_self:
            # Cloth neighbours in the rest shape would always touch: exclude them.
            same_cloth = (self._group[i] == self._group[j]) & (self._kind[i] == KIND_CLOTH)
            d = self._rest[i] - self._rest[j]
            near = np.einsum("ij,ij->i", d, d) < (SELF_COLLISION_REST_DIAMETERS * 2.0 * self.radius) ** 2
            keep = ~(same_cloth & near)
            i, j = i[keep], j[keep]
        return i, j

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
                for k in range(n):
                    self._small_step(h, (k + 1) / n, dt, stabilize=k == 0)
                self._update_rigid_frames()
            except Exception:
                if not self._diverged_particles().any():
                    raise  # a genuine error, not a blow-up
            bad = self._diverged_particles()
            if bad.any():
                error = self._divergence_error(bad, dt)
                self.set_state(before)
                raise error
        for mesh in self.meshes:
            mesh._end_frame()
        self.time += dt
        self.frame += 1

    def _divergence_speed(self) -> float:
        """Speed (m/s) above which a particle has blown up: DIVERGED_SPEED or 10x max_speed if higher."""
        limit = self.settings.max_speed
        return DIVERGED_SPEED if not np.isfinite(limit) else max(DIVERGED_SPEED, 10.0 * float(limit))

    def _diverged_particles(self) -> NDArray[np.bool_]:
        """(N,) True where a particle is NaN/inf, faster than the divergence speed or absurdly far away."""
        x, v = self._x, self._v
        with np.errstate(invalid="ignore", over="ignore"):
            slow = np.einsum("ij,ij->i", v, v) <= self._divergence_speed() ** 2
            near = row_abs_max(x) <= geometry.MAX_COORDINATE
        bad: NDArray[np.bool_] = ~(slow & near)  # NaN compares False: counted as bad
        return bad

    def _divergence_error(self, bad: NDArray[np.bool_], dt: float) -> SimulationDivergedError:
        """The error for a blown-up step: which bodies, what went wrong, which settings to change."""
        labels = [
            body.name or f"{body.kind} {number}"
            for number, body in enumerate(self.bodies)
            if bad[body.indices].any()
        ]
        count = int(np.count_nonzero(bad))
        x, v = self._x[bad], self._v[bad]
        if not (np.isfinite(x).all() and np.isfinite(v).all()):
            cause = "NaN or infinite positions"
        elif np.abs(x).max() > geometry.MAX_COORDINATE:
            cause = f"positions beyond {geometry.MAX_COORDINATE:g} m"
        else:
            cause = f"speeds above {self._divergence_speed():g} m/s"
        shown = ", ".join(repr(label) for label in labels[:3]) + (" and others" if len(labels) > 3 else "")
        first = repr(labels[0]) if labels else "the objects"
        s = self.settings
        return SimulationDivergedError(
            f"the simulation blew up in step {self.frame + 1} (t = {self.time + dt:.4g} s): {count} "
            f"particles of {shown or 'the world'} got {cause}; kept the last good state (before this "
            f"step). Use more substeps (now {self.substeps}), a lower relaxation (now {s.relaxation:g}) "
            f"or a max_speed limit (now {s.max_speed:g} m/s), and check {first} for an extreme density "
            "or mass next to what it touches, or objects overlapping at the start",
            tuple(labels),
            count,
        )

    def _small_step(self, h: float, alpha: float, dt_frame: float, stabilize: bool) -> None:
        """One small step of Macklin et al. 2014, Algorithm 1 (with one solver iteration)."""
        s = self.settings
        x, v = self._x, self._v
        # 1. External forces, damping, speed limit; predict positions x*.
        for axis in range(3):  # column by column: see fastops on (N, 3) broadcasting
            if self.gravity[axis] != 0.0:
                v[:, axis] += (h * self.gravity[axis]) * self._dynamic
        if s.damping > 0.0:
            v *= np.exp(-s.damping * h)
        if np.isfinite(s.max_speed):
            self._clamp_speed(v, s.max_speed)
        x_pred = x + h * v
        # 2. Mass scaling for stacks: lower particles are heavier in contacts (shock propagation).
        w_contact = self._scaled_contact_inv_mass(x_pred)
        # 3. Neighbour candidates with a margin, reused while motion stays within it.
        pair_i, pair_j = self._candidates(x_pred)
        # 4. Stabilization: contacts only, on x, moving x and x* alike (no energy added).
        if stabilize:
            for _ in range(int(s.stabilization_iterations)):
                dx, touching, _ = self._contact_pass(x, None, pair_i, pair_j, w_contact, alpha, dt_frame, h)
                if self._shape is not None:
                    # Keep rigid bodies rigid in x too, else the shift shows up as velocity.
                    dx[self._shape.idx] += self._rigid_goals(x + dx, touching)[0]
                x += dx
                x_pred += dx
        # 5. Solver iteration over the constraint families, each Jacobi-averaged or coloured.
        _, touching, col = self._contact_pass(
            x_pred, x, pair_i, pair_j, w_contact, alpha, dt_frame, h, apply=True
        )
        if self._shape is not None:
            self._solve_shape_matching(x_pred, touching)
        if len(self._tether):
            # Pinned cloth: no vertex farther from its pin than the cloth allows (long-range
            # attachments). Before the edges, which then smooth what the tethers pulled.
            self._tether.solve(x_pred)
        for solver in self._distance_solvers(h):
            solver.solve(x_pred)
        if self._cloth_and_others:
            # Cloth contacts get the last word (see there): the stretch solve just undid them.
            self._cloth_contact_pass(x_pred, pair_i, pair_j, w_contact)
        # 6. Velocity update, restitution, sleeping; commit positions.
        v_before = v.copy() if s.restitution > 0.0 else v
        v[...] = (x_pred - x) / h
        if s.restitution > 0.0 and len(col.idx):
            self._apply_restitution(v, v_before, col, h)
        if s.sleep_threshold > 0.0:
            asleep = self._resting(touching) & (np.einsum("ij,ij->i", v, v) < s.sleep_threshold**2)
            v[asleep] = 0.0
            x_pred[asleep] = x[asleep]
        x[...] = x_pred

    def _resting(self, touching: NDArray[np.bool_]) -> NDArray[np.bool_]:
        """(N,) particles that may sleep: those touching something, and every particle of a rigid body
        that touches something (``_rigid_touch_count``, counted by this small step's shape matching).
        A speed test alone froze bodies that start at rest in the air: one small step of gravity is
        only g h (0.026 m/s at 24 fps and 16 small steps per frame)."""
        sm = self._shape
        if sm is None:
            return touching
        eligible = touching.copy()
        eligible[sm.idx] |= self._rigid_touch_count[sm.body] > 0.0
        return eligible

    def _distance_solvers(self, h: float) -> list[GaussSeidelSolver | JacobiSolver]:
        """Bending (Jacobi) then stretch (coloured Gauss-Seidel) solvers for step size h.

        Cached: h is fixed per frame rate. Stretch goes last so the stiff constraints have the final
        word before the velocity update.
        """
        solvers = self._solver_cache.get(h)
        if solvers is None:
            solvers = []
            if len(self._bend_all):
                solvers.append(JacobiSolver(self._bend_all, self._inv_mass, h, self.settings.relaxation))
            if len(self._stretch_all):
                solvers.append(GaussSeidelSolver(self._stretch_all, self._inv_mass, h))
            if len(self._solver_cache) > 8:
                self._solver_cache.clear()
            self._solver_cache[h] = solvers
        return solvers

    def _contact_pass(
        self,
        x_pred: FloatArray,
        x_prev: FloatArray | None,
        pair_i: IntArray,
        pair_j: IntArray,
        w_contact: FloatArray,
        alpha: float,
        dt_frame: float,
        h: float,
        apply: bool = False,
    ) -> tuple[FloatArray, NDArray[np.bool_], ColliderContacts]:
        """Collider contacts then particle contacts (with friction when ``x_prev`` is given).

        With ``apply`` the corrections are applied to ``x_pred`` in place family by family; without,
        the summed corrections are returned (stabilization applies them to x and x*).
        Returns (delta (N, 3), touching (N,) bool, collider contacts).
        """
        s = self.settings
        n = len(x_pred)
        target = x_pred if apply else x_pred.copy()
        touching = np.zeros(n, dtype=bool)
        tol = TOUCH_TOLERANCE_RADII * self.radius
        col = self._collider_contacts(target, alpha, dt_frame, tol)
        if len(col.idx):
            touching[col.idx] = True
            # Pinned particles (zero inverse mass) never move: a collider must not push them either.
            # It did: a post collider touching a hammock's pinned edge shoved one pin inwards, and with
            # no gravity or contact to stop it the pin then slid across the scene at constant speed,
            # pulling a 1.2 m ridge of cloth through the hammock that tipped the loads off its side.
            active = (col.depth > 0.0) & self._dynamic[col.idx]
            if not active.all():
                col = ColliderContacts(
                    col.idx[active],
                    col.normal[active],
                    col.depth[active],
                    col.velocity[active],
                    col.friction[active],
                )
            delta = collider_corrections(
                target, x_prev, col, s.static_friction_scale, s.dynamic_friction_scale, self._friction, h
            )
            self._apply_jacobi(target, col.idx, delta, 1.0)
        if len(pair_i):
            idx, delta, near = particle_contacts(
                target, x_prev, pair_i, pair_j, w_contact, self.radius, s.max_mass_ratio,
                self._friction, s.static_friction_scale, s.dynamic_friction_scale,
                self._cohesion if self._has_cohesion else None,
                *self._rigid_sdf_world(), touch_tolerance=tol,
            )  # fmt: skip
            touching[near] = True
            if len(idx):
                self._apply_pair_jacobi(target, idx, delta, s.relaxation)
        return target - x_pred, touching, col

    def _cloth_contact_pass(
        self, x_pred: FloatArray, pair_i: IntArray, pair_j: IntArray, w_contact: FloatArray
    ) -> None:
        """Contacts between cloth and other particles once more, after the stretch solve, cloth held.

        The stiff stretch solve runs after the contacts and pulls each cloth vertex back to where the
        rest of the cloth and the pins hold it, undoing the cloth's share of every contact correction.
        With the mass-ratio limit (10:1) the heavy side's share is only 1/11, so a grain or crate on
        the cloth got ~1/11 of the overlap back per small step: a contact that soft is a spring that a
        falling block of sand compresses by more than a radius and pushes straight through, between
        the vertices, while the cloth hardly stretches (hammock demo, 700 kg of sand on 0.9 kg of
        cloth: 600-1300 of the 1287 grains and both crates went through the cloth's interior; twice
        the substeps only slowed it down). Here the cloth counts as immovable (its position is the
        stretch solve's answer) and only the other side moves out, so the step ends with the load on
        the cloth and the velocity update sees it stopped. The first pass keeps its mass-ratio split,
        so a heavier load still pushes the cloth further down. No friction here (the first pass
        applied it).
        """
        mixed = self._is_cloth[pair_i] != self._is_cloth[pair_j]
        if not mixed.any():
            return
        w_load = np.where(self._is_cloth, 0.0, w_contact)  # 0 = immovable, kept 0 by the ratio limit
        # Only overlap beyond the slop is removed (rest distance 2r - slop): the load rests that deep
        # in the cloth and the next first pass sees it, so the sag still grows with the load's mass.
        r = self.radius * (1.0 - 0.5 * CLOTH_CONTACT_SLOP_RADII)
        idx, delta, _ = particle_contacts(
            x_pred, None, pair_i[mixed], pair_j[mixed], w_load, r, self.settings.max_mass_ratio,
            None, 1.0, 1.0, None, *self._rigid_sdf_world(),
        )  # fmt: skip
        if len(idx):
            self._apply_pair_jacobi(x_pred, idx, delta, self.settings.relaxation)

    def _collider_contacts(
        self, x: FloatArray, alpha: float, dt_frame: float, tol: float
    ) -> ColliderContacts:
        parts = [plane_contacts(self.planes, x, self.radius, tol)] if self.planes else []
        parts += [mesh.contacts(x, alpha, dt_frame, tol) for mesh in self.meshes]
        return ColliderContacts.concatenate(parts)

    def _apply_jacobi(self, x: FloatArray, idx: IntArray, delta: FloatArray, omega: float) -> IntArray:
        """x_i += omega / n_i * sum of the corrections on i (paper Eq. 11); returns the counts n_i."""
        n = len(x)
        count = np.bincount(idx, minlength=n)
        scale = omega / np.maximum(count, 1)
        # Coordinate by coordinate: NumPy 1.26 is slow at (N, 3) x (N, 1) broadcasting (see fastops).
        for axis in range(3):
            x[:, axis] += np.bincount(idx, weights=delta[:, axis], minlength=n) * scale
        return count

    def _apply_pair_jacobi(self, x: FloatArray, idx: IntArray, delta: FloatArray, omega: float) -> None:
        """Jacobi averaging that keeps pair corrections equal and opposite (momentum-conserving).

        Eq. 11 divides the sum at particle i by its constraint count n_i; for a pair whose ends have
        different counts that breaks Newton's third law. Scaling each pair by 1 / max(n_i, n_j)
        bounds every particle's total the same way while keeping both sides' corrections opposite.
        ``idx``/``delta`` hold the K i-sides first, then the K j-sides; ``delta`` is (3, 2K).
        """
        n = len(x)
        count = np.bincount(idx, minlength=n)
        k = len(idx) // 2
        scale = omega / np.maximum(count[idx[:k]], count[idx[k:]])
        scale2 = np.concatenate([scale, scale])
        for axis in range(3):  # delta is coordinate-major, (3, 2K)
            x[:, axis] += np.bincount(idx, weights=delta[axis] * scale2, minlength=n)

    def _scaled_contact_inv_mass(self, x_pred: FloatArray) -> FloatArray:
        """Contact inverse masses: rigid particles' effective mass, then shock propagation.

        Rigid particles: shape matching weighs a touching particle (1 + W) times its mass m, so a
        correction on it moves its body by m (1 + W) / (M + W m n) of it (M body mass, n touching
        particles of the body, from the previous small step). Giving the contact the effective mass
        m_c = M m (1 + W) / (M + W m n) makes the body's momentum change equal the partner's: the
        weighting keeps friction from being averaged away without breaking momentum conservation.

        Shock propagation (paper Sec. 4.3): w* = w exp(k height), m* = m exp(-k height).
        """
        w = self._contact_inv_mass
        sm = self._shape
        if sm is not None:
            big_w = self.settings.rigid_contact_weight
            n_touch = self._rigid_touch_count[sm.body]
            body_mass = self._rigid_body_mass[sm.body]
            factor = (body_mass + big_w * sm.mass * n_touch) / (body_mass * (1.0 + big_w))
            w = w.copy()
            w[sm.idx] *= factor
        k = self.settings.shock_propagation
        g = float(np.linalg.norm(self.gravity))
        if k <= 0.0 or g == 0.0 or not self._any_pairs:
            return w
        height = np.einsum("ij,j->i", x_pred, -self.gravity / g)
        # Relative to the lowest particle, capped so exp never overflows.
        return w * np.exp(np.minimum(k * (height - height.min()), 50.0))

    def _rigid_sdf_world(self) -> tuple[FloatArray | None, Callable[[IntArray], FloatArray] | None]:
        """Per-particle SDF depth, and a function rotating the stored SDF normals to world space."""
        if self._shape is None:
            return None, None
        rotation = self._rigid_rotation
        body_of = self._body_of_particle
        local = self._sdf_normal_local

        def normal(idx: IntArray) -> FloatArray:
            # (3, K), coordinate-major. Non-rigid particles have a zero local normal, so any rotation
            # gives zero.
            return np.asarray(np.einsum("kij,kj->ik", rotation[body_of[idx]], local[idx]), dtype=np.float64)

        return self._sdf_depth, normal

    def _rigid_goals(self, x: FloatArray, touching: NDArray[np.bool_]) -> tuple[FloatArray, FloatArray]:
        """Shape-matching corrections (R, 3) with contact-weighted fit, and the body rotations."""
        sm = self._shape
        assert sm is not None
        weight = sm.mass * (1.0 + self.settings.rigid_contact_weight * touching[sm.idx])
        return sm.goals(x, weight)

    def _solve_shape_matching(self, x_pred: FloatArray, touching: NDArray[np.bool_]) -> None:
        sm = self._shape
        assert sm is not None
        self._rigid_touch_count = np.asarray(
            np.bincount(sm.body, weights=touching[sm.idx].astype(np.float64), minlength=sm.n_bodies),
            dtype=np.float64,
        )
        delta, self._rigid_rotation = self._rigid_goals(x_pred, touching)
        # One goal per particle, so no averaging; applied fully to keep the body rigid.
        x_pred[self._shape.idx] += delta  # type: ignore[union-attr]

    def _update_rigid_frames(self) -> None:
        """Mass-weighted fit of the final positions: the rotation and centre behind ``transform``."""
        if self._shape is None:
            return
        rot, c, _ = self._shape.fit(self._x, self._shape.mass)
        self._rigid_rotation, self._rigid_center = rot, c

    @staticmethod
    def _clamp_speed(v: FloatArray, max_speed: float) -> None:
        speed = np.sqrt(np.einsum("ij,ij->i", v, v))
        fast = speed > max_speed
        if fast.any():
            v[fast] *= (max_speed / speed[fast])[:, None]

    def _apply_restitution(
        self, v: FloatArray, v_before: FloatArray, col: ColliderContacts, h: float
    ) -> None:
        """Bounce: the normal velocity after the step becomes -e times the approach speed before it.

        Slow contacts (approach below the speed gravity adds in two small steps) do not bounce, so
        resting contacts stay at rest. Colliders only; particle-particle contacts are inelastic.
        """
        e = self.settings.restitution
        vn_before = np.einsum("ij,ij->i", v_before[col.idx], col.normal)
        threshold = 2.0 * float(np.linalg.norm(self.gravity)) * h
        bounce = vn_before < -threshold
        if not bounce.any():
            return
        idx, n = col.idx[bounce], col.normal[bounce]
        vn_after = np.einsum("ij,ij->i", v[idx], n)
        v[idx] += ((-e * vn_before[bounce]) - vn_after)[:, None] * n

    # ------------------------------------------------------------------ snapshots
    def state(self) -> dict[str, Any]:
        """Everything time-varying, as a dict of NumPy arrays and plain numbers (np.savez-able)."""
        meshes = self.meshes
        return {
            "particle_count": self.particle_count,
            "time": float(self.time),
            "frame": int(self.frame),
            "positions": self._x.copy(),
            "velocities": self._v.copy(),
            "rigid_rotation": self._rigid_rotation.copy(),
            "rigid_center": self._rigid_center.copy(),
            "rigid_touch_count": self._rigid_touch_count.copy(),
            # Positions at the last candidate-list build; the list itself is rebuilt from them.
            "neighbor_reference": self._nb_ref.copy(),
            "collider_transform": np.array([m._transform for m in meshes]).reshape(len(meshes), 4, 4),
            "collider_frame_start": np.array([m._frame_start for m in meshes]).reshape(len(meshes), 4, 4),
        }

    def set_state(self, snapshot: dict[str, Any]) -> None:
        """Restore a snapshot taken by :meth:`state` from a world with the same bodies and colliders."""
        try:
            n = int(snapshot["particle_count"])
            x = np.asarray(snapshot["positions"], dtype=np.float64)
            v = np.asarray(snapshot["velocities"], dtype=np.float64)
            rot = np.asarray(snapshot["rigid_rotation"], dtype=np.float64)
            center = np.asarray(snapshot["rigid_center"], dtype=np.float64)
            touch = np.asarray(snapshot["rigid_touch_count"], dtype=np.float64)
            ct = np.asarray(snapshot["collider_transform"], dtype=np.float64)
            cs = np.asarray(snapshot["collider_frame_start"], dtype=np.float64)
            nb_ref = np.asarray(snapshot["neighbor_reference"], dtype=np.float64)
            time, frame = float(snapshot["time"]), int(snapshot["frame"])
        except (KeyError, TypeError, ValueError) as exc:
            raise SimulationInputError(f"not a World snapshot: {exc}") from None
        if n != self.particle_count or x.shape != (n, 3) or v.shape != (n, 3):
            raise SimulationInputError(
                f"snapshot has {n} particles but this world has {self.particle_count}: "
                "restore into a world built with the same bodies"
            )
        if rot.shape != self._rigid_rotation.shape or ct.shape != (len(self.meshes), 4, 4):
            raise SimulationInputError("snapshot has a different number of rigid bodies or mesh colliders")
        if not (np.all(np.isfinite(x)) and np.all(np.isfinite(v))):
            raise SimulationInputError("snapshot positions/velocities contain NaN or inf")
        self._x[...] = x
        self._v[...] = v
        self._rigid_rotation, self._rigid_center = rot.copy(), center.copy()
        if touch.shape != center.shape[:1]:
            raise SimulationInputError("snapshot has a different number of rigid bodies")
        self._rigid_touch_count = touch.copy()
        if nb_ref.shape not in ((0, 3), (n, 3)):
            raise SimulationInputError(f"snapshot neighbour reference has shape {nb_ref.shape}")
        self._reset_neighbors()
        self._ensure_built()
        if len(nb_ref) and self._any_pairs:
            self._nb_i, self._nb_j = self._build_candidates(nb_ref)
            self._nb_ref = nb_ref.copy()
        for mesh, m, m0 in zip(self.meshes, ct, cs, strict=True):
            mesh.set_transform(m)
            mesh._frame_start = m0.copy()
        self.time, self.frame = time, frame

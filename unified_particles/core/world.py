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
distance). Behind the façade: :mod:`.builder` checks and appends what ``add_*`` adds (as warp's
``ModelBuilder``), :mod:`.limits` holds the memory and fill limits, :mod:`.pins` schedules moving
pins, :mod:`.snapshot_codec` encodes and restores snapshots, :mod:`.divergence` detects blow-ups, and
the solver owns the colliders (:mod:`.collider_set`). Settings are declared once in :mod:`.settings`.

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
unpinned cloth draped over a collider stretches at the support (26% at the apex in the S1 benchmark);
Position Based Fluids compress under deep columns with one density iteration per small step.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import snapshot_codec
from .allocator import keep_temporaries
from .blas_threads import one_blas_thread
from .bodies import Body, Cloth, Fluid, Granular, RigidBody, SoftBody
from .builder import DEFAULT_ROLLING_FRICTION, WorldBuilder, positive, world_settings
from .colliders import MeshCollider, PlaneCollider
from .divergence import diverged_particles, divergence_error
from .fields import FieldSystem, ForceField
from .glue import glue_touching
from .hair import Hair, add_hair
from .joints import Joint, add_joint
from .limits import BYTES_PER_PARTICLE, DEFAULT_MEMORY_FRACTION, ParticleBudget
from .limits import physical_memory as _physical_memory
from .model import ParticleModel
from .pins import PinSchedule, finish_pins
from .rope import Rope, add_rope
from .settings import SolverSettings
from .solver import Solver
from .state import ParticleState, Snapshot

__all__ = ["BYTES_PER_PARTICLE", "SolverSettings", "World"]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


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
        bodies, planes, meshes: what was added, in order (copies of the lists).
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
        keep_temporaries()  # large temporaries stay in the heap: no page faults each small step (allocator)
        self.radius = positive(radius, "radius")
        self.gravity, self.settings = world_settings(gravity, substeps, iterations, settings)
        margin = self.settings.collision_margin
        self.margin = self.radius if margin is None else float(margin)
        limit = self.settings.memory_limit
        memory_limit = DEFAULT_MEMORY_FRACTION * _physical_memory() if limit is None else float(limit)
        self._budget = ParticleBudget(self.radius, memory_limit)

        self.time = 0.0
        self.frame = 0
        self.model = ParticleModel()
        self._state = ParticleState()
        self._pins = PinSchedule()  # the pin targets set since the last step
        self._solver = Solver(self.model, self.settings, self.radius, self.margin, self.gravity)
        self._builder = WorldBuilder(self, self.model, self._state, self._solver, self._budget)

    # ------------------------------------------------------------------ public state
    @property
    def bodies(self) -> list[Body]:
        """The bodies added so far, in order (a copy of the list)."""
        return list(self._builder.bodies)

    @property
    def planes(self) -> list[PlaneCollider]:
        """The plane colliders added so far, in order (a copy of the list)."""
        return list(self._solver.colliders.planes)

    @property
    def meshes(self) -> list[MeshCollider]:
        """The mesh colliders added so far, in order (a copy of the list)."""
        return list(self._solver.colliders.meshes)

    @property
    def memory_limit(self) -> float:
        """Bytes the world may use (``BYTES_PER_PARTICLE`` a particle); ``add_*`` refuses more bodies."""
        return self._budget.memory_limit

    @memory_limit.setter
    def memory_limit(self, value: float) -> None:
        self._budget.memory_limit = float(value)

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
        self._state.positions[...] = self._builder.state_array(value, "positions")

    @property
    def velocities(self) -> FloatArray:
        """(N, 3) particle velocities, m/s: the live array, writable between steps."""
        return self._state.velocities

    @velocities.setter
    def velocities(self, value: ArrayLike) -> None:
        self._state.velocities[...] = self._builder.state_array(value, "velocities")

    @property
    def inverse_masses(self) -> FloatArray:
        """(N,) particle inverse masses, 1/kg (0 for pinned particles)."""
        self._solver.ensure_built()
        return self.model.particle_inv_mass.copy()

    @property
    def rigid_rotations(self) -> FloatArray:
        """(B, 3, 3) each rigid body's rotation from its build frame to now: the live array."""
        return self._state.rigid_rotation

    @property
    def rigid_centers(self) -> FloatArray:
        """(B, 3) each rigid body's current centre of mass, metres: the live array."""
        return self._state.rigid_center

    # ------------------------------------------------------------------ bodies
    def check_capacity(self, new_particles: int, what: str = "this") -> None:
        """Raise SimulationInputError if ``new_particles`` more would not fit in the memory limit.

        The message names the memory needed and the smallest particle radius that fits. Front ends
        call it with an estimate (``geometry.estimate_interior_count``) before they build anything.
        """
        self._budget.check_capacity(self.particle_count, new_particles, what)

    def check_fill(
        self,
        vertices: ArrayLike,
        faces: ArrayLike,
        what: str = "this",
        max_count: float | None = None,
        unit: str = "particles",
        rigid: bool = False,
    ) -> None:
        """Raise SimulationInputError if filling this mesh at this radius breaks any limit.

        The limits: the memory limit (with the particles already in the world), the sampling grid
        (``geometry.MAX_SAMPLE_GRID_NODES``) and, if given, ``max_count`` (e.g. a front end's grain limit).
        The message names every limit broken and the smallest radius (4 digits) that keeps all of them,
        computed with the estimate the fill itself uses, so the number it suggests works (``rigid``:
        a rigid body's fill, ``geometry.sample_rigid``).
        """
        self._budget.check_fill(self.particle_count, vertices, faces, what, max_count, unit, rigid=rigid)

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
        radius: float | None = None,
        shell: bool = False,
    ) -> RigidBody:
        """Add a rigid body of particles whose spheres (radius r) touch its mesh (``geometry.sample_rigid``).

        Args:
            vertices: (V, 3) mesh vertices in world space at build time, metres.
            faces: (F, 3) triangle vertex indices (open and non-manifold meshes are fine).
            density: kg/m^3; the body weighs density * its mesh's volume (open meshes: (2r)^3 per
                particle). Ignored if ``mass`` is given.
            friction: Coulomb coefficient of the surface.
            mass: total mass, kg (optional, overrides density).
            name: optional label.
            initial_velocity: (3,) velocity of the centre of mass at the start, m/s (world axes).
            angular_velocity: (3,) spin at the start, rad/s about world axes through the centre of
                mass (right-handed: (0, 0, 1) turns counter-clockwise seen from above).
            radius: this body's particle radius r, metres (None: the world's); contacts at r_i + r_j.
            shell: fill only one layer under the surface (hollow, like Blender's "Mesh" shape; a body
                nested inside has room); it weighs density * its walls' volume (``geometry.shell_of``).
        """
        return self._builder.add_rigid(
            vertices, faces, density, friction, mass, name, initial_velocity, angular_velocity, radius, shell
        )

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
        bending_rigidity: float | None = None,
        thickness: float | None = None,
        inflation: float | None = None,
        air_viscosity: float = 1.0,
        tear_strain: float | None = None,
        tear_mask: ArrayLike | None = None,
    ) -> Cloth:
        """Add a cloth: one particle per vertex, distance constraints on edges and across edges.

        Args:
            vertices: (V, 3) world-space vertex positions, metres.
            faces: (F, 3) triangles.
            mass: whole cloth, kg, spread over the vertices in proportion to their triangle area.
            stretch_compliance: XPBD compliance of edges, m/N (0 = inextensible).
            bend_compliance: XPBD compliance of the bending distance constraints, m/N (legacy bending).
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
            bending_rigidity: bending rigidity B, N m (Kawabata's B: 1 gf cm^2/cm = 9.81e-5 N m); given,
                isometric bending (core/bending.py; silk 3e-6, denim 1e-4) replaces ``bend_compliance``.
            thickness: contact radius of the cloth's vertex particles, metres (None: the world's radius),
                independent of the vertex spacing.
            inflation: a balloon: the closed mesh is held at this many times its volume (core/balloon.py;
                change it with :meth:`set_inflation`). None: no pressure.
            air_viscosity: >= 0, drag and lift of the air on the triangles (core/air.py): 1 air at sea
                level (Blender's default Air Viscosity), 0 a vacuum.
            tear_strain: > 0, an edge stretched beyond (1 + tear_strain) times its rest length breaks and
                the mesh splits there (core/tearing.py; ``Cloth.render_positions``); None: never tears.
            tear_mask: vertex indices (or a (V,) bool mask) where it may tear (None: everywhere); pinned
                vertices never split. A tearing cloth has no tethers.
        """
        return self._builder.add_cloth(
            vertices, faces, mass, stretch_compliance, bend_compliance, pinned, self_collision, friction,
            name, tether_give, initial_velocity, soft_pins, soft_pin_frequency, bending_rigidity, thickness,
            inflation, air_viscosity, tear_strain, tear_mask,
        )  # fmt: skip

    def add_soft(
        self, vertices: ArrayLike, faces: ArrayLike, density: float = 1000.0, stiffness: float = 20.0,
        cluster_spacing: float | None = None, cluster_radius: float | None = None, friction: float = 0.5,
        pinned: ArrayLike | None = None, plastic_yield: float | None = None, plastic_creep: float = 0.0,
        mass: float | None = None, name: str | None = None, initial_velocity: ArrayLike = (0.0, 0.0, 0.0),
    ) -> SoftBody:  # fmt: skip
        """Add a soft body: the mesh filled as a rigid body, held by overlapping shape-matching clusters of
        ``stiffness`` Hz (plastic above ``plastic_yield``); arguments: :meth:`.builder.WorldBuilder.add_soft`.
        Presets: ``core.SOFT_PRESETS``."""
        return self._builder.add_soft(
            vertices, faces, density, stiffness, cluster_spacing, cluster_radius, friction, pinned,
            plastic_yield, plastic_creep, mass, name, initial_velocity,
        )  # fmt: skip

    def set_inflation(self, cloth: Cloth, ratio: float) -> None:
        """Set a balloon's inflation ratio (target volume / rest volume, > 0) for the next steps."""
        self._builder.set_inflation(cloth, ratio)

    def soft_cluster_frames(self, at_build: bool = False) -> tuple[FloatArray, FloatArray, FloatArray]:
        """Each soft-body cluster's rest centre (C, 3), best-fit affine map (C, 3, 3) from its rest shape to
        now (``at_build``: to the build positions) and centre (C, 3), metres (``SoftClusters.affine``)."""
        self._solver.ensure_built()
        soft = self.model.soft
        if soft is None:
            return np.zeros((0, 3)), np.zeros((0, 3, 3)), np.zeros((0, 3))
        return (soft.center, *soft.affine(self.model.particle_rest_q if at_build else self.positions))

    @property
    def balloon_inflation(self) -> FloatArray:
        """(K,) each balloon's inflation ratio (a copy)."""
        return self._state.balloon_inflation.copy()

    def add_granular(
        self,
        points: ArrayLike,
        density: float = 1600.0,
        friction: float = 0.5,
        cohesion: float = 0.0,
        name: str | None = None,
        initial_velocity: ArrayLike = (0.0, 0.0, 0.0),
        rolling_friction: float = DEFAULT_ROLLING_FRICTION,
        kinetic_friction: float | None = None,
        radius: ArrayLike | None = None,
        radius_spread: float = 0.0,
        seed: int = 0,
    ) -> Granular:
        """Add grains: one particle per point.

        Args:
            points: (P, 3) grain centres, metres (see ``fill_mesh_with_grains``).
            density: kg/m^3; each grain weighs density * (2r)^3.
            friction: Coulomb coefficient between grains and against anything.
            cohesion: 0..1, fraction of a small gap (< r/2) closed per iteration, for damp sand.
            name: optional label.
            initial_velocity: (3,) velocity of every grain at the start, m/s.
            rolling_friction: rolling resistance coefficient between touching grains, >= 0.
            kinetic_friction: sliding friction between grains, 0..friction (None: friction; docs/physics.md).
            radius: grain radius, metres: one, or (P,) one per grain (None: the world's).
            radius_spread: each grain's radius times a factor uniform in [1 - spread, 1 + spread], [0, 1).
            seed: seed of that spread (the same seed, the same grains).
        """
        return self._builder.add_granular(
            points, density, friction, cohesion, name, initial_velocity, rolling_friction, kinetic_friction,
            radius, radius_spread, seed,
        )  # fmt: skip

    def add_rope(
        self,
        points: ArrayLike,
        radius: float | None = None,
        mass: float | None = None,
        density: float = 1000.0,
        stretch_compliance: float = 0.0,
        bend_compliance: float | None = 1e-2,
        pinned: ArrayLike | str | None = None,
        friction: float = 0.5,
        self_collision: bool = True,
        name: str | None = None,
        initial_velocity: ArrayLike = (0.0, 0.0, 0.0),
        tether_give: float | None = 0.01,
        attach: Sequence[tuple[int, RigidBody]] | None = None,
    ) -> Rope:
        """Add a rope or chain: particles every ~2r along the polyline ``points`` (K, 3), world metres,
        linked by distance constraints, bending across two links, optional pins ("start", "end", "both" or
        particle indices) and ties of its particles to rigid bodies (``attach``: (index, body) pairs).
        Every argument is described in :func:`.rope.add_rope`."""
        return add_rope(
            self._builder, points, radius, mass, density, stretch_compliance, bend_compliance, pinned,
            friction, self_collision, name, initial_velocity, tether_give, attach,
        )  # fmt: skip

    def add_hair(
        self, points: ArrayLike, surface_vertices: ArrayLike, surface_faces: ArrayLike, **options: Any
    ) -> Hair:
        """Add hair: strands of particles at ``points`` ((S, P, 3), world metres) whose roots ride on the
        triangle mesh ``surface_vertices`` (V, 3), ``surface_faces`` (T, 3). Every argument (stiffness,
        radius, damping, root attachments, ...) is described in :func:`.hair.add_hair`."""
        return add_hair(self._builder, points, surface_vertices, surface_faces, **options)

    def set_hair_surface(self, hair: Hair, surface_vertices: ArrayLike) -> None:
        """Move ``hair``'s surface mesh to ``surface_vertices`` (V, 3), world metres, by the end of the next
        step; its roots follow (:meth:`.hair.Hair.set_surface`)."""
        hair.set_surface(surface_vertices)

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
            viscosity: 0..1, XSPH viscosity per small step, implicit (:mod:`.viscosity`): a kinematic
                viscosity of about 0.26 * viscosity * (r / 3 cm)^2 m^2/s at 16 small steps per frame
                (water 0.01, honey 1.0).
            cohesion: 0..1, surface tension and cohesion (Akinci et al. 2013), a fraction of a 4 m/s^2
                peak acceleration per neighbour pair (``fluid.COHESION_ACCELERATION``).
            adhesion: 0..1, attraction to solid particles, a fraction of the same acceleration.
            vorticity: 0..1, vorticity confinement (keeps swirls alive).
            name: optional label.
            initial_velocity: (3,) velocity of every particle at the start, m/s.
            capacity: particle slots to reserve (>= P; None: P). Slots beyond P start free for
                :meth:`Fluid.emit`; the particle count of the world stays fixed, so snapshots and
                point caches keep working while fluid pours in and drains.

        Presets: ``core.FLUID_PRESETS`` ("WATER", "HONEY", "OIL", "SLIME") hold these keywords.
        """
        return self._builder.add_fluid(
            points, density, viscosity, cohesion, adhesion, vorticity, name, initial_velocity, capacity
        )

    def emit_fluid(self, fluid: Fluid, points: ArrayLike, velocity: ArrayLike = (0.0, 0.0, 0.0)) -> IntArray:
        """Put live fluid at ``points`` (P, 3) with ``velocity`` ((3,) or (P, 3), m/s) into ``fluid``'s
        free slots, lowest first; returns their world indices. Between steps, like adding a body."""
        return self._builder.emit_fluid(fluid, points, velocity)

    def remove_fluid(self, fluid: Fluid, which: ArrayLike) -> None:
        """Free the slots ``which`` of ``fluid`` (a (capacity,) bool mask or local slot numbers): those
        particles stop and take part in nothing until emitted again."""
        self._builder.remove_fluid(fluid, which)

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
        return self._builder.add_collider_plane(point, normal, friction, name)

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
        return self._builder.add_collider_mesh(
            vertices, faces, transform, friction, name, cell_size, deforming
        )

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
            strength: Blender's ``field.strength``: newtons for Force, Wind, Vortex and Turbulence, on
                each rigid or granular object as a whole (as Bullet does), 0.02 N per m^2 on cloth.
            name: optional label.
            **settings: Blender's ``FieldSettings`` names (``ForceField``); change them later with
                ``field.configure(...)``.

        The field's pose and settings hold for a whole ``step``; a snapshot does not hold them (set
        them before each step, as the Blender layer does). See docs/physics.md, "Force fields".
        """
        field = ForceField(kind, transform, name, strength=strength, **settings)
        self._field_system().fields.append(field)
        return field

    def remove_force_field(self, field: ForceField) -> None:
        """Take a force field out of the world."""
        self._builder.remove_force_field(field)

    @property
    def force_fields(self) -> list[ForceField]:
        """The force fields added so far, in order (a copy of the list)."""
        return list(self._field_system().fields)

    def set_field_weight(self, body: Body, weight: float, kind: str | None = None) -> None:
        """How strongly force fields act on ``body``: 0 not at all, 1 fully (default), more is allowed.

        ``kind`` None: Blender's effector weight "All" (the add-on's ``field_weight``); a field kind
        (e.g. "WIND"): Blender's weight of that type, multiplied with "All".
        """
        self._builder.set_field_weight(body, weight, kind)

    def set_field_sources(self, body: Body, names: Iterable[str] | None) -> None:
        """Only the fields of these names act on ``body`` (Blender's effector collection); None: all."""
        self._field_system().set_sources(body, names)

    def field_weight(self, body: Body) -> float:
        """The force-field weight of ``body`` (1 unless set by :meth:`set_field_weight`)."""
        return self._field_system().weight(body)

    def _field_system(self) -> FieldSystem:  # made on first use (WorldBuilder.field_system)
        return self._builder.field_system()

    # ------------------------------------------------------------------ joints
    def add_joint(
        self, body_a: RigidBody, body_b: RigidBody | None = None, kind: str = "HINGE", **kw: Any
    ) -> Joint:
        """Join rigid body ``body_a`` to ``body_b`` (None: the world): see :func:`.joints.add_joint`."""
        return add_joint(self._solver, self._state, self._builder.bodies, body_a, body_b, kind, kw)

    def glue(
        self,
        bodies: Sequence[RigidBody] | None = None,
        strength: float | Sequence[float] = 1e5,
        gap: float | None = None,
    ) -> list[Joint]:
        """Glue every two rigid ``bodies`` (None: all) that touch now with a FIXED joint that breaks above
        ``strength`` (Pa, or one per body: the weaker side's) times the glued area; returns the joints.
        See :func:`.glue.glue_touching`."""
        return glue_touching(self, bodies, strength, gap)

    @property
    def joints(self) -> list[Joint]:
        """The joints added so far, in order (a copy of the list)."""
        return list(self._solver.joints.joints) if self._solver.joints is not None else []

    # ------------------------------------------------------------------ moving pins
    def set_pin_targets(self, indices: ArrayLike, positions: ArrayLike) -> None:
        """Move pinned particles ``indices`` (K,) to ``positions`` (K, 3), world metres, by the end of the
        next :meth:`step`, in a straight line over its small steps (``Cloth.set_pin_targets`` does this
        for one cloth's pins). Pinned particles have infinite mass: they drag the cloth along and push
        what they touch. Targets last one step; set them again before each step the pins move in.

        Raises:
            SimulationInputError: an index is not a pinned particle, or the shapes or values are wrong.
        """
        self._solver.ensure_built()
        self._pins.set_pin_targets(self.model, self.particle_count, indices, positions)

    def set_soft_pin_targets(self, indices: ArrayLike, positions: ArrayLike) -> None:
        """Move the anchors of soft-pinned particles ``indices`` (K,) to ``positions`` (K, 3), world metres,
        by the end of the next :meth:`step` (in a straight line over its small steps). Anchors stay where
        they were last put (``Cloth.set_soft_pin_targets`` does this for one cloth's soft pins).

        Raises:
            SimulationInputError: an index is not a soft-pinned particle, or the shapes or values are wrong.
        """
        self._solver.ensure_built()
        self._pins.set_soft_pin_targets(self.model, self.particle_count, indices, positions)

    # ------------------------------------------------------------------ the step
    def step(self, dt: float) -> None:
        """Advance one frame of ``dt`` seconds as substeps * iterations small solver steps."""
        dt = positive(dt, "dt")
        self._solver.ensure_built()
        n = self.substeps * self.iterations
        h = dt / n
        if self.particle_count:
            before = self.state()  # the last good state, put back if this step blows up
            try:
                self._solver.begin_frame(self._state)  # kinematic bodies' paths over this frame
                pins, soft = self._pins.take(self.model, self._state)
                self._solver.pin_motion, self._solver.soft_pin_motion = pins, soft
                with one_blas_thread():  # no BLAS worker spinning beside the solver (blas_threads.py)
                    for k in range(n):
                        self._small_step(h, (k + 1) / n, dt, stabilize=k == 0)
                        if self._solver.rest.at_rest:  # a fixed point the others repeat (rest_check)
                            break
                finish_pins(self._state, pins, soft)  # exactly on target, still until moved again
                self._solver.update_rigid_frames(self._state)
                # A dynamic body's target is where it is, so switching it kinematic holds it there.
                self._state.hold_dynamic_targets(self.model.rigid_rest_center)
            except Exception:
                if not diverged_particles(self._state, self.settings.max_speed).any():
                    raise  # a genuine error, not a blow-up
            finally:
                self._solver.pin_motion = self._solver.soft_pin_motion = None
            bad = diverged_particles(self._state, self.settings.max_speed)
            if bad.any():
                error = divergence_error(
                    bad, self._state, self._builder.bodies, self.settings, self.frame, self.time, dt
                )
                self.set_state(before)
                raise error
        self._solver.colliders.end_frame()
        self.time += dt
        self.frame += 1

    # ------------------------------------------------------------------ kinematic rigid bodies
    def set_kinematic(self, body: RigidBody | int, kinematic: bool) -> None:
        """Switch a rigid body (its handle or number) between dynamic and kinematic.

        Kinematic: infinite mass (pushes everything, nothing pushes it, colliders and gravity ignore
        it), moving to its target (:meth:`set_rigid_target`) over each frame with its particles'
        velocities those of that motion. Switched back to dynamic it keeps the velocity it last had.
        Switched on without a new target it holds the pose it has.
        """
        number = self._builder.rigid_number(body)
        self._state.rigid_kinematic[number] = bool(kinematic)

    def set_rigid_target(self, body: RigidBody | int, transform: ArrayLike) -> None:
        """The pose a kinematic rigid body reaches at the end of the next ``step``.

        ``transform`` is a 4x4 rigid motion from the build frame, as ``RigidBody.transform`` (for a body
        built from an object's world-space mesh: the object's matrix now @ its matrix at build time^-1).
        Scale and shear are dropped (the nearest rotation is used). The body moves there over the
        frame, its centre of mass in a straight line, its rotation along the shortest arc.
        """
        number = self._builder.rigid_number(body)
        self._state.rigid_target[number] = self._builder.rigid_target(transform)

    @property
    def rigid_kinematic(self) -> NDArray[np.bool_]:
        """(B,) bool, which rigid bodies are kinematic (a copy; change it with :meth:`set_kinematic`)."""
        return self._state.rigid_kinematic.copy()

    @property
    def rigid_targets(self) -> FloatArray:
        """(B, 4, 4) each rigid body's target transform (a copy; see :meth:`set_rigid_target`)."""
        return self._state.rigid_target.copy()

    def _small_step(self, h: float, alpha: float, dt_frame: float, stabilize: bool) -> None:
        """One small step (:meth:`Solver.small_step`, Algorithm 1); a method here so that fault tests
        can wrap it."""
        self._solver.small_step(self._state, h, alpha, dt_frame, stabilize)
        if self._solver.tearing is not None:  # overstrained edges break, the mesh splits (core/tearing.py)
            self._solver.tearing.after_step(self._state, self._solver)

    # ------------------------------------------------------------------ snapshots
    def state(self) -> Snapshot:
        """Everything time-varying, copied into a :class:`Snapshot` (``to_arrays()`` for np.savez)."""
        return snapshot_codec.encode(self._state, self._solver, self.time, self.frame)

    def set_state(self, snapshot: Snapshot | Mapping[str, Any]) -> None:
        """Restore a snapshot taken by :meth:`state` from a world with the same bodies and colliders.

        ``snapshot`` is a :class:`Snapshot`, or its ``to_arrays()`` (e.g. loaded from an .npz).
        """
        self.time, self.frame = snapshot_codec.restore(snapshot, self._state, self._solver)

# SPDX-License-Identifier: GPL-3.0-or-later
"""Building a world: the input checks and appends behind ``World.add_*``.

As warp/Newton's ``ModelBuilder``, the :class:`WorldBuilder` checks what a body is made of and appends
it, but incrementally (bodies may be added between steps): per-particle arrays and constraints go into
the :class:`~.model.ParticleModel`, positions and velocities into the :class:`~.state.ParticleState`,
colliders into the solver's :class:`~.collider_set.ColliderSet`; each ``add_*`` returns the body's
handle (:mod:`.bodies`). ``World`` keeps the signatures and docstrings users read; the checks of
``World(...)`` and ``add_*`` and their error messages live here, with those of what else is written into
the state between steps: fluid emission and removal, kinematic targets, replaced positions and velocities.
"""

from __future__ import annotations

from dataclasses import fields
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import geometry, soft_build
from .air import Air
from .balloon import Balloons, balloon_triangles
from .bending import BendingConstraints
from .bodies import Body, Cloth, Fluid, Granular, RigidBody, SoftBody
from .cloth_triangles import ClothTriangles
from .colliders import MeshCollider, PlaneCollider, as_transform
from .distance import DistanceConstraints, bending_pairs, compliant_strain, mesh_edges, tethers
from .errors import SimulationInputError
from .fields import FieldSystem, ForceField
from .kinematic import nearest_rotation
from .limits import ParticleBudget
from .model import KIND_CLOTH, KIND_FLUID, KIND_GRANULAR, KIND_RIGID, KIND_SOFT, ParticleModel
from .settings import SolverSettings
from .sizes import grain_radii, rigid_radius
from .soft import SoftClusters, rest_centres
from .solver import Solver
from .state import ParticleState
from .tearing import TearingCloth, TearSystem, tear_vertices

if TYPE_CHECKING:
    from .world import World

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

# Default rolling resistance of grains (contacts.rolling_resistance): poured dry sand (friction 0.7, the
# Dry Sand preset) piles at 32-33 degrees with it (tests/core/test_granular_pile.py, docs/physics.md).
DEFAULT_ROLLING_FRICTION = 0.0


def positive(value: float, what: str) -> float:
    """``value`` as a finite float > 0, else SimulationInputError naming ``what``."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise SimulationInputError(f"{what} must be a number, got {value!r}") from None
    if not np.isfinite(v) or v <= 0.0:
        raise SimulationInputError(f"{what} must be a finite number > 0, got {value!r}")
    return v


def nonnegative(value: float, what: str, upper: float = float("inf")) -> float:
    """``value`` as a finite float in [0, upper], else SimulationInputError naming ``what``."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise SimulationInputError(f"{what} must be a number, got {value!r}") from None
    if not np.isfinite(v) or v < 0.0 or v > upper:
        bound = f" and <= {upper}" if np.isfinite(upper) else ""
        raise SimulationInputError(f"{what} must be a finite number >= 0{bound}, got {value!r}")
    return v


def positive_int(value: int, what: str) -> int:
    """``value`` as a whole number >= 1 (not a bool), else SimulationInputError naming ``what``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise SimulationInputError(f"{what} must be a whole number >= 1, got {value!r}")
    return int(value)


def vector(value: ArrayLike, what: str) -> FloatArray:
    """Three finite numbers (a velocity), as a (3,) array."""
    try:
        v = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise SimulationInputError(f"{what} must be 3 numbers (x, y, z), got {value!r}") from None
    if v.shape != (3,) or not np.all(np.isfinite(v)):
        raise SimulationInputError(f"{what} must be 3 finite numbers (x, y, z), got {value!r}")
    return v


def world_settings(
    gravity: ArrayLike, substeps: int, iterations: int, settings: dict[str, Any]
) -> tuple[FloatArray, SolverSettings]:
    """``World(...)``'s gravity as a (3,) array, m/s^2, and its checked :class:`SolverSettings`."""
    g = np.asarray(gravity, dtype=np.float64)
    if g.shape != (3,) or not np.all(np.isfinite(g)):
        raise SimulationInputError(f"gravity must be 3 finite numbers, got {gravity!r}")
    substeps = positive_int(substeps, "substeps")
    iterations = positive_int(iterations, "iterations")
    known = {f.name for f in fields(SolverSettings)}
    unknown = sorted(set(settings) - known)
    if unknown:
        raise SimulationInputError(
            f"unknown setting(s) {', '.join(unknown)}; known settings: {', '.join(sorted(known))}"
        )
    checked = SolverSettings(substeps=substeps, iterations=iterations, **settings)
    checked.validate()
    return g, checked


def pinned_indices(pinned: ArrayLike | None, n: int) -> IntArray:
    """Sorted unique vertex indices from indices or a (n,) bool mask (None: none)."""
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


def lumped_vertex_mass(v: FloatArray, f: IntArray, mass: float) -> FloatArray:
    """(V,) vertex masses, kg, of a cloth of ``mass`` kg on vertices ``v`` (V, 3) and triangles ``f``
    (F, 3): each triangle gives a third of its area to each corner; a vertex on no triangle gets the
    mean area."""
    n = len(v)
    area = 0.5 * np.linalg.norm(np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]]), axis=1)
    vert_area = np.bincount(f.ravel(), weights=np.repeat(area / 3.0, 3), minlength=n)
    if vert_area.sum() <= 0.0:
        raise SimulationInputError("cloth mesh has zero area (all triangles degenerate)")
    vert_area = np.where(vert_area > 0.0, vert_area, vert_area[vert_area > 0].mean())
    m: FloatArray = mass * vert_area / vert_area.sum()
    return m


def cloth_constraints(
    v: FloatArray,
    f: IntArray,
    first: int,
    stretch_compliance: float,
    bend_compliance: float,
    give: float | None,
    pin_local: IntArray,
    rigidity: float | None = None,
) -> tuple[
    DistanceConstraints,
    DistanceConstraints | BendingConstraints,
    DistanceConstraints | None,
    tuple[IntArray, IntArray, FloatArray] | None,
]:
    """A cloth's stretch constraints, bending constraints, stretch limits (None without ``rigidity``)
    and tethers (None without ``give``), on the global particle indices of its vertices ``v`` (V, 3)
    (``first`` + local index).

    Without ``rigidity`` the bending is the legacy distance constraint of compliance ``bend_compliance``
    (m/N) across each edge's diamond; with it (N m) it is isometric bending (core/bending.py) and the
    diamond's pairs get unilateral stretch limits instead (they bound stretch, never resist folding).
    """
    n = len(v)
    edges = mesh_edges(f)
    pairs = bending_pairs(f)
    stretch = DistanceConstraints.build(edges, v, np.full(len(edges), stretch_compliance), True, n)
    bending: DistanceConstraints | BendingConstraints
    limits = None
    if rigidity is None:
        bending = DistanceConstraints.build(pairs, v, np.full(len(pairs), bend_compliance), False, n)
        shifted = [stretch, bending]
    else:
        bending = BendingConstraints.build(v, f, rigidity, first)
        limits = DistanceConstraints.build(pairs, v, np.zeros(len(pairs)), True, n)
        shifted = [stretch, limits]
    for con in shifted:
        con.a = con.a + first
        con.b = con.b + first
    tether = None
    if give is not None:
        free, anchor, length = tethers(edges, v, pin_local)
        # Tethers bound only the stretch beyond what the cloth's compliance allows (a soft cloth sags
        # further under a heavier load); they hold what a few solver sweeps per step cannot.
        limit = 1.0 + give + compliant_strain(stretch_compliance)
        tether = (free + first, anchor + first, length * limit)
    return stretch, bending, limits, tether


class WorldBuilder:
    """Checks and appends the bodies and colliders of one ``World`` (see the module docstring).

    Args:
        world: the World the handles belong to.
        model, state, solver: the World's parts the bodies go into.
        budget: the radius and memory limit every body is checked against.

    Attributes:
        bodies: the handles made so far, in order.
    """

    def __init__(
        self,
        world: World,
        model: ParticleModel,
        state: ParticleState,
        solver: Solver,
        budget: ParticleBudget,
    ) -> None:
        self.world = world
        self.model, self.state, self.solver = model, state, solver
        self.budget = budget
        self.radius = budget.radius
        self.bodies: list[Body] = []

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
        self.state.add_particles(x, v, active)
        self.solver.invalidate()
        return idx, group

    def field_system(self) -> FieldSystem:
        """The solver's force fields, made on first use (a world without fields never evaluates any; cloth
        triangles catch the wind)."""
        system = self.solver.fields
        if system is None:
            world = self.world  # the live body list: bodies added later feel the fields too
            system = self.solver.fields = FieldSystem(self.bodies, self.radius, lambda: world.time)
        return system

    def set_field_weight(self, body: Body, weight: float, kind: str | None = None) -> None:
        """``World.set_field_weight``: checks that ``body`` is one of this world's."""
        if not any(b is body for b in self.bodies):
            raise SimulationInputError(f"{body!r} is not a body of this world")
        self.field_system().set_weight(body, weight, kind)

    def remove_force_field(self, field: ForceField) -> None:
        """``World.remove_force_field``: checks that ``field`` is one of this world's."""
        system = self.field_system()
        if field not in system.fields:
            raise SimulationInputError(f"{field!r} is not a force field of this world")
        system.fields.remove(field)

    def _radius(self, radius: float | None, what: str = "radius") -> float:
        """A body's own particle radius, metres: ``radius`` checked, or the world's for None."""
        return self.radius if radius is None else positive(radius, what)

    def _check_capacity(self, new_particles: int, what: str) -> None:
        self.budget.check_capacity(self.state.particle_count, new_particles, what)

    # ------------------------------------------------------------------ bodies
    def add_rigid(
        self,
        vertices: ArrayLike,
        faces: ArrayLike,
        density: float,
        friction: float,
        mass: float | None,
        name: str | None,
        initial_velocity: ArrayLike,
        angular_velocity: ArrayLike,
        radius: float | None = None,
        shell: bool = False,
    ) -> RigidBody:
        """``World.add_rigid``: a rigid body whose outer particles' spheres touch its mesh
        (``geometry.sample_rigid``; ``radius`` None: the world's r), weighing density * its mesh's volume
        (``shell``: only the surface layer, ``geometry.shell_of``, weighing density * the walls' share)."""
        v0 = vector(initial_velocity, "initial_velocity")
        w0 = vector(angular_velocity, "angular_velocity")
        v = geometry.as_vertices(vertices)
        f = geometry.as_triangles(faces, len(v))
        density = positive(density, "density")
        friction = nonnegative(friction, "friction")
        measure = geometry.fill_measure(v, f)
        # Without its own radius the body fits its thinnest side (sizes.rigid_radius): no sphere sticks
        # out of a brick thinner than the world's 2r.
        r = rigid_radius(measure.extent, self.radius) if radius is None else self._radius(radius)
        spacing = 2.0 * r
        what = f"{name!r} as a rigid body" if name else "this rigid body"
        self.budget.check_fill(self.state.particle_count, v, f, what, radius=r, rigid=True)
        s = geometry.sample_rigid(v, f, r)
        walls = 1.0
        if shell:
            s, walls = geometry.shell_of(s, r)
        pts = np.asarray(s.points, dtype=np.float64)
        n = len(pts)
        if mass is None:
            # The mesh's volume, not the particles' (a brick is not a whole number of particle cubes);
            # an open mesh has none, and its particles' cubes stand in. A shell weighs its walls: the
            # kept particles' share of the volume (each particle stands for an equal share).
            volume = measure.volume * walls if measure.volume else None
            mass = density * (volume if volume else n * spacing**3)
        m_particle = positive(mass, "mass") / n
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
            radius=r,
        )
        number = self.model.add_rigid_body(idx, pts, center, m_particle, s.faces())
        self.state.add_rigid_body(center)
        body = RigidBody(self.world, idx, group, name, number, total, center)
        self.bodies.append(body)
        return body

    def add_cloth(
        self,
        vertices: ArrayLike,
        faces: ArrayLike,
        mass: float,
        stretch_compliance: float,
        bend_compliance: float,
        pinned: ArrayLike | None,
        self_collision: bool,
        friction: float,
        name: str | None,
        tether_give: float | None,
        initial_velocity: ArrayLike,
        soft_pins: ArrayLike | None,
        soft_pin_frequency: ArrayLike,
        bending_rigidity: float | None = None,
        thickness: float | None = None,
        inflation: float | None = None,
        air_viscosity: float = 1.0,
        tear_strain: float | None = None,
        tear_mask: ArrayLike | None = None,
    ) -> Cloth:
        """``World.add_cloth``: one particle per vertex, distance constraints on edges and across edges;
        ``thickness`` (m, None: the world's radius) is each vertex particle's contact radius; with
        ``inflation`` a balloon (a closed mesh held at ``inflation`` times its volume); with
        ``tear_strain`` a tearing cloth (core/tearing.py: a spare particle per vertex of ``tear_mask``)."""
        v0 = vector(initial_velocity, "initial_velocity")
        v = geometry.as_vertices(vertices)
        f = geometry.as_triangles(faces, len(v))
        mass = positive(mass, "cloth mass")
        sc = nonnegative(stretch_compliance, "stretch_compliance")
        bc = nonnegative(bend_compliance, "bend_compliance")
        rigidity = None if bending_rigidity is None else nonnegative(bending_rigidity, "bending_rigidity")
        friction = nonnegative(friction, "friction")
        air_viscosity = nonnegative(air_viscosity, "air_viscosity (1: air at sea level, 0: vacuum)")
        give = None if tether_give is None else nonnegative(tether_give, "tether_give")
        n = len(v)
        self._check_capacity(n, f"{name!r} as cloth" if name else "this cloth")
        if inflation is not None:
            ratio = positive(inflation, "inflation")
            tri, volume = balloon_triangles(f, v)  # checked before anything is added
        pin_local = pinned_indices(pinned, n)
        soft_local = pinned_indices(soft_pins, n)
        if np.intersect1d(soft_local, pin_local).size:
            raise SimulationInputError("a vertex cannot be both pinned and soft-pinned: pick one")
        mask = None if tear_mask is None else pinned_indices(tear_mask, n)  # where it may tear
        tearable = tear_vertices(tear_strain, mask, n, inflation is not None, pin_local, soft_local)
        if tearable is not None:
            give = None  # tethers would hold torn pieces to the pins
        frequency = np.broadcast_to(np.asarray(soft_pin_frequency, dtype=np.float64), soft_local.shape)
        if soft_local.size and not (np.all(np.isfinite(frequency)) and np.all(frequency > 0.0)):
            raise SimulationInputError(f"soft_pin_frequency must be positive Hz, got {soft_pin_frequency!r}")
        inv_mass = 1.0 / lumped_vertex_mass(v, f, mass)
        inv_mass[pin_local] = 0.0
        velocity = np.tile(v0, (n, 1))
        velocity[pin_local] = 0.0
        spares = np.flatnonzero(tearable) if tearable is not None else np.zeros(0, np.int64)
        if len(spares):
            self._check_capacity(n + len(spares), f"{name!r} with its tear spares" if name else "this cloth")
        idx, group = self._append(
            np.concatenate([v, v[spares]]),  # spares wait, inactive, at their vertices
            bool(self_collision),
            np.concatenate([velocity, np.zeros((len(spares), 3))]),
            active=n,
            inv_mass=np.concatenate([inv_mass, np.zeros(len(spares))]),
            contact_inv_mass=np.concatenate([inv_mass, np.zeros(len(spares))]),
            kind=KIND_CLOTH,
            friction=friction,
            radius=self._radius(thickness, "thickness"),
        )
        tear = None
        if tearable is not None and tear_strain is not None:
            tear = TearingCloth(
                v, f, int(idx[0]), tearable, len(spares), float(tear_strain), mass, inv_mass, sc, bc, rigidity
            )  # fmt: skip
            n_con = (len(tear.stretch), len(tear.bend or tear.bend_iso or ()))
        else:
            stretch, bending, limit, tether = cloth_constraints(
                v, f, int(idx[0]), sc, bc, give, pin_local, rigidity
            )
            self.model.add_cloth_constraints(stretch, bending, tether, limit)
            n_con = (len(stretch), len(bending))
        if soft_local.size:  # k = m (2 pi f)^2, compliance 1 / k
            self.model.add_soft_pins(
                soft_local + idx[0], inv_mass[soft_local] / (2.0 * np.pi * frequency) ** 2
            )
            self.state.soft_pin_target = np.concatenate([self.state.soft_pin_target, v[soft_local]])
        body = Cloth(self.world, idx, group, name, pin_local, *n_con, soft_local)
        body.n_vertices = n
        if inflation is not None:
            body.balloon = len(self.state.balloon_inflation)
            part = Balloons(tri + idx[0], np.zeros(len(tri), np.int64), np.array([volume]), np.zeros(1))
            self.model.add_deformable(part)
            self.state.balloon_inflation = np.append(self.state.balloon_inflation, ratio)
        self.bodies.append(body)
        wind = self.field_system()
        slots: list[tuple[object, str, int]] = [(wind, "cloth_triangles", len(wind.cloth_triangles))]
        wind.add_cloth(idx, f)  # wind presses on the triangles (core/fields.py)
        if self.solver.air is None:
            self.solver.air = Air()
        if air_viscosity > 0.0:
            slots.append((self.solver.air, "triangles", len(self.solver.air.triangles)))
        self.solver.air.add_cloth(idx, f, air_viscosity)  # drag and lift (core/air.py)
        if self.solver.cloth_triangles is None:
            self.solver.cloth_triangles = ClothTriangles()
        slots.append((self.solver.cloth_triangles, "triangles", len(self.solver.cloth_triangles.triangles)))
        # loads smaller than its mesh (core/cloth_triangles.py), at the cloth's own thickness
        self.solver.cloth_triangles.add_cloth(idx, f, self._radius(thickness, "thickness"), v)
        if tear is not None:
            tear.triangle_slots = slots
            if self.solver.tearing is None:
                self.solver.tearing = TearSystem()
            self.solver.tearing.add(tear)
            body.tear = tear
        return body

    def add_soft(
        self,
        vertices: ArrayLike,
        faces: ArrayLike,
        density: float,
        stiffness: float,
        cluster_spacing: float | None,
        cluster_radius: float | None,
        friction: float,
        pinned: ArrayLike | None,
        plastic_yield: float | None,
        plastic_creep: float,
        mass: float | None,
        name: str | None,
        initial_velocity: ArrayLike,
    ) -> SoftBody:
        """``World.add_soft``: particles on a grid of spacing 2r inside the mesh (the rigid fill), held by
        overlapping shape-matching clusters (core/soft.py), self-colliding so that it keeps its volume.

        Args:
            vertices: (V, 3) mesh vertices in world space at build time, metres (also the render mesh:
                ``SoftBody.vertex_positions`` skins them to the clusters).
            faces: (F, 3) triangles.
            density: kg/m^3; each particle weighs density * (2r)^3. Ignored if ``mass`` is given.
            stiffness: Hz, each cluster spring's natural frequency, k = m (2 pi f)^2: the tip of a
                cantilever sags as 1 / f^2 and a block wobbles faster with it.
            cluster_spacing: metres between cluster centres (None: 4r, two particles).
            cluster_radius: metres, a cluster holds the particles this near its centre (None: 7r).
            friction: Coulomb coefficient.
            pinned: mesh vertex indices (or a (V,) bool mask): the particles under them never move
                (``SoftBody.set_pin_transform`` moves them).
            plastic_yield: strain (|S - I|) above which clusters flow plastically (None: elastic).
            plastic_creep: 1/s, how fast a yielded cluster's rest shape follows its deformation.
            mass: total kg (overrides density). name: optional label.
            initial_velocity: (3,) m/s of every free particle at the start.
        """
        v0 = vector(initial_velocity, "initial_velocity")
        v = geometry.as_vertices(vertices)
        f = geometry.as_triangles(faces, len(v))
        density = positive(density, "density")
        stiffness = positive(stiffness, "stiffness (Hz)")
        friction = nonnegative(friction, "friction")
        creep = nonnegative(plastic_creep, "plastic_creep")
        yield_strain = np.inf if plastic_yield is None else nonnegative(plastic_yield, "plastic_yield")
        spacing = 2.0 * self.radius
        c_spacing = 2.0 * spacing if cluster_spacing is None else positive(cluster_spacing, "cluster_spacing")
        # 7r: clusters 4r apart overlap by three particle layers. With 5r (1.5 layers) the overlap left a
        # soft shear mode: a 10 cm cube dropped 1 cm stayed sheared by 1.3 cm (now 0.5 mm).
        c_radius = 3.5 * spacing if cluster_radius is None else positive(cluster_radius, "cluster_radius")
        pin_local = pinned_indices(pinned, len(v))
        what = f"{name!r} as a soft body" if name else "this soft body"
        self.budget.check_fill(self.state.particle_count, v, f, what)
        pts = np.asarray(geometry.sample_interior(v, f, spacing).points, dtype=np.float64)
        n = len(pts)
        m_particle = positive(mass, "mass") / n if mass is not None else density * spacing**3
        pinned_p = soft_build.pinned_particles(pts, v[pin_local], spacing)
        inv_mass = np.full(n, 1.0 / m_particle)
        inv_mass[pinned_p] = 0.0
        velocity = np.tile(v0, (n, 1))
        velocity[pinned_p] = 0.0
        # Self-colliding: neighbours sit exactly 2r apart (touching, no force at rest) and resist being
        # pushed closer, so a squashed body keeps its volume; the clusters resist shear and stretch.
        idx, group = self._append(
            pts,
            True,
            velocity,
            inv_mass=inv_mass,
            contact_inv_mass=inv_mass,
            kind=KIND_SOFT,
            friction=friction,
            radius=self.radius,  # one size with the world's (per-body soft sizes: not yet)
        )
        layout = soft_build.make_clusters(pts, c_spacing, c_radius)
        cm = layout.cluster
        centre = rest_centres(layout.member, cm, pts, layout.n_clusters)
        first = self.model.soft_cluster_count
        clusters = SoftClusters(
            idx[layout.member],
            cm,
            pts[layout.member] - centre[cm],
            np.full(len(cm), m_particle),
            centre,
            np.full(layout.n_clusters, stiffness),
            np.full(layout.n_clusters, yield_strain),
            np.full(layout.n_clusters, creep),
            np.array([0, layout.n_clusters], np.int64),
        )
        self.model.add_deformable(clusters)
        self.state.soft_rest = np.concatenate([self.state.soft_rest, clusters.rest])
        skin_idx, skin_w = soft_build.skin_weights(v, centre)
        skin = (v.copy(), skin_idx + first, skin_w)
        span = (first, first + layout.n_clusters)
        body = SoftBody(self.world, idx, group, name, pinned_p, span, m_particle * n, skin)
        self.bodies.append(body)
        return body

    def set_inflation(self, cloth: Cloth, ratio: float) -> None:
        """``World.set_inflation``: a balloon's target volume ratio, checked."""
        if not isinstance(cloth, Cloth) or cloth._world is not self.world or cloth.balloon is None:
            raise SimulationInputError(f"{cloth!r} is not a balloon of this world (add_cloth(inflation=...))")
        self.state.balloon_inflation[cloth.balloon] = positive(ratio, "inflation")

    def add_granular(
        self,
        points: ArrayLike,
        density: float,
        friction: float,
        cohesion: float,
        name: str | None,
        initial_velocity: ArrayLike,
        rolling_friction: float,
        kinetic_friction: float | None = None,
        radius: ArrayLike | None = None,
        radius_spread: float = 0.0,
        seed: int = 0,
    ) -> Granular:
        """``World.add_granular``: one particle per point; ``kinetic_friction`` None: ``friction``; radii
        from ``sizes.grain_radii`` (``radius`` None: the world's)."""
        v0 = vector(initial_velocity, "initial_velocity")
        pts = geometry.as_vertices(points)
        density = positive(density, "density")
        friction = nonnegative(friction, "friction")
        cohesion = nonnegative(cohesion, "cohesion", 1.0)
        rolling_friction = nonnegative(rolling_friction, "rolling_friction")
        kinetic = friction if kinetic_friction is None else kinetic_friction  # slides, never above sticking
        kinetic = nonnegative(kinetic, "kinetic_friction (at most friction)", friction)
        self._check_capacity(len(pts), f"the grains of {name!r}" if name else "these grains")
        if radius is None and radius_spread == 0.0:
            r: float | FloatArray = self.radius  # the world's: bit for bit as before sizes existed
        else:
            base = self.radius if radius is None else radius
            r = grain_radii(len(pts), base, radius_spread, seed)
        w = 1.0 / (density * (2.0 * r) ** 3)
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
            kinetic_friction=kinetic,
            radius=r,
        )
        body = Granular(self.world, idx, group, name)
        self.bodies.append(body)
        return body

    def add_fluid(
        self,
        points: ArrayLike,
        density: float,
        viscosity: float,
        cohesion: float,
        adhesion: float,
        vorticity: float,
        name: str | None,
        initial_velocity: ArrayLike,
        capacity: int | None,
    ) -> Fluid:
        """``World.add_fluid``: one particle per point, and ``capacity`` - P free slots."""
        v0 = vector(initial_velocity, "initial_velocity")
        pts = np.zeros((0, 3)) if np.size(points) == 0 else geometry.as_vertices(points)
        material = {
            "density": positive(density, "density"),
            "viscosity": nonnegative(viscosity, "viscosity", 1.0),
            "cohesion": nonnegative(cohesion, "cohesion", 1.0),
            "adhesion": nonnegative(adhesion, "adhesion", 1.0),
            "vorticity": nonnegative(vorticity, "vorticity", 1.0),
        }
        slots = len(pts) if capacity is None else positive_int(capacity, "capacity")
        if slots < len(pts):
            raise SimulationInputError(
                f"capacity ({slots}) must be at least the number of points ({len(pts)}); leave it None "
                "to reserve exactly the points"
            )
        if slots == 0:
            raise SimulationInputError("a fluid needs points or a capacity > 0 to emit into")
        self._check_capacity(slots, f"the fluid {name!r}" if name else "this fluid")
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
            radius=self.radius,  # a fluid keeps the world's radius (fluid.py's kernels have one)
        )
        self.state.velocities[idx[len(pts) :]] = 0.0
        body = Fluid(self.world, idx, group, name, material)
        self.bodies.append(body)
        return body

    # ------------------------------------------------------------------ between steps
    def emit_fluid(self, fluid: Fluid, points: ArrayLike, velocity: ArrayLike) -> IntArray:
        """``World.emit_fluid``: live fluid in ``fluid``'s free slots, lowest first."""
        self._own_fluid(fluid)
        pts = np.zeros((0, 3)) if np.size(points) == 0 else geometry.as_vertices(points)
        vel = np.asarray(velocity, dtype=np.float64)
        if vel.shape not in ((3,), (len(pts), 3)) or not np.all(np.isfinite(vel)):
            raise SimulationInputError(
                f"velocity must be 3 finite numbers or a row per point, not {vel.shape}"
            )
        free = fluid.indices[~self.state.active[fluid.indices]]
        if len(pts) > len(free):
            raise SimulationInputError(
                f"the fluid {fluid.name or ''!s} has {len(free)} free slots for {len(pts)} new particles; "
                "add it with a larger capacity"
            )
        idx = free[: len(pts)]
        st = self.state
        st.positions[idx] = pts
        st.velocities[idx] = np.broadcast_to(vel, pts.shape)
        st.active[idx] = True
        self.solver.activity_changed()
        return idx

    def remove_fluid(self, fluid: Fluid, which: ArrayLike) -> None:
        """``World.remove_fluid``: free the slots ``which`` (a (capacity,) mask or local slot numbers)."""
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
            self.state.active[idx] = False
            self.state.velocities[idx] = 0.0
            self.solver.activity_changed()

    def _own_fluid(self, fluid: Fluid) -> None:
        if not isinstance(fluid, Fluid) or fluid._world is not self.world:
            raise SimulationInputError(f"{fluid!r} is not a fluid of this world")

    def state_array(self, value: ArrayLike, what: str) -> FloatArray:
        """``value`` as a finite (N, 3) array, to replace ``World.positions`` or ``World.velocities``."""
        a = np.asarray(value, dtype=np.float64)
        if a.shape != self.state.positions.shape or not np.all(np.isfinite(a)):
            raise SimulationInputError(
                f"{what} must be a finite ({self.state.particle_count}, 3) array, got {a.shape}"
            )
        return a

    def rigid_target(self, transform: ArrayLike) -> FloatArray:
        """``World.set_rigid_target``'s ``transform`` as a checked rigid 4x4 (the nearest rotation)."""
        m = as_transform(transform, "rigid body target")
        if np.abs(m[:3, 3]).max() > geometry.MAX_COORDINATE:
            raise SimulationInputError(
                f"rigid body target is farther than {geometry.MAX_COORDINATE:g} m from the origin"
            )
        target = np.eye(4)
        target[:3, :3] = nearest_rotation(m[:3, :3])
        target[:3, 3] = m[:3, 3]
        return target

    def rigid_number(self, body: RigidBody | int) -> int:
        """The number of rigid body ``body`` (its handle or number) in this world, checked."""
        number = body.number if isinstance(body, RigidBody) else body
        count = len(self.state.rigid_center)
        if isinstance(number, bool) or not isinstance(number, (int, np.integer)) or not 0 <= number < count:
            raise SimulationInputError(f"no rigid body {body!r} in this world ({count} rigid bodies)")
        if isinstance(body, RigidBody) and body._world is not self.world:
            raise SimulationInputError(f"{body!r} belongs to another World")
        return int(number)

    # ------------------------------------------------------------------ colliders
    def add_collider_plane(
        self, point: ArrayLike, normal: ArrayLike, friction: float, name: str | None
    ) -> PlaneCollider:
        """``World.add_collider_plane``: a static infinite plane."""
        plane = PlaneCollider.create(point, normal, friction, name)
        self.solver.colliders.add_plane(plane)
        return plane

    def add_collider_mesh(
        self,
        vertices: ArrayLike,
        faces: ArrayLike,
        transform: ArrayLike | None,
        friction: float,
        name: str | None,
        cell_size: float | None,
        deforming: bool,
    ) -> MeshCollider:
        """``World.add_collider_mesh``: a triangle-mesh collider."""
        v = geometry.as_vertices(vertices)
        f = geometry.as_triangles(faces, len(v))
        m = as_transform(np.eye(4) if transform is None else transform, "collider transform")
        cs = None if cell_size is None else positive(cell_size, "cell_size")
        mu = nonnegative(friction, "friction")
        collider = MeshCollider(v, f, mu, self.radius, cs, name, m, start_deforming=bool(deforming))
        self.solver.colliders.add_mesh(collider)
        return collider

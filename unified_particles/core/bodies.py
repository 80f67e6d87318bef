# SPDX-License-Identifier: GPL-3.0-or-later
"""Handles returned by ``World.add_*``: where a body's particles are and how it moved.

Handles hold no simulation state of their own; they read the world's public arrays
(``positions``, ``velocities``, ``rigid_rotations``, ``rigid_centers``), so they stay valid across
``World.set_state``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .errors import SimulationInputError
from .soft_build import skin

if TYPE_CHECKING:
    from .tearing import TearingCloth
    from .world import World

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


class Body:
    """Base of all particle bodies.

    Attributes:
        indices: (P,) int64 indices of this body's particles into ``World.positions``.
        name: optional label given at creation (the Blender layer uses the object name).
        group: collision group id (particles of one group never collide with each other unless
            the group self-collides).
    """

    kind = "body"

    def __init__(self, world: World, indices: IntArray, group: int, name: str | None) -> None:
        self._world = world
        self.indices = indices
        self.group = group
        self.name = name

    @property
    def positions(self) -> FloatArray:
        """(P, 3) current positions of this body's particles, metres (a copy)."""
        return self._world.positions[self.indices]

    @property
    def velocities(self) -> FloatArray:
        """(P, 3) current velocities of this body's particles, m/s (a copy)."""
        return self._world.velocities[self.indices]

    def __repr__(self) -> str:
        label = f" {self.name!r}" if self.name else ""
        return f"<{type(self).__name__}{label}: {len(self.indices)} particles>"


class RigidBody(Body):
    """A rigid body: particles on a grid inside the mesh, kept rigid by shape matching.

    Attributes:
        mass: total mass, kg.
        rest_center: (3,) centre of mass at build time, metres (build frame = input vertex frame).
        number: index of this body among the world's rigid bodies.
    """

    kind = "rigid"

    def __init__(
        self,
        world: World,
        indices: IntArray,
        group: int,
        name: str | None,
        number: int,
        mass: float,
        rest_center: FloatArray,
    ) -> None:
        super().__init__(world, indices, group, name)
        self.number = number
        self.mass = mass
        self.rest_center = rest_center

    @property
    def rotation(self) -> FloatArray:
        """(3, 3) rotation from the build frame to now."""
        return self._world.rigid_rotations[self.number].copy()

    @property
    def center(self) -> FloatArray:
        """(3,) current centre of mass, metres."""
        return self._world.rigid_centers[self.number].copy()

    @property
    def transform(self) -> FloatArray:
        """(4, 4) rigid motion mapping build-time vertices to where they are now.

        x_now = R (x_build - c_build) + c_now; the identity before the first step.
        """
        r = self._world.rigid_rotations[self.number]
        c = self._world.rigid_centers[self.number]
        m = np.eye(4)
        m[:3, :3] = r
        m[:3, 3] = c - r @ self.rest_center
        return m

    @property
    def kinematic(self) -> bool:
        """True while the body follows its target (:meth:`set_target`) with infinite mass; False:
        dynamic (the default). Set it between steps (``World.set_kinematic``)."""
        return bool(self._world.rigid_kinematic[self.number])

    @kinematic.setter
    def kinematic(self, value: bool) -> None:
        self._world.set_kinematic(self, value)

    def set_target(self, transform: NDArray[np.float64]) -> None:
        """The pose (4x4, like :attr:`transform`) a kinematic body reaches at the end of the next step
        (``World.set_rigid_target``)."""
        self._world.set_rigid_target(self, transform)

    @property
    def target(self) -> FloatArray:
        """(4, 4) the target transform: the pose a kinematic body moves to in the next step (while the
        body is dynamic, where it is after the last step)."""
        return self._world.rigid_targets[self.number]


class Cloth(Body):
    """A cloth: one particle per mesh vertex, in the input vertex order.

    Attributes:
        pinned: (K,) vertex indices (local to this cloth) that have infinite mass.
        soft_pins: (S,) vertex indices held to targets by springs (``World.add_cloth(soft_pins=...)``).
        n_stretch, n_bend: number of stretch/shear and bending constraints.
    """

    kind = "cloth"

    def __init__(
        self,
        world: World,
        indices: IntArray,
        group: int,
        name: str | None,
        pinned: IntArray,
        n_stretch: int,
        n_bend: int,
        soft_pins: IntArray | None = None,
    ) -> None:
        super().__init__(world, indices, group, name)
        self.pinned = pinned
        self.soft_pins = np.zeros(0, np.int64) if soft_pins is None else soft_pins
        self.n_stretch = n_stretch
        self.n_bend = n_bend
        self.balloon: int | None = None  # its number among the balloons (``World.add_cloth(inflation=)``)
        self.n_vertices = len(indices)  # V; a tearing cloth's spare particles follow them in ``indices``
        self.tear: TearingCloth | None = None  # its tear state (``World.add_cloth(tear_strain=)``)

    @property
    def inflation(self) -> float | None:
        """A balloon's target volume over its rest volume (None: not a balloon); set it between steps
        (``World.set_inflation``) to inflate or deflate it over a shot."""
        if self.balloon is None:
            return None
        return float(self._world.balloon_inflation[self.balloon])

    @inflation.setter
    def inflation(self, value: float) -> None:
        self._world.set_inflation(self, value)

    @property
    def vertex_positions(self) -> FloatArray:
        """(V, 3) current vertex positions in the input vertex order, metres (a copy); a torn cloth's
        vertex there is the particle of one of its parts (``render_positions`` draws every part)."""
        return self._world.positions[self.indices[: self.n_vertices]]

    @property
    def render_triangles(self) -> IntArray:
        """(F, 3) the render mesh: the input triangles, unwelded for a tearing cloth (each corner its own
        vertex, numbered 3t + k, so it splits along tears with a fixed vertex count), else none."""
        if self.tear is None:
            raise SimulationInputError("render_triangles: only a tearing cloth has them: give tear_strain")
        return self.tear.render_triangles

    @property
    def render_positions(self) -> FloatArray:
        """(3F, 3) a tearing cloth's render vertices now, metres: each the particle its corner follows."""
        if self.tear is None:
            raise SimulationInputError("render_positions: only a tearing cloth has them: give tear_strain")
        return self._world.positions[self.tear.corner_particle]

    @property
    def torn_edges(self) -> int:
        """Number of mesh edges broken so far (0 for a cloth that cannot tear)."""
        return 0 if self.tear is None else int(np.count_nonzero(~self.tear.edge_alive))

    def set_pin_targets(self, positions: ArrayLike) -> None:
        """Move the pinned vertices to ``positions`` (K, 3), world metres, in the order of ``pinned``, by
        the end of the next :meth:`World.step`: they travel there in a straight line over its small steps
        and drag the cloth along (a cape on a walking character). Call it before each step the pins move
        in; without it they stay where they are. See :meth:`World.set_pin_targets`."""
        self._world.set_pin_targets(self.indices[self.pinned], positions)

    def set_soft_pin_targets(self, positions: ArrayLike) -> None:
        """Move the anchors of the soft pins to ``positions`` (S, 3), world metres, in the order of
        ``soft_pins``, by the end of the next step (in a straight line over its small steps); the springs
        pull the vertices after them. Anchors stay where they were last put. See
        :meth:`World.set_soft_pin_targets`."""
        self._world.set_soft_pin_targets(self.indices[self.soft_pins], positions)


class SoftBody(Body):
    """A soft body (``World.add_soft``): the rigid fill held by overlapping shape-matching clusters.

    Attributes:
        pinned: (K,) local indices of the particles that have infinite mass (under the pinned vertices).
        clusters: (first, last + 1) of this body's clusters among the world's (``ParticleModel.soft``).
        mass: total mass, kg.
    """

    kind = "soft"

    def __init__(
        self,
        world: World,
        indices: IntArray,
        group: int,
        name: str | None,
        pinned: IntArray,
        clusters: tuple[int, int],
        mass: float,
        skin: tuple[FloatArray, IntArray, FloatArray],
    ) -> None:
        super().__init__(world, indices, group, name)
        self.pinned = pinned
        self.clusters = clusters
        self.mass = mass
        self._skin = skin  # rest vertices (V, 3), (V, K) cluster numbers (global) and weights
        self._pin_rest = world.positions[indices[pinned]].copy()  # at build time
        self._skin_build: FloatArray | None = None  # the skin of the build positions (vertex_positions)

    @property
    def vertex_positions(self) -> FloatArray:
        """(V, 3) the input mesh's vertices now, metres: each a blend of its nearest clusters' best-fit
        affine motions (``soft_build.skin``), so the surface is smooth and shows squash and dents."""
        rest, idx, weight = self._skin
        if self._skin_build is None:  # the skin at the build positions, which is the input mesh but rounding
            centres, f, c = self._world.soft_cluster_frames(at_build=True)
            self._skin_build = skin(rest, centres, idx, weight, f, c)
        centres, f, c = self._world.soft_cluster_frames()
        # The mesh plus the skin's motion: exactly the input mesh at the build positions (bakes start there).
        return rest + (skin(rest, centres, idx, weight, f, c) - self._skin_build)

    @property
    def pinned_rest_positions(self) -> FloatArray:
        """(K, 3) build-time positions of the pinned particles, metres (``pinned`` order)."""
        return self._pin_rest.copy()

    def set_pin_targets(self, positions: ArrayLike) -> None:
        """Move the pinned particles to ``positions`` (K, 3), world metres (``pinned`` order), by the end of
        the next step (:meth:`World.set_pin_targets`)."""
        self._world.set_pin_targets(self.indices[self.pinned], positions)

    def set_pin_transform(self, transform: ArrayLike) -> None:
        """Move the pinned particles with ``transform`` (4, 4), applied to their build-time positions, by the
        end of the next step: pins that follow an animated object (its matrix now @ at build^-1)."""
        m = np.asarray(transform, dtype=np.float64)
        rest = self.pinned_rest_positions
        self.set_pin_targets(rest @ m[:3, :3].T + m[:3, 3])


class Granular(Body):
    """Free grains with friction (and optional cohesion) that collide with each other."""

    kind = "granular"


class Fluid(Body):
    """A fluid (``World.add_fluid``): particles held at rest density by Position Based Fluids.

    ``indices`` lists every slot of the body, live or not: a fluid added with a ``capacity`` larger than
    its points has free slots that :meth:`emit` fills and :meth:`remove` frees again.

    Attributes:
        density: kg/m^3; each particle weighs density * (2r)^3.
        viscosity, cohesion, adhesion, vorticity: the material (see ``World.add_fluid``).
    """

    kind = "fluid"

    def __init__(
        self, world: World, indices: IntArray, group: int, name: str | None, material: dict[str, float]
    ) -> None:
        super().__init__(world, indices, group, name)
        self.density = material["density"]
        self.viscosity = material["viscosity"]
        self.cohesion = material["cohesion"]
        self.adhesion = material["adhesion"]
        self.vorticity = material["vorticity"]

    @property
    def capacity(self) -> int:
        """Number of slots (live or free)."""
        return len(self.indices)

    @property
    def active(self) -> NDArray[np.bool_]:
        """(capacity,) bool, which slots hold live fluid (a copy)."""
        return self._world.particle_active[self.indices]

    @property
    def count(self) -> int:
        """Number of live fluid particles."""
        return int(np.count_nonzero(self.active))

    def emit(self, points: ArrayLike, velocity: ArrayLike = (0.0, 0.0, 0.0)) -> IntArray:
        """Put live fluid at ``points`` (P, 3), metres, moving at ``velocity`` ((3,) or (P, 3), m/s), in
        free slots (lowest first); returns their world indices. See :meth:`World.emit_fluid`."""
        return self._world.emit_fluid(self, points, velocity)

    def remove(self, which: ArrayLike) -> None:
        """Free the slots ``which``: a (capacity,) bool mask or slot numbers local to this body (a drain,
        an outflow). See :meth:`World.remove_fluid`."""
        self._world.remove_fluid(self, which)

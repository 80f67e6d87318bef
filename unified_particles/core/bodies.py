# SPDX-License-Identifier: GPL-3.0-or-later
"""Handles returned by ``World.add_*``: where a body's particles are and how it moved.

Handles hold no simulation state of their own; they read the world's public arrays
(``positions``, ``velocities``, ``rigid_rotations``, ``rigid_centers``), so they stay valid across
``World.set_state``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
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


class Cloth(Body):
    """A cloth: one particle per mesh vertex, in the input vertex order.

    Attributes:
        pinned: (K,) vertex indices (local to this cloth) that have infinite mass.
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
    ) -> None:
        super().__init__(world, indices, group, name)
        self.pinned = pinned
        self.n_stretch = n_stretch
        self.n_bend = n_bend

    @property
    def vertex_positions(self) -> FloatArray:
        """(V, 3) current vertex positions in the input vertex order, metres (a copy)."""
        return self._world.positions[self.indices]


class Granular(Body):
    """Free grains with friction (and optional cohesion) that collide with each other."""

    kind = "granular"

# SPDX-License-Identifier: GPL-3.0-or-later
"""The colliders of one world, with one owner: the :class:`~.solver.Solver` holds a :class:`ColliderSet`.

``World.add_collider_*`` adds to it through :meth:`ColliderSet.add_plane` / :meth:`ColliderSet.add_mesh`;
the solver's passes and the fluid (:class:`~.fluid.FluidSolver`, which reads the same set) see the
colliders as tuples that only those methods replace, so no one holds a list another part can change
under it. The set also gathers the colliders' contacts for a small step and their poses for a snapshot.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from .colliders import (
    ColliderContacts,
    MeshCollider,
    PlaneArrays,
    PlaneCollider,
    deforming_vertices,
    plane_contacts,
    restore_deforming_vertices,
    sides,
)

FloatArray = NDArray[np.float64]


class ColliderSet:
    """Plane and mesh colliders, in the order they were added.

    Attributes:
        planes: the static infinite planes (tuple; add with :meth:`add_plane`).
        meshes: the triangle-mesh colliders, moving and deforming (tuple; add with :meth:`add_mesh`).
    """

    def __init__(self) -> None:
        self.planes: tuple[PlaneCollider, ...] = ()
        self.meshes: tuple[MeshCollider, ...] = ()
        self._plane_arrays = PlaneArrays.of(())  # the planes as arrays (planes never move)
        # The last :meth:`contacts` query's contacts with open meshes, all within its tolerance, and the
        # tolerance: rigid bodies are held at them after shape matching (colliders/body_hold.py). Planes
        # and closed meshes push a sunk particle out from any depth; an open mesh's far side would carry
        # it on through, so only open meshes need the hold.
        self.found: tuple[ColliderContacts, float | FloatArray] = (ColliderContacts.concatenate([]), 0.0)

    def add_plane(self, plane: PlaneCollider) -> None:
        """Append a plane collider."""
        self.planes = (*self.planes, plane)
        self._plane_arrays = PlaneArrays.of(self.planes)

    def add_mesh(self, mesh: MeshCollider) -> None:
        """Append a mesh collider."""
        self.meshes = (*self.meshes, mesh)

    def contacts(
        self,
        x: FloatArray,
        radius: float | FloatArray,
        alpha: float,
        dt_frame: float,
        tol: float | FloatArray,
        x_prev: FloatArray | None = None,
        h: float = 0.0,
    ) -> ColliderContacts:
        """Plane and mesh contacts of particles of ``radius`` at ``x`` (N, 3), metres, at fraction ``alpha``
        of a frame of ``dt_frame`` s; with ``x_prev`` mesh colliders add swept contacts (no tunnelling).
        ``radius`` and ``tol``: one float, or (N,) per particle (each particle touches at its own r)."""
        parts = [plane_contacts(self._plane_arrays, x, radius, tol)] if self.planes else []
        open_parts = []
        for mesh in self.meshes:
            if np.ndim(radius) == 0 and radius == mesh.radius:  # the world's radius: as ever
                part = mesh.contacts(x, alpha, dt_frame, float(tol), x_prev, h)  # type: ignore[arg-type]
            else:
                part = _own_radius(mesh, x, radius, alpha, dt_frame, tol, x_prev, h)
            parts.append(part)
            if sides.is_open(mesh):
                open_parts.append(part)
        self.found = (ColliderContacts.concatenate(open_parts), tol)
        return ColliderContacts.concatenate(parts)

    def has_open_meshes(self) -> bool:
        """Whether any mesh collider is open (two-sided: a ground quad, a sheet)."""
        return any(sides.is_open(mesh) for mesh in self.meshes)

    def open_contacts(
        self, x: FloatArray, radius: float | FloatArray, alpha: float, dt_frame: float
    ) -> ColliderContacts:
        """The contacts of particles at ``x`` (K, 3) with the open (two-sided) meshes only, as
        :meth:`contacts` at tolerance 0 (``colliders/body_hold.py``); ``found`` is left as it was."""
        parts = [
            mesh.contacts(x, alpha, dt_frame, 0.0)
            if np.ndim(radius) == 0 and radius == mesh.radius
            else _own_radius(mesh, x, radius, alpha, dt_frame, 0.0, None, 0.0)
            for mesh in self.meshes
            if sides.is_open(mesh)
        ]
        return ColliderContacts.concatenate(parts)

    def keep_sides(
        self,
        x_prev: FloatArray,
        x: FloatArray,
        alpha: float,
        alpha_prev: float,
        movable: NDArray[np.bool_],
        radius: float | FloatArray,
    ) -> None:
        """At a small step's end: no particle's path ``x_prev`` -> ``x`` (N, 3) passes through an open mesh
        (``colliders/sides.py``); ``x`` is corrected in place. ``alpha_prev``
        and ``alpha``: the fractions of the frame at the step's start and end; ``movable`` (N,) the
        particles that may be moved; ``radius`` one, or (N,) per particle, metres."""
        for mesh in self.meshes:
            sides.keep_mesh_sides(mesh, x_prev, x, alpha, alpha_prev, movable, radius)

    def end_frame(self) -> None:
        """After a frame: each mesh collider's pose (and shape) now is where the next frame starts."""
        for mesh in self.meshes:
            mesh.end_frame()

    # ------------------------------------------------------------------ snapshots
    def transforms(self) -> FloatArray:
        """(C, 4, 4) each mesh collider's pose now."""
        return np.array([m.transform for m in self.meshes]).reshape(len(self.meshes), 4, 4)

    def frame_starts(self) -> FloatArray:
        """(C, 4, 4) each mesh collider's pose at the start of the current frame."""
        return np.array([m.frame_start for m in self.meshes]).reshape(len(self.meshes), 4, 4)

    def deforming_vertices(self) -> FloatArray:
        """(2 V, 3) the deforming colliders' vertices at the frame's start and now
        (:func:`~.colliders.deforming_vertices`)."""
        return deforming_vertices(list(self.meshes))

    def restore(self, transforms: FloatArray, frame_starts: FloatArray, vertices: FloatArray) -> None:
        """Put back the poses (C, 4, 4) and deforming vertices a snapshot saved (shapes checked by the
        caller)."""
        for mesh, m, m0 in zip(self.meshes, transforms, frame_starts, strict=True):
            mesh.restore_pose(m, m0)
        restore_deforming_vertices(list(self.meshes), vertices)


def _own_radius(
    mesh: MeshCollider,
    x: FloatArray,
    radius: float | FloatArray,
    alpha: float,
    dt_frame: float,
    tol: float | FloatArray,
    x_prev: FloatArray | None,
    h: float,
) -> ColliderContacts:
    """A mesh's contacts for particles of their own radius r_i: the mesh searches at its radius R (grown
    to the largest r_i, ``MeshCollider.fit_radius``) and the largest tolerance, so it finds every
    surface point within r_i + tol_i; each contact's depth R - dist becomes r_i - dist, and those
    farther than r_i + tol_i go."""
    mesh.fit_radius(float(np.max(radius)))
    found = mesh.contacts(x, alpha, dt_frame, float(np.max(tol)), x_prev, h)
    r = radius[found.idx] if np.ndim(radius) else radius  # type: ignore[index]
    t = tol[found.idx] if np.ndim(tol) else tol  # type: ignore[index]
    depth = found.depth + (r - mesh.radius)
    keep = depth > -t
    return ColliderContacts(
        found.idx[keep], found.normal[keep], depth[keep], found.velocity[keep], found.friction[keep]
    )

# SPDX-License-Identifier: GPL-3.0-or-later
"""A flat collider mesh as an infinite plane where the mesh is: its point, its normal, the side it holds and
whether bodies could fall past its edge.

A collider whose shape is ``PLANE`` (Make Collider picks it for a static flat mesh) becomes the plane of
its evaluated mesh in world space, never the plane through the object origin along the object's Z axis:
an origin away from the vertices (a table whose origin sits 1.24 m above its top), a negative scale (the
normal matrix then turns a ground's plane face down) or a rotation all move the visible surface, not the
plane. The plane is built from the world-space triangles, so every transform (parents, negative scales,
shear) is honoured: a negative determinant reverses the triangles' winding, so Blender's displayed
normal is the world-space cross products times the determinant's sign.

The plane holds bodies on the side they are on: its normal points to the side where most simulated
particles are when the simulation is built (an infinite plane is one-sided: whatever is behind it is
pushed through to the front). With no particles yet it faces up (or along the displayed normal for a
vertical mesh).

An infinite plane is cheap and nothing passes it, but it has no edge. It is used only where bodies cannot
reach the mesh's edge: the footprint of all simulated particles on the plane, grown on every side by
``reach`` (the particles' largest extent: a pile spreads, a tower topples, a cloth drapes by about its own
size), lies inside the flat mesh (its corners inside one of its triangles; exact for a convex mesh). A
bounded flat mesh that bodies could fall past (a table under a cloth, a small board) is a mesh collider
instead: an open surface, which holds particles on both sides and lets them fall past its edge
(``needs_edge``). Pure NumPy (no bpy), called by ``scene_reader``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

# Below this area (m^2) the triangles have no usable normal: the mesh is not a surface.
_TINY_AREA = 1e-18


class FlatPlane(NamedTuple):
    """The plane of a flat mesh in world space.

    Attributes:
        point: (3,) the centroid of the mesh's world-space vertices, metres.
        normal: (3,) unit normal pointing to the free side (where the bodies are).
        vertices: (V, 3) world-space vertices, metres.
        triangles: (T, 3) vertex indices.
    """

    point: FloatArray
    normal: FloatArray
    vertices: FloatArray
    triangles: IntArray


def displayed_normal(
    world_vertices: FloatArray, triangles: IntArray, determinant: float
) -> FloatArray | None:
    """The area-weighted unit normal Blender displays for a flat mesh in world space, or None (no area).

    The world-space cross products follow the triangles' winding, which a transform with a negative
    determinant reverses; Blender flips such a mesh's normals back, so the sign of the determinant
    restores the normal the user sees.
    """
    a, b, c = (world_vertices[triangles[:, k]] for k in range(3))
    total = np.cross(b - a, c - a).sum(axis=0) * (1.0 if determinant >= 0.0 else -1.0)
    length = float(np.linalg.norm(total))
    return None if length * length < _TINY_AREA else total / length


def flat_plane(
    local: FloatArray, triangles: IntArray, matrix: FloatArray, particles: FloatArray
) -> FlatPlane | None:
    """The plane of a flat mesh given in its object's frame, facing the simulated particles.

    Args:
        local: (V, 3) evaluated vertices in the object's frame, metres.
        triangles: (T, 3) triangles.
        matrix: (4, 4) object-to-world matrix (parents and all).
        particles: (N, 3) world positions of the simulated particles now (N may be 0).

    Returns None for a mesh without area (no plane to build).
    """
    m = np.asarray(matrix, dtype=np.float64)
    world = np.asarray(local, dtype=np.float64) @ m[:3, :3].T + m[:3, 3]
    tris = np.asarray(triangles, dtype=np.int64).reshape(-1, 3)
    if len(tris) == 0:
        return None
    normal = displayed_normal(world, tris, float(np.linalg.det(m[:3, :3])))
    if normal is None:
        return None
    point = world.mean(axis=0)
    side = (np.asarray(particles, dtype=np.float64).reshape(-1, 3) - point) @ normal
    front, behind = int(np.count_nonzero(side > 0.0)), int(np.count_nonzero(side < 0.0))
    if behind > front or (front == behind == 0 and normal[2] < -1e-6):
        normal = -normal  # the bodies (or, with none, the sky) are behind the displayed normal
    return FlatPlane(point, normal, world, tris)


def needs_edge(plane: FlatPlane, particles: FloatArray) -> bool:
    """Whether bodies could reach the flat mesh's edge, so an infinite plane would hold them in thin air.

    The particles' footprint on the plane (a rectangle in the plane's coordinates), grown by ``reach``
    (their largest extent) on every side, must lie inside the mesh: its four corners each inside one
    of the mesh's triangles. No particles: nothing can fall past it (False).
    """
    p = np.asarray(particles, dtype=np.float64).reshape(-1, 3)
    if len(p) == 0:
        return False
    n = plane.normal
    u = np.cross(n, [1.0, 0.0, 0.0] if abs(n[0]) < 0.9 else [0.0, 1.0, 0.0])
    u /= np.linalg.norm(u)
    v = np.cross(n, u)
    basis = np.stack([u, v], axis=1)  # (3, 2): world -> plane coordinates
    flat = (p - plane.point) @ basis
    reach = float(np.max(p.max(axis=0) - p.min(axis=0)))
    lo, hi = flat.min(axis=0) - reach, flat.max(axis=0) + reach
    corners = np.array([[lo[0], lo[1]], [hi[0], lo[1]], [hi[0], hi[1]], [lo[0], hi[1]]])
    mesh = (plane.vertices - plane.point) @ basis
    return not bool(np.all(_inside_any(corners, mesh[plane.triangles])))


def _inside_any(points: FloatArray, triangles: FloatArray) -> NDArray[np.bool_]:
    """(P,) whether each 2D point lies inside (or on) any of the (T, 3, 2) 2D triangles."""
    a, b, c = triangles[:, 0], triangles[:, 1], triangles[:, 2]
    e0, e1 = b - a, c - a
    det = e0[:, 0] * e1[:, 1] - e0[:, 1] * e1[:, 0]
    usable = np.abs(det) > _TINY_AREA
    safe = np.where(usable, det, 1.0)
    d = points[:, None, :] - a[None, :, :]  # (P, T, 2)
    s = (d[..., 0] * e1[:, 1] - d[..., 1] * e1[:, 0]) / safe
    t = (e0[:, 0] * d[..., 1] - e0[:, 1] * d[..., 0]) / safe
    eps = 1e-9
    inside = (s >= -eps) & (t >= -eps) & (s + t <= 1.0 + eps) & usable
    return np.asarray(inside.any(axis=1))

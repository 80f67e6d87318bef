# SPDX-License-Identifier: GPL-3.0-or-later
"""Mesh colliders in a liquid's density: points sampled on their surfaces (Akinci et al. 2012), each
weighted so that a flat sampled surface stands in for the fill lattice beyond it (see ``Boundary``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from .colliders import MeshCollider

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


class WallDensity(Protocol):
    """What ``Boundary`` reads of ``fluid.WallDensity`` (the plane walls' density table)."""

    range: float  # the kernel support H, m

    def lookup(self, s: FloatArray) -> tuple[FloatArray, FloatArray]: ...


# A mesh collider counts in the fluid's density through points sampled on its surface (Akinci et al.
# 2012, "Versatile rigid-fluid coupling for incompressible SPH"), at most this many per collider; a
# larger one (a 10 km ground) holds fluid by its contacts only.
MAX_BOUNDARY_POINTS = 300_000
# Boundary points are placed at most this fraction of the lattice spacing 2r apart.
BOUNDARY_SPACING = 0.9


def sample_surface(vertices: FloatArray, faces: IntArray, spacing: float) -> tuple[FloatArray, float]:
    """Points on the triangles, at most ``spacing`` apart (a barycentric grid per triangle, shared
    corners and edges merged), and the mesh's area, m^2."""
    tri = vertices[faces]
    a, b, c = tri[:, 0], tri[:, 1], tri[:, 2]
    area = 0.5 * np.linalg.norm(np.cross(b - a, c - a), axis=1)
    longest = np.max(np.linalg.norm(tri - np.roll(tri, 1, axis=1), axis=2), axis=1)
    n = np.maximum(np.ceil(longest / spacing), 1).astype(np.int64)
    parts = []
    for k in np.unique(n):  # one barycentric table per subdivision count (a handful of values)
        ii, jj = np.meshgrid(np.arange(k + 1), np.arange(k + 1), indexing="ij")
        keep = ii + jj <= k
        u, v = ii[keep] / k, jj[keep] / k
        sel = n == k
        pa, pb, pc = a[sel], b[sel], c[sel]
        pts = pa[:, None] + u[None, :, None] * (pb - pa)[:, None] + v[None, :, None] * (pc - pa)[:, None]
        parts.append(pts.reshape(-1, 3))
    points = np.concatenate(parts) if parts else np.zeros((0, 3))
    # Shared corners and edges: merge points closer than a quarter spacing (quantised; deterministic).
    key = np.round(points / (0.25 * spacing)).astype(np.int64)
    _, first = np.unique(key, axis=0, return_index=True)
    return points[np.sort(first)], float(area.sum())


class Boundary:
    """Surface samples of the mesh colliders, in their frames, with the density weight psi of each
    collider: the weight that makes a flat sampled surface stand in for the lattice beyond it
    (``WallDensity`` at the contact distance r), from the samples' areal density."""

    def __init__(self) -> None:
        self._key: tuple[object, ...] = ()
        self._placed: tuple[bytes, FloatArray] | None = None  # the last poses and the points placed there
        self.local: list[FloatArray] = []
        self.psi = np.zeros(0)

    def points(
        self, meshes: Sequence[MeshCollider], alpha: float, radius: float, wall: WallDensity, n0: float
    ) -> FloatArray:
        """(B, 3) world positions of all samples at fraction ``alpha`` of the frame (rebuilt when a
        collider is added or rescaled; deforming colliders have none)."""
        key = tuple((id(m), m._scale.tobytes(), m._deform is None) for m in meshes)
        if key != self._key:
            self._build(meshes, radius, wall, n0)
            self._key = key
            self._placed = None
        poses = [mesh._pose_at(alpha) for mesh, local in zip(meshes, self.local, strict=True) if len(local)]
        pose_key = b"".join(r.tobytes() + t.tobytes() for r, t in poses)
        if self._placed is None or self._placed[0] != pose_key:  # colliders at rest: placed once
            out = [
                local @ r.T + t
                for (r, t), local in zip(poses, [p for p in self.local if len(p)], strict=True)
            ]
            self._placed = (pose_key, np.concatenate(out) if out else np.zeros((0, 3)))
        return self._placed[1]

    def _build(self, meshes: Sequence[MeshCollider], radius: float, wall: WallDensity, n0: float) -> None:
        h = wall.range  # the kernel support H
        # Poly6 integrated over a plane at distance z: pi c (H^2 - z^2)^4 / 4, c = 315 / (64 pi H^9).
        plane_integral = np.pi * (315.0 / (64.0 * np.pi * h**9)) * (h * h - radius * radius) ** 4 / 4.0
        target = float(wall.lookup(np.array([radius]))[0][0])  # n_wall / n0 at the contact distance
        self.local, psi = [], []
        for mesh in meshes:
            points = np.zeros((0, 3))
            if mesh._deform is None:
                spacing = BOUNDARY_SPACING * 2.0 * radius
                shape = mesh.vertices @ mesh._scale.T
                points, area = sample_surface(shape, mesh.faces, spacing)
                if len(points) > MAX_BOUNDARY_POINTS or area <= 0.0:
                    points = np.zeros((0, 3))
                else:
                    sigma = len(points) / area  # samples per m^2
                    psi.append(np.full(len(points), target / (sigma * plane_integral / n0)))
            self.local.append(points)
        self.psi = np.concatenate(psi) if psi else np.zeros(0)

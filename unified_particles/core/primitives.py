# SPDX-License-Identifier: GPL-3.0-or-later
"""Small triangle-mesh makers for scripts, tests and benchmarks (no Blender needed).

Each returns ``(vertices (V, 3) float64 metres, faces (F, 3) int64)`` with outward (counter-clockwise)
winding.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


def box_mesh(
    size: ArrayLike = (1.0, 1.0, 1.0), center: ArrayLike = (0.0, 0.0, 0.0)
) -> tuple[FloatArray, IntArray]:
    """Axis-aligned box with edge lengths ``size`` centred at ``center``: 8 vertices, 12 triangles."""
    half = 0.5 * np.asarray(size, dtype=np.float64)
    corners = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], dtype=np.float64)
    v = np.asarray(corners * half + np.asarray(center, dtype=np.float64), dtype=np.float64)
    # Vertex k has bits (x, y, z) = (k >> 2, k >> 1, k) & 1.
    quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    f = np.array([[a, b, c] for a, b, c, d in quads] + [[a, c, d] for a, b, c, d in quads], dtype=np.int64)
    return v, f


def uv_sphere_mesh(
    radius: float = 1.0, center: ArrayLike = (0.0, 0.0, 0.0), segments: int = 32, rings: int = 16
) -> tuple[FloatArray, IntArray]:
    """Closed UV sphere (two pole vertices, ``rings - 1`` latitude rings of ``segments`` vertices)."""
    theta = np.linspace(0.0, np.pi, rings + 1)[1:-1]
    phi = np.linspace(0.0, 2.0 * np.pi, segments, endpoint=False)
    t, p = np.meshgrid(theta, phi, indexing="ij")
    ring = np.stack([np.sin(t) * np.cos(p), np.sin(t) * np.sin(p), np.cos(t)], axis=-1).reshape(-1, 3)
    v = np.concatenate([[[0.0, 0.0, 1.0]], ring, [[0.0, 0.0, -1.0]]]) * radius + np.asarray(
        center, dtype=np.float64
    )
    top, bottom = 0, len(v) - 1
    idx = np.arange((rings - 1) * segments).reshape(rings - 1, segments) + 1
    nxt = np.roll(idx, -1, axis=1)
    faces = [np.stack([np.full(segments, top), idx[0], nxt[0]], axis=1)]
    a, b, c, d = idx[:-1], idx[1:], nxt[1:], nxt[:-1]
    faces += [np.stack([a, b, c], axis=-1).reshape(-1, 3), np.stack([a, c, d], axis=-1).reshape(-1, 3)]
    faces.append(np.stack([np.full(segments, bottom), nxt[-1], idx[-1]], axis=1))
    return v, np.concatenate(faces).astype(np.int64)


def grid_mesh(
    size: float = 2.0, vertices_per_side: int = 65, center: ArrayLike = (0.0, 0.0, 0.0)
) -> tuple[FloatArray, IntArray]:
    """Square grid in the XY plane (normal +Z), ``vertices_per_side``^2 vertices, alternating diagonals.

    Vertex (i, j) has index ``i * vertices_per_side + j`` and position ``(x_i, y_j)``.
    """
    n = int(vertices_per_side)
    s = np.linspace(-0.5 * size, 0.5 * size, n)
    x, y = np.meshgrid(s, s, indexing="ij")
    v = np.stack([x.ravel(), y.ravel(), np.zeros(n * n)], axis=1) + np.asarray(center, dtype=np.float64)
    idx = np.arange(n * n).reshape(n, n)
    a, b, c, d = idx[:-1, :-1], idx[1:, :-1], idx[1:, 1:], idx[:-1, 1:]
    alt = ((np.arange(n - 1)[:, None] + np.arange(n - 1)[None, :]) % 2).astype(bool)
    # Alternate the diagonal so the cloth has no preferred shear direction.
    t1 = np.where(alt[..., None], np.stack([a, b, d], -1), np.stack([a, b, c], -1))
    t2 = np.where(alt[..., None], np.stack([b, c, d], -1), np.stack([a, c, d], -1))
    return v, np.concatenate([t1.reshape(-1, 3), t2.reshape(-1, 3)]).astype(np.int64)


def grid_points(counts: ArrayLike, spacing: float, origin: ArrayLike = (0.0, 0.0, 0.0)) -> FloatArray:
    """(nx*ny*nz, 3) points of a regular lattice with ``counts`` per axis, first point at ``origin``."""
    nx, ny, nz = (int(c) for c in np.asarray(counts).ravel())
    g = np.stack(np.meshgrid(np.arange(nx), np.arange(ny), np.arange(nz), indexing="ij"), -1).reshape(-1, 3)
    return g * float(spacing) + np.asarray(origin, dtype=np.float64)

# SPDX-License-Identifier: GPL-3.0-or-later
"""Building soft bodies: clusters over the rigid fill, pins from mesh vertices, skinning weights, presets.

Clusters follow FleX's soft bodies (Macklin et al. 2014, deformables): centres are the fill's particles
nearest the centres of the cells of a ``cluster_spacing`` grid, and a cluster holds every particle within
``cluster_radius`` of its centre, so neighbouring clusters overlap and the body bends smoothly instead of
hinging between blocks. The render mesh is skinned to the clusters (linear blend of their best-fit affine
maps, :meth:`.soft.SoftClusters.affine`) with weights that fall smoothly to zero at the (K+1)-th nearest
cluster centre, so a vertex's position is a continuous function of where it is: no voxel look at any mesh
resolution. Only built once per body (build time, not per step).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from .neighbors import find_pairs

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

# Clusters a render-mesh vertex is skinned to (the nearest ones): enough for smooth blending across the
# overlap of clusters spaced 2 particles apart, few enough that a 20k-vertex mesh skins in milliseconds.
SKIN_CLUSTERS = 8
# Pinned mesh vertices pin the fill's particles within this many particle spacings of them (and always the
# nearest particle of each): one layer of particles under a pinned face.
PIN_REACH_SPACINGS = 1.0
# Vertices are skinned in chunks of this many, bounding the (chunk, C) distance matrix.
_SKIN_CHUNK = 2048

#: Soft-body presets: keywords of ``World.add_soft``. ``stiffness`` is the cluster springs' frequency (Hz);
#: a 12 cm cube's shear wobble is 0.75 times it (tests/core/test_soft.py). Below about 15 Hz a body
#: dropped from 30 cm does not find its shape again (docs/physics.md), so Jelly is 20 Hz.
SOFT_PRESETS: dict[str, dict[str, float]] = {
    "JELLY": {"density": 1050.0, "stiffness": 20.0, "friction": 0.4},
    "RUBBER": {"density": 1100.0, "stiffness": 60.0, "friction": 0.9},
    "FLESH": {"density": 1000.0, "stiffness": 30.0, "friction": 0.6},
    "FOAM": {"density": 60.0, "stiffness": 25.0, "friction": 0.8},
    # Clay: yields at 5% strain and flows quickly, so a dent stays (plasticity, soft.py).
    "CLAY": {
        "density": 1700.0,
        "stiffness": 30.0,
        "friction": 0.8,
        "plastic_yield": 0.05,
        "plastic_creep": 50.0,
    },
}


@dataclass(frozen=True)
class ClusterLayout:
    """Clusters over one body's particles (local indices).

    Attributes:
        member: (M,) particle (local index) of each membership.
        cluster: (M,) cluster of each membership, 0..C-1, sorted.
        n_clusters: C.
    """

    member: IntArray
    cluster: IntArray
    n_clusters: int


def make_clusters(points: FloatArray, spacing: float, radius: float) -> ClusterLayout:
    """Overlapping clusters over ``points`` (P, 3): centres ``spacing`` apart (metres), members within
    ``radius`` (metres) of a centre; a particle near none (a corner of a coarse grid) joins the cluster of
    its own cell, so every particle is in at least one."""
    p = len(points)
    cell = np.floor((points - points.min(axis=0)) / spacing).astype(np.int64)
    key = (cell[:, 0] * (cell[:, 1].max() + 1) + cell[:, 1]) * (cell[:, 2].max() + 1) + cell[:, 2]
    mid = (cell + 0.5) * spacing + points.min(axis=0)
    off = np.sum((points - mid) ** 2, axis=1)
    order = np.lexsort((np.arange(p), off, key))  # per cell, the particle nearest its middle first
    first = np.ones(p, dtype=bool)
    first[1:] = key[order][1:] != key[order][:-1]
    centres = order[first]  # particle index of each cluster's centre, in cell-key order
    c = len(centres)
    cell_cluster = np.searchsorted(key[centres], key)  # each particle's own cell's cluster
    both = np.concatenate([points, points[centres]])
    group = np.concatenate([np.zeros(p, np.int64), np.ones(c, np.int64)])
    i, j = find_pairs(both, radius, group, np.zeros(2, dtype=bool))
    # i < j, so i is the particle and j - p the cluster.
    member = np.concatenate([i, centres, np.arange(p)])
    cluster = np.concatenate([j - p, np.arange(c), cell_cluster])
    unique = np.unique(cluster * p + member)  # a centre and its own cell's particles are listed twice
    return ClusterLayout(unique % p, unique // p, c)


def pinned_particles(points: FloatArray, pinned_vertices: FloatArray, spacing: float) -> IntArray:
    """Local indices of the particles of ``points`` (P, 3) pinned by mesh vertices ``pinned_vertices``
    (K, 3): those within ``PIN_REACH_SPACINGS`` spacings of one, and the nearest particle of each."""
    p = len(points)
    if len(pinned_vertices) == 0:
        return np.zeros(0, np.int64)
    both = np.concatenate([points, pinned_vertices])
    group = np.concatenate([np.zeros(p, np.int64), np.ones(len(pinned_vertices), np.int64)])
    i, _ = find_pairs(both, PIN_REACH_SPACINGS * spacing, group, np.zeros(2, dtype=bool))
    nearest = [np.argmin(np.sum((points - v) ** 2, axis=1)) for v in pinned_vertices]  # build time only
    return np.unique(np.concatenate([i, np.asarray(nearest, np.int64)]))


def skin_weights(vertices: FloatArray, centres: FloatArray) -> tuple[IntArray, FloatArray]:
    """Skinning of render-mesh ``vertices`` (V, 3) to clusters with rest centres ``centres`` (C, 3): the
    K = min(``SKIN_CLUSTERS``, C) nearest clusters of each vertex, (V, K) indices and weights summing to 1.

    w_k = (1 - d_k^2 / d_{K+1}^2)^3 with d_{K+1} the distance to the next-nearest centre: a cluster's
    weight reaches zero exactly where it leaves a vertex's K nearest, so weights are continuous in space.
    """
    c = len(centres)
    k = min(SKIN_CLUSTERS, c)
    idx = np.zeros((len(vertices), k), np.int64)
    weight = np.zeros((len(vertices), k))
    for start in range(0, len(vertices), _SKIN_CHUNK):  # chunks bound the (chunk, C) distances
        v = vertices[start : start + _SKIN_CHUNK]
        d2 = np.sum((v[:, None, :] - centres[None, :, :]) ** 2, axis=2)
        if k < c:
            part = np.argpartition(d2, k, axis=1)
            near, cut = part[:, :k], np.take_along_axis(d2, part[:, k : k + 1], axis=1)
        else:
            near = np.broadcast_to(np.arange(c), (len(v), c)).copy()
            cut = 1.5 * d2.max(axis=1, keepdims=True) + 1e-12
        dn = np.take_along_axis(d2, near, axis=1)
        w = (1.0 - np.minimum(dn / np.maximum(cut, 1e-300), 1.0)) ** 3
        w[w.sum(axis=1) <= 0.0, 0] = 1.0  # ties at the cut (a vertex equidistant from all): nearest only
        idx[start : start + len(v)] = near
        weight[start : start + len(v)] = w / w.sum(axis=1, keepdims=True)
    return idx, weight


def skin(
    vertices: FloatArray, centres: FloatArray, idx: IntArray, weight: FloatArray, f: FloatArray, c: FloatArray
) -> FloatArray:
    """(V, 3) skinned vertices: sum_k w_k (c_k + F_k (v - q_k)) of rest ``vertices`` (V, 3), cluster rest
    centres ``centres`` (C, 3), (V, K) ``idx``/``weight``, cluster affine maps ``f`` (C, 3, 3) and current
    centres ``c`` (C, 3)."""
    rel = vertices[:, None, :] - centres[idx]  # (V, K, 3)
    moved = np.einsum("vkij,vkj->vki", f[idx], rel) + c[idx]
    return np.asarray(np.einsum("vk,vki->vi", weight, moved), dtype=np.float64)

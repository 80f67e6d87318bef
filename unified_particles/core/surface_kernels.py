# SPDX-License-Identifier: GPL-3.0-or-later
"""Anisotropic kernels for a liquid's surface: smoothed centres and one ellipsoid per particle.

After Yu and Turk 2013, "Reconstructing surfaces of particle-based fluids using anisotropic kernels"
(ACM Transactions on Graphics 32(1)), what FleX renders its fluids with. A surface drawn as a union
of balls around the particles shows every particle (bumps, lumps); Yu and Turk instead

1. **smooth the centres** (their Eq. 6): x_i' = (1 - lambda) x_i + lambda x_i^w, with x_i^w the mean of
   the neighbours within H weighted by w_ij = 1 - (|x_ij| / H)^3. Jitter of the particles averages out,
   so a still pool has a flat top; and
2. **stretch each kernel** along its neighbourhood: the weighted covariance C_i = sum_j w_ij (x_j - x_i^w)
   (x_j - x_i^w)^T / sum_j w_ij has principal axes R and variances sigma_1 >= sigma_2 >= sigma_3. The
   kernel of particle i is an ellipsoid with those axes and radii proportional to
   max(sigma_k, sigma_1 / K_R) (a sheet of particles: thin across, wide along); with fewer than N_EPS
   neighbours the data are too few for a shape and the kernel stays a ball of K_N of the radius.

Yu and Turk scale every kernel by one constant k_s chosen so that a particle deep inside gets the
isotropic kernel; a particle at a flat surface has the same spread along the surface as inside (its
neighbours there are the same), so its kernel keeps that radius along the surface and only thins across
it. Here the longest radius is ``ball`` for every particle (the largest variance standing in for the
isotropic one): a kernel is never larger than the ball it replaces, so the kernels of a pool's rim do not
bulge out of it, and a particle deep inside keeps exactly its ball. (Keeping each kernel's volume instead
widens flattened kernels by up to K_R^(1/3) = 1.6 along the surface: rims and edges stood out as flanges
in a render.) The result is what a renderer splats or meshes (Blender: an instance per particle).

The Blender add-on meshes the smoothed centres alone (:func:`smoothed_centres`, step 1 without the
covariance: 0.8 s against 1.1 s for 100k particles here), because a bake replays them from its point
cache without the add-on.
Smoothing pulls the top layer of a flat pool into the liquid by :func:`flat_surface_shift` (0.73 r at
H = 4 r, lambda = 0.9, the same for every particle of a flat top); the mesher moves its surface out by
that much.
Vectorized: one pair search, sums by ``np.bincount``, one batched eigen-decomposition. Imports
``neighbors`` and ``errors``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .errors import SimulationInputError
from .neighbors import find_pairs

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

#: Yu and Turk's lambda: how far a centre moves to its neighbours' weighted mean (0.9 to 1 in the paper).
SMOOTHING = 0.9
#: Largest ratio of an ellipsoid's longest to shortest radius (their k_r).
K_R = 4.0
#: Fewer neighbours than this (the particle itself included): a ball. Yu and Turk take 25 (N_epsilon) at
#: their anisotropy radius, about a tenth of a full neighbourhood there; at H = 4 r a particle inside the
#: rest lattice has 27 (itself included), so a tenth of it: 3 neighbours and itself make an ellipsoid.
N_EPS = 4
#: A ball's radius, in units of ``ball``, for a particle with fewer than N_EPS neighbours (their k_n).
K_N = 0.5


def _weighted_pairs(x: FloatArray, kernel_radius: float) -> tuple[IntArray, IntArray, FloatArray]:
    """Pairs (i, j) closer than H and their weights w_ij = 1 - (|x_ij| / H)^3 (Yu and Turk's kernel)."""
    i, j = find_pairs(x, kernel_radius)
    d = x[i] - x[j]
    w = 1.0 - (np.sqrt(np.einsum("ij,ij->i", d, d)) / kernel_radius) ** 3
    return i, j, w


def _check(x: FloatArray, kernel_radius: float, smoothing: float) -> None:
    if x.ndim != 2 or x.shape[1] != 3 or not np.all(np.isfinite(x)):
        raise SimulationInputError(f"positions must be finite (N, 3) metres, not an array of shape {x.shape}")
    if not kernel_radius > 0.0:
        raise SimulationInputError("kernel_radius must be a positive length in metres")
    if not 0.0 <= smoothing <= 1.0:
        raise SimulationInputError(f"smoothing must be between 0 and 1, not {smoothing}")


def smoothed_centres(positions: ArrayLike, kernel_radius: float, smoothing: float = SMOOTHING) -> FloatArray:
    """Yu and Turk's smoothed centres alone (step 1 of the module doc), what the add-on meshes.

    Args:
        positions: (N, 3) the live particle centres, metres.
        kernel_radius: H, metres (4 r: two lattice spacings).
        smoothing: lambda, 0 (none) to 1.

    Returns:
        (N, 3) (1 - lambda) x_i + lambda x_i^w, metres; a particle without neighbours stays where it is.

    Raises:
        SimulationInputError: positions not (N, 3) finite, H not positive, smoothing outside [0, 1].
    """
    x = np.asarray(positions, dtype=np.float64)
    _check(x, kernel_radius, smoothing)
    n = len(x)
    if n == 0:
        return x.copy()
    i, j, w = _weighted_pairs(x, kernel_radius)
    # The particle itself weighs 1 (w at distance 0); the pair (i, j) adds x_j to i's sums and x_i to j's.
    wsum = 1.0 + np.bincount(i, w, n) + np.bincount(j, w, n)
    out = np.empty_like(x)
    for a in range(3):
        mean = (x[:, a] + np.bincount(i, w * x[j, a], n) + np.bincount(j, w * x[i, a], n)) / wsum
        out[:, a] = x[:, a] + smoothing * (mean - x[:, a])
    return out


def flat_surface_shift(kernel_radii: float = 4.0, smoothing: float = SMOOTHING) -> float:
    """How far :func:`smoothed_centres` moves the top layer of a flat pool at rest into the liquid, in
    particle radii: lambda sum_j w_j (-dz_j) / sum_j w_j over the half-space of the rest lattice (spacing
    2 r) within H = ``kernel_radii`` r of a top particle, itself included (weight 1). 0.73 at the defaults."""
    k = int(np.ceil(kernel_radii / 2.0))
    g = 2.0 * np.arange(-k, k + 1, dtype=np.float64)  # lattice offsets in radii
    dx, dy, dz = np.meshgrid(g, g, g[g <= 0.0], indexing="ij")
    dist = np.sqrt(dx * dx + dy * dy + dz * dz)
    w = np.where(dist < kernel_radii, 1.0 - (dist / kernel_radii) ** 3, 0.0)
    return float(smoothing * np.sum(w * -dz) / np.sum(w))


def anisotropic_kernels(
    positions: ArrayLike,
    kernel_radius: float,
    ball: float,
    smoothing: float = SMOOTHING,
    min_neighbours: int = N_EPS,
) -> tuple[FloatArray, FloatArray]:
    """The smoothed centres and the ellipsoids of a liquid's particles (the module doc's method).

    Args:
        positions: (N, 3) the live particle centres, metres.
        kernel_radius: H, metres: neighbours within it shape a particle's kernel (4 r: two spacings).
        ball: the radius of the ball each ellipsoid replaces, metres: its longest radius.
        smoothing: lambda of the centre smoothing, 0 (none) to 1.
        min_neighbours: particles with fewer neighbours (itself included) get a ball of K_N ``ball``.

    Returns:
        centres: (N, 3) smoothed centres, metres.
        axes: (N, 3, 3) each ellipsoid's semi-axes as columns (metres), longest first: the ellipsoid
            is centre + axes @ u for |u| <= 1.

    Raises:
        SimulationInputError: positions not (N, 3) finite, or a radius not positive, or smoothing
            outside [0, 1].
    """
    x = np.asarray(positions, dtype=np.float64)
    _check(x, kernel_radius, smoothing)
    if not ball > 0.0:
        raise SimulationInputError("kernel_radius and ball must be positive lengths in metres")
    n = len(x)
    i, j, w = _weighted_pairs(x, kernel_radius)
    # Sums over each particle's neighbours, itself included (weight 1): the pair (i, j) adds x_j to i's
    # sums and x_i to j's.
    wsum = 1.0 + np.bincount(i, w, n) + np.bincount(j, w, n)
    count = 1 + np.bincount(i, minlength=n) + np.bincount(j, minlength=n)
    mean = x.copy()
    second = np.einsum("ni,nj->nij", x, x)
    for a in range(3):
        mean[:, a] += np.bincount(i, w * x[j, a], n) + np.bincount(j, w * x[i, a], n)
        for b in range(a, 3):
            s = np.bincount(i, w * x[j, a] * x[j, b], n) + np.bincount(j, w * x[i, a] * x[i, b], n)
            second[:, a, b] += s
            second[:, b, a] = second[:, a, b]
    mean /= wsum[:, None]
    cov = second / wsum[:, None, None] - np.einsum("ni,nj->nij", mean, mean)
    centres = (1.0 - smoothing) * x + smoothing * mean
    sigma, vectors = np.linalg.eigh(cov)  # ascending
    sigma, vectors = sigma[:, ::-1], vectors[:, :, ::-1]  # longest first
    top = np.maximum(sigma[:, :1], 0.0)
    clamped = np.maximum(sigma, top / K_R)
    # Radii proportional to the clamped variances (as Yu and Turk's G^-1), the longest one ``ball``.
    ok = (count >= min_neighbours) & (top[:, 0] > 0.0)
    radii = np.where(ok[:, None], ball * clamped / np.where(ok, top[:, 0], 1.0)[:, None], K_N * ball)
    axes = np.where(ok[:, None, None], vectors, np.eye(3)) * radii[:, None, :]
    return centres, axes

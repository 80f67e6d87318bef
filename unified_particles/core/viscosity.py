# SPDX-License-Identifier: GPL-3.0-or-later
"""Implicit (backward Euler) XSPH viscosity: a liquid's viscosity setting keeps meaning more at any value.

XSPH (PBF Eq. 17) moves each velocity a fraction c of the way to its neighbours' kernel-weighted mean per
small step, explicitly. A fraction cannot exceed the whole difference, so it saturates: above c = 0.4
(four small steps per pass: 1 - 0.6^4 = 0.87 of the difference removed) Honey at 1.0 slumped as at 0.4.
The same pair terms taken implicitly, at the end velocities (backward Euler, as the implicit SPH
viscosity solvers of Takahashi et al. 2015 and Weiler et al. 2018 do with their Laplacians), are the
linear system

    m_i v'_i = m_i v_i + sum_j k_ij (v'_j - v'_i),    k_ij = s_ij c_ij,

with c_ij = alpha W_ij / n0 (alpha = c times the small steps the pass stands for) and s_ij the pair's share
of mass (``fluid._pair_share``). It is symmetric positive definite for any alpha, so the velocity is
diffused over the neighbourhood for as long as the setting says, never past the mean (no saturation, no
overshoot): the diffusion time grows linearly with c. For small alpha it is XSPH to first order.

The system is solved by conjugate gradients with a Jacobi preconditioner (Saad 2003, Alg. 9.1) to a
relative residual of ``TOLERANCE`` (water: one or two iterations; Honey at 1.0: about ten). The result is
then applied as equal and opposite pair impulses k_ij (v'_j - v'_i), so momentum is exact whatever the
solve's residual. Particles of zero inverse mass (walls, pins, kinematic bodies) keep their velocity and
enter as known values.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

# Relative residual |r| / |b| (mass-weighted velocities) at which the solve stops, and its iteration cap.
TOLERANCE = 1e-4
MAX_ITERATIONS = 60


def _laplacian(u: FloatArray, k: FloatArray, pi: IntArray, pj: IntArray, n: int) -> FloatArray:
    """(3, n): sum_j k_ij (u_i - u_j) per particle (the graph Laplacian of the pair weights k, (K,))."""
    out = np.zeros((3, n))
    for axis in range(3):
        diff = k * (u[axis, pi] - u[axis, pj])
        out[axis] = np.bincount(pi, weights=diff, minlength=n) - np.bincount(pj, weights=diff, minlength=n)
    return out


def implicit_velocities(
    v: FloatArray, mass: FloatArray, k: FloatArray, pi: IntArray, pj: IntArray
) -> tuple[FloatArray, int]:
    """End velocities v' (3, N) of (M + L_k) v' = M v and the iterations taken.

    Args:
        v: (3, N) velocities before, m/s, coordinate-major.
        mass: (N,) masses, kg; 0 marks a particle of infinite mass (its velocity is kept).
        k: (K,) pair weights k_ij, kg (>= 0).
        pi, pj: (K,) pair indices.
    """
    n = v.shape[1]
    free = mass > 0.0
    # Unknowns: particles of finite mass. Infinite-mass ones hold their velocity: their pair terms are
    # known and go to the right-hand side (a Dirichlet condition), their diagonal entry stays theirs.
    kf = np.where(free[pi] & free[pj], k, 0.0)
    diag = mass + np.bincount(pi, weights=k, minlength=n) + np.bincount(pj, weights=k, minlength=n)
    fixed = ~free
    b = mass * v
    if fixed.any():
        kb_i = np.where(free[pi] & fixed[pj], k, 0.0)  # i free, j fixed: + k v_j on i's side
        kb_j = np.where(fixed[pi] & free[pj], k, 0.0)
        for axis in range(3):
            b[axis] += np.bincount(pi, weights=kb_i * v[axis, pj], minlength=n)
            b[axis] += np.bincount(pj, weights=kb_j * v[axis, pi], minlength=n)
    inv_diag = np.where(free, 1.0 / np.where(free, diag, 1.0), 0.0)

    # (M + L_free) u + (the fixed neighbours' k on the diagonal) u, zero on fixed rows.
    own = diag - np.bincount(pi, weights=kf, minlength=n) - np.bincount(pj, weights=kf, minlength=n)

    def apply(u: FloatArray) -> FloatArray:
        return np.asarray((_laplacian(u, kf, pi, pj, n) + own * u) * free, dtype=np.float64)

    x = np.where(free, v, 0.0)
    r = b * free - apply(x)
    norm_b = float(np.sqrt(np.einsum("ij,ij->", b * free, b * free)))
    if norm_b == 0.0:
        return np.where(free, x, v), 0
    z = r * inv_diag
    p = z.copy()
    rz = float(np.einsum("ij,ij->", r, z))
    iterations = 0
    while iterations < MAX_ITERATIONS and np.sqrt(np.einsum("ij,ij->", r, r)) > TOLERANCE * norm_b:
        ap = apply(p)
        step = rz / float(np.einsum("ij,ij->", p, ap))
        x += step * p
        r -= step * ap
        z = r * inv_diag
        rz_new = float(np.einsum("ij,ij->", r, z))
        p = z + (rz_new / rz) * p
        rz = rz_new
        iterations += 1
    return np.where(free, x, v), iterations

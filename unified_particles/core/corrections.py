# SPDX-License-Identifier: GPL-3.0-or-later
"""How the solver applies corrections: Jacobi averaging of per-particle corrections (paper Eq. 11, and its
momentum-conserving form for pairs), what a rigid body's particles are given moving the whole body
(``rigid_impulse``), and the speed clamp of step 1. Arrays in, in-place updates or arrays out."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from .shape_matching import ShapeMatching

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


def apply_jacobi(x: FloatArray, idx: IntArray, delta: FloatArray, omega: float) -> IntArray:
    """x_i += omega / n_i * sum of the corrections on i (paper Eq. 11); returns the counts n_i."""
    n = len(x)
    count = np.bincount(idx, minlength=n)
    scale = omega / np.maximum(count, 1)
    # Coordinate by coordinate: NumPy 1.26 is slow at (N, 3) x (N, 1) broadcasting (see fastops).
    for axis in range(3):
        x[:, axis] += np.bincount(idx, weights=delta[:, axis], minlength=n) * scale
    return count


def apply_pair_jacobi(
    x: FloatArray,
    idx: IntArray,
    delta: FloatArray,
    omega: float,
    share: tuple[FloatArray, NDArray[np.bool_]] | None = None,
) -> None:
    """Jacobi averaging that keeps pair corrections equal and opposite (momentum-conserving).

    Eq. 11 divides the sum at particle i by its constraint count n_i; for a pair whose ends have
    different counts that breaks Newton's third law. Scaling each pair by 1 / max(n_i, n_j)
    bounds every particle's total the same way while keeping both sides' corrections opposite.
    ``idx``/``delta`` hold the K i-sides first, then the K j-sides; ``delta`` is (3, 2K).

    ``share`` ((N,) inverse masses, 1/kg; (N,) bool rigid particles), in worlds of several sizes: a
    pair counts at a rigid particle i only min(1, m_j / m_i), its partner's mass over its own. The
    count guards against the sum of a particle's corrections overshooting, and i's part of each pair
    is m_j / (m_i + m_j) of it: a 5 cm rock particle takes ~1/1000 of each 5 mm grain's correction,
    so its ~150 grain contacts cannot add up to an overshoot (and shape matching spreads them over the
    body). Counted whole, they divided each of those grains' pushes by ~150: grains poured on a 0.2 m
    box of 5 cm particles sank into its top face by a grain radius on average, some through it (a
    layer of them with 1e-5 m nudges; 0.3 mm with the share, tests/core/test_rock_on_sand.py). Pairs of
    equal masses, and every pair at a non-rigid particle, count 1 as without ``share``.
    """
    n = len(x)
    k = len(idx) // 2
    if share is None:
        count: NDArray[np.float64] | IntArray = np.bincount(idx, minlength=n)
    else:
        inv_mass, rigid = share
        wi, wj = inv_mass[idx[:k]], inv_mass[idx[k:]]
        # m_j / m_i = w_i / w_j at i (and w_j / w_i at j), capped at 1; an immovable partner counts 1.
        at_i = np.minimum(wi, wj) / np.where(wj > 0.0, wj, 1.0)
        at_j = np.minimum(wi, wj) / np.where(wi > 0.0, wi, 1.0)
        part = np.concatenate([np.where(wj > 0.0, at_i, 1.0), np.where(wi > 0.0, at_j, 1.0)])
        count = np.bincount(idx, weights=np.where(rigid[idx], part, 1.0), minlength=n)
    scale = omega / np.maximum(count[idx[:k]], count[idx[k:]])
    scale2 = np.concatenate([scale, scale])
    for axis in range(3):  # delta is coordinate-major, (3, 2K)
        x[:, axis] += np.bincount(idx, weights=delta[axis] * scale2, minlength=n)


def rigid_impulse(sm: ShapeMatching, x: FloatArray, delta: FloatArray) -> FloatArray:
    """(R, 3) the rigid motion of every body that has the momentum and angular momentum of the per-particle
    changes ``delta`` (R, 3) of its particles at ``x`` (R, 3), linearised (small rotation).

    Used for what the fluid does to rigid particles: moved one by one, shape matching would redistribute
    the changes with its contact weights and lose or add momentum. Here the body gets
    P = sum m_p delta_p (so its centre moves by P / M) and L = sum m_p r_p x delta_p (it turns by
    I^-1 L, I the inertia tensor about its centre of mass): exact linear momentum.
    """
    b, m, nb = sm.body, sm.mass, sm.n_bodies
    mass = np.bincount(b, weights=m, minlength=nb)
    xt, dt = x.T, delta.T
    center = np.stack([np.bincount(b, weights=m * xt[k], minlength=nb) for k in range(3)]) / mass
    p = np.stack([np.bincount(b, weights=m * dt[k], minlength=nb) for k in range(3)]) / mass  # (3, B)
    r = xt - center[:, b]  # (3, R)
    ang = np.cross(r.T, delta).T * m
    big_l = np.stack([np.bincount(b, weights=ang[k], minlength=nb) for k in range(3)]).T  # (B, 3)
    r2 = np.einsum("ij,ij->j", r, r)
    inertia = np.zeros((nb, 3, 3))
    for k in range(3):
        for j in range(3):
            term = m * ((r2 if k == j else 0.0) - r[k] * r[j])
            inertia[:, k, j] = np.bincount(b, weights=term, minlength=nb)
    # A body of one particle or particles on a line has a singular inertia: regularise by a tiny fraction
    # of its trace (turns it about the ill-defined axis not at all).
    trace = np.trace(inertia, axis1=1, axis2=2)
    inertia += (1e-9 * trace + 1e-30)[:, None, None] * np.eye(3)
    theta = np.linalg.solve(inertia, big_l[..., None])[..., 0]  # (B, 3)
    return np.asarray(p[:, b].T + np.cross(theta[b], r.T), dtype=np.float64)


def clamp_speed(v: FloatArray, max_speed: float) -> None:
    """Scale the velocities (N, 3) faster than ``max_speed`` (m/s) down to it, in place."""
    speed = np.sqrt(np.einsum("ij,ij->i", v, v))
    fast = speed > max_speed
    if fast.any():
        v[fast] *= (max_speed / speed[fast])[:, None]

# SPDX-License-Identifier: GPL-3.0-or-later
"""The polar decomposition: the rotation nearest to a 3 x 3 matrix, one matrix or a batch, by SVD, and
a faster Newton iteration for large batches (shape matching's bodies, :func:`polar_rotations_batch`).

Shape matching (the fitted rotation of every rigid body), kinematic targets (a target transform's
rotation without its scale) and mesh colliders (a transform's rotation and scale) all use it. Imports
nothing from the package.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]


def polar_rotations(a: FloatArray) -> FloatArray:
    """Rotation part R of the polar decomposition A = R S of a (3, 3) matrix or each of a (B, 3, 3) batch.

    From the SVD A = U S V^T, R = U V^T with the sign of the last singular direction flipped where
    needed, so every result is a proper rotation (det = +1), also for a mirroring A and for flat or
    single-particle bodies where A is singular. The flip is a multiplication of U's last column by -1
    or 1, so one matrix and a batch give the same bits.
    """
    u, _, vt = np.linalg.svd(a)
    det = np.linalg.det(u @ vt)
    u[..., 2] *= np.where(det < 0.0, -1.0, 1.0)[..., None]
    return np.asarray(u @ vt, dtype=np.float64)


def polar(a: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Polar decomposition A = R S of a (3, 3) matrix: R proper rotation, S = R^T A symmetric (may mirror)."""
    r = polar_rotations(a)
    return r, r.T @ a


# Entry 3 r + c of a flattened 3 x 3 matrix M; its cofactor C[r][c] = M[r+1][c+1] M[r+2][c+2] -
# M[r+1][c+2] M[r+2][c+1] (indices mod 3): the first nine gathered products are the first terms, the
# last nine the second.
_COF_LEFT = np.array(
    [3 * ((r + 1) % 3) + (c + 1) % 3 for r in range(3) for c in range(3)]
    + [3 * ((r + 1) % 3) + (c + 2) % 3 for r in range(3) for c in range(3)]
)
_COF_RIGHT = np.array(
    [3 * ((r + 2) % 3) + (c + 2) % 3 for r in range(3) for c in range(3)]
    + [3 * ((r + 2) % 3) + (c + 1) % 3 for r in range(3) for c in range(3)]
)
# Both factors' entries in one gather (one call fewer per Newton step than two).
_COF_BOTH = np.concatenate([_COF_LEFT, _COF_RIGHT])
# Newton's iteration stops for a matrix once no entry changed by more than this in a step: it converges
# quadratically, so the error left is about the square of the last step's (1e-18; measured against the
# SVD: 4e-15 at most, its own rounding).
NEWTON_TOLERANCE = 1e-9
# ... or after this many steps (the scaled iteration needs about 10 for a condition number of 1e8);
# matrices not converged by then, and those the iteration cannot take (below), go to the SVD.
NEWTON_MAX_STEPS = 16
# det(A) / |A|_F^3 below this: (nearly) flat, singular or mirroring matrices, which the SVD handles.
NEWTON_MIN_DET = 1e-9
# Smaller batches go to the SVD: the iteration's ~20 NumPy calls per step cost the same for any batch,
# the SVD grows with it (measured on a loaded machine, us for SVD / Newton: 1 matrix 41 / 838, 16
# 279 / 750, 32 457 / 839, 64 1303 / 1048, 125 2305 / 1387, 500 7036 / 1654).
NEWTON_MIN_BATCH = 48


def polar_rotations_batch(a: FloatArray) -> FloatArray:
    """Rotation part of the polar decomposition of each of a batch of 3 x 3 matrices, flattened
    coordinate-major: ``a`` (9, B), entry 3 r + c of matrix b at ``a[3 r + c, b]``. Returns (B, 3, 3).

    The rotations of :func:`polar_rotations` (to rounding, ~1e-15), 3-4x faster for a hundred matrices
    (a pile of 125 boxes: 0.3 against 1.0 ms on NumPy 1.26, 0.18 against 0.64 ms on 2.5, shared machine):
    Newton's iteration X <- (g X + X^-T / g) / 2 with the determinant scaling g = det(X)^(-1/3) (Higham,
    *Functions of Matrices*, SIAM 2008, Sec. 8.6), on all matrices at once, X^-T = cofactor(X) / det X
    from one gather, each matrix stopped where its step fell below ``NEWTON_TOLERANCE``. A proper,
    well-conditioned A converges to its polar factor in 3-7 steps (the iteration acts on the singular
    values alone, sigma <- (g sigma + 1 / (g sigma)) / 2, quadratically). (Nearly) singular and mirroring
    matrices (flat or one-particle bodies, det <= 0), which have no unique or no proper polar factor,
    and any that do not converge get the SVD's answer, as do batches of fewer than ``NEWTON_MIN_BATCH``.
    """
    x = np.array(a, dtype=np.float64)
    b = x.shape[1]
    if b < NEWTON_MIN_BATCH:
        return polar_rotations(np.ascontiguousarray(x.T).reshape(b, 3, 3))
    norm = np.sqrt(_column_dot(x, x, 9))
    cof, det = _cofactors(x)
    active = det > NEWTON_MIN_DET * norm * norm * norm
    converged = np.zeros(b, dtype=bool)
    safe = np.where(active, det, 1.0)
    for _ in range(NEWTON_MAX_STEPS):
        # All matrices step at once (a gather of the unconverged ones costs more than the step);
        # converged and excluded ones keep their values. Few NumPy calls, in place where possible:
        # on a hundred matrices each call costs more than its arithmetic.
        g = 1.0 / np.cbrt(safe)
        new = (0.5 * g) * x
        new += cof * (0.5 / (g * safe))
        step = np.subtract(new, x, out=cof)  # cof is computed anew below
        np.abs(step, out=step)
        small = np.maximum.reduce(step, axis=0) <= NEWTON_TOLERANCE
        x = np.where(active, new, x)
        done = active & small
        converged |= done
        active ^= done
        if not np.logical_or.reduce(active):
            break
        cof, det = _cofactors(x)
        active &= det > 0.0
        safe = np.where(active, det, 1.0)
    out = np.ascontiguousarray(x.T).reshape(b, 3, 3)
    rest = np.flatnonzero(~converged)
    if len(rest):
        rest_a = np.ascontiguousarray(np.asarray(a, dtype=np.float64)[:, rest].T).reshape(-1, 3, 3)
        out[rest] = polar_rotations(rest_a)
    return out


def _column_dot(x: FloatArray, y: FloatArray, rows: int) -> FloatArray:
    """(B,) the dot products of the first ``rows`` rows of x and y (R, B), column by column: the
    products in one call, then summed row after row (the order of the sum is fixed: same bits)."""
    p = x[:rows] * y[:rows]
    out: FloatArray = p[0] + p[1]
    for k in range(2, rows):
        out += p[k]
    return out


def _cofactors(x: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Cofactor matrices (9, B) and determinants (B,) of flattened 3 x 3 matrices ``x`` (9, B)."""
    f = np.take(x, _COF_BOTH, axis=0)
    p = f[:18] * f[18:]
    cof = p[:9] - p[9:]
    return cof, _column_dot(x, cof, 3)

# SPDX-License-Identifier: GPL-3.0-or-later
"""The polar decomposition: the rotation nearest to a 3 x 3 matrix, one matrix or a batch, by SVD.

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

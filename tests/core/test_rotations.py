# SPDX-License-Identifier: GPL-3.0-or-later
"""The batched polar decomposition of shape matching (Newton's iteration) against the SVD's."""

from __future__ import annotations

import numpy as np

from unified_particles.core.rotations import NEWTON_MIN_BATCH, polar_rotations, polar_rotations_batch


def _flat(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a.reshape(len(a), 9).T)


def test_batch_polar_matches_svd_for_every_kind_of_matrix() -> None:
    """Rotations R U diag(s) V^T with well-conditioned, anisotropic (a domino), flat (rank 2, a one-layer
    body), line-like, zero (one particle) and mirroring singular values: the batch gives the SVD's proper
    rotation. The polar factor is unique for nonsingular A and both methods reach it to rounding (Newton's
    iteration converges quadratically; 1e-13 is ~500 ulps of entries <= 1); for the singular and mirroring
    ones the batch takes the SVD's answer itself."""
    rng = np.random.default_rng(7)
    singular = np.array(
        [
            [1.0, 1.0, 1.0],
            [0.2, 0.05, 0.4],
            [1.0, 0.01, 0.3],
            [1.0, 1.0, 0.0],
            [1.0, 0.0, 0.0],
            [0.0, 0.0, 0.0],
            [1.0, 1.0, -0.5],
            [3.0, 2.0, 1.0],
            [1.0, 1e-6, 1.0],
            [5.0, 5.0, 5.0],
            [1e-3, 2e-3, 3e-3],
            [1.0, 0.999, 1.001],
        ]
    )
    singular = np.tile(singular, (5, 1))  # 60 matrices: a batch the iteration takes (NEWTON_MIN_BATCH)
    assert len(singular) >= NEWTON_MIN_BATCH
    q = np.linalg.qr(rng.normal(size=(len(singular), 3, 3)))[0]
    v = np.linalg.qr(rng.normal(size=(len(singular), 3, 3)))[0]
    a = np.einsum("bij,bj,bkj->bik", q, singular, v)
    a[0] += 1e-3 * rng.normal(size=(3, 3))  # a nearly rigid body: its moment matrix is nearly symmetric
    expected = polar_rotations(a)
    got = polar_rotations_batch(_flat(a))
    assert np.abs(got - expected).max() < 1e-13
    assert np.allclose(np.linalg.det(got), 1.0, atol=1e-12)
    # A few bodies go to the SVD itself.
    assert np.array_equal(polar_rotations_batch(_flat(a[:12])), polar_rotations(a[:12]))

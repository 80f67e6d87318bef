# SPDX-License-Identifier: GPL-3.0-or-later
"""Rigid shape matching (Müller et al. 2005; Macklin 2014 Sec. 5.1), batched over all rigid bodies.

Each body's particles are pulled to the best-fit rigid motion of their rest shape: with weights m_i,
centre c = sum m_i x_i / sum m_i, moment matrix A = sum m_i (x_i - c)(q_i - q_c)^T, R = polar(A), goal
g_i = R (q_i - q_c) + c. All bodies' sums are single ``np.bincount`` calls over flat layouts and the
polar decompositions are one batched 3x3 SVD.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from .rotations import polar_rotations

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


@dataclass
class ShapeMatching:
    """Static shape-matching data for all rigid bodies (rigid particles only, in body order).

    Attributes:
        idx: (R,) particle indices of all rigid particles.
        body: (R,) body number 0..B-1 of each of them.
        rest: (R, 3) rest positions relative to the body's rest centre of mass, metres (build frame).
        mass: (R,) particle masses, kg.
        n_bodies: B.
    """

    idx: IntArray
    body: IntArray
    rest: FloatArray
    mass: FloatArray
    n_bodies: int

    def __post_init__(self) -> None:
        # Coordinate-major copies: NumPy 1.26 is 8-10x slower at (R, 3) x (R, 1) broadcasting than at
        # (3, R) x (R,) (see fastops), and the sums are one np.bincount per coordinate.
        self._rest_t = np.ascontiguousarray(self.rest.T)

    def fit(self, x: FloatArray, weight: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
        """Best-fit rigid motion of every body.

        Args:
            x: (N, 3) all particle positions, metres.
            weight: (R,) fit weight of each rigid particle (its mass, raised where it touches
                something so contact and friction corrections are not averaged away).

        Returns:
            (R_body (B, 3, 3), c (B, 3) weighted centre, q_c (B, 3) weighted rest centre).
        """
        rot, c, qc, _ = self._fit(np.take(np.ascontiguousarray(x.T), self.idx, axis=1), weight)
        return rot, c.T.copy(), qc.T.copy()

    def _fit(
        self, xt: FloatArray, weight: FloatArray
    ) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
        """``fit`` on the rigid particles' positions ``xt`` (3, R); centres come back as (3, B).

        Also returns the (3, R) positions for reuse.
        """
        b, body, rest = self.n_bodies, self.body, self._rest_t
        wx = xt * weight
        total = _sum_by(body, weight, b)
        inv = 1.0 / total
        c = np.stack([_sum_by(body, wx[k], b) for k in range(3)]) * inv
        wq = rest * weight
        qc = np.stack([_sum_by(body, wq[k], b) for k in range(3)]) * inv
        # sum w (x - c)(q - q_c)^T = sum w x q^T - W c q_c^T: no per-particle centring needed.
        a = np.empty((b, 3, 3))
        for k in range(3):
            for m in range(3):
                a[:, k, m] = _sum_by(body, wx[k] * rest[m], b) - total * c[k] * qc[m]
        return polar_rotations(a), c, qc, xt

    def goals(self, x: FloatArray, weight: FloatArray) -> tuple[FloatArray, FloatArray]:
        """(R, 3) corrections g_i - x_i toward the fitted rigid shapes, and the (B, 3, 3) rotations.

        g_i = R q_i + (c - R q_c) for the particle's body.
        """
        xt = np.take(np.ascontiguousarray(x.T), self.idx, axis=1)
        rot, c, qc, _ = self._fit(xt, weight)
        body, rest = self.body, self._rest_t
        # Rotation entries per particle, (9, R): one gather.
        rp = np.take(np.ascontiguousarray(rot.reshape(-1, 9).T), body, axis=1)
        g = np.empty_like(xt)
        for k in range(3):
            shift = c[k] - (rot[:, k, 0] * qc[0] + rot[:, k, 1] * qc[1] + rot[:, k, 2] * qc[2])
            g[k] = rp[3 * k] * rest[0] + rp[3 * k + 1] * rest[1] + rp[3 * k + 2] * rest[2]
            g[k] += np.take(shift, body) - xt[k]
        return g.T, rot


def _sum_by(index: IntArray, values: FloatArray, length: int) -> FloatArray:
    """Sums of ``values`` per ``index`` bin (one ``np.bincount``), float64 of ``length``."""
    return np.asarray(np.bincount(index, weights=values, minlength=length), dtype=np.float64)

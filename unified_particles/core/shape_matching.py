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

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

_K3 = np.arange(3, dtype=np.int64)
_K9 = np.arange(9, dtype=np.int64)


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
        self._flat3 = (self.body[:, None] * 3 + _K3).ravel()
        self._flat9 = (self.body[:, None] * 9 + _K9).ravel()

    def fit(self, x: FloatArray, weight: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
        """Best-fit rigid motion of every body.

        Args:
            x: (N, 3) all particle positions, metres.
            weight: (R,) fit weight of each rigid particle (its mass, raised where it touches
                something so contact and friction corrections are not averaged away).

        Returns:
            (R_body (B, 3, 3), c (B, 3) weighted centre, q_c (B, 3) weighted rest centre).
        """
        b = self.n_bodies
        wx = np.take(x, self.idx, axis=0) * weight[:, None]
        inv = 1.0 / _sum_by(self.body, weight, b)
        c = _sum_by(self._flat3, wx.ravel(), 3 * b).reshape(b, 3) * inv[:, None]
        qc = _sum_by(self._flat3, (self.rest * weight[:, None]).ravel(), 3 * b).reshape(b, 3) * inv[:, None]
        # sum w (x - c)(q - q_c)^T = sum w x q^T - W c q_c^T: no per-particle centring needed.
        outer = wx[:, :, None] * self.rest[:, None, :]
        a = _sum_by(self._flat9, outer.ravel(), 9 * b).reshape(b, 3, 3)
        a -= (1.0 / inv)[:, None, None] * c[:, :, None] * qc[:, None, :]
        return polar_rotations(a), c, qc

    def goals(self, x: FloatArray, weight: FloatArray) -> tuple[FloatArray, FloatArray]:
        """(R, 3) corrections g_i - x_i toward the fitted rigid shapes, and the (B, 3, 3) rotations.

        g_i = R q_i + (c - R q_c) for the particle's body.
        """
        rot, c, qc = self.fit(x, weight)
        shift = c - np.einsum("bij,bj->bi", rot, qc)
        rot_p = np.take(rot.reshape(-1, 9), self.body, axis=0).reshape(-1, 3, 3)
        g = np.einsum("rij,rj->ri", rot_p, self.rest) + np.take(shift, self.body, axis=0)
        return g - np.take(x, self.idx, axis=0), rot


def _sum_by(index: IntArray, values: FloatArray, length: int) -> FloatArray:
    """Sums of ``values`` per ``index`` bin (one ``np.bincount``), float64 of ``length``."""
    return np.asarray(np.bincount(index, weights=values, minlength=length), dtype=np.float64)


def polar_rotations(a: FloatArray) -> FloatArray:
    """Rotation part of the polar decomposition of each (B, 3, 3) matrix, by one batched SVD.

    The sign of the last singular direction is flipped where needed so every result is a proper
    rotation (det = +1), also for flat or single-particle bodies where A is singular.
    """
    u, _, vt = np.linalg.svd(a)
    det = np.linalg.det(u @ vt)
    u[:, :, 2] *= np.where(det < 0.0, -1.0, 1.0)[:, None]
    return np.asarray(u @ vt, dtype=np.float64)

# SPDX-License-Identifier: GPL-3.0-or-later
"""Rigid shape matching (Müller et al. 2005; Macklin 2014 Sec. 5.1), batched over all rigid bodies.

Each body's particles are pulled to the best-fit rigid motion of their rest shape: with weights m_i,
centre c = sum m_i x_i / sum m_i, moment matrix A = sum m_i (x_i - c)(q_i - q_c)^T, R = polar(A), goal
g_i = R (q_i - q_c) + c. All bodies' sums are one ``np.add.reduceat`` over a (16, R) array of the
per-particle terms and the polar decompositions one batched Newton iteration
(``rotations.polar_rotations_batch``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from .rotations import polar_rotations_batch

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
        row_body_mass: (R,) the mass of each rigid particle's body, kg (``model.rigid_mass[body]``),
            filled on first use by ``contact_mass.rigid_contact_inv_mass``: constant, so gathered once.
    """

    idx: IntArray
    body: IntArray
    rest: FloatArray
    mass: FloatArray
    n_bodies: int
    row_body_mass: FloatArray | None = None

    def __post_init__(self) -> None:
        # Coordinate-major copies: NumPy 1.26 is 8-10x slower at (R, 3) x (R, 1) broadcasting than at
        # (3, R) x (R,) (see fastops).
        self._rest_t = np.ascontiguousarray(self.rest.T)
        r = len(self.idx)
        # The rigid particles as a slice when they are one run of particle numbers (bodies added one
        # after another, nothing else between them): a slice is a view, so gathers and in-place updates
        # skip the index arrays (x[idx] += d on 3375 (R, 3) rows: 170 us, x[slice] += d 50 us, NumPy 1.26).
        first = int(self.idx[0]) if r else 0
        contiguous = bool(r == 0 or np.array_equal(self.idx, np.arange(first, first + r)))
        self.rows: slice | IntArray = slice(first, first + r) if contiguous else self.idx
        # Where each body's run of rigid particles starts, when every body is one nonempty run in body
        # order (per-body sums by np.add.reduceat); None otherwise.
        starts = np.flatnonzero(np.r_[True, self.body[1:] != self.body[:-1]]) if r else np.zeros(0, np.int64)
        runs = r > 0 and len(starts) == self.n_bodies and bool(np.all(np.diff(self.body) >= 0))
        self._starts: IntArray | None = starts if runs and int(self.body[0]) == 0 else None
        # ... and each run's length: per-body values spread to the particles by np.repeat (6 us for S2's
        # 12 x 3375 goal terms, against 20 us for np.take by body number; the same values).
        self._run_lengths = None if self._starts is None else np.diff(np.r_[self._starts, r])
        self._products = np.empty((16, r))  # _fit's per-particle terms, reused every call

    def fit(self, x: FloatArray, weight: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
        """Best-fit rigid motion of every body.

        Args:
            x: (N, 3) all particle positions, metres.
            weight: (R,) fit weight of each rigid particle (its mass, raised where it touches
                something so contact and friction corrections are not averaged away).

        Returns:
            (R_body (B, 3, 3), c (B, 3) weighted centre, q_c (B, 3) weighted rest centre).
        """
        rot, c, qc, _ = self._fit(self._gather(x), weight)
        return rot, c.T.copy(), qc.T.copy()

    def _gather(self, x: FloatArray) -> FloatArray:
        """(3, R) the rigid particles' rows of ``x`` (N, 3), coordinate-major (a new array)."""
        if isinstance(self.rows, slice):
            return np.ascontiguousarray(x[self.rows].T)
        return np.take(np.ascontiguousarray(x.T), self.idx, axis=1)

    def _fit(
        self, xt: FloatArray, weight: FloatArray
    ) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
        """``fit`` on the rigid particles' positions ``xt`` (3, R); centres come back as (3, B).

        Also returns the (3, R) positions for reuse.
        """
        b, rest, prod = self.n_bodies, self._rest_t, self._products
        # The 16 per-particle terms of every body's sums in one (16, R) buffer, summed per body at once:
        # weight, weight x (3), weight q (3), weight x_k q_m (9).
        prod[0] = weight
        np.multiply(xt, weight, out=prod[1:4])
        np.multiply(rest, weight, out=prod[4:7])
        np.multiply(prod[1:4, None, :], rest[None, :, :], out=prod[7:16].reshape(3, 3, -1))
        sums = self._sum_by_body(prod)
        total = sums[0]
        inv = 1.0 / total
        c = sums[1:4] * inv
        qc = sums[4:7] * inv
        # sum w (x - c)(q - q_c)^T = sum w x q^T - W c q_c^T: no per-particle centring needed.
        a = sums[7:16].reshape(3, 3, b) - (total * c)[:, None, :] * qc[None, :, :]
        return polar_rotations_batch(a.reshape(9, b)), c, qc, xt

    def _sum_by_body(self, values: FloatArray) -> FloatArray:
        """(K, B) sums per body of the rows of ``values`` (K, R): one ``np.add.reduceat`` over the bodies'
        runs when each body's particles are stored together (World adds them so; 2-3x faster than a
        ``np.bincount`` per row), else a ``np.bincount`` per row."""
        if self._starts is not None:
            return np.asarray(np.add.reduceat(values, self._starts, axis=1), dtype=np.float64)
        return np.stack([_sum_by(self.body, row, self.n_bodies) for row in values])

    def body_sums(self, values: FloatArray) -> FloatArray:
        """(B,) sums per body of ``values`` (R,), one per rigid particle (``_sum_by_body`` for one row)."""
        if self._starts is not None:
            return np.asarray(np.add.reduceat(values, self._starts), dtype=np.float64)
        return _sum_by(self.body, values, self.n_bodies)

    def add_to(self, x: FloatArray, delta: FloatArray) -> None:
        """x[rigid rows] += delta, ``x`` (N, 3), ``delta`` (R, 3) as :meth:`goals` returns it (a transposed
        view): column by column, 5 against 11 us for S2's 3375 rows (same sums)."""
        for axis in range(3):
            x[self.rows, axis] += delta[:, axis]

    def goals(self, x: FloatArray, weight: FloatArray) -> tuple[FloatArray, FloatArray]:
        """(R, 3) corrections g_i - x_i toward the fitted rigid shapes, and the (B, 3, 3) rotations.

        g_i = R q_i + (c - R q_c) for the particle's body.
        """
        xt = self._gather(x)
        rot, c, qc, _ = self._fit(xt, weight)
        b, rest = self.n_bodies, self._rest_t
        # Per body its rotation's entries (9) and its shift c - R q_c (3), then per particle: one gather.
        per_body = np.empty((12, b))
        per_body[:9] = rot.reshape(b, 9).T
        per_body[9:] = c - np.einsum("bkm,mb->kb", rot, qc)
        if self._run_lengths is not None:
            per = np.repeat(per_body, self._run_lengths, axis=1)
        else:
            per = np.take(per_body, self.body, axis=1)
        g: FloatArray = (per[:9].reshape(3, 3, -1) * rest[None, :, :]).sum(axis=1)
        g += per[9:]
        g -= xt
        return g.T, rot


def _sum_by(index: IntArray, values: FloatArray, length: int) -> FloatArray:
    """Sums of ``values`` per ``index`` bin (one ``np.bincount``), float64 of ``length``."""
    return np.asarray(np.bincount(index, weights=values, minlength=length), dtype=np.float64)

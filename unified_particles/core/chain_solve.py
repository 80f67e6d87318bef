# SPDX-License-Identifier: GPL-3.0-or-later
"""A direct solve of every rope's links each small step: the whole chain's length in one step.

The coloured Gauss-Seidel sweep (``distance.GaussSeidelSolver``) carries the weight of a hanging chain to
its pins a few links per small step, so the stretch it leaves grows with the number of links: a 65-link
chain hung 4% long at the default budget (docs/physics.md, *Ropes*). After the sweep, this solver takes
one fast-projection step (Goldenthal et al., "Efficient Simulation of Inextensible Cloth", SIGGRAPH 2007;
the XPBD form of Macklin et al. 2016 with the multipliers starting at zero): the smallest mass-weighted
correction that brings every link's linearized constraint to zero,

    (J W J^T + alpha / h^2) lambda = -C,    x += W J^T lambda,

with C_i = |x_{i+1} - x_i| - l_i, n_i its unit direction, J the rows -n_i at x_i and +n_i at x_{i+1}.
For a chain J W J^T is tridiagonal: diagonal w_i + w_{i+1}, off-diagonal -w_{i+1} n_i . n_{i+1}. It is
solved exactly by parallel cyclic reduction (Hockney and Jesshope, "Parallel Computers", 1981, Sec.
5.4): each of ceil(log2 m) levels eliminates every equation's neighbours at distance 1, 2, 4, ... in one
vectorized pass over all links of all ropes (ropes are blocks with no coupling between them), with no
loop over links. The matrix is symmetric and diagonally dominant (|n_i . n_{i+1}| <= 1), so the
reduction needs no pivoting. Links between two pinned particles are left out (they cannot move).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


class ChainProjection:
    """The direct solve of the ropes' links for one step size h.

    Args:
        a, b: (m,) particle indices of each link, the ropes' links in order along each rope (a rope's
            link i + 1 starts where link i ends: ``b[i] == a[i + 1]`` couples them).
        rest: (m,) rest lengths, metres.
        compliance: (m,) XPBD compliance, m/N.
        inv_mass: (N,) inverse masses, 1/kg (0: pinned).
        h: small step, s.
    """

    def __init__(
        self,
        a: IntArray,
        b: IntArray,
        rest: FloatArray,
        compliance: FloatArray,
        inv_mass: FloatArray,
        h: float,
    ) -> None:
        wa, wb = inv_mass[a], inv_mass[b]
        live = wa + wb > 0.0
        self.a, self.b, self.rest = a[live], b[live], rest[live]
        self.wa, self.wb = wa[live], wb[live]
        self.diag = self.wa + self.wb + compliance[live] / (h * h)
        # Link i couples with link i + 1 through their shared particle b_i = a_{i+1}, if it can move.
        self.coupled = np.zeros(len(self.a), dtype=bool)
        if len(self.a) > 1:
            self.coupled[:-1] = (self.b[:-1] == self.a[1:]) & (self.wb[:-1] > 0.0)
        # Levels: enough doublings of the stride to span the longest run of coupled links.
        longest = 1
        starts = np.flatnonzero(np.r_[True, ~self.coupled[:-1]]) if len(self.a) else np.zeros(0, np.int64)
        if len(starts):
            longest = int(np.diff(np.r_[starts, len(self.a)]).max())
        self.levels = int(np.ceil(np.log2(longest))) if longest > 1 else 0
        self.inv_mass = inv_mass

    def __len__(self) -> int:
        return len(self.a)

    def solve(self, x: FloatArray) -> None:
        """One projection of ``x`` (N, 3) in place (a second one changed a 65-link hanging chain's sag by
        less than 0.1 mm: the sweep before it leaves the linearization little to miss)."""
        m = len(self.a)
        if m == 0:
            return
        d = x[self.b] - x[self.a]
        length = np.sqrt(np.einsum("ij,ij->i", d, d))
        n = d / np.maximum(length, 1e-12)[:, None]
        # Off-diagonal (i, i + 1) = -w_{b_i} n_i . n_{i+1} where coupled; the matrix is symmetric.
        upper = np.zeros(m)
        upper[:-1] = np.where(self.coupled[:-1], -self.wb[:-1] * np.einsum("ij,ij->i", n[:-1], n[1:]), 0.0)
        lower = np.r_[0.0, upper[:-1]]
        lam = cyclic_reduction(lower, self.diag.copy(), upper, self.rest - length, self.levels)
        # x_a -= w_a n lambda, x_b += w_b n lambda, summed over the links at each particle.
        f = n * lam[:, None]
        for k in range(3):
            x[:, k] -= np.bincount(self.a, weights=self.wa * f[:, k], minlength=len(x))
            x[:, k] += np.bincount(self.b, weights=self.wb * f[:, k], minlength=len(x))


def cyclic_reduction(
    lower: FloatArray, diag: FloatArray, upper: FloatArray, rhs: FloatArray, levels: int
) -> FloatArray:
    """(m,) solution of the tridiagonal system lower_i y_{i-1} + diag_i y_i + upper_i y_{i+1} = rhs_i
    (``lower[0]`` and ``upper[-1]`` unused) by parallel cyclic reduction over ``levels`` >= ceil(log2 of
    the longest coupled run) levels; diagonally dominant systems only (no pivoting)."""
    m = len(diag)
    lo, dg, up, f = lower.copy(), diag, upper.copy(), rhs.copy()
    lo[0], up[-1] = 0.0, 0.0
    stride = 1
    for _ in range(levels):  # ceil(log2 m) vectorized passes, never one per link
        # alpha_i = -lo_i / dg_{i-s}, beta_i = -up_i / dg_{i+s} (zero past the ends).
        alpha = np.zeros(m)
        beta = np.zeros(m)
        alpha[stride:] = -lo[stride:] / dg[:-stride]
        beta[:-stride] = -up[:-stride] / dg[stride:]
        new_dg = dg.copy()
        new_f = f.copy()
        new_dg[stride:] += alpha[stride:] * up[:-stride]
        new_f[stride:] += alpha[stride:] * f[:-stride]
        new_dg[:-stride] += beta[:-stride] * lo[stride:]
        new_f[:-stride] += beta[:-stride] * f[stride:]
        new_lo = np.zeros(m)
        new_up = np.zeros(m)
        new_lo[stride:] = alpha[stride:] * lo[:-stride]
        new_up[:-stride] = beta[:-stride] * up[stride:]
        lo, dg, up, f = new_lo, new_dg, new_up, new_f
        stride *= 2
        if stride >= m:
            break
    return np.asarray(f / dg, dtype=np.float64)

# SPDX-License-Identifier: GPL-3.0-or-later
"""A global solve of the inextensible cloth edges each small step (opt-in: ``cloth_projection_iterations``).

Goldenthal, Harmon, Fattal, Bercovier, Grinspun, "Efficient Simulation of Inextensible Cloth" (SIGGRAPH
2007), fast projection: one Gauss-Newton step towards C(x) = 0 for all stiff edges at once, the
smallest mass-weighted correction: (J W J^T) dlambda = C, x -= W J^T dlambda, with J the edge
directions (row e: +n_e at a, -n_e at b) and W the inverse masses. The coloured Gauss-Seidel sweep
(``distance.GaussSeidelSolver``) removes short-range error cheaply but moves the weight of a long
hanging chain to its supports a few edges per small step, so the stretch it leaves grows with the
chain's length in edges (docs/physics.md, item 10); the global solve carries it in one step.

The system is solved by a few Jacobi-preconditioned conjugate-gradient iterations, cold-started (a
warm start from the last step's dlambda re-applies that correction where CG stops early, the integral
action that made carried XPBD multipliers unstable: with 5 iterations a hanging strip of 1.25 cm edges
hung 1.4 % too shallow). J W J^T is
assembled each step on a sparsity pattern fixed at build time: entry (e, f) for every two edges that
share a movable vertex p, value s_e s_f w_p (n_e . n_f) (s: +1 at a, -1 at b); the product is one
``np.bincount``. Only edges stiff enough to count as inextensible in the step (compliance alpha / h^2
below 1e-3 of the edge's inverse mass) take part: the sweep's XPBD update already gave soft edges
their compliance.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from .bending import BendingSolver
from .chain_solve import ChainProjection
from .cloth_coarse import RENEW_STEPS, CoarseStretch
from .distance import DistanceConstraints, GaussSeidelSolver, JacobiSolver, TetherSolver

if TYPE_CHECKING:
    from .model import ParticleModel
    from .settings import SolverSettings

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

# An edge is projected when alpha / h^2 < STIFF_EDGE * (w_a + w_b): inextensible within the step.
STIFF_EDGE = 1e-3


def shared_vertex_pattern(
    a: IntArray, b: IntArray, inv_mass: FloatArray
) -> tuple[IntArray, IntArray, FloatArray]:
    """Nonzeros of J W J^T for edges (a, b): (rows, cols, s_e s_f w_p), one entry per pair of edge ends
    at the same movable vertex p (the diagonal included), sorted by row. Built once per step size."""
    m = len(a)
    ends = np.concatenate([a, b])
    edge = np.concatenate([np.arange(m), np.arange(m)])
    sign = np.concatenate([np.ones(m), -np.ones(m)])
    keep = inv_mass[ends] > 0.0
    ends, edge, sign = ends[keep], edge[keep], sign[keep]
    order = np.argsort(ends, kind="stable")
    ends, edge, sign = ends[order], edge[order], sign[order]
    # Group the edge ends by vertex; each end pairs with every end in its group.
    first = np.flatnonzero(np.r_[True, ends[1:] != ends[:-1]])
    size = np.diff(np.r_[first, len(ends)])
    group_of = np.repeat(np.arange(len(first)), size)
    degree = size[group_of]  # (ends,) the size of each end's group
    row_end = np.repeat(np.arange(len(ends)), degree)
    offset = np.arange(len(row_end)) - np.repeat(np.cumsum(degree) - degree, degree)
    col_end = first[group_of[row_end]] + offset
    rows, cols = edge[row_end], edge[col_end]
    value = sign[row_end] * sign[col_end] * inv_mass[ends[row_end]]
    order = np.argsort(rows, kind="stable")
    return rows[order], cols[order], value[order]


class StretchProjection:
    """Fast projection of the stiff cloth edges for one step size h (see the module docstring).

    Args:
        con: the cloth stretch constraints (all cloths of the model).
        inv_mass: (N,) inverse masses, 1/kg (0: pinned).
        h: small step, s.
        iterations: conjugate-gradient iterations per small step (> 0).
    """

    def __init__(self, con: DistanceConstraints, inv_mass: FloatArray, h: float, iterations: int) -> None:
        wa, wb = inv_mass[con.a], inv_mass[con.b]
        stiff = (con.compliance / (h * h) < STIFF_EDGE * (wa + wb)) & (wa + wb > 0.0)
        self.a, self.b = con.a[stiff], con.b[stiff]
        self.rest = con.rest_length[stiff]
        self.inv_mass = inv_mass
        self.iterations = int(iterations)
        self.rows, self.cols, self.value = shared_vertex_pattern(self.a, self.b, inv_mass)
        self.inv_diag = 1.0 / (wa[stiff] + wb[stiff])  # Jacobi preconditioner: diag(J W J^T)

    def __len__(self) -> int:
        return len(self.a)

    def solve(self, x: FloatArray) -> None:
        """One projection of ``x`` (N, 3) in place."""
        a, b, n, m = self.a, self.b, len(x), len(self.a)
        d = x[a] - x[b]
        length = np.sqrt(np.einsum("ij,ij->i", d, d))
        c = length - self.rest
        d /= np.maximum(length, 1e-12)[:, None]  # unit directions n_e
        values = self.value * np.einsum("ij,ij->i", d[self.rows], d[self.cols])
        rows, cols = self.rows, self.cols
        lam = np.zeros(m)
        r = c
        z = r * self.inv_diag
        p = z.copy()
        rz = float(r @ z)
        for _ in range(self.iterations):
            if rz <= 0.0:
                break
            ap = np.bincount(rows, weights=values * p[cols], minlength=m)
            pap = float(p @ ap)
            if pap <= 0.0:
                break
            step = rz / pap
            lam += step * p
            r = r - step * ap
            z = r * self.inv_diag
            rz_new = float(r @ z)
            p = z + (rz_new / rz) * p
            rz = rz_new
        f = d * lam[:, None]  # W J^T lambda, per particle and coordinate
        ab = np.concatenate([a, b])
        w = self.inv_mass
        for k in range(3):
            fk = np.concatenate([f[:, k], -f[:, k]])
            x[:, k] -= w * np.bincount(ab, weights=fk, minlength=n)


# Every per-step cloth solver (``Solver._distance_solvers``): each has ``solve(x)``.
DistanceSolver = (
    GaussSeidelSolver
    | JacobiSolver
    | BendingSolver
    | StretchProjection
    | ChainProjection
    | CoarseStretch
    | TetherSolver
)


def renew_coarse(
    solvers: list[DistanceSolver], alpha: float, settings: SolverSettings
) -> list[DistanceSolver]:
    """``solvers``, their coarse corrections told to renew their matrix if this small step (ending at
    ``alpha`` of the frame) is the first of ``cloth_coarse.RENEW_STEPS`` in the frame: a function of the
    step's place in the frame only, so a run resumed from a snapshot renews where the unbroken run did."""
    k = round(alpha * settings.substeps * settings.iterations) - 1  # the small step's number in the frame
    for solver in solvers:
        if isinstance(solver, CoarseStretch):
            solver.renew = k % RENEW_STEPS == 0
    return solvers


def distance_solvers(model: ParticleModel, settings: SolverSettings, h: float) -> list[DistanceSolver]:
    """Bending (legacy Jacobi distance, isometric: core/bending.py), stretch (the coarse correction of
    :mod:`.cloth_coarse` and the tethers after it, coloured Gauss-Seidel, then the optional global
    projection), the ropes' direct solve (:mod:`.chain_solve`), then the isometric cloths' stretch
    limits: the solvers for step size h, in order. Stretch goes last so the stiff constraints have the
    final word before the velocity update."""
    w = model.particle_inv_mass
    solvers: list[DistanceSolver] = []
    if len(model.bend):
        solvers.append(JacobiSolver(model.bend, w, h, settings.relaxation))
    if len(model.bend_isometric):
        solvers.append(BendingSolver(model.bend_isometric, w, h))
    if len(model.stretch):
        if settings.cloth_coarse_correction:  # the cloth's long-range tension, then the sweep smooths it
            coarse = CoarseStretch(
                model.stretch, w, model.particle_rest_q, model.particle_group, model.particle_is_cloth, h
            )
            if len(coarse):
                solvers.append(coarse)
                if len(model.tether):
                    # The tethers again, after the coarse pass: it moves a vertex up to 0.1 edge, which
                    # took a corner-pinned sheet under a heavy box to 1.176 x its rest path to a pin past
                    # the tethers' 1.1 (test_cloth_compliance.py); the sweep then smooths what they pulled.
                    solvers.append(model.tether)
        # Which vertices have compliant edges (cloth_load.py) follows the same criterion.
        solvers.append(GaussSeidelSolver(model.stretch, w, h, stiff_edge=STIFF_EDGE))
        if settings.cloth_projection_iterations > 0:  # a global solve after the sweep
            solvers.append(StretchProjection(model.stretch, w, h, settings.cloth_projection_iterations))
    if model.rope_links is not None:  # every rope's whole length in one direct solve, after the sweep
        solvers.append(ChainProjection(*model.rope_links, w, h))
    if len(model.stretch_limit):
        solvers.append(GaussSeidelSolver(model.stretch_limit, w, h, unilateral=True))
    return solvers

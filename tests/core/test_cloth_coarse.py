"""The coarse correction of the stiff cloth edges (``core/cloth_coarse.py``; issue 24, item 10).

References: the Galerkin coarse-level correction of a two-level method (Vanek, Mandel and Brezina 1996)
applied to the fast projection's system (J W J^T) lambda = C of Goldenthal et al. 2007; the hanging
strip against the catenary of its rest length (tests/core/test_catenary.py); a closed system's energy
never rises above its start.
"""

from __future__ import annotations

import numpy as np
import pytest

from unified_particles.core import World
from unified_particles.core.cloth_coarse import CoarseStretch
from unified_particles.core.distance import DistanceConstraints, mesh_edges
from unified_particles.core.primitives import grid_mesh

from .test_catenary import catenary_sag, hanging_strip


def test_correction_is_the_galerkin_step_of_the_fast_projection() -> None:
    # A 9 x 9 sheet stretched 1 % and crumpled (0.5 mm: corrections below the 0.1-edge cap), two pins, random
    # masses: the correction against the dense x -= W J^T max(P mu, 0), mu = (P^T J W J^T P)^-1 P^T C,
    # and it removes most of the stretch's coarse part.
    v, f = grid_mesh(0.3, 9)
    rest = np.asarray(v, float)
    x = 1.01 * rest + np.random.default_rng(3).normal(0.0, 0.0005, rest.shape)  # stretched 1 %
    e = mesh_edges(np.asarray(f))
    con = DistanceConstraints.build(e, rest, np.zeros(len(e)), True, len(rest))
    w = np.random.default_rng(4).uniform(0.5, 2.0, len(rest))
    w[[0, 7]] = 0.0
    n = len(rest)
    coarse = CoarseStretch(con, w, rest, np.zeros(n, np.int64), np.ones(n, bool), 1.0 / 384.0)
    assert len(coarse) > 3  # several patches
    m = len(coarse.a)
    d = x[coarse.a] - x[coarse.b]
    length = np.linalg.norm(d, axis=1)
    unit = d / length[:, None]
    jac = np.zeros((m, 3 * n))
    for k in range(m):
        jac[k, 3 * coarse.a[k] : 3 * coarse.a[k] + 3] = unit[k]
        jac[k, 3 * coarse.b[k] : 3 * coarse.b[k] + 3] = -unit[k]
    p = np.zeros((m, len(coarse)))
    dof = 3 * coarse.patch[None, :] + np.arange(3)[:, None]  # (3, m), as coarse.phi
    np.add.at(p, (np.tile(np.arange(m), 3), dof.reshape(-1)), coarse.phi.reshape(-1))
    stretch = length - coarse.rest
    mat = p.T @ jac @ np.diag(np.repeat(w, 3)) @ jac.T @ p
    mu = np.linalg.lstsq(mat, p.T @ stretch, rcond=None)[0]
    lam = np.maximum(p @ mu, 0.0)  # tension only (cloth buckles rather than carry compression)
    dense = x - (np.repeat(w, 3) * (jac.T @ lam)).reshape(-1, 3)
    y = x.copy()
    coarse.solve(y)
    np.testing.assert_allclose(y, dense, atol=1e-10)  # corrections are ~0.5 mm
    after = np.linalg.norm(y[coarse.a] - y[coarse.b], axis=1) - coarse.rest
    assert np.abs(p.T @ after).max() < 0.2 * np.abs(p.T @ stretch).max()  # second order is left


@pytest.mark.parametrize("cells", [40, 80])
def test_strip_on_its_catenary_at_the_default_budget(cells: int) -> None:
    # Default budget (4 x 4 at 24 fps), 2.5 cm and 1.25 cm edges. Without the coarse correction the
    # centre line hung 3.7 % / 10.8 % long and the sag 10 % / 29 % deep (test_projection.py); with it
    # -0.01 % / -0.00 % and 0.25 % / 0.30 % deep (16 substeps at 5 cm: 0.24 %, test_catenary.py). The
    # issue asks 1 % of stretch; the bounds are 1 % of sag (3x the measured, every 1 % of stretch deepens
    # the sag 3 %) and 0.25 % of stretch (5x the largest measured); a static problem, no chaos.
    sag, stretch = hanging_strip(cells, 4, cloth_coarse_correction=1)
    assert abs(stretch) < 0.0025
    assert sag == pytest.approx(catenary_sag(), rel=0.01)


def test_swinging_sheet_gains_no_energy() -> None:
    # A 0.6 m sheet (13 x 13, 0.2 kg, inextensible) pinned at two corners, released flat, swinging in a
    # vacuum without damping for 2 s at the default budget. Its energy sum m (v^2 / 2 + g z) over the free
    # vertices must never rise above the start (the correction is a projection: it only takes energy out).
    v, f = grid_mesh(0.6, 13)
    v = np.asarray(v, float)
    v[:, 2] += 1.0
    w = World(radius=0.02, damping=0.0, cloth_coarse_correction=1)
    w.add_cloth(v, np.asarray(f), mass=0.2, pinned=[0, 12], air_viscosity=0.0)
    free = w.inverse_masses > 0.0
    m = 1.0 / w.inverse_masses[free]

    def energy() -> float:
        x, vel = w.positions[free], w.velocities[free]
        return float(np.sum(m * (0.5 * np.einsum("ij,ij->i", vel, vel) + 9.81 * x[:, 2])))

    start, highest = energy(), -np.inf
    for _ in range(48):
        w.step(1.0 / 24.0)
        highest = max(highest, energy())
    assert highest <= start + 1e-12 * abs(start)


def test_a_duplicate_elsewhere_leaves_a_cloth_unchanged() -> None:
    # Physics does not depend on where a cloth is or on what else is in the scene: a 9 x 9 sheet pinned at
    # two corners, alone, against the same sheet with a copy 4.123 m away. Each cloth's patches are its own
    # (cloth_coarse._patches); with one grid for the whole scene the copy got other patches and moved
    # 5.6 mm apart within 16 frames (tests/blender/test_first_hour.py's duplicates). The coarse matrix of
    # both is one block-diagonal solve, so only rounding differs: 1e-9 m.
    v, f = grid_mesh(0.4, 9, center=(0.0, 0.0, 1.0))
    v = np.asarray(v, float)
    pins = [0, 8]
    offset = np.array([4.123, 0.0, 0.0])

    def run(copy: bool) -> tuple[np.ndarray, np.ndarray | None]:
        w = World(radius=0.02)
        a = w.add_cloth(v, f, mass=0.2, pinned=pins)
        b = w.add_cloth(v + offset, f, mass=0.2, pinned=pins) if copy else None
        for _ in range(6):
            w.step(1.0 / 24.0)
        return a.vertex_positions, None if b is None else b.vertex_positions - offset

    alone, _ = run(False)
    original, moved = run(True)
    assert moved is not None
    assert float(np.abs(alone[:, 2] - 1.0).max()) > 0.05  # the sheet swung down
    np.testing.assert_allclose(original, alone, rtol=0, atol=1e-9)
    np.testing.assert_allclose(moved, alone, rtol=0, atol=1e-9)

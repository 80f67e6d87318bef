"""Particle-triangle contacts (core/cloth_triangles.py): a coarse cloth holds grains and a box smaller than
its mesh, and every contact conserves momentum."""

from __future__ import annotations

import numpy as np
import pytest

from unified_particles.core import World
from unified_particles.core.cloth_triangles import apply_triangle_contacts, candidate_pairs, triangle_contacts
from unified_particles.core.distance import DistanceConstraints, JacobiSolver, bending_pairs
from unified_particles.core.primitives import box_mesh, grid_mesh, grid_points

R = 0.01  # grains of r = 1 cm
SPACING = 0.1  # on a cloth of 10 cm vertex spacing: a grain fits between its vertices 2.5 times over


def _coarse_cloth(world: World, pinned: str = "corners") -> np.ndarray:
    v, f = grid_mesh(1.0, 11, (0.0, 0.0, 0.0))
    if pinned == "corners":
        pins = np.array([0, 10, 110, 120])
    else:
        pins = np.flatnonzero(np.abs(v[:, :2]).max(axis=1) > 0.49)
    return world.add_cloth(v, f, mass=0.5, pinned=pins, air_viscosity=0.0).indices


@pytest.mark.parametrize("nudge", [0.0, 1e-5, 2e-5])
def test_coarse_cloth_pinned_at_its_corners_holds_small_grains(nudge: float) -> None:
    # 32 grains (0.4 kg, nearly the cloth's mass) dropped from 5 cm on the middle of the cloth. Without
    # particle-triangle contacts every grain fell through between the vertices within 8 frames (300 of
    # 300 in a 3-layer block, 86 of 100 in one layer). Held, a grain rests gap - slop = 2r - 0.2 r above
    # the triangle under it (cloth_contacts.CLOTH_CONTACT_SLOP_RADII).
    w = World(radius=R)
    cloth = _coarse_cloth(w)
    pts = grid_points((4, 4, 2), 2.2 * R, (-0.04, -0.04, 0.05))
    pts += nudge * np.random.default_rng(7).standard_normal(pts.shape)
    grains = w.add_granular(pts)
    lowest = []
    for _ in range(48):  # 2 s
        w.step(1.0 / 24.0)
        x = w.positions
        lowest.append(float(x[grains.indices, 2].min() - x[cloth, 2].min()))
    # No grain below the lowest cloth vertex at any frame, and all resting at the end.
    assert min(lowest) > 0.0
    assert np.abs(grains.velocities).max() < 0.2
    # Every grain rests on the cloth or on a grain on it: the lower layer within 3 r of a triangle.
    x = w.positions
    faces = grid_mesh(1.0, 11)[1] + cloth[0]
    near, _ = candidate_pairs(x, grains.indices, faces, np.full(len(faces), R))
    low = grains.indices[np.argsort(x[grains.indices, 2])[:16]]
    assert set(low) <= set(near.tolist())


def test_small_box_rests_on_a_coarse_cloth() -> None:
    # A 4 cm box (8 particles of r = 1 cm, 64 g) dropped on the middle of a triangle of a cloth pinned
    # along its edges: it passed through between the vertices before; now it rests on the cloth.
    w = World(radius=R)
    cloth = _coarse_cloth(w, pinned="edges")
    v, f = box_mesh((0.04, 0.04, 0.04), (0.033, 0.031, 0.08))
    box = w.add_rigid(v, f, density=1000.0)
    gaps = []
    for _ in range(48):
        w.step(1.0 / 24.0)
        x = w.positions
        gaps.append(float(x[box.indices, 2].min() - x[cloth[60], 2]))  # above the cloth's middle vertex
    # From the landing on (frame 4), the box's lowest particle centre stays 2r above the cloth (gap
    # thickness + r = 2 cm, 1.8 cm with the held pass's slop) while box and cloth bounce together as a
    # trampoline (no air here): never through, never thrown off (within 1.7-3 cm).
    assert min(gaps[3:]) > 0.017
    assert max(gaps[3:]) < 0.03


def test_grain_cloth_hit_conserves_momentum() -> None:
    # A free cloth in zero gravity hit at 2 m/s by a grain in the middle of a triangle: the triangle
    # contacts move the grain and the vertices by W_p / D and -u_k W_k / D of each correction (core/
    # cloth_triangles.py), so total momentum is conserved to rounding. The held pass after the stretch
    # solve (cloth immovable) must not act in a hit this light (the overlap stays within its slop).
    # Isometric bending here; the legacy bending's hit is the next test.
    w = World(radius=R, gravity=(0.0, 0.0, 0.0))
    v, f = grid_mesh(1.0, 11, (0.0, 0.0, 0.0))
    w.add_cloth(v, f, mass=0.5, air_viscosity=0.0, bending_rigidity=1e-5)
    grain = w.add_granular([[0.033, 0.031, 0.05]], initial_velocity=(0.0, 0.0, -2.0))
    m = 1.0 / w.inverse_masses
    p0 = (m[:, None] * w.velocities).sum(axis=0)
    for _ in range(12):
        w.step(1.0 / 24.0)
    p1 = (m[:, None] * w.velocities).sum(axis=0)
    assert grain.velocities[0, 2] > -1.0  # the hit happened: the grain was slowed
    np.testing.assert_allclose(p1, p0, atol=1e-9 * np.abs(p0).max())


def test_legacy_bending_hit_conserves_momentum() -> None:
    # The hit above with the legacy bending (distance pairs across each edge's diamond, solved by
    # core/distance.py JacobiSolver). Its per-particle averaging (paper Eq. 11: each particle's summed
    # corrections over its own constraint count) gave the two ends of a pair between a rim vertex (in
    # fewer pairs) and an inner one unequal impulses: the free cloth drifted sideways at 3 % of the
    # grain's momentum. Mass splitting gives each pair equal and opposite impulses: conserved to
    # rounding (1e-9 of the grain's momentum, as above), in every direction.
    w = World(radius=R, gravity=(0.0, 0.0, 0.0))
    v, f = grid_mesh(1.0, 11, (0.0, 0.0, 0.0))
    w.add_cloth(v, f, mass=0.5, air_viscosity=0.0, bend_compliance=1e-3)
    w.add_granular([[0.033, 0.031, 0.05]], initial_velocity=(0.0, 0.0, -2.0))
    m = 1.0 / w.inverse_masses
    p0 = (m[:, None] * w.velocities).sum(axis=0)
    for _ in range(12):
        w.step(1.0 / 24.0)
    p1 = (m[:, None] * w.velocities).sum(axis=0)
    np.testing.assert_allclose(p1, p0, atol=1e-9 * np.abs(p0).max())


def test_jacobi_bending_conserves_momentum_and_matches_eq11_where_counts_agree() -> None:
    # One Jacobi pass on a random cloth of unequal masses: sum m dx = 0 and sum m x cross dx = 0
    # (equal and opposite impulses along each pair), and where both ends of every pair have the same
    # constraint count (a ring of pairs) the corrections are exactly the paper's Eq. 11 average,
    # dx_a = w_a / (w_a + w_b + alpha / h^2) * (-C n) / n_a.
    rng = np.random.default_rng(5)
    v, f = grid_mesh(0.5, 6)
    pairs = bending_pairs(f)  # rim vertices are in fewer pairs than inner ones
    inv_mass = rng.uniform(0.5, 2.0, len(v))
    x = v + 0.02 * rng.standard_normal(v.shape)
    h = 1.0 / 384.0
    con = DistanceConstraints.build(pairs, v, np.full(len(pairs), 1e-4), False, len(v))
    moved = x.copy()
    JacobiSolver(con, inv_mass, h).solve(moved)
    dx, m = moved - x, 1.0 / inv_mass[:, None]
    assert np.abs(dx).max() > 1e-4  # it did something
    np.testing.assert_allclose((m * dx).sum(axis=0), 0.0, atol=1e-15)
    np.testing.assert_allclose((m * np.cross(x, dx)).sum(axis=0), 0.0, atol=1e-15)
    pinned = inv_mass.copy()
    pinned[0] = 0.0  # a pinned vertex takes no correction
    moved = x.copy()
    JacobiSolver(con, pinned, h).solve(moved)
    assert np.all(moved[0] == x[0])
    # A closed ring of four pairs: every vertex in two, so each correction is Eq. 11's.
    xr = np.array([[0.0, 0.0, 0.0], [0.11, 0.0, 0.0], [0.1, 0.12, 0.0], [0.0, 0.1, 0.01]])
    wr = np.array([1.0, 2.0, 3.0, 4.0])
    loop = np.array([[0, 1], [1, 2], [2, 3], [3, 0]])
    rest, alpha = np.full(4, 0.1), np.full(4, 2e-5)
    con4 = DistanceConstraints(loop[:, 0].copy(), loop[:, 1].copy(), rest, alpha)
    got = xr.copy()
    JacobiSolver(con4, wr, h).solve(got)
    want = xr.copy()
    for (a, b), length, comp in zip(loop, rest, alpha, strict=True):
        d = xr[a] - xr[b]
        dist = np.linalg.norm(d)
        s = -(dist - length) / (wr[a] + wr[b] + comp / h**2) * d / dist / 2.0
        want[a] += wr[a] * s
        want[b] -= wr[b] * s
    np.testing.assert_allclose(got, want, atol=1e-15)


def test_triangle_contact_moves_conserve_momentum_and_restore_the_gap() -> None:
    # One particle 5 mm above a triangle's plane (gap 2 cm), equal inverse masses: the constraint
    # C = n.(p - sum u_k x_k) - gap is solved exactly in one projection (it is linear in the positions),
    # with sum_k m_k dx_k = 0.
    rng = np.random.default_rng(3)
    x = np.array([[0.0, 0.0, 0.0], [0.1, 0.0, 0.0], [0.0, 0.1, 0.0], [0.03, 0.02, 0.005]])
    w = np.array([2.0, 3.0, 4.0, 5.0])
    for _ in range(5):
        xp = x + 1e-3 * rng.standard_normal(x.shape)
        xp[3] = x[3]
        idx, delta = triangle_contacts(
            xp, None, np.array([3]), np.array([[0, 1, 2]]), w, w, np.array([0.02]), np.zeros(4), 1.0, 1.0
        )
        moved = xp.copy()
        apply_triangle_contacts(moved, idx, delta, 1.0)
        np.testing.assert_allclose(((moved - xp) / w[:, None]).sum(axis=0), 0.0, atol=1e-15)
        a, b, c = moved[:3]
        n = np.cross(b - a, c - a)
        n /= np.linalg.norm(n)
        assert np.dot(moved[3] - a, n) == pytest.approx(0.02, rel=1e-3)  # linear up to the tilt

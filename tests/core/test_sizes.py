# SPDX-License-Identifier: GPL-3.0-or-later
"""Every body its own particle size (issue 22, items 1 and 2): contacts at r_i + r_j, masses from each
particle's own volume, the neighbour search by size class, and worlds of one size unchanged."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from unified_particles.core import SimulationInputError, World
from unified_particles.core.neighbors import brute_force_pairs
from unified_particles.core.primitives import box_mesh, grid_points, uv_sphere_mesh
from unified_particles.core.sizes import find_sized_pairs, fitted_radius, grain_radii

DT = 1.0 / 24.0


def _digest(world: World) -> str:
    arrays = world.state().to_arrays()
    h = hashlib.sha256()
    for key in sorted(arrays):
        h.update(np.ascontiguousarray(arrays[key]).tobytes())
    return h.hexdigest()


def _mixed(world_radius: float, body_radius: float | None) -> World:
    """A box, grains and a ball on a plane, every body at ``body_radius`` (None: the world's)."""
    w = World(radius=world_radius)
    w.add_collider_plane()
    v, f = box_mesh((0.3, 0.3, 0.3), (0.5, 0.0, 0.3))
    w.add_rigid(v, f, initial_velocity=(-1.0, 0.0, 0.0), radius=body_radius)
    w.add_granular(grid_points((4, 4, 3), 0.1, (-0.2, -0.2, 0.3)), radius=body_radius)
    v, f = uv_sphere_mesh(0.15, (-0.5, 0.0, 0.3), 12, 6)
    w.add_rigid(v, f, radius=body_radius)
    return w


@pytest.mark.slow
def test_one_size_runs_the_arithmetic_of_one_radius() -> None:
    """Bodies given the world's radius, or all one other radius, step bit for bit as a world of that
    radius (the float fast path; the margin, the world's radius by default, scales with the size)."""
    runs = []
    for world_radius, body_radius in ((0.05, None), (0.05, 0.05), (0.04, None), (0.05, 0.04)):
        w = _mixed(world_radius, body_radius)
        for _ in range(6):
            w.step(DT)
        runs.append(_digest(w))
    assert runs[0] == runs[1]
    assert runs[2] == runs[3]
    assert runs[0] != runs[2]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sized_search_finds_the_brute_force_pairs(seed: int) -> None:
    """Sizes 10x apart: every pair closer than reach_i + reach_j, each once (O(N^2) reference)."""
    rng = np.random.default_rng(seed)
    n = 400
    x = rng.uniform(0.0, 1.0, (n, 3))
    reach = np.where(rng.uniform(size=n) < 0.2, 0.1, 0.01) * rng.uniform(0.8, 1.2, n)
    group = np.arange(n, dtype=np.int64)
    i, j = find_sized_pairs(x, reach, group, np.zeros(n, dtype=bool))
    bi, bj = brute_force_pairs(x, 2.0 * reach.max())
    d = np.linalg.norm(x[bi] - x[bj], axis=1)
    close = d < reach[bi] + reach[bj]
    expected = set(zip(bi[close].tolist(), bj[close].tolist(), strict=True))
    found = list(zip(i.tolist(), j.tolist(), strict=True))
    assert len(found) == len(set(found))
    assert set(found) == expected
    # A refresh (query=): exactly the pairs with a moved member, each once.
    moved = rng.uniform(size=n) < 0.1
    i, j = find_sized_pairs(x, reach, group, np.zeros(n, dtype=bool), query=moved)
    found = list(zip(i.tolist(), j.tolist(), strict=True))
    assert len(found) == len(set(found))
    assert set(found) == {(a, b) for a, b in expected if moved[a] or moved[b]}


def test_masses_from_each_particles_own_volume() -> None:
    """m = density (2r)^3 per particle: a 0.4 m box fills exactly at r = 5 cm (64 particles) and
    r = 2.5 cm (512), both 1000 kg/m^3 * 0.064 m^3 = 64 kg; grains of 1 and 2 cm weigh rho (2r)^3."""
    w = World(radius=0.05)
    v, f = box_mesh((0.4, 0.4, 0.4), (0.0, 0.0, 1.0))
    coarse = w.add_rigid(v, f, density=1000.0)
    fine = w.add_rigid(v, f, density=1000.0, radius=0.025)
    grains = w.add_granular(
        np.array([[2.0, 0, 0], [3.0, 0, 0]]), density=1600.0, radius=np.array([0.01, 0.02])
    )
    assert len(coarse.indices) == 64
    assert len(fine.indices) == 512
    assert coarse.mass == pytest.approx(64.0, rel=1e-12)
    assert fine.mass == pytest.approx(64.0, rel=1e-12)
    w.step(DT)  # frozen model
    m = 1.0 / w.model.particle_inv_mass[grains.indices]
    np.testing.assert_allclose(m, 1600.0 * (2.0 * np.array([0.01, 0.02])) ** 3, rtol=1e-12)
    np.testing.assert_array_equal(w.model.particle_radius[fine.indices], 0.025)


def test_grains_rest_on_a_plane_at_their_own_radius() -> None:
    """Grains of 5 mm, 2 cm and 5 cm dropped on the ground rest with their centres at their radius
    (plane contact depth r_i - dist); the solver leaves at most g h^2 of overlap per small step."""
    w = World(radius=0.02)
    w.add_collider_plane()
    radii = np.array([0.005, 0.02, 0.05])
    g = w.add_granular(np.array([[0.0, 0, 0.2], [0.3, 0, 0.2], [0.6, 0, 0.2]]), radius=radii)
    for _ in range(24):
        w.step(DT)
    h = DT / (w.substeps * w.iterations)
    z = w.positions[g.indices, 2]
    np.testing.assert_allclose(z, radii, atol=9.81 * h * h)


def test_big_and_small_particle_collision_conserves_momentum() -> None:
    """A 5 cm grain at 1 m/s hits a 1 cm grain at rest (no gravity): momentum m_b v_b is conserved to
    round-off (PBD contacts split the correction by inverse mass; the mass-ratio limit is on density:
    125:1 here, a limit on mass would cap it at 10:1), and the two never come closer than r_b + r_s
    less the swept overlap."""
    w = World(radius=0.01, gravity=(0.0, 0.0, 0.0))
    r = np.array([0.05, 0.01])
    g = w.add_granular(np.array([[0.0, 0, 0], [0.3, 0, 0]]), radius=r, friction=0.0)
    w.velocities[g.indices[0]] = (1.0, 0.0, 0.0)
    m = 1600.0 * (2.0 * r) ** 3  # rho (2r)^3 each
    p0 = m @ w.velocities[g.indices]
    closest = np.inf
    for _ in range(12):
        w.step(DT)
        x = w.positions[g.indices]
        closest = min(closest, float(np.linalg.norm(x[0] - x[1])))
    p1 = m @ w.velocities[g.indices]
    np.testing.assert_allclose(p1, p0, atol=1e-12 * float(np.abs(p0).max()))
    v = w.velocities[g.indices]
    # Restitution 0 (granular contacts): perfectly inelastic, both at m_b v0 / (m_b + m_s) = 125/126 m/s.
    np.testing.assert_allclose(v[:, 0], m[0] / m.sum(), rtol=1e-9)
    assert closest > 0.06 - 0.25 * 0.03 - 1e-9


@pytest.mark.slow
def test_big_ball_rests_on_fine_sand_at_the_sum_of_radii() -> None:
    """A 5 cm ball (one grain) on a layer of 5 mm sand on the ground: it rests on the sand grain under
    it, its centre at r_s + (r_s + R) = 6 cm, not through the layer (within the small steps' settling,
    a few g h^2)."""
    w = World(radius=0.005)
    w.add_collider_plane()
    rs, big = 0.005, 0.05
    sand = w.add_granular(grid_points((21, 21, 1), 2.0 * rs, (-0.1, -0.1, rs)))
    ball = w.add_granular(np.array([[0.0, 0.0, 0.2]]), radius=big)
    for _ in range(36):
        w.step(DT)
    z = float(w.positions[ball.indices[0], 2])
    # Measured 0.4-0.6 mm low over 1e-5 m nudges of the sand (the grains under a 1000x heavier ball
    # spread a little); through the layer it would sit 10 mm low.
    assert z == pytest.approx(2.0 * rs + big, abs=0.2 * rs)
    assert float(w.positions[sand.indices, 2].max()) < 3.0 * rs


@pytest.mark.slow
def test_grains_rest_on_a_coarse_rigid_box() -> None:
    """5 mm grains on a box of 5 cm particles (sizes 10x apart) do not fall into it: each rests within
    a grain diameter of the box's top particle layer + R + r or above."""
    w = World(radius=0.005)
    w.add_collider_plane()
    v, f = box_mesh((0.4, 0.4, 0.2), (0.0, 0.0, 0.1))
    box = w.add_rigid(v, f, radius=0.05)
    g = w.add_granular(grid_points((8, 8, 1), 0.03, (-0.105, -0.105, 0.3)))
    for _ in range(36):
        w.step(DT)
    top = float(w.positions[box.indices, 2].max())
    z = w.positions[g.indices, 2]
    # Measured: every grain within 1.2 mm below top + R + r (over 1e-5 m nudges); in the holes between
    # the box's particles they fell to the floor, 15 cm lower.
    assert float(z.min()) > top + 0.05 + 0.005 - 0.5 * 0.005
    assert float(z.max()) < top + 0.05 + 0.005 + 0.5 * 0.005


def test_grain_radii_are_seeded_and_checked() -> None:
    r = grain_radii(1000, 0.01, 0.3, seed=4)
    assert r.min() >= 0.007
    assert r.max() <= 0.013
    np.testing.assert_array_equal(r, grain_radii(1000, 0.01, 0.3, seed=4))
    assert not np.array_equal(r, grain_radii(1000, 0.01, 0.3, seed=5))
    for bad in ({"radius": -1.0}, {"radius": [0.01, 0.02]}, {"spread": 1.0}):
        with pytest.raises(SimulationInputError):
            grain_radii(3, bad.get("radius", 0.01), bad.get("spread", 0.0))  # type: ignore[arg-type]


def test_fitted_radius_puts_three_particles_across_the_thinnest_part() -> None:
    """A 0.2 x 1 x 2 m slab, turned: r = 0.2 / 6; filled at that radius it is 3 particles thick."""
    v, f = box_mesh((0.2, 1.0, 2.0), (0.0, 0.0, 1.5))
    c, s = np.cos(0.7), np.sin(0.7)
    turn = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    r = fitted_radius(v @ turn.T)
    assert r == pytest.approx(0.2 / 6.0, rel=1e-9)
    w = World(radius=0.05)
    body = w.add_rigid(v, f, radius=r)
    assert len(np.unique(np.round(w.positions[body.indices, 0] / r))) == 3
    with pytest.raises(SimulationInputError):
        fitted_radius(np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0]]))


def test_sized_grain_fill_leaves_room_for_the_largest() -> None:
    """fill_mesh_with_grains(radius_spread=s) fills at r (1 + s): no two grains of radius up to r (1 + s)
    start overlapping."""
    from unified_particles.core import fill_mesh_with_grains

    v, f = box_mesh((0.3, 0.3, 0.3))
    x = fill_mesh_with_grains(v, f, 0.01, radius_spread=0.3)
    i, _ = brute_force_pairs(x, 2.0 * 0.013)
    assert len(x) > 100
    assert len(i) == 0


@pytest.mark.slow
def test_mesh_collider_and_cloth_thickness_at_each_particles_own_radius() -> None:
    """On a mesh collider (a 2 m slab, top at z = 0): grains of 5 mm and 5 cm rest at their radius, and a
    cloth of thickness 1 cm (in a 5 cm world) hangs its free vertices 1 cm above it, within g h^2 per
    small step and the volume's trilinear error (cells of 2 m / 128 = 1.6 cm: exact contacts near it)."""
    w = World(radius=0.05)
    v, f = box_mesh((2.0, 2.0, 0.2), (0.0, 0.0, -0.1))
    w.add_collider_mesh(v, f)
    radii = np.array([0.005, 0.05])
    g = w.add_granular(np.array([[-0.5, 0, 0.2], [-0.2, 0, 0.2]]), radius=radii)
    cv = np.array([[0.3, 0, 0.1], [0.5, 0, 0.1], [0.3, 0.2, 0.1], [0.5, 0.2, 0.1]])
    cloth = w.add_cloth(cv, np.array([[0, 1, 2], [1, 3, 2]]), thickness=0.01)
    for _ in range(24):
        w.step(DT)
    h = DT / (w.substeps * w.iterations)
    np.testing.assert_allclose(w.positions[g.indices, 2], radii, atol=9.81 * h * h + 1e-4)
    np.testing.assert_allclose(w.positions[cloth.indices, 2], 0.01, atol=9.81 * h * h + 1e-4)

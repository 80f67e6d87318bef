"""Mesh colliders the distance volume cannot resolve: exact contacts near the surface, swept fast paths.

The issue "Real files": a 10 km ground with a 1 m Solidify got 78 m volume cells (SDF_MAX_CELLS per
axis) and let a dropped box fall 57 m through it in a second, silently.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from unified_particles.core import MeshCollider, World, geometry
from unified_particles.core.primitives import box_mesh, grid_mesh, uv_sphere_mesh

R = 0.05
# Resting contacts settle to within a small fraction of a radius of the analytic height.
REST_TOL = 0.02 * R
# While landing, a contact may overlap by part of a radius for a small step, never by a whole one.
LANDING_TOL = 0.5 * R
TEN_KM = 1.0e4


def ten_km_ground(w: World, friction: float = 0.5) -> MeshCollider:
    """10 km x 10 km x 1 m box, top face at z = 0, as a mesh collider."""
    return w.add_collider_mesh(*box_mesh((TEN_KM, TEN_KM, 1.0), (0.0, 0.0, -0.5)), friction=friction)


def test_ten_km_ground_holds_a_dropped_box_and_grains_at_the_analytic_height() -> None:
    w = World(radius=R)
    col = ten_km_ground(w)
    assert col.exact_contacts
    assert math.isinf(col.thinnest)  # 1 m is 20 radii thick
    assert TEN_KM / geometry.SDF_MAX_CELLS > 1000 * R  # the old volume cell: why it fell through
    box = w.add_rigid(*box_mesh((0.5, 0.5, 0.5), (0.0, 0.0, 1.0)))
    grains = w.add_granular(
        np.array([[2.0, 0.0, 0.5], [2.0, 0.5, 1.0], [-3.0, 1.0, 2.0], [4000.0, -4000.0, 0.3]])
    )
    lowest = np.inf
    for _ in range(36):
        w.step(1.0 / 24.0)
        lowest = min(lowest, float(w.positions[:, 2].min()))
    assert lowest > R - LANDING_TOL  # never below the top
    # Rest heights: a grain's centre one radius above the top; the box's centre half its size above.
    assert w.positions[grains.indices, 2] == pytest.approx(np.full(4, R), abs=REST_TOL)
    assert box.center[2] == pytest.approx(0.25, abs=REST_TOL)
    assert float(np.abs(w.velocities).max()) < 1e-2


def test_ground_scaled_by_its_matrix_is_exact_too() -> None:
    # The Blender case: a unit plane scaled to 10 km by the object matrix, solidified to 1 m.
    w = World(radius=R)
    m = np.diag([TEN_KM, TEN_KM, 1.0, 1.0])
    m[2, 3] = -0.5
    col = w.add_collider_mesh(*box_mesh((1.0, 1.0, 1.0)), transform=m)
    assert col.exact_contacts
    g = w.add_granular(np.array([[1234.0, -2500.0, 0.4]]))
    for _ in range(24):
        w.step(1.0 / 24.0)
    assert w.positions[g.indices[0], 2] == pytest.approx(R, abs=REST_TOL)


def test_big_ground_moving_sideways_carries_a_box_through_friction() -> None:
    u = 0.5
    w = World(radius=R)
    col = ten_km_ground(w, friction=0.8)
    box = w.add_rigid(*box_mesh((0.5, 0.5, 0.5), (0.0, 0.0, 0.25)), friction=0.8)
    for _ in range(6):
        w.step(1.0 / 24.0)
    x0 = box.center.copy()
    for k in range(1, 13):
        m = np.eye(4)
        m[0, 3] = u * k / 24.0
        col.set_transform(m)
        w.step(1.0 / 24.0)
    # Carried along at the ground's speed (after a lag of ~1.5 cm while static friction takes hold in
    # the first moving frame, as on a small platform the volume resolves).
    assert w.velocities[box.indices][:, 0] == pytest.approx(np.full(len(box.indices), u), rel=1e-3)
    assert box.center[0] - x0[0] == pytest.approx(u * 0.5, abs=0.02)
    assert box.center[2] == pytest.approx(0.25, abs=REST_TOL)


def test_particles_a_few_radii_inside_the_ground_are_pushed_out_of_the_top() -> None:
    # A fast particle may end a small step some radii deep: up to EXACT_DEPTH_RADII the side is exact.
    w = World(radius=R)
    col = ten_km_ground(w)
    x = np.array(
        [[0.0, 0.0, 0.02], [10.0, 0.0, -0.15], [-3000.0, 200.0, -0.45], [0.0, 0.0, -0.9], [0.0, 0.0, 0.1]]
    )
    found = col.contacts(x, 1.0, 1.0 / 24.0)
    order = np.argsort(found.idx)
    np.testing.assert_array_equal(found.idx[order], [0, 1, 3])
    # Depth r - signed distance: the top at z = 0 for the first two, the bottom (z = -1) for the third.
    np.testing.assert_allclose(found.depth[order], [R - 0.02, R + 0.15, R + 0.1], atol=1e-12)
    np.testing.assert_allclose(found.normal[order], [[0, 0, 1], [0, 0, 1], [0, 0, -1]], atol=1e-12)


@pytest.mark.parametrize("speed", [5.0, 60.0])
def test_thin_wall_stops_thrown_grains_from_both_sides(speed: float) -> None:
    # 2 cm thick, 40 m wide: the volume's cell (40 m / 128 = 0.31 m) is 15 walls thick. At 60 m/s a grain
    # moves 0.16 m per small step (24 fps, 16 small steps), past the whole wall and a radius on each side:
    # only the swept contacts hold it.
    w = World(radius=R)
    col = w.add_collider_mesh(*box_mesh((0.02, 40.0, 40.0)), name="Wall")
    assert col.exact_contacts
    assert col.thinnest == pytest.approx(0.02, rel=1e-6)
    g = w.add_granular(np.array([[-0.5, 0.0, 1.0], [0.5, 3.0, 1.0]]))
    v = w.velocities
    v[:] = [[speed, 0.0, 0.0], [-speed, 0.0, 0.0]]
    w.velocities = v
    for _ in range(12):
        w.step(1.0 / 24.0)
    x = w.positions[g.indices, 0]
    assert x == pytest.approx([-0.01 - R, 0.01 + R], abs=REST_TOL)


def test_grain_inside_a_thin_slab_leaves_by_the_nearer_side() -> None:
    # 4 cm thick slab (thinner than a diameter), 20 m wide: top at z = 0, bottom at -0.04.
    w = World(radius=R, gravity=(0.0, 0.0, 0.0))
    w.add_collider_mesh(*box_mesh((20.0, 20.0, 0.04), (0.0, 0.0, -0.02)))
    w.add_granular(np.array([[0.0, 0.0, -0.012], [3.0, 0.0, -0.031]]))
    for _ in range(4):
        w.step(1.0 / 24.0)
    assert w.positions[0, 2] >= R - REST_TOL  # out above the top
    assert w.positions[1, 2] <= -0.04 - R + REST_TOL  # out below the bottom


def test_exact_contacts_are_the_exact_signed_distance_of_a_moved_mesh() -> None:
    v, f = uv_sphere_mesh(20.0, segments=48, rings=24)
    w = World(radius=R)
    rot = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    m = np.eye(4)
    m[:3, :3] = rot
    m[:3, 3] = [3.0, -2.0, 1.0]
    col = w.add_collider_mesh(v, f, transform=m)
    assert col.exact_contacts
    rng = np.random.default_rng(5)
    d = rng.normal(size=(3000, 3))
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    local = d * rng.uniform(19.9, 20.2, size=(3000, 1))  # within the band, inside and out
    found = col.contacts(local @ rot.T + m[:3, 3], 1.0, 1.0 / 24.0)
    sd, grad = geometry.signed_distance(v, f, local)
    expect = np.flatnonzero(sd < R)
    np.testing.assert_array_equal(np.sort(found.idx), expect)
    order = np.argsort(found.idx)
    np.testing.assert_allclose(found.depth[order], R - sd[expect], atol=1e-9)
    np.testing.assert_allclose(found.normal[order], grad[expect] @ rot.T, atol=1e-9)


def test_particle_deep_inside_a_big_block_is_pushed_out_by_the_volume() -> None:
    w = World(radius=R)
    col = w.add_collider_mesh(*box_mesh((100.0, 100.0, 100.0), (0.0, 0.0, -50.0)))
    assert col.exact_contacts
    found = col.contacts(np.array([[0.0, 0.0, -20.0], [0.0, 0.0, 10.0]]), 1.0, 1.0 / 24.0)
    assert list(found.idx) == [0]
    assert found.depth[0] > 15.0
    assert found.normal[0, 2] > 0.9


def test_open_big_mesh_is_two_sided_and_holds_fast_grains() -> None:
    w = World(radius=R)
    col = w.add_collider_mesh(*grid_mesh(100.0, 4), name="Ground")
    assert col.exact_contacts
    assert col.thinnest == 0.0
    # One grain dropped, one thrown down at 50 m/s (0.13 m per small step), one under the sheet.
    g = w.add_granular(np.array([[1.0, 1.0, 0.5], [3.0, 1.0, 0.5], [5.0, 1.0, -0.5]]))
    v = w.velocities
    v[1] = [0.0, 0.0, -50.0]
    w.velocities = v
    for _ in range(24):
        w.step(1.0 / 24.0)
    z = w.positions[g.indices, 2]
    assert z[:2] == pytest.approx([R, R], abs=REST_TOL)
    assert z[2] < -R  # it stays on its side (falling freely below the sheet)


def test_collider_the_volume_resolves_keeps_the_volume() -> None:
    w = World(radius=R)
    col = w.add_collider_mesh(*box_mesh((2.0, 2.0, 0.2), (0.0, 0.0, -0.1)))
    assert not col.exact_contacts
    assert math.isinf(col.thinnest)

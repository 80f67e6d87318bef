"""Mesh colliders: static contact, animated collider dragging through friction."""

from __future__ import annotations

import numpy as np
import pytest

from unified_particles.core import MeshCollider, World
from unified_particles.core.primitives import box_mesh


def test_particle_rests_on_mesh_collider_top() -> None:
    r = 0.05
    w = World(radius=r)
    w.add_collider_mesh(*box_mesh((2.0, 2.0, 0.2), (0.0, 0.0, -0.1)))
    w.add_granular([[0.1, 0.2, 0.5]])
    for _ in range(36):
        w.step(1.0 / 24.0)
    # Flat top face at z = 0: the SDF is exact there up to float32 storage.
    assert w.positions[0, 2] == pytest.approx(r, abs=1e-3)
    assert np.linalg.norm(w.velocities[0]) < 1e-2


def test_transformed_collider_is_where_its_matrix_puts_it() -> None:
    r = 0.05
    w = World(radius=r)
    m = np.eye(4)
    m[:3, 3] = [5.0, 0.0, 1.0]
    m[:3, :3] *= 2.0  # scaled: the volume is built at the object's scale
    col = w.add_collider_mesh(*box_mesh((1.0, 1.0, 0.1)), transform=m)
    assert isinstance(col, MeshCollider)
    w.add_granular([[5.0, 0.0, 2.0], [0.0, 0.0, 2.0]])
    for _ in range(36):
        w.step(1.0 / 24.0)
    assert w.positions[0, 2] == pytest.approx(1.0 + 0.1 + r, abs=2e-3)  # top at z = 1 + 0.2 / 2
    assert w.positions[1, 2] < 0.0  # missed the collider, kept falling


def test_moving_platform_drags_box_through_friction() -> None:
    # A platform moving at u along x carries a resting box along (static friction), and the box
    # keeps that velocity when the platform stops (no friction needed to keep moving).
    r = 0.5 / 6
    w = World(radius=r)
    col = w.add_collider_mesh(*box_mesh((6.0, 2.0, 0.2), (0.0, 0.0, -0.1)), friction=0.8)
    box = w.add_rigid(*box_mesh((0.5, 0.5, 0.5), (0.0, 0.0, 0.25)), friction=0.8)
    for _ in range(12):  # settle
        w.step(1.0 / 24.0)
    x0 = box.center.copy()
    u = 0.5
    for k in range(1, 25):
        m = np.eye(4)
        m[0, 3] = u * k / 24.0
        col.set_transform(m)
        w.step(1.0 / 24.0)
    carried = box.center[0] - x0[0]
    assert carried == pytest.approx(u * 1.0, rel=0.05)
    assert box.center[2] == pytest.approx(0.25, abs=5e-3)
    assert w.velocities[box.indices][:, 0].mean() == pytest.approx(u, rel=0.05)


def test_contact_lookup_matches_the_volumes_own_query_inside_and_outside_the_grid() -> None:
    # The per-step lookup (coordinate-major, only points in reach) must give the distance and normal of
    # SDFVolume.query, the reference trilinear interpolation, for points inside the grid and beyond it.
    from unified_particles.core.primitives import uv_sphere_mesh

    r = 0.05
    w = World(radius=r)
    rot = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    m = np.eye(4)
    m[:3, :3] = rot
    m[:3, 3] = [0.3, -0.2, 1.0]
    col = w.add_collider_mesh(*uv_sphere_mesh(0.5, segments=24, rings=12), transform=m)
    rng = np.random.default_rng(3)
    # Around the surface, out to beyond the volume's grid (padded 2 r + 2 cells around the mesh).
    direction = rng.normal(size=(4000, 3))
    direction /= np.linalg.norm(direction, axis=1, keepdims=True)
    local = direction * rng.uniform(0.3, 0.5 + 6 * r, size=(4000, 1))
    world_points = local @ rot.T + m[:3, 3]
    found = col.contacts(world_points, 1.0, 1.0 / 24.0)
    dist, normal = col._sdf.query(local)
    expected = np.flatnonzero(dist < r)
    assert 500 < len(expected) < 3000
    vol = col._sdf
    grid_hi = vol.origin + (np.array(vol.distance.shape) - 1) * vol.cell_size
    outside = np.any((local < vol.origin) | (local > grid_hi), axis=1)
    assert np.count_nonzero(outside) > 100  # some lie outside the grid, where the lookup clamps
    np.testing.assert_array_equal(np.sort(found.idx), expected)
    order = np.argsort(found.idx)
    np.testing.assert_allclose(found.depth[order], r - dist[expected], atol=1e-12)
    np.testing.assert_allclose(found.normal[order], normal[expected] @ rot.T, atol=1e-9)


def test_a_turning_collider_keeps_its_distance_volume() -> None:
    # A collider turned by float32 matrices (Blender's) keeps its scale, so its distance volume must not be
    # rebuilt each frame (it was: their polar factor is ~1e-7 off the identity); a real scale change is.
    v, f = box_mesh((1.0, 1.0, 1.0))
    w = World(radius=0.05)
    col = w.add_collider_mesh(v, f)
    volume = col._volume
    for angle in np.linspace(0.1, 3.0, 7):  # turning about Z and tilting about X, composed in float32
        c, s = np.cos(angle), np.sin(angle)
        rz = np.array([[c, -s, 0, 0], [s, c, 0, 0], [0, 0, 1, 0.5], [0, 0, 0, 1]], dtype=np.float32)
        c, s = np.cos(angle / 3), np.sin(angle / 3)
        rx = np.array([[1, 0, 0, 0], [0, c, -s, 0], [0, s, c, 0], [0, 0, 0, 1]], dtype=np.float32)
        col.set_transform((rx @ rz).astype(np.float64))
        assert col._volume is volume
    col.set_transform(np.diag([1.01, 1.0, 1.0, 1.0]))
    assert col._volume is not volume

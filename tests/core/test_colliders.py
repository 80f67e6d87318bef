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

"""Cloth: draping on a mesh collider, stretch limit, pins, two-way coupling with a heavy box."""

from __future__ import annotations

import numpy as np
import pytest

from unified_particles.core import Cloth, World, geometry
from unified_particles.core.distance import bending_pairs, mesh_edges
from unified_particles.core.primitives import box_mesh, grid_mesh, uv_sphere_mesh


def _strain(x: np.ndarray, rest: np.ndarray, faces: np.ndarray) -> np.ndarray:
    e = mesh_edges(faces)
    return np.linalg.norm(x[e[:, 0]] - x[e[:, 1]], axis=1) / np.linalg.norm(
        rest[e[:, 0]] - rest[e[:, 1]], axis=1
    )


def test_cloth_constraints_topology() -> None:
    _v, f = grid_mesh(1.0, 3)
    assert len(mesh_edges(f)) == 2 * 3 * 2 + 4  # 12 grid edges + 4 diagonals
    # Every interior edge (shared by two triangles) gives one bending pair: 16 edges - 8 boundary.
    assert len(bending_pairs(f)) == 8


def test_cloth_drapes_on_sphere_collider_without_penetrating() -> None:
    n, size = 25, 1.6
    spacing = size / (n - 1)
    r = 0.45 * spacing
    sphere_r = 0.4
    w = World(radius=r)
    v, f = grid_mesh(size, n, (0.0, 0.0, sphere_r + 0.1))
    cloth = w.add_cloth(v, f, mass=0.3)
    sv, sf = uv_sphere_mesh(sphere_r, segments=32, rings=16)
    w.add_collider_mesh(sv, sf)
    w.add_collider_plane(point=(0, 0, -sphere_r))
    for _ in range(36):
        w.step(1.0 / 24.0)
    x = cloth.vertex_positions
    # No vertex inside the sphere (its particle may overlap the surface by less than its radius).
    dist_to_surface = geometry.signed_distance(sv, sf, x)[0]
    assert dist_to_surface.min() > 0.0
    # Faceted sphere: the flat triangles lie up to R (1 - cos(pi/16)) inside the true sphere.
    assert np.linalg.norm(x, axis=1).min() > sphere_r * np.cos(np.pi / 16)
    # It is draped (hangs below the top), not stuck in the air.
    assert np.median(x[:, 2]) < sphere_r - 0.1
    strain = _strain(x, v, f)
    # Stretch limit of inextensible cloth solved with 16 small steps per frame: typical edges
    # within 2 %, the worst (in folds pressed onto the collider) within 20 %.
    assert np.median(strain) < 1.02
    assert strain.max() < 1.20


def test_pinned_vertices_never_move_and_hanging_cloth_is_taut() -> None:
    n = 15
    v, f = grid_mesh(1.0, n, (0.0, 0.0, 1.0))
    w = World(radius=0.03)
    pins = np.array([0, n - 1])
    cloth = w.add_cloth(v, f, mass=0.2, pinned=pins)
    assert isinstance(cloth, Cloth)
    lowest = np.inf
    for _ in range(48):
        w.step(1.0 / 24.0)
        x = cloth.vertex_positions
        np.testing.assert_array_equal(x[pins], v[pins])
        lowest = min(lowest, x[:, 2].min())
        assert np.percentile(_strain(x, v, f), 95) < 1.05
    # It swings down (a pendulum, no damping) and passes hanging straight: 1 m below the pins.
    assert lowest == pytest.approx(0.0, abs=0.06)


def _sag(density: float) -> tuple[float, float, np.ndarray, np.ndarray]:
    """Box of 0.2 m dropped on a 1 m cloth pinned at its corners.

    Returns the box height and cloth's lowest point averaged over the last second (the undamped
    cloth still swings a little), the pins' displacement and the final box particles.
    """
    n = 21
    v, f = grid_mesh(1.0, n, (0.0, 0.0, 0.0))
    pins = np.array([0, n - 1, n * (n - 1), n * n - 1])
    w = World(radius=0.024)
    cloth = w.add_cloth(v, f, mass=0.1, pinned=pins, stretch_compliance=1e-3)
    box = w.add_rigid(*box_mesh((0.2, 0.2, 0.2), (0.0, 0.0, 0.15)), density=density)
    box_z, cloth_z = [], []
    for frame in range(72):
        w.step(1.0 / 24.0)
        if frame >= 48:
            box_z.append(box.center[2])
            cloth_z.append(cloth.vertex_positions[:, 2].min())
    x = cloth.vertex_positions
    return float(np.mean(box_z)), float(np.mean(cloth_z)), x[pins] - v[pins], w.positions[box.indices]


@pytest.mark.slow
def test_heavy_box_sags_cloth_more_and_does_not_tunnel() -> None:
    # Cloth particles weigh 0.1 kg / 441; the light box's particles about as much, the heavy one's
    # ~2600x more: far beyond the ~100:1 where plain PBD lets the heavy body fall through.
    light_z, light_cloth_z, light_pins, _ = _sag(2.0)
    heavy_z, heavy_cloth_z, heavy_pins, heavy_x = _sag(5000.0)
    assert heavy_cloth_z < light_cloth_z - 0.02, "heavier box stretches the cloth further"
    assert heavy_z < light_z - 0.02
    assert heavy_z > -0.5, "heavy box is held by the cloth"
    np.testing.assert_array_equal(light_pins, 0.0)
    np.testing.assert_array_equal(heavy_pins, 0.0)
    # The box rests on the cloth: it is above the lowest cloth point.
    assert heavy_x[:, 2].min() > heavy_cloth_z - 0.024


def test_cloth_self_collision_keeps_folds_apart() -> None:
    # A strip falls onto a plane and piles up; with self-collision no two non-neighbour particles
    # overlap by more than a fraction of a radius.
    n = 6
    v, f = grid_mesh(0.5, n, (0.0, 0.0, 0.0))
    v = v[:, [2, 1, 0]] + [0.0, 0.0, 0.6]  # vertical sheet
    r = 0.45 * 0.1
    w = World(radius=r)
    w.add_collider_plane()
    cloth = w.add_cloth(v, f, mass=0.05, self_collision=True, bend_compliance=1.0)
    for _ in range(48):
        w.step(1.0 / 24.0)
    x = cloth.vertex_positions
    d = np.linalg.norm(x[:, None] - x[None], axis=2)
    rest = np.linalg.norm(v[:, None] - v[None], axis=2)
    far = rest > 4 * r
    assert d[far].min() > 2 * r * 0.8
    assert x[:, 2].min() > r - 1e-3


def test_cloth_mass_is_spread_by_area() -> None:
    v, f = grid_mesh(1.0, 3)
    w = World(radius=0.1)
    w.add_cloth(v, f, mass=2.0)
    m = 1.0 / w.inverse_masses
    assert m.sum() == pytest.approx(2.0)
    assert m[4] > m[0]  # the centre vertex touches more area than a corner

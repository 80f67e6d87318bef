"""Deforming mesh colliders (``MeshCollider.set_vertices``): contacts on the current surface, its velocity."""

from __future__ import annotations

import numpy as np
import pytest

from unified_particles.core import SimulationInputError, World, colliders
from unified_particles.core.primitives import box_mesh, grid_mesh, grid_points

FPS = 24.0


def _platform(w: World, friction: float = 0.8) -> tuple[np.ndarray, np.ndarray, object]:
    v, f = box_mesh((2.0, 2.0, 0.2), (0.0, 0.0, -0.1))  # top face at z = 0
    return v, f, w.add_collider_mesh(v, f, friction=friction)


def test_rising_platform_lifts_grains_by_its_motion() -> None:
    # The top face rises at speed u (shape-key-like deformation, not a rigid move): a grain resting on it
    # is at z0 + u t. Each small step the surface moves u h and the contact puts the grain back on it, so
    # the error is at most one small step's motion, u h.
    r = 0.05
    w = World(radius=r)
    v, _, col = _platform(w)
    w.add_granular(grid_points((3, 3, 1), 2 * r, (-0.1, -0.1, r)))
    for _ in range(6):
        w.step(1.0 / FPS)
    z0 = w.positions[:, 2].copy()
    u = 0.5
    top = v[:, 2] > -0.1
    frames = 24
    for k in range(1, frames + 1):
        vk = v.copy()
        vk[top, 2] += u * k / FPS
        col.set_vertices(vk)
        w.step(1.0 / FPS)
    assert col.deforming
    assert col.exact_contacts
    h = 1.0 / (FPS * w.substeps * w.iterations)
    np.testing.assert_allclose(w.positions[:, 2], z0 + u * frames / FPS, atol=u * h)
    # Carried at the surface's speed, not launched.
    np.testing.assert_allclose(w.velocities[:, 2], u, atol=0.05 * u)


def test_sliding_surface_carries_a_box_through_friction() -> None:
    # The top face's vertices slide along x at u (the mesh shears): static friction carries a resting box
    # at the surface's velocity, so it travels u t (5 % for the friction's start-up slip).
    r = 0.5 / 6
    w = World(radius=r)
    v, f = box_mesh((6.0, 2.0, 0.2), (0.0, 0.0, -0.1))
    col = w.add_collider_mesh(v, f, friction=0.8)
    box = w.add_rigid(*box_mesh((0.5, 0.5, 0.5), (0.0, 0.0, 0.25)), friction=0.8)
    for _ in range(12):
        w.step(1.0 / FPS)
    x0 = box.center.copy()
    u = 0.5
    top = v[:, 2] > -0.1
    for k in range(1, 25):
        vk = v.copy()
        vk[top, 0] += u * k / FPS
        col.set_vertices(vk)
        w.step(1.0 / FPS)
    assert box.center[0] - x0[0] == pytest.approx(u * 1.0, rel=0.05)
    assert box.center[2] == pytest.approx(0.25, abs=5e-3)


def test_contact_velocity_is_the_barycentric_blend_of_the_vertices_motion() -> None:
    # One triangle; only vertex B moves, by (0, 0, 0.24) over a frame of dt: its velocity is 0.24 / dt.
    # A point above the face's interior, with barycentric weights (wa, wb, wc) at its closest point, sees
    # the surface velocity wb * 0.24 / dt, and at alpha = 0.5 the face halfway.
    r = 0.05
    w = World(radius=r)
    v = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    col = w.add_collider_mesh(v, [[0, 1, 2]])
    moved = v.copy()
    moved[1, 2] = 0.24
    col.set_vertices(moved)
    dt = 1.0 / FPS
    p = np.array([[0.2, 0.3, 0.07]])
    c = col.contacts(p, 0.5, dt, 0.0)
    assert c.idx.tolist() == [0]
    wb = 0.2  # barycentric weight of B at (0.2, 0.3): x = wb * 1
    # Face at alpha 0.5: z = 0.12 x (a slight tilt: the distance is along the tilted normal).
    n = np.array([-0.12, 0.0, 1.0]) / np.hypot(0.12, 1.0)
    dist = float((p[0] - [0.0, 0.0, 0.0]) @ n)
    assert c.depth[0] == pytest.approx(r - dist, abs=1e-12)
    np.testing.assert_allclose(c.normal[0], n, atol=1e-12)
    # Closest point (foot of the perpendicular) has barycentric weight of B = its x coordinate.
    foot = p[0] - dist * n
    np.testing.assert_allclose(c.velocity[0], [0.0, 0.0, foot[0] * 0.24 / dt], atol=1e-9)
    assert foot[0] == pytest.approx(wb, abs=0.01)


def test_deep_particle_in_a_deforming_closed_mesh_is_pushed_out_of_the_nearer_side() -> None:
    # A particle 1.25 r under the top face of a 1 m thick slab (within DEFORM_DEPTH_RADII): the closest
    # feature's pseudo-normal says inside, and the contact pushes it up through the top (depth 1.25 r + r),
    # not down. Near a corner the closest feature is an edge or a vertex: its pseudo-normal signs it too.
    r = 0.05
    assert colliders.DEFORM_DEPTH_RADII > 1.25
    w = World(radius=r)
    v, f = box_mesh((2.0, 2.0, 1.0), (0.0, 0.0, -0.5))
    col = w.add_collider_mesh(v, f)
    col.set_vertices(v.copy())
    p = np.array([[0.1, 0.2, -1.25 * r], [1.0 - 0.5 * r, 1.0 - 0.5 * r, -0.5 * r]])
    c = col.contacts(p, 1.0, 1.0 / FPS, 0.0)
    assert c.idx.tolist() == [0, 1]
    assert c.depth[0] == pytest.approx(2.25 * r, abs=1e-12)
    np.testing.assert_allclose(c.normal[0], [0.0, 0.0, 1.0], atol=1e-12)
    assert c.depth[1] == pytest.approx(1.5 * r, abs=1e-12)  # equidistant from 3 faces: a vertex region
    assert np.all(c.normal[1] > 0.0)  # out of the corner, not into the slab


def test_deforming_collider_combines_with_its_transform() -> None:
    # Vertices are in the collider's frame: a collider scaled 2x and moved up 1 m whose top face rises by
    # 0.1 (local) puts the top at z = 1 + 2 * 0.1 in world space, and the grain on it there.
    r = 0.05
    w = World(radius=r)
    v, f = box_mesh((1.0, 1.0, 0.1), (0.0, 0.0, -0.05))
    m = np.diag([2.0, 2.0, 2.0, 1.0])
    m[2, 3] = 1.0
    col = w.add_collider_mesh(v, f, transform=m)
    w.add_granular([[0.0, 0.1, 1.0 + r]])
    top = v[:, 2] > -0.05
    for k in range(1, 13):
        vk = v.copy()
        vk[top, 2] += 0.1 * k / 12
        col.set_vertices(vk)
        w.step(1.0 / FPS)
    for _ in range(6):
        w.step(1.0 / FPS)
    assert w.positions[0, 2] == pytest.approx(1.0 + 0.2 + r, abs=2e-3)


def test_open_deforming_sheet_is_two_sided() -> None:
    # An open grid sheet rising under a grain lifts it; the sheet has no inside.
    r = 0.05
    w = World(radius=r)
    v, f = grid_mesh(1.0, 9)
    col = w.add_collider_mesh(v, f)
    w.add_granular([[0.05, 0.05, r]])
    for k in range(1, 13):
        col.set_vertices(v + np.array([0.0, 0.0, 0.3 * k / 12]))
        w.step(1.0 / FPS)
    assert not col.thinnest > 0.0  # open: reported as 0 thick
    assert w.positions[0, 2] == pytest.approx(0.3 + r, abs=2e-3)


def test_rigidly_moved_collider_keeps_the_volume_path() -> None:
    w = World(radius=0.05)
    v, f = box_mesh((2.0, 2.0, 0.2))
    col = w.add_collider_mesh(v, f)
    m = np.eye(4)
    m[0, 3] = 0.5
    col.set_transform(m)
    w.add_granular([[0.0, 0.0, 0.5]])
    w.step(1.0 / FPS)
    assert not col.deforming
    assert not col.exact_contacts


def test_set_vertices_needs_the_same_vertex_count() -> None:
    w = World(radius=0.05)
    v, f = box_mesh()
    col = w.add_collider_mesh(v, f)
    with pytest.raises(SimulationInputError, match="8 vertices"):
        col.set_vertices(v[:5])
    with pytest.raises(SimulationInputError):
        col.set_vertices(np.full((8, 3), np.nan))


def test_deforming_collider_snapshot_restores_its_vertices() -> None:
    # A snapshot keeps the deforming vertices (frame start and now): from a restored snapshot the same
    # set_vertices calls reproduce the run bit for bit, also through to_arrays / from_arrays.
    r = 0.05
    w = World(radius=r)
    v, _, col = _platform(w)
    w.add_granular(grid_points((2, 2, 2), 2 * r, (0.0, 0.0, r)))
    top = v[:, 2] > -0.1

    def frame(k: int) -> None:
        vk = v.copy()
        vk[top, 2] += 0.02 * np.sin(k)
        col.set_vertices(vk)
        w.step(1.0 / FPS)

    for k in range(3):
        frame(k)
    snap = w.state()
    for k in range(3, 6):
        frame(k)
    end = w.positions.copy()
    w.set_state(snap.to_arrays())
    for k in range(3, 6):
        frame(k)
    np.testing.assert_array_equal(w.positions, end)
    assert snap.collider_vertices.shape == (16, 3)


def test_a_collider_added_as_deforming_builds_no_volume_and_behaves_the_same() -> None:
    # add_collider_mesh(..., deforming=True) skips the distance volume; contacts are the same exact ones a
    # collider gets on its first set_vertices.
    r = 0.05
    v, f = box_mesh((2.0, 2.0, 0.2), (0.0, 0.0, -0.1))
    top = v[:, 2] > -0.1
    ends = []
    for deforming in (False, True):
        w = World(radius=r)
        col = w.add_collider_mesh(v, f, deforming=deforming)
        assert col.deforming == deforming
        w.add_granular([[0.1, 0.0, r]])
        for k in range(1, 7):
            col.set_vertices(v + np.where(top[:, None], [0.0, 0.0, 0.1 * k / 6], 0.0))
            w.step(1.0 / FPS)
        ends.append(w.positions.copy())
    np.testing.assert_array_equal(ends[0], ends[1])
    np.testing.assert_allclose(ends[1][0, 2], 0.1 + r, atol=1e-6)


def test_snapshot_from_before_the_deformation_puts_the_rest_shape_back() -> None:
    # The start frame's snapshot holds no deforming vertices: restoring it puts the collider back to the
    # mesh it was built with, at rest (no motion from whatever shape it had later).
    r = 0.05
    w = World(radius=r)
    v, _, col = _platform(w)
    w.add_granular([[0.0, 0.0, r]])
    start = w.state()
    top = v[:, 2] > -0.1
    for k in range(1, 4):
        col.set_vertices(v + np.where(top[:, None], [0.0, 0.0, 0.2 * k], 0.0))
        w.step(1.0 / FPS)
    w.set_state(start)
    np.testing.assert_array_equal(col.vertices, v)
    np.testing.assert_array_equal(col.frame_start_vertices, v)
    w.step(1.0 / FPS)
    assert w.positions[0, 2] == pytest.approx(r, abs=1e-6)  # no lift: the platform is still

"""Exact shapes (issue 22, item 3): a rigid body's outer particle spheres touch its mesh.

References are the meshes themselves: stacked boxes touch at their faces (gap 0), a ball rests at its
mesh radius, a domino's bottom face rests on the floor, and a running-bond wall of real bricks stands
under its own weight (statics: nothing moves). Before (grid of spacing 2r a half spacing in from the
bounding box): 0.25 m boxes at r = 5 cm overlapped 5.0 cm, a 0.17 m ball rested 2.0 cm low, a domino at
r = 3.5 cm sank 2.5 cm, and the wall below sank 16 cm at r = 2.5 cm and fell at 3.5 and 5 cm.

Tolerances: a resting contact overlaps by some g h^2 per small step h (see test_stacks.py: 12-17 g h^2
measured per contact, 40 g h^2 allowed); here 1/24 s frames of 4 x 4 small steps, g h^2 = 0.067 mm.
"""

from __future__ import annotations

import numpy as np
import pytest

from unified_particles.core import World
from unified_particles.core.geometry import fill_measure, sample_rigid, signed_distance
from unified_particles.core.primitives import box_mesh, uv_sphere_mesh

FPS = 24
G = 9.81
H = 1.0 / (FPS * 16)  # the small step of the default 4 substeps x 4 iterations
GH2 = G * H * H
CONTACT = 40.0 * GH2  # one resting contact's steady overlap, at most (test_stacks.py)


@pytest.mark.parametrize(
    ("size", "r"),
    [
        ((0.25, 0.25, 0.25), 0.05),
        ((0.2, 0.1, 0.07), 0.025),
        ((0.05, 0.2, 0.4), 0.02),
        ((0.33, 0.17, 0.41), 0.03),
    ],
)
def test_box_particles_sit_r_inside_each_face(size: tuple[float, float, float], r: float) -> None:
    """Every outer particle centre is exactly r inside the face it faces; no sphere leaves the box; the
    particles are no more than 2.5 r apart along each axis (nothing of their size slips between them)."""
    v, f = box_mesh(size, (0.3, -0.2, 0.1))
    s = sample_rigid(v, f, r)
    p = s.points - np.array([0.3, -0.2, 0.1])
    half = 0.5 * np.array(size)
    np.testing.assert_allclose(np.abs(p).max(axis=0), half - r, atol=1e-9)
    assert s.sdf.max() <= -r + 1e-9
    for k in range(3):
        levels = np.unique(np.round(p[:, k], 9))
        assert np.diff(levels).max(initial=0.0) <= 2.5 * r + 1e-9


def test_rotated_box_is_sampled_in_its_own_frame() -> None:
    """A box turned about a skew axis: the same particles, turned (principal axes), r inside each face."""
    size, r = np.array([0.33, 0.17, 0.41]), 0.03
    v, f = box_mesh(tuple(size))
    axis = np.array([1.0, 2.0, 3.0]) / np.sqrt(14.0)
    k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    rot = np.eye(3) + np.sin(0.7) * k + (1 - np.cos(0.7)) * k @ k  # Rodrigues
    s = sample_rigid(v @ rot.T, f, r)
    local = s.points @ rot  # back in the box's frame
    np.testing.assert_allclose(np.abs(local).max(axis=0), 0.5 * size - r, atol=1e-9)
    assert len(s.points) == len(sample_rigid(v, f, r).points)


def test_thin_body_gets_one_layer_at_its_middle() -> None:
    """A side thinner than 2r: one layer of particles at its middle plane (a 5 cm domino at r = 5 cm)."""
    v, f = box_mesh((0.05, 0.2, 0.4))
    s = sample_rigid(v, f, 0.05)
    np.testing.assert_allclose(s.points[:, 0], 0.0, atol=1e-12)
    np.testing.assert_allclose(np.abs(s.points[:, 2]).max(), 0.2 - 0.05, atol=1e-9)


def test_ball_particles_on_the_inset_sphere() -> None:
    """A ball's outer particles lie r inside its mesh (signed distance -r), none closer to the surface."""
    r, radius = 0.05, 0.17
    v, f = uv_sphere_mesh(radius, (0.0, 0.0, 0.0), 32, 16)
    s = sample_rigid(v, f, r)
    d, _ = signed_distance(v, f, s.points)
    assert d.max() <= -r * (1.0 - 0.02)  # within the 2 % the surface layer is placed to
    # The outer layer reaches the inset sphere all round: the farthest particle in every direction.
    inscribed = -signed_distance(v, f, np.zeros((1, 3)))[0][0]
    dirs = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1], [-1, 0, 0], [0, -1, 0], [0, 0, -1], [1, 1, 1]]) / 1.0
    dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
    reach = (s.points @ dirs.T).max(axis=0)
    assert reach.min() >= inscribed - r - r**2 / (2.0 * (inscribed - r))


def test_mass_is_the_mesh_volume_times_density() -> None:
    """Mass from the mesh, not the particle count: a 0.2 x 0.1 x 0.07 m brick of 2000 kg/m^3 is 2.8 kg."""
    w = World(radius=0.05)
    v, f = box_mesh((0.2, 0.1, 0.07))
    body = w.add_rigid(v, f, density=2000.0)
    assert body.mass == pytest.approx(2000.0 * 0.2 * 0.1 * 0.07, rel=1e-12)
    assert fill_measure(v, f).volume == pytest.approx(0.2 * 0.1 * 0.07, rel=1e-12)


def _offsets(seed: int, n: int) -> np.ndarray:
    """Tiny horizontal nudges (0.1 mm) so that a figure does not hold only for exact placement."""
    if seed == 0:
        return np.zeros((n, 3))
    out = np.random.default_rng(seed).uniform(-1e-4, 1e-4, (n, 3))
    out[:, 2] = 0.0
    return out


@pytest.mark.parametrize("seed", [0, 1])
def test_stacked_boxes_touch_at_their_faces(seed: int) -> None:
    """Three 0.25 m boxes (2.5 particle diameters at r = 5 cm) on the ground: after 2 s each face rests
    on the one below within the contacts' steady overlap (was 5.0 cm of overlap per seam)."""
    side, n = 0.25, 3
    w = World(radius=0.05)
    w.add_collider_plane()
    nudge = _offsets(seed, n)
    boxes = [
        w.add_rigid(*box_mesh((side,) * 3, np.array([0.0, 0.0, side / 2 + k * (side + 1e-3)]) + nudge[k]))
        for k in range(n)
    ]
    for _ in range(2 * FPS):
        w.step(1.0 / FPS)
    z = np.array([b.center[2] for b in boxes])
    assert abs(z[0] - side / 2) <= CONTACT  # bottom face on the ground
    gaps = np.diff(z) - side
    assert np.abs(gaps).max() <= CONTACT, gaps


def test_ball_rests_at_its_mesh_radius() -> None:
    """A 0.17 m ball (UV sphere) on the ground at r = 5 cm: its centre rests at the mesh's radius. The
    particles' spheres leave dimples between surface particles a apart of depth a^2 / (2 (R - r)); the
    surface layer is at most 1.25 r apart (half the grid), so the bound is (1.25 r)^2 / (2 (R - r)) = 1.6 cm
    (was 2.0 cm low)."""
    r, radius = 0.05, 0.17
    v, f = uv_sphere_mesh(radius, (0.0, 0.0, radius + 0.01), 32, 16)
    inscribed = -signed_distance(v, f, np.array([[0.0, 0.0, radius + 0.01]]))[0][0]
    w = World(radius=r)
    w.add_collider_plane()
    ball = w.add_rigid(v, f)
    for _ in range(2 * FPS):
        w.step(1.0 / FPS)
    rest = ball.center[2]
    dimple = (1.25 * r) ** 2 / (2.0 * (inscribed - r))
    assert inscribed - dimple - CONTACT <= rest <= radius + CONTACT, (rest, inscribed)


def test_domino_stands_on_its_face() -> None:
    """A 0.05 x 0.2 x 0.4 m domino at r = 3.5 cm (its thickness 0.7 diameters) stands with its bottom
    face on the floor (sank 2.5 cm before) and stays upright."""
    w = World(radius=0.035)
    w.add_collider_plane()
    d = w.add_rigid(*box_mesh((0.05, 0.2, 0.4), (0.0, 0.0, 0.2)))
    for _ in range(FPS):
        w.step(1.0 / FPS)
    assert abs(d.center[2] - 0.2) <= CONTACT
    assert d.rotation[2, 2] >= np.cos(np.radians(0.5))


def _wall(w: World, rows: int, cols: int, nudge: np.ndarray) -> list:
    """A running-bond wall of 0.2 x 0.1 x 0.07 m bricks (half bricks at the ends of odd rows)."""
    length, depth, height = 0.2, 0.1, 0.07
    bricks = []
    for j in range(rows):
        z = height / 2 + j * height
        if j % 2 == 0:
            spans = [(i * length, length) for i in range(cols)]
        else:
            half = length / 2
            spans = [(-length / 4, half)] + [(i * length + half, length) for i in range(cols - 1)]
            spans.append(((cols - 1) * length + length / 4, half))
        for x, size in spans:
            centre = np.array([x, 0.0, z]) + nudge[len(bricks) % len(nudge)]
            bricks.append(w.add_rigid(*box_mesh((size, depth, height), centre), density=2000.0))
    return bricks


@pytest.mark.parametrize("seed", [0, 1])
def test_brick_wall_stands(seed: int) -> None:
    """Six rows of 0.2 x 0.1 x 0.07 m bricks (running bond) stand for 2 s under their own weight: no
    brick moves more than 6 resting contacts' overlap (the top row rests on 6 contacts) nor turns.

    At r = 2.5 cm, two layers across the brick's 7 cm (a brick thinner than 2r cannot touch at its faces
    with one radius for the whole scene: with a body's own radius it is its size). Before: the top row
    sank 16 cm at this radius, and walls at r = 3.5 and 5 cm fell (9 and 13 of 33 bricks past 30 deg)."""
    w = World(radius=0.025)
    w.add_collider_plane()
    bricks = _wall(w, 6, 5, _offsets(seed, 40))
    start = np.array([b.center for b in bricks])
    for _ in range(2 * FPS):
        w.step(1.0 / FPS)
    moved = np.linalg.norm(np.array([b.center for b in bricks]) - start, axis=1)
    assert moved.max() <= 6 * CONTACT, moved.max()
    upright = np.array([b.rotation[2, 2] for b in bricks])
    assert upright.min() >= np.cos(np.radians(0.5))


def test_thin_rigid_bodies_fit_their_radius_to_their_thinnest_side() -> None:
    """Without its own radius a rigid body thinner than 2.35 world radii fits its radius to that side
    (``sizes.rigid_radius``: side / 2.8, two layers whose spheres touch both faces), never below r / 4;
    thicker bodies keep the world's radius (a 0.12 m side at 5 cm: two layers 0.4 r apart)."""
    w = World(radius=0.05)
    brick = w.add_rigid(*box_mesh((0.2, 0.1, 0.07)))
    box = w.add_rigid(*box_mesh((0.25, 0.25, 0.25), (1.0, 0.0, 0.0)))
    sheet = w.add_rigid(*box_mesh((0.3, 0.3, 0.002), (2.0, 0.0, 0.0)))
    own = w.add_rigid(*box_mesh((0.2, 0.1, 0.07), (3.0, 0.0, 0.0)), radius=0.05)
    thick = w.add_rigid(*box_mesh((0.25, 0.12, 0.12), (4.0, 0.0, 0.0)))  # 2.4 r: two layers 0.4 r apart
    w.model.finalize()
    r = w.model.particle_radius
    np.testing.assert_allclose(r[brick.indices], 0.07 / 2.8, rtol=1e-12)
    np.testing.assert_allclose(r[box.indices], 0.05, rtol=1e-12)
    np.testing.assert_allclose(r[sheet.indices], 0.05 / 4, rtol=1e-12)
    np.testing.assert_allclose(r[own.indices], 0.05, rtol=1e-12)
    np.testing.assert_allclose(r[thick.indices], 0.05, rtol=1e-12)


def test_brick_wall_stands_at_the_default_radius() -> None:
    """The issue's wall with default settings (World(radius=0.05), the Blender default, no per-body radius):
    six rows of 0.2 x 0.1 x 0.07 m bricks stand for 1.5 s as in test_brick_wall_stands. Before: one middle
    layer of 5 cm spheres per brick, rows 3 cm apart on the spheres; 13 of 33 bricks fell past 30 deg."""
    w = World(radius=0.05)
    w.add_collider_plane()
    bricks = _wall(w, 6, 5, _offsets(1, 40))
    start = np.array([b.center for b in bricks])
    for _ in range(36):
        w.step(1.0 / FPS)
    moved = np.linalg.norm(np.array([b.center for b in bricks]) - start, axis=1)
    assert moved.max() <= 6 * CONTACT, moved.max()
    upright = np.array([b.rotation[2, 2] for b in bricks])
    assert upright.min() >= np.cos(np.radians(0.5))

"""Mesh colliders hold on which side of a flat face a particle is, whatever the dimensions (issue 24, item 1).

Modelled boxes and discs have round dimensions: when they are whole multiples of the volume's cell (the
particle radius), grid nodes lie exactly on the flat faces. There the winding number is 0.5 and reads 0 or
1 by round-off; before the fix the nodes one cell above copied it, the volume read "inside" just above
the face, and grains and cloth fell straight through a 1 cm disc at r = 5 mm (a grain ended 1.45 m below
it after 0.25 s). The reference is geometric: a point at distance d outside a face is outside (signed
distance > 0) and its contact normal is the face's outward normal.
"""

from __future__ import annotations

import numpy as np
import pytest

from unified_particles.core import World
from unified_particles.core.primitives import box_mesh

R = 0.005  # metres: the default volume cell is the particle radius, so round sizes put nodes on faces


def _disc(radius: float, height: float, segments: int = 48) -> tuple[np.ndarray, np.ndarray]:
    """A closed, outward-facing cylinder on the z axis, centred at the origin."""
    a = np.linspace(0.0, 2.0 * np.pi, segments, endpoint=False)
    ring = np.stack([radius * np.cos(a), radius * np.sin(a)], axis=1)
    v = np.concatenate(
        [
            np.c_[ring, np.full(segments, -height / 2)],
            np.c_[ring, np.full(segments, height / 2)],
            [[0.0, 0.0, -height / 2], [0.0, 0.0, height / 2]],
        ]
    )
    i = np.arange(segments)
    j = (i + 1) % segments
    bottom, top = 2 * segments, 2 * segments + 1
    f = np.concatenate(
        [
            np.stack([i, j, segments + j], 1),
            np.stack([i, segments + j, segments + i], 1),
            np.stack([np.full(segments, bottom), j, i], 1),
            np.stack([np.full(segments, top), segments + i, segments + j], 1),
        ]
    )
    return v, f


def _shape(kind: str, width_cells: int, height_cells: int) -> tuple[np.ndarray, np.ndarray]:
    if kind == "box":
        return box_mesh((width_cells * R, width_cells * R, height_cells * R))
    return _disc(0.5 * width_cells * R, height_cells * R)


@pytest.mark.parametrize("kind", ["box", "disc"])
@pytest.mark.parametrize("width_cells", [12, 18, 36])
@pytest.mark.parametrize("height_cells", [2, 4, 6])
def test_points_just_outside_flat_faces_are_outside(kind: str, width_cells: int, height_cells: int) -> None:
    v, f = _shape(kind, width_cells, height_cells)
    world = World(radius=R)
    collider = world.add_collider_mesh(v, f)
    half_height = 0.5 * height_cells * R
    rng = np.random.default_rng(width_cells * 10 + height_cells)
    n = 400
    xy = rng.uniform(-0.2, 0.2, (n, 2)) * width_cells * R
    d = rng.uniform(0.05, 1.0, n) * R  # from a twentieth of a radius to a radius outside
    above = np.c_[xy, half_height + d]
    below = np.c_[xy, -half_height - d]
    x = np.concatenate([above, below])
    contacts = collider.contacts(x, alpha=1.0, dt_frame=1.0 / 24.0)
    # Every point is within the contact reach r of its face: each must be reported once, with a depth of
    # r - d (the exact distance to a flat face; the volume is trilinear, exact on a plane up to round-off)
    # and the face's outward normal.
    assert np.array_equal(np.sort(contacts.idx), np.arange(2 * n))
    order = np.argsort(contacts.idx)
    depth = contacts.depth[order]
    normal = contacts.normal[order]
    expected_depth = np.concatenate([R - d, R - d])
    np.testing.assert_allclose(depth, expected_depth, atol=1e-3 * R)
    outward = np.concatenate([np.tile([0.0, 0.0, 1.0], (n, 1)), np.tile([0.0, 0.0, -1.0], (n, 1))])
    assert float((normal * outward).sum(axis=1).min()) > 0.99


def test_grains_and_cloth_rest_on_a_one_centimetre_disc() -> None:
    """The issue's scene: a 18 x 1 cm disc at r = 5 mm, grains and a light cloth dropped on it."""
    world = World(radius=R)
    v, f = _disc(0.09, 0.01)
    world.add_collider_mesh(v, f)
    xs = np.arange(-0.05, 0.05, 2 * R)
    grains = world.add_granular(
        np.array([[x, y, 0.005 + 2 * R] for x in xs for y in xs]), density=1600.0, friction=0.5
    )
    cloth_v = np.array(
        [[x, y, 0.04] for y in np.linspace(-0.06, 0.06, 13) for x in np.linspace(-0.06, 0.06, 13)]
    )
    k = np.arange(12 * 13).reshape(12, 13)[:, :12].ravel()
    cloth_f = np.concatenate([np.stack([k, k + 1, k + 14], 1), np.stack([k, k + 14, k + 13], 1)])
    cloth = world.add_cloth(cloth_v, cloth_f, mass=0.01)
    for _ in range(6):  # 0.25 s: free fall from 1-3.5 cm takes under 0.09 s, the rest is resting
        world.step(1.0 / 24.0)
    top = 0.005
    # Resting on the disc: a particle's centre is r above the face, less the contact slop of a few per
    # cent of r the solver allows; a leak ends metres below.
    assert world.positions[grains.indices, 2].min() > top + 0.5 * R
    assert cloth.vertex_positions[:, 2].min() > top + 0.5 * R

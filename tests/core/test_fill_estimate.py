"""Make's and Convert's particle counts (``FillMeasure.rigid_count`` and ``shell_count``, blender/cost.py)
against what ``sample_rigid`` and ``shell_of`` make (issue 22, item 5).

The estimate reads the mesh only (its volume, area, edges and facing; no grid): the fitted grid's nodes in
the body inset by r, and its surface layer (a layer of grid nodes on flat faces, the denser half-spacing
layer on curved ones). Bound: within 30 % of the count made. The user chooses a particle radius (or the
"a Particle Radius of X would take a quarter second" suggestion) from it, and the count goes as 1 / r^3, so
30 % is 9 % in radius: less than the step between the radii one would try, and well inside the time
model's own factor of two. The old estimate was 1.5-3.9x too high on balls and 4-6x on a sheared domino
(a surface layer of one particle per r^2 of the bounding box).
"""

from __future__ import annotations

import numpy as np
import pytest

from unified_particles.core.geometry import fill_measure, sample_rigid, shell_of
from unified_particles.core.primitives import box_mesh, uv_sphere_mesh


def icosphere(radius: float, subdivisions: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """A geodesic ball: an icosahedron split ``subdivisions`` times, projected onto the sphere."""
    t = (1.0 + 5.0**0.5) / 2.0
    corners = [[-1, t, 0], [1, t, 0], [-1, -t, 0], [1, -t, 0], [0, -1, t], [0, 1, t]]
    corners += [[0, -1, -t], [0, 1, -t], [t, 0, -1], [t, 0, 1], [-t, 0, -1], [-t, 0, 1]]
    v = np.array(corners, dtype=np.float64)
    faces = [[0, 11, 5], [0, 5, 1], [0, 1, 7], [0, 7, 10], [0, 10, 11], [1, 5, 9], [5, 11, 4], [11, 10, 2]]
    faces += [[10, 7, 6], [7, 1, 8], [3, 9, 4], [3, 4, 2], [3, 2, 6], [3, 6, 8], [3, 8, 9], [4, 9, 5]]
    faces += [[2, 4, 11], [6, 2, 10], [8, 6, 7], [9, 8, 1]]
    f = np.array(faces)
    for _ in range(subdivisions):
        edges = np.sort(np.concatenate([f[:, [0, 1]], f[:, [1, 2]], f[:, [2, 0]]]), axis=1)
        unique, inverse = np.unique(edges, axis=0, return_inverse=True)
        mid = inverse.reshape(3, -1).T + len(v)  # the midpoints of edges ab, bc, ca of each triangle
        v = np.concatenate([v, 0.5 * (v[unique[:, 0]] + v[unique[:, 1]])])
        a, b, c = f.T
        ab, bc, ca = mid.T
        f = np.concatenate(
            [np.stack(x, axis=1) for x in ([a, ab, ca], [b, bc, ab], [c, ca, bc], [ab, bc, ca])]
        )
    return radius * v / np.linalg.norm(v, axis=1, keepdims=True), f.astype(np.int64)


def cylinder(radius: float, height: float, segments: int = 24) -> tuple[np.ndarray, np.ndarray]:
    """A closed cylinder along z: ``segments`` side quads and two fans."""
    th = 2.0 * np.pi * np.arange(segments) / segments
    ring = np.stack([radius * np.cos(th), radius * np.sin(th)], axis=1)
    z = np.full((segments, 1), 0.5 * height)
    v = np.concatenate(
        [np.hstack([ring, -z]), np.hstack([ring, z]), [[0, 0, -0.5 * height], [0, 0, 0.5 * height]]]
    )
    i = np.arange(segments)
    j = (i + 1) % segments
    s = segments
    side = [np.stack([i, j, j + s], 1), np.stack([i, j + s, i + s], 1)]
    caps = [np.stack([np.full(s, 2 * s), j, i], 1), np.stack([np.full(s, 2 * s + 1), i + s, j + s], 1)]
    f = np.concatenate(side + caps)
    return v, f.astype(np.int64)


def torus(major: float, minor: float, segments: int = 24, rings: int = 12) -> tuple[np.ndarray, np.ndarray]:
    """A ring torus about z."""
    u, w = np.meshgrid(
        2 * np.pi * np.arange(segments) / segments, 2 * np.pi * np.arange(rings) / rings, indexing="ij"
    )
    reach = major + minor * np.cos(w)
    v = np.stack([reach * np.cos(u), reach * np.sin(u), minor * np.sin(w)], axis=-1).reshape(-1, 3)
    a = np.arange(segments * rings).reshape(segments, rings)
    b = np.roll(a, -1, axis=0)
    c, d = np.roll(b, -1, axis=1), np.roll(a, -1, axis=1)
    f = np.concatenate([np.stack([a, b, c], -1).reshape(-1, 3), np.stack([a, c, d], -1).reshape(-1, 3)])
    return v, f.astype(np.int64)


def hollow_ball(outer: float, inner: float) -> tuple[np.ndarray, np.ndarray]:
    """A ball with a round cavity: two 80-face geodesic spheres, the inner one turned inside out."""
    v1, f1 = icosphere(outer, 1)
    v2, f2 = icosphere(inner, 1)
    return np.concatenate([v1, v2]), np.concatenate([f1, f2[:, ::-1] + len(v1)])


def sheared_domino() -> tuple[np.ndarray, np.ndarray]:
    """A 16 x 3 x 34 cm domino sheared by 2 % (as imported ones may be): not a box in its principal frame."""
    v, f = box_mesh((0.16, 0.03, 0.34))
    v[:, 0] += 0.02 * v[:, 2]
    return v, f


def jittered_plate() -> tuple[np.ndarray, np.ndarray]:
    """The thin plate turned by ~1 mrad and its corners moved by ~1 um (float32 vertices do as much): its
    square's tied axes then fall anywhere in its plane, and it is filled on a grid turned against its rim
    (not a box in that frame)."""
    rng = np.random.default_rng(5)
    v, f = box_mesh((0.6, 0.6, 0.02))
    a = rng.normal(0.0, 1e-3, 3)
    turn = np.eye(3) + np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])
    return v @ turn.T + rng.normal(0.0, 1e-6, v.shape), f


SHAPES = {
    "box": lambda: box_mesh((0.6, 0.4, 0.3)),
    "sheared domino": sheared_domino,
    "uv sphere": lambda: uv_sphere_mesh(0.25, segments=16, rings=8),
    "icosphere": lambda: icosphere(0.25),
    "hollow ball": lambda: hollow_ball(0.25, 0.12),
    "cylinder": lambda: cylinder(0.15, 0.4, 16),
    "thin plate": lambda: box_mesh((0.6, 0.6, 0.02)),
    "jittered plate": jittered_plate,
    "torus": lambda: torus(0.2, 0.07),
}
# Radii, m: two per shape (but the torus), a few hundred to 1,600 particles, 2.5-6 particles across its
# thinnest part (the surface layer's share, and so the estimate's error, is largest in coarse fills; small
# counts keep the test fast).
RADII = {
    "box": (0.02, 0.032),
    "sheared domino": (0.0052, 0.0086),
    "uv sphere": (0.035, 0.045),
    "icosphere": (0.045, 0.06),
    "hollow ball": (0.032, 0.04),
    "cylinder": (0.024, 0.03),
    "thin plate": (0.015, 0.024),
    "jittered plate": (0.015, 0.024),
    # One radius: the torus's count moves most with the grid's turn about its axis (its tied axes; 1 mrad
    # turns give 1.07-1.29 at 18-28 mm), and a torus fill is the slowest here.
    "torus": (0.022,),
}


@pytest.mark.parametrize("name", list(SHAPES))
def test_estimate_follows_the_count_made(name: str) -> None:
    # Measured (estimate / made, solid and shell, at the two radii; session 9): box and plate 1.00 (exact),
    # sheared domino 0.95-1.04, uv sphere 1.03-1.14, icosphere 0.90-0.98, hollow ball 1.15-1.19, cylinder
    # 0.94-1.04, jittered plate 0.86-0.92, torus 1.08-1.10. The geometry decides them (no chaos): the same
    # on any CPU; turned by ~1 mrad (which moves the grid of a ball, a torus, a cylinder about their tied
    # axes): 0.83-1.16, torus 1.07-1.12 at 22 mm.
    v, f = SHAPES[name]()
    measure = fill_measure(v, f)
    for radius in RADII[name]:
        samples = sample_rigid(v, f, radius)
        shell, _ = shell_of(samples, radius)
        made, made_shell = len(samples.points), len(shell.points)
        assert 0.7 * made <= measure.rigid_count(2.0 * radius) <= 1.3 * made, (radius, made)
        assert 0.7 * made_shell <= measure.shell_count(2.0 * radius) <= 1.3 * made_shell, (radius, made_shell)

"""The Cusick drape test in the core (BS 5058 / ISO 9073-9), shared by the bending and preset tests.

A 30 cm circle of fabric clamped between 18 cm discs drapes under its own weight; its drape coefficient
is DC = (shadow area - disc area) / (fabric area - disc area): 0 for a limp fabric hanging straight
down, 1 for a board (Cusick, J. Text. Inst. 59(6), 1968).

The fabric is a circular mesh of concentric rings (not a disc cut from a square grid, whose staircase
outline and clamp are not round), with a ring exactly on the clamp's edge; the shadow is the area of the
union of the draped triangles projected onto the floor, rasterized at 1 mm. (The first version took the
farthest vertex in each of 180 directions: on a 1.5 cm mesh most directions hold no rim vertex, so it
measured a fabric of DC 0.67 as 0.25, and the drape seemed to depend on the mesh resolution.)
"""

from __future__ import annotations

import itertools

import numpy as np

from unified_particles.core import World

OUTER, CLAMP = 0.15, 0.09  # m: the specimen's and the clamp discs' radii


def ring_disc(radius: float, rings: int) -> tuple[np.ndarray, np.ndarray]:
    """A disc of ``radius`` meshed as ``rings`` concentric rings of near-equilateral triangles.

    Ring k (radius k radius / rings) has round(2 pi k) vertices (at least 6), offset by half a step on
    odd rings; neighbouring rings are zipped together in angle order. Returns (V, 3) vertices in z = 0
    and (F, 3) counter-clockwise triangles.
    """
    points = [np.zeros((1, 2))]
    ring_ids = [np.array([0])]
    for k in range(1, rings + 1):
        n = max(6, round(2 * np.pi * k))
        th = 2 * np.pi * (np.arange(n) + 0.5 * (k % 2)) / n
        r = k * radius / rings
        points.append(np.stack([r * np.cos(th), r * np.sin(th)], axis=1))
        start = ring_ids[-1][-1] + 1
        ring_ids.append(np.arange(start, start + n))
    p = np.concatenate(points)
    angle = np.arctan2(p[:, 1], p[:, 0]) % (2 * np.pi)
    first = ring_ids[1]
    faces = [[0, first[i], first[(i + 1) % len(first)]] for i in range(len(first))]
    for inner, outer in itertools.pairwise(ring_ids[1:]):
        a, b = inner[np.argsort(angle[inner])], outer[np.argsort(angle[outer])]
        ta = np.append(angle[a], angle[a[0]] + 2 * np.pi)
        tb = np.append(angle[b], angle[b[0]] + 2 * np.pi)
        i = j = 0
        while i < len(a) or j < len(b):  # advance on whichever ring's next vertex comes first
            if j >= len(b) or (i < len(a) and ta[i + 1] < tb[j + 1]):
                faces.append([a[i], a[(i + 1) % len(a)], b[j % len(b)]])
                i += 1
            else:
                faces.append([a[i % len(a)], b[(j + 1) % len(b)], b[j]])
                j += 1
    f = np.array(faces, dtype=np.int64)
    v = np.concatenate([p, np.zeros((len(p), 1))], axis=1)
    e1, e2 = v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]]
    flip = e1[:, 0] * e2[:, 1] - e1[:, 1] * e2[:, 0] < 0.0
    f[flip] = f[flip][:, [0, 2, 1]]
    return v, f


def shadow_area(x: np.ndarray, faces: np.ndarray, pixel: float = 0.001) -> float:
    """Area, m^2, of the union of the triangles ``faces`` of ``x`` (V, 3) projected onto z = 0
    (what the drape meter's lamp casts), rasterized on ``pixel`` squares (a test helper: a loop over
    triangles)."""
    p = x[:, :2]
    lo_all = p.min(axis=0) - pixel
    shape = np.ceil((p.max(axis=0) + pixel - lo_all) / pixel).astype(int)
    gx = lo_all[0] + (np.arange(shape[0]) + 0.5) * pixel
    gy = lo_all[1] + (np.arange(shape[1]) + 0.5) * pixel
    inside = np.zeros(shape, dtype=bool)
    for a, b, c in p[faces]:
        lo, hi = np.minimum(np.minimum(a, b), c), np.maximum(np.maximum(a, b), c)
        i0, i1 = np.searchsorted(gx, lo[0]), np.searchsorted(gx, hi[0])
        j0, j1 = np.searchsorted(gy, lo[1]), np.searchsorted(gy, hi[1])
        det = (b[1] - c[1]) * (a[0] - c[0]) + (c[0] - b[0]) * (a[1] - c[1])
        if i1 <= i0 or j1 <= j0 or abs(det) < 1e-30:
            continue
        dx, dy = gx[i0:i1, None] - c[0], gy[None, j0:j1] - c[1]
        l1 = ((b[1] - c[1]) * dx + (c[0] - b[0]) * dy) / det
        l2 = ((c[1] - a[1]) * dx + (a[0] - c[0]) * dy) / det
        inside[i0:i1, j0:j1] |= (l1 >= 0.0) & (l2 >= 0.0) & (l1 + l2 <= 1.0)
    return float(inside.sum()) * pixel * pixel


def drape_coefficient(
    rigidity: float,
    area_density: float,
    spacing: float,
    seconds: float = 1.0,
    substeps: int = 4,
    seed: int = 0,
    damping: float = 3.0,
) -> float:
    """DC of a fabric of bending rigidity ``rigidity`` (N m) and ``area_density`` (kg/m^2), meshed at
    ``spacing`` (m; a divisor of 3 cm, so a ring lies on the clamp), clamped (pinned) inside r = 9 cm and
    draped for ``seconds`` (settled within 1 s: the figure moves < 0.005 from 1 to 4 s) with light air
    damping, ``substeps`` x 4 iterations per 1/24 s frame."""
    v, f = ring_disc(OUTER, round(OUTER / spacing))
    # Folds grow from a ripple, as in the lab.
    v[:, 2] += np.random.default_rng(seed).normal(0.0, 1e-4, len(v))
    area = 0.5 * np.abs(np.cross(v[f[:, 1]] - v[f[:, 0]], v[f[:, 2]] - v[f[:, 0]])[:, 2]).sum()
    w = World(radius=spacing / 2, damping=damping, substeps=substeps)
    pinned = np.flatnonzero(np.hypot(v[:, 0], v[:, 1]) <= CLAMP + 1e-9)
    # In a vacuum: the drape is a static figure (the scene damping settles it within the 1 s simulated).
    cloth = w.add_cloth(
        v, f, mass=area_density * area, pinned=pinned, bending_rigidity=rigidity, air_viscosity=0.0
    )
    for _ in range(round(seconds * 24)):
        w.step(1.0 / 24.0)
    disc = np.pi * CLAMP**2
    return (shadow_area(cloth.vertex_positions, f) - disc) / (area - disc)

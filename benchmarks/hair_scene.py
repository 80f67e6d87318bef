"""HAIR (issue 27): 1,000 strands of 32 points on an animated head, a UV sphere turning about Z.

The head (radius 0.1 m) is both the hair's surface (its vertices, moved every frame, carry the roots) and a
mesh collider (its transform, set every frame). Strands 0.15 m long grow along the normals from random
points of the upper half; particles of radius 2.5 mm (about half the point spacing). The figure is ms per
frame of ``World.step`` plus the per-frame surface update (what a Blender frame costs the solver).
"""

from __future__ import annotations

import time

import numpy as np

from benchmarks import scenes
from benchmarks.common import peak_rss_mb, result, time_frames

STRANDS, POINTS, LENGTH, HEAD = 1000, 32, 0.15, 0.1
RADIUS = 0.0025
SPIN = np.pi / 2  # rad/s about Z: a head turning 90 degrees a second


def _head_matrix(t: float) -> np.ndarray:
    c, s = np.cos(SPIN * t), np.sin(SPIN * t)
    m = np.eye(4)
    m[:2, :2] = [[c, -s], [s, c]]
    m[2, 3] = 1.6
    return m


def run_hair(frames: int) -> dict:
    from unified_particles.core import World
    from unified_particles.core.hair import triangle_frames
    from unified_particles.core.primitives import uv_sphere_mesh

    base = peak_rss_mb()
    t0 = time.perf_counter()
    v, f = uv_sphere_mesh(HEAD, (0.0, 0.0, 0.0), 32, 16)
    rng = np.random.default_rng(27)
    upper = np.flatnonzero(v[f].mean(axis=1)[:, 2] > 0.0)
    tri = rng.choice(upper, STRANDS)
    bary = rng.dirichlet(np.ones(3), STRANDS)
    m0 = _head_matrix(0.0)
    v0 = v @ m0[:3, :3].T + m0[:3, 3]
    roots = np.einsum("sk,skj->sj", bary, v0[f[tri]])
    normal = triangle_frames(v0[f[tri]])[:, :, 2]
    strands = roots[:, None] + (LENGTH / (POINTS - 1)) * np.arange(POINTS)[None, :, None] * normal[:, None]
    w = World(radius=RADIUS, gravity=(0.0, 0.0, -9.81))
    head = w.add_collider_mesh(v, f, transform=m0)
    hair = w.add_hair(strands, v0, f, root_triangles=tri, root_barycentric=bary, damping=2.0)
    build_s = time.perf_counter() - t0
    tr = scenes.Tracker()

    def step(frame: int) -> None:
        m = _head_matrix(frame / scenes.FPS)
        head.set_transform(m)
        w.set_hair_surface(hair, v @ m[:3, :3].T + m[:3, 3])
        w.step(1.0 / scenes.FPS)

    def measure(frame: int) -> None:
        m = _head_matrix(frame / scenes.FPS)
        x = np.asarray(w.positions)[hair.indices] - m[:3, 3]
        tr.penetration(max(0.0, float(HEAD - np.linalg.norm(x, axis=1).min())))
        tr.lowest(float(np.asarray(w.positions)[:, 2].min()))

    times = time_frames(step, measure, frames)
    return result(
        "HAIR",
        "ours",
        times,
        particles=len(w.positions),
        constraints=None,
        quality=tr.as_dict(),
        base_rss_mb=base,
        build_s=build_s,
        notes=f"radius {RADIUS} m, substeps {w.settings.substeps}, iterations {w.settings.iterations}; "
        "penetration = deepest point inside the head's sphere (its mesh is inscribed)",
    )

# SPDX-License-Identifier: GPL-3.0-or-later
"""First timing of the core solver on three standard scenes (median milliseconds per frame at 24 fps).

S1 cloth: 65 x 65 vertices, 2 m square, dropped onto a sphere collider of radius 0.5 m (and a ground).
S2 rigid pile: 125 cubes of 0.5 m, 3 x 3 x 3 particles each, dropped in a 5 x 5 x 5 block.
S3 granular pile: 1000 grains of radius 5 cm dropped as a 10 x 10 x 10 block.

Usage: ``python -m benchmarks.bench_core [--frames 48] [--scene cloth|rigid|granular] [--cpu]``
(from the repository root).
Default World settings (substeps=4, iterations=4) throughout.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np

from unified_particles.core import World
from unified_particles.core.primitives import box_mesh, grid_mesh, grid_points, uv_sphere_mesh


def cloth_scene() -> World:
    n, size = 65, 2.0
    w = World(radius=0.45 * size / (n - 1))
    v, f = grid_mesh(size, n, (0.0, 0.0, 0.8))
    w.add_cloth(v, f, mass=0.5)
    w.add_collider_mesh(*uv_sphere_mesh(0.5, segments=48, rings=24))
    w.add_collider_plane(point=(0.0, 0.0, -0.5))
    return w


def rigid_scene() -> World:
    w = World(radius=0.5 / 6)
    w.add_collider_plane()
    rng = np.random.default_rng(0)
    for i in range(5):
        for j in range(5):
            for k in range(5):
                c = np.array([i * 0.6, j * 0.6, 0.3 + k * 0.6]) + rng.normal(0.0, 0.02, 3)
                w.add_rigid(*box_mesh((0.5, 0.5, 0.5), c))
    return w


def granular_scene() -> World:
    r = 0.05
    w = World(radius=r)
    w.add_collider_plane()
    pts = grid_points((10, 10, 10), 2.05 * r, (0.0, 0.0, r + 0.05))
    pts += np.random.default_rng(0).normal(0.0, 0.002, pts.shape)
    w.add_granular(pts, friction=0.6)
    return w


SCENES: dict[str, Callable[[], World]] = {
    "cloth": cloth_scene,
    "rigid": rigid_scene,
    "granular": granular_scene,
}


def time_scene(make: Callable[[], World], frames: int, cpu: bool = False) -> tuple[float, float, int]:
    """(median ms/frame, build seconds, particle count) over ``frames`` frames of 1/24 s.

    ``cpu`` measures process CPU time instead of wall time (steadier on a shared machine).
    """
    clock = time.process_time if cpu else time.perf_counter
    t0 = clock()
    w = make()
    w.step(1.0 / 24.0)  # first step builds the model arrays
    build = clock() - t0
    times = []
    for _ in range(frames):
        t = clock()
        w.step(1.0 / 24.0)
        times.append(clock() - t)
    return 1e3 * statistics.median(times), build, w.particle_count


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--frames", type=int, default=48)
    parser.add_argument("--scene", choices=sorted(SCENES), action="append")
    parser.add_argument("--cpu", action="store_true", help="process CPU time instead of wall time")
    args = parser.parse_args()
    kind = "CPU" if args.cpu else "wall"
    for name in args.scene or list(SCENES):
        ms, build, n = time_scene(SCENES[name], args.frames, args.cpu)
        print(
            f"{name:9s} {n:6d} particles  {ms:8.2f} ms/frame {kind} "
            f"(median of {args.frames})  build {build:.2f} s"
        )


if __name__ == "__main__":
    main()
